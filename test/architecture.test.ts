/**
 * The one-way arrows (docs/architecture.md), checked by `npm run check:architecture` in CI: the
 * code as it is passes, and each kind of offence, planted in a copy, is caught.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { checkArchitecture } from '../scripts/check-architecture.ts';

const repository = path.resolve(import.meta.dirname, '..');
const copies: string[] = [];

/** A copy of src/ in a scratch directory, with `plant` (file → text) added or replaced. */
function copyWith(plant: Record<string, string>): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'architecture-'));
  copies.push(root);
  fs.cpSync(path.join(repository, 'src'), path.join(root, 'src'), { recursive: true });
  for (const [file, text] of Object.entries(plant)) {
    fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    fs.writeFileSync(path.join(root, file), text);
  }
  return root;
}

afterEach(() => {
  for (const root of copies.splice(0)) fs.rmSync(root, { recursive: true, force: true });
});

describe('the architecture check', () => {
  it('passes on the code as it is', () => {
    expect(checkArchitecture(repository).offences).toEqual([]);
  });

  it('fails on an import circle, even one closed through a type import', () => {
    const root = copyWith({
      'src/domain/planted-a.ts': "import type { B } from './planted-b.ts';\nexport type A = { b?: B };\n",
      'src/domain/planted-b.ts': "import type { A } from './planted-a.ts';\nexport type B = { a?: A };\n",
    });
    expect(checkArchitecture(root).offences).toEqual(['import circle: domain/planted-a.ts → domain/planted-b.ts → domain/planted-a.ts']);
  });

  it('fails when the domain imports a face or the HTTP wing, a face imports another, or the HTTP wing a face', () => {
    const root = copyWith({
      'src/domain/planted.ts': "import { restRoutes } from '../rest/routes/index.ts';\nimport { MAX_JSON_BYTES } from '../http/body.ts';\nexport const planted = [restRoutes, MAX_JSON_BYTES];\n",
      'src/graphql/planted.ts': "export { REST_PREFIX } from '../rest/serve.ts';\n",
      'src/http/planted.ts': "export { schema } from '../graphql/schema.ts';\n",
    });
    expect(checkArchitecture(root).offences.sort()).toEqual([
      'a face imports another face: graphql/planted.ts → rest/serve.ts',
      'domain imports a face or the HTTP wing: domain/planted.ts → http/body.ts',
      'domain imports a face or the HTTP wing: domain/planted.ts → rest/routes/index.ts',
      'the HTTP wing imports a face: http/planted.ts → graphql/schema.ts',
    ]);
  });

  it('fails when the PDF wing imports the domain outside itself', () => {
    const root = copyWith({ 'src/domain/pdf/planted.ts': "export { readDocument } from '../owner/owner.read.ts';\n" });
    expect(checkArchitecture(root).offences).toEqual(['the PDF wing imports the domain: domain/pdf/planted.ts → domain/owner/owner.read.ts']);
  });

  it('fails when a file outside the outbox module writes the outbox table', () => {
    const root = copyWith({
      'src/domain/signing/planted.ts': "export const sql = `insert into outbox_message (id) values (?)`;\n",
    });
    expect(checkArchitecture(root).offences).toEqual(['writes the outbox outside domain/outbox/: domain/signing/planted.ts:1 (use enqueue())']);
  });

  it('fails on a team filter of a gated table outside its gate file, in SQL or Kysely', () => {
    const root = copyWith({
      'src/domain/audit/planted.ts': [
        "export const drafts = `select e.id from agent a join envelope e on e.id = a.envelope_id where e.team_id = ? and e.status = 'draft'`;",
        "export const count = 'select count(*) from webhook_endpoint where team_id = ?';",
        "export const contacts = (db: any, teamId: string) => db.selectFrom('contact as c').where('c.team_id', '=', teamId);",
        // Not gated (api keys), and a join on the team column: no offence.
        "export const keys = `select k.id from api_key k join envelope x on x.team_id = k.team_id where k.team_id = ?`;",
        '',
      ].join('\n'),
      // The gate itself may.
      'src/domain/envelope/team-planted.ts': "export const own = 'select id from envelope where team_id = ?';\n",
    });
    expect(checkArchitecture(root).offences).toEqual([
      'a team filter on envelope outside its gate (envelope/team-envelope.ts): domain/audit/planted.ts:1',
      'a team filter on webhook_endpoint outside its gate (webhook/team-webhook.ts): domain/audit/planted.ts:2',
      'a team filter on contact outside its gate (contact/team-contact.ts): domain/audit/planted.ts:3',
    ]);
  });
});
