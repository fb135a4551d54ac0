/**
 * The signing page's GraphQL operations are checked against schema.graphql by `npm run typecheck`
 * (scripts/check-page-operations.ts): the page as it is passes, and a planted bad operation (a
 * field the schema does not have, a variable of the wrong type, one built from something the check
 * cannot read) is caught.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildSchema } from 'graphql';
import { afterEach, describe, expect, it } from 'vitest';
import { checkPageOperations } from '../scripts/check-page-operations.ts';

const repository = path.resolve(import.meta.dirname, '..');
const pageDirectory = path.join(repository, 'src/signing-page');
const schema = buildSchema(fs.readFileSync(path.join(repository, 'schema.graphql'), 'utf8'));
const copies: string[] = [];

afterEach(() => {
  for (const copy of copies.splice(0)) fs.rmSync(copy, { recursive: true, force: true });
});

describe("the signing page's GraphQL operations", () => {
  it('are found and valid against schema.graphql', () => {
    const { operations, problems } = checkPageOperations(pageDirectory, schema);
    expect(problems).toEqual([]);
    expect(operations).toEqual(expect.arrayContaining(['api.js: SESSION_QUERY', 'api.js: SUBMIT', 'api.js: LIVE']));
  });

  it('fail on an unknown field, a wrong variable type, a syntax error, and an operation the check cannot read', () => {
    const copy = fs.mkdtempSync(path.join(os.tmpdir(), 'page-operations-'));
    copies.push(copy);
    fs.cpSync(pageDirectory, copy, { recursive: true });
    fs.writeFileSync(
      path.join(copy, 'planted.js'),
      [
        "const SELECTION = 'envelope { id colour }';",
        'const UNKNOWN_FIELD = `query Planted { signingSession { ${SELECTION} } }`;',
        'const WRONG_TYPE = `mutation PlantedOtp($code: Int!) { verifySigningOtp(code: $code) { otp { verified } } }`;',
        "const BROKEN = 'query PlantedBroken { signingSession { ';",
        'const built = String(Date.now());',
        'const UNREADABLE = `query PlantedUnreadable { ${built} }`;',
        'export const planted = [UNKNOWN_FIELD, WRONG_TYPE, BROKEN, UNREADABLE];',
        '',
      ].join('\n'),
    );
    const { problems } = checkPageOperations(copy, schema);
    expect(problems).toEqual([
      "planted.js: UNREADABLE (${built}): an operation must be built from the module's string constants only",
      'planted.js: UNKNOWN_FIELD: Cannot query field "colour" on type "SigningEnvelope".',
      'planted.js: WRONG_TYPE: Variable "$code" of type "Int!" used in position expecting type "String!".',
      'planted.js: BROKEN: Syntax Error: Expected Name, found <EOF>.',
    ]);
  });
});
