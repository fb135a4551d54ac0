/**
 * Writes schema.graphql from the Pothos schema; `--stdout` prints it instead (the schema test
 * compares that with the committed file). A test fails when the committed file drifts.
 */
import fs from 'node:fs';
import { printSchema } from 'graphql';
import { schema } from '../src/graphql/schema.ts';

const printed = `${printSchema(schema)}\n`;
if (process.argv.includes('--stdout')) {
  process.stdout.write(printed);
} else {
  fs.writeFileSync(new URL('../schema.graphql', import.meta.url), printed);
  console.log('schema.graphql written');
}
