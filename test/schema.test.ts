import { execFile } from 'node:child_process';
import fs from 'node:fs';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

describe('schema.graphql', () => {
  // Printed by the script that writes the file, in a process of its own: the order of a printed
  // schema follows the order its types were defined in, which in a process that loaded some of the
  // schema's modules first (a test worker kept across files) would differ (docs/decisions.md).
  it('is exactly what the Pothos schema prints (run `npm run schema:print` after changing the schema)', async () => {
    const committed = fs.readFileSync(new URL('../schema.graphql', import.meta.url), 'utf8');
    const script = new URL('../scripts/print-schema.ts', import.meta.url).pathname;
    const { stdout } = await promisify(execFile)(process.execPath, [script, '--stdout'], { maxBuffer: 16 * 1024 * 1024 });
    expect(committed).toBe(stdout);
  });
});
