/**
 * The one-way arrows (docs/architecture.md), checked by `npm run check:architecture` in CI: the
 * code as it is passes, and each kind of offence, planted in a copy, is caught.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { checkArchitecture, MAX_FOLDER_PAIRS } from '../scripts/check-architecture.ts';

const repository = path.resolve(import.meta.dirname, '..');
const copies: string[] = [];
const RATCHET = 'scripts/architecture-ratchet.json';

/** A copy of src/ in a scratch directory, with `plant` (file → text) added or replaced. */
function copyWith(plant: Record<string, string>): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'architecture-'));
  copies.push(root);
  fs.cpSync(path.join(repository, 'src'), path.join(root, 'src'), { recursive: true });
  fs.mkdirSync(path.join(root, 'scripts'));
  fs.copyFileSync(path.join(repository, RATCHET), path.join(root, RATCHET));
  // src/db imports the ORM configuration beside src/: without it every copy has an unresolved import.
  fs.copyFileSync(path.join(repository, 'mikro-orm.config.ts'), path.join(root, 'mikro-orm.config.ts'));
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
      'src/domain/planted.ts':
        "import { restRoutes } from '../rest/routes/index.ts';\nimport { MAX_JSON_BYTES } from '../http/body.ts';\nexport const planted = [restRoutes, MAX_JSON_BYTES];\n",
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
      'src/domain/signing/planted.ts': 'export const sql = `insert into outbox_message (id) values (?)`;\n',
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
        'export const keys = `select k.id from api_key k join envelope x on x.team_id = k.team_id where k.team_id = ?`;',
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

  it("fails when the domain imports a face's package", () => {
    const root = copyWith({
      'src/domain/signing/planted.ts': [
        "import { createYoga } from 'graphql-yoga';",
        "import SchemaBuilder from '@pothos/core';",
        "import type { Context } from 'graphql-ws';",
        "import busboy from 'busboy';",
        "import { processRequest } from 'graphql-upload-minimal';",
        // A package the domain does use: no offence.
        "import { z } from 'zod';",
        'export const planted = [createYoga, SchemaBuilder, busboy, processRequest, z] as unknown as Context;',
        '',
      ].join('\n'),
    });
    expect(checkArchitecture(root).offences).toEqual([
      "domain imports a face's package: domain/signing/planted.ts → graphql-yoga",
      "domain imports a face's package: domain/signing/planted.ts → @pothos/core",
      "domain imports a face's package: domain/signing/planted.ts → graphql-ws",
      "domain imports a face's package: domain/signing/planted.ts → busboy",
      "domain imports a face's package: domain/signing/planted.ts → graphql-upload-minimal",
    ]);
  });

  it('fails on a relative import that names no file, instead of dropping it', () => {
    const root = copyWith({ 'src/domain/envelope/planted.ts': "export { gone } from './no-such-file.ts';\nexport type { Gone } from '../../shared/gone.ts';\n" });
    expect(checkArchitecture(root).offences).toEqual([
      'an import names no file: domain/envelope/planted.ts → ./no-such-file.ts',
      'an import names no file: domain/envelope/planted.ts → ../../shared/gone.ts',
    ]);
  });

  it('fails when shared/ imports upward', () => {
    const root = copyWith({
      'src/shared/planted.ts': [
        "import { readableName } from '../domain/validation.ts';",
        "import type { App } from '../app.ts';",
        "import { createClock } from './clock.ts';",
        'export const planted = [readableName, createClock] as unknown as App;',
        '',
      ].join('\n'),
    });
    expect(checkArchitecture(root).offences).toEqual(['shared imports upward: shared/planted.ts → domain/validation.ts', 'shared imports upward: shared/planted.ts → app.ts']);
  });

  it('fails when a face imports the composition root', () => {
    const root = copyWith({
      'src/rest/planted.ts': "import type { App } from '../app.ts';\nexport type Planted = App;\n",
      'src/graphql/planted.ts': "export type { App } from '../app.ts';\n",
    });
    expect(checkArchitecture(root).offences.sort()).toEqual([
      'a face imports the composition root: graphql/planted.ts → app.ts',
      'a face imports the composition root: rest/planted.ts → app.ts',
    ]);
  });

  it('fails on a new pair of domain folders importing each other both ways, and on a ratchet set higher than the code', () => {
    const root = copyWith({
      'src/domain/contact/planted.ts': "export type { } from '../webhook/team-webhook.ts';\n",
      'src/domain/webhook/planted.ts': "export type { } from '../contact/team-contact.ts';\n",
    });
    expect(checkArchitecture(root).offences).toEqual([`domain folders import each other both ways, beyond the ratchet (${RATCHET}): contact↔webhook`]);
    const allowed = JSON.parse(fs.readFileSync(path.join(repository, RATCHET), 'utf8'));
    const loose = copyWith({ [RATCHET]: JSON.stringify({ ...allowed, folderPairs: [...allowed.folderPairs, 'bulk-send↔idempotency'] }) });
    // (With the ratchet at its ceiling, one more pair is also over the ceiling: the next test.)
    expect(checkArchitecture(loose).offences).toContain(
      `the ratchet allows a folder pair that no longer imports both ways: bulk-send↔idempotency (remove it from ${RATCHET} and docs/architecture.md)`,
    );
  });

  it('fails when the ratchet lists more pairs than its ceiling, even pairs the code has', () => {
    const allowed = JSON.parse(fs.readFileSync(path.join(repository, RATCHET), 'utf8'));
    const planted = ['contact↔webhook', 'bulk-send↔idempotency', 'live↔outbox', 'jumpstart↔team', 'audit↔idempotency'].slice(0, MAX_FOLDER_PAIRS + 1 - allowed.folderPairs.length);
    const pairs = [...allowed.folderPairs, ...planted].sort();
    // Each planted pair really imports both ways, so the only offence left is the count.
    const files = Object.fromEntries(
      planted.flatMap((pair, index) => {
        const [a, b] = pair.split('↔');
        return [
          [`src/domain/${a}/planted-${index}.ts`, `export type { } from '../${b}/planted-${index}-target.ts';\n`],
          [`src/domain/${b}/planted-${index}-target.ts`, `export type { } from '../${a}/planted-${index}-source.ts';\nexport type Planted${index} = 1;\n`],
          [`src/domain/${a}/planted-${index}-source.ts`, `export type Source${index} = 1;\n`],
        ];
      }),
    );
    const root = copyWith({ ...files, [RATCHET]: JSON.stringify({ ...allowed, folderPairs: pairs }) });
    expect(checkArchitecture(root).offences).toEqual([`the ratchet (${RATCHET}) lists ${pairs.length} folder pairs, more than the ceiling of ${MAX_FOLDER_PAIRS}`]);
  });

  it("fails on five or more positional parameters outside the allow-list, in TypeScript and the signing page's JavaScript", () => {
    const root = copyWith({
      'src/domain/planted.ts': [
        'export function fine(a: number, b: number, c: number, d: number) { return a + b + c + d; }',
        'export function fineWithOptions(a: number, options: { b: number; c: number; d: number; e: number }) { return a + options.e; }',
        'export type Signature = (a: number, b: number, c: number, d: number, e: number) => number;',
        'export function planted(a: number, b: number, c: number, d: number, e: number) { return a + b + c + d + e; }',
        'export const arrow = (a: number, b: number, c: number, d: number, e = 0) => a + b + c + d + e;',
        'export class Planted {',
        '  constructor(a: number, b: number, c: number, d: number, e: number) { void [a, b, c, d, e]; }',
        '}',
        '',
      ].join('\n'),
      'src/signing-page/planted.js': 'export function dialog(input, title, help, read, save) { return [input, title, help, read, save]; }\n',
    });
    expect(checkArchitecture(root).offences).toEqual([
      '5 positional parameters (at most 4; take an options object): domain/planted.ts:4 planted',
      '5 positional parameters (at most 4; take an options object): domain/planted.ts:5 arrow',
      '5 positional parameters (at most 4; take an options object): domain/planted.ts:7 Planted.constructor',
      '5 positional parameters (at most 4; take an options object): signing-page/planted.js:1 dialog',
    ]);
  });

  it('fails on a getter or setter in an object literal made at every call, not on classes, shared descriptors or the browser scripts', () => {
    const root = copyWith({
      'src/domain/planted.ts': [
        'export const once = { get size() { return 1; } };',
        'export const shared = { size: { get(this: { n: number }) { return this.n; } } };',
        'export class Counter { #n = 0; get count() { return this.#n; } }',
        'export function perCall() {',
        '  let n = 0;',
        '  return { get count() { return n; }, set count(value: number) { n = value; } };',
        '}',
        'export class Maker { make() { return { get inner() { return 1; } }; } }',
        '',
      ].join('\n'),
      'src/signing-page/planted.js': 'export function screen() { return { get drawn() { return true; } }; }\n',
    });
    expect(checkArchitecture(root).offences).toEqual([
      'an accessor in an object literal made at every call (a class, or accessors shared by every call): domain/planted.ts:6 count in perCall',
      'an accessor in an object literal made at every call (a class, or accessors shared by every call): domain/planted.ts:6 count in perCall',
      'an accessor in an object literal made at every call (a class, or accessors shared by every call): domain/planted.ts:8 inner in make',
    ]);
  });

  it('fails when src/db/ imports the domain anywhere but its entity list', () => {
    const root = copyWith({
      'src/db/planted.ts': "export { Envelope } from '../domain/envelope/envelope.entity.ts';\n",
      'src/db/entities.ts': fs.readFileSync(path.join(repository, 'src/db/entities.ts'), 'utf8') + "export { Template as Planted } from '../domain/template/template.entity.ts';\n",
    });
    expect(checkArchitecture(root).offences).toEqual(['db imports the domain outside the entity list (db/entities.ts): db/planted.ts → domain/envelope/envelope.entity.ts']);
  });
});
