import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/**
 * Starts the service exactly as `npm start` does (the same environment settings and Node flags,
 * read from package.json's start script) but as a direct child, so that benchmarks read the
 * service's own process (CPU, memory) rather than npm's. `leaveOutFlags` drops start flags, for a
 * side-by-side run without one of them.
 */
export function spawnService(
  env: Record<string, string | undefined>,
  options: Omit<SpawnOptions, 'env'> = {},
  { leaveOutFlags = [] }: { leaveOutFlags?: string[] } = {},
): ChildProcess {
  const start = serviceStartCommand();
  const args = start.args.filter((arg) => !leaveOutFlags.includes(arg));
  return spawn(path.resolve('node_modules/.bin/node'), args, { ...options, env: { ...process.env, ...start.env, ...env } });
}

/** `npm start`'s environment assignments and node arguments (flags and the entry file). */
export function serviceStartCommand(): { env: Record<string, string>; args: string[] } {
  const { scripts } = JSON.parse(fs.readFileSync(path.resolve('package.json'), 'utf8')) as { scripts: Record<string, string> };
  const words = scripts.start.split(/\s+/).filter(Boolean);
  const nodeAt = words.indexOf('node');
  if (nodeAt < 0) throw new Error(`package.json's start script does not run node: ${scripts.start}`);
  return { env: Object.fromEntries(words.slice(0, nodeAt).map((word) => word.split('=') as [string, string])), args: words.slice(nodeAt + 1) };
}
