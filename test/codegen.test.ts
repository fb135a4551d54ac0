/**
 * The examples' generated types (scripts/codegen.ts) are what the contracts give today, and the
 * examples compile against them: a change to schema.graphql, the REST route table or an example's
 * operation that is not regenerated, or that breaks an example, fails here (and in CI's typecheck).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { generatedFiles, staleFiles } from '../scripts/codegen.ts';

// Generation and a whole tsc run take seconds each, more on a loaded machine.
describe('npm run codegen', { timeout: 120_000 }, () => {
  it('regenerating examples/generated/ gives exactly the checked-in files', async () => {
    expect(await staleFiles()).toEqual([]);
  });

  it('refuses a schema that an example’s operation no longer fits, naming the field', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'codegen-'));
    try {
      fs.cpSync('examples', path.join(root, 'examples'), { recursive: true });
      // The schema without Envelope.sentAt, which examples/send-and-watch.ts selects.
      const schema = fs.readFileSync('schema.graphql', 'utf8');
      const envelopeType = schema.indexOf('\ntype Envelope {');
      const withoutSentAt = schema.slice(0, envelopeType) + schema.slice(envelopeType).replace(/\n  sentAt: DateTime\n/, '\n');
      expect(withoutSentAt).not.toBe(schema);
      fs.writeFileSync(path.join(root, 'schema.graphql'), withoutSentAt);
      await expect(generatedFiles(root)).rejects.toThrow(/sentAt/);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  it('the examples typecheck against the generated types', () => {
    const compiled = spawnSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'examples/tsconfig.json'], { encoding: 'utf8' });
    expect(compiled.stdout + compiled.stderr).toBe('');
    expect(compiled.status).toBe(0);
  });
});
