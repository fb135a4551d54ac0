/** Writes schema.graphql from the Pothos schema. A test fails when the committed file drifts. */
import fs from 'node:fs';
import { printSchema } from 'graphql';
import { schema } from '../src/graphql/schema.ts';

fs.writeFileSync(new URL('../schema.graphql', import.meta.url), `${printSchema(schema)}\n`);
console.log('schema.graphql written');
