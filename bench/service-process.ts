import { type ChildProcess, type SpawnOptions, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/**
 * Starts the service exactly as `npm start` does (the same environment settings and Node flags,
 * read from package.json's start script) but as a direct child, so that benchmarks read the
 * service's own process (CPU, memory) rather than npm's. `leaveOutFlags` drops start flags, for a
 * side-by-side run without one of them.
 */
export function spawnService(env: Record<string, string | undefined>, options: Omit<SpawnOptions, 'env'> = {}, { leaveOutFlags = [] }: { leaveOutFlags?: string[] } = {}): ChildProcess {
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

/**
 * The address the service listens on, from its `listening` JSON log line (the one carrying
 * `address` and `publicUrl`), never from text meant for a person. Needs LOG_LEVEL=info or lower
 * and stdout piped. Fails with the output so far when the process exits or `timeoutMs` passes.
 */
export function waitForListening(
  child: ChildProcess,
  {
    timeoutMs = 120_000,
    isListeningLine = (entry: Record<string, unknown>) => typeof entry.publicUrl === 'string',
  }: { timeoutMs?: number; isListeningLine?: (entry: Record<string, unknown>) => boolean } = {},
): Promise<string> {
  let output = '';
  let pending = '';
  return new Promise((resolve, reject) => {
    const finish = (error?: Error, address?: string) => {
      clearTimeout(timer);
      child.stdout?.off('data', onData);
      child.off('exit', onExit);
      if (error) reject(error);
      else resolve(address!);
    };
    const timer = setTimeout(() => finish(new Error(`the process logged no listening address within ${timeoutMs / 1000} s:\n${output.slice(-4000)}`)), timeoutMs);
    const onExit = (code: number | null, signal: string | null) => finish(new Error(`the process exited (${code ?? signal}) before listening:\n${output.slice(-4000)}`));
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      pending += chunk.toString();
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) {
        if (!line.startsWith('{')) continue;
        try {
          const entry = JSON.parse(line) as Record<string, unknown>;
          if (typeof entry.address === 'string' && isListeningLine(entry)) return finish(undefined, entry.address);
        } catch {
          // not a log line
        }
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('exit', onExit);
  });
}

/**
 * A team and its API key made by the CLI (`team create`, whose one JSON line is its interface),
 * on the database of `env` (DATABASE_URL, or the embedded one under DATA_DIR, shared with a
 * running service).
 */
export async function createTeamWithCli(env: Record<string, string | undefined>, name = 'Benchmark team'): Promise<{ teamId: string; apiKey: string }> {
  const child = spawn(path.resolve('node_modules/.bin/node'), ['src/cli/main.ts', 'team', 'create', '--name', name], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  const line = output
    .trim()
    .split('\n')
    .reverse()
    .find((candidate) => candidate.includes('"apiKey"'));
  if (code !== 0 || !line) throw new Error(`team create failed (${code}): ${output}`);
  return JSON.parse(line) as { teamId: string; apiKey: string };
}
