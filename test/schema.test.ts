import fs from 'node:fs';
import { printSchema } from 'graphql';
import { describe, expect, it } from 'vitest';
import { schema } from '../src/graphql/schema.ts';

describe('schema.graphql', () => {
  it('is exactly what the Pothos schema prints (run `npm run schema:print` after changing the schema)', () => {
    const committed = fs.readFileSync(new URL('../schema.graphql', import.meta.url), 'utf8');
    expect(committed).toBe(`${printSchema(schema)}\n`);
  });
});
