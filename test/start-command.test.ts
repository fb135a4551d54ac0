import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '..');

/** `npm start`'s environment assignments and node flags. */
function npmStart(): { env: Record<string, string>; flags: string[] } {
  const { scripts } = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  const words = scripts.start.split(/\s+/).filter(Boolean);
  const nodeAt = words.indexOf('node');
  return {
    env: Object.fromEntries(words.slice(0, nodeAt).map((word) => word.split('=') as [string, string])),
    flags: words.slice(nodeAt + 1).filter((word) => word.startsWith('--')),
  };
}

/** The image's ENV assignments (one `ENV` instruction, continued lines) and its CMD's node flags. */
function image(): { env: Record<string, string>; flags: string[] } {
  const text = fs.readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8').replace(/\\\n\s*/g, ' ');
  const env: Record<string, string> = {};
  for (const line of text.split('\n').filter((entry) => entry.startsWith('ENV '))) {
    for (const assignment of line.slice(4).trim().split(/\s+/)) {
      const [name, value] = assignment.split('=');
      env[name] = value;
    }
  }
  const command = /^CMD (\[.*\])$/m.exec(text);
  if (!command) throw new Error('the Dockerfile has no CMD in exec form');
  return { env, flags: (JSON.parse(command[1]) as string[]).filter((word) => word.startsWith('--')) };
}

describe('the start command', () => {
  // docs/operations.md, "Memory": the settings that keep resident memory and throughput as measured
  // must be the same whether the service runs from a clone or from the image.
  it('runs the image with the memory settings of npm start', () => {
    const start = npmStart();
    const built = image();
    expect(Object.keys(start.env)).toContain('MALLOC_MMAP_THRESHOLD_');
    for (const [name, value] of Object.entries(start.env)) expect(built.env[name], name).toBe(value);
    expect(built.flags).toEqual(start.flags);
  });

  it('keeps 64 KiB socket read buffers out of separate mappings (glibc maps a chunk of the threshold or more)', () => {
    // A 65,536-byte buffer is a chunk of 65,552 bytes with glibc's header; at a 64 KiB threshold each
    // one was mapped and unmapped on its own (docs/performance.md, "The mmap threshold").
    expect(Number(npmStart().env.MALLOC_MMAP_THRESHOLD_)).toBeGreaterThan(65_536 + 16);
  });
});
