import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PDFDocument } from 'pdf-lib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { artefactSealHandler } from '../src/domain/artefact/seal.job.ts';
import { createOutboxWorker } from '../src/domain/outbox/outbox-worker.ts';
import { OUTBOX_TOPICS } from '../src/domain/outbox/topics.ts';
import { drawTextLine, embedSans } from '../src/domain/pdf/render.ts';
import { createLogger } from '../src/shared/logger.ts';
import { sortedKeysJson } from '../src/shared/sorted-keys-json.ts';
import { graphqlClient, restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { pdfsig, wordBoxes } from './helpers/pdf-tools.ts';
import { signAndComplete, tokenFor } from './helpers/signing.ts';
import { uploadTemplateDocument } from './helpers/templates.ts';
import { mainWorkerFor } from './helpers/workers.ts';

/*
 * Data merge (README "Data merge"). Most cases build their fixture with pdf-lib and Noto Sans from
 * @fontsource/noto-sans, embedded as TrueType subsets with Identity-H two-byte codes, with Turkish
 * text around the tags; one runs on a LibreOffice Writer export (test/fixtures/libreoffice/, its
 * source and how it was made beside it): WinAnsi subsets, a tag split across a bold run.
 */

let app: TestApp;
let directory: string;
beforeAll(async () => {
  app = await startTestApp();
  directory = fs.mkdtempSync(path.join(os.tmpdir(), 'data-merge-'));
});
afterAll(async () => {
  fs.rmSync(directory, { recursive: true, force: true });
  await app.close();
});

async function fixture(lines: string[]): Promise<Uint8Array> {
  const pdf = await PDFDocument.create();
  const sans = await embedSans(pdf);
  const page = pdf.addPage([595, 842]);
  lines.forEach((line, index) => drawTextLine(page, line, sans, { x: 60, y: 760 - index * 40, size: 12 }));
  return pdf.save();
}

const TURKISH = [
  'Sözleşme: Müşteri {{data:customer.name}} ile',
  'Şehir: {{data;path=customer.city;size=14;align=center}} İstanbul şubesi',
  'Tutar: {{data;path=total;format=number:2;locale=tr-TR}} TL',
  'Tarih: {{data;path=signedOn;format=D MMMM YYYY;locale=tr-TR}}',
  'Kalemler: {{data:items[].name}}',
];

/** A template whose one document is `bytes`, with a signer role and its signature field. */
async function template(team: SeededTeam, bytes: Uint8Array) {
  const rest = restClient(app, team.apiKey);
  const templateId = (await rest.post('/templates', { name: 'Merge template', teamScope: [] })).body.payload.templateId;
  const uploaded = await uploadTemplateDocument(app, team.apiKey, templateId, { bytes });
  expect(uploaded.status, JSON.stringify(uploaded.body)).toBe(200);
  const document = uploaded.body.payload.document;
  const signer = (await rest.post(`/templates/${templateId}/recipients`, { recipient: { type: 'signer', identifier: 'buyer', roleName: 'Buyer', order: 1 } })).body.payload.recipient;
  const fields = await rest.post(`/templates/${templateId}/fields`, {
    fields: [
      { type: 'simple_signature', recipientId: signer.id, identifier: 'sig', views: [{ documentId: document.id, page: 0, location: { x: 60, y: 600 }, size: { width: 160, height: 40 } }] },
    ],
  });
  expect(fields.status, JSON.stringify(fields.body)).toBe(200);
  return { templateId, documentId: document.id, sha256: document.sha256 as string, signerId: signer.id as string };
}

const buyer = [{ identifier: 'buyer', agents: [{ info: { name: 'Ayşe Yılmaz', email: 'ayse@example.com' } }] }];
const fullData = {
  customer: { name: 'Ayşe Yılmaz-Öztürk', city: 'İzmir' },
  total: 1234.5,
  signedOn: '2027-03-03',
  items: [{ name: 'Çay makinesi' }, { name: 'Şeker ğ ı İ' }],
};

function textOf(bytes: Uint8Array, name: string): string {
  const file = path.join(directory, name);
  fs.writeFileSync(file, bytes);
  return execFileSync('pdftotext', [file, '-'], { encoding: 'utf8' });
}

async function documentBytes(team: SeededTeam, envelopeId: string, documentId: string): Promise<Buffer> {
  const response = await fetch(`${app.url}/api/v1/key/envelopes/${envelopeId}/documents/${documentId}/pdf`, { headers: { 'x-service-api-key': team.apiKey } });
  expect(response.status).toBe(200);
  return Buffer.from(await response.arrayBuffer());
}

async function envelopeOf(team: SeededTeam, envelopeId: string) {
  return (await restClient(app, team.apiKey).get(`/envelopes/${envelopeId}?includeDocuments=true&includeRecipients=true`)).body.payload;
}

async function envelopeCount(teamId: string): Promise<number> {
  const [row] = await app.orm.em.fork().execute<{ count: string }[]>(`select count(*) from envelope where team_id = ?`, [teamId]);
  return Number(row!.count);
}

/** Sends the envelope, completes its one signer and runs the team's seal job. */
async function sendSignAndSeal(team: SeededTeam, envelopeId: string, recipientId: string) {
  expect((await restClient(app, team.apiKey).put(`/envelopes/${envelopeId}/send`)).status).toBe(200);
  const signed = await signAndComplete(app, await tokenFor(app, envelopeId, recipientId));
  expect(signed.errors, JSON.stringify(signed.errors)).toBeUndefined();
  const { blobStore, seal, auditKey, clock, config, pdfWorkers } = app.dependencies;
  const worker = createOutboxWorker({
    em: app.orm.em,
    clock,
    logger: createLogger('silent'),
    payloadMatch: { teamId: team.teamId },
    handlers: new Map([[OUTBOX_TOPICS.sealArtefacts, artefactSealHandler({ blobStore, pdfWorkers, seal, auditKey, clock, publicUrl: config.publicUrl })]]),
  });
  expect(await worker.drain()).toBeGreaterThanOrEqual(1);
}

function expectMerged(text: string) {
  expect(text).toContain('Ayşe Yılmaz-Öztürk');
  expect(text).toContain('İzmir');
  expect(text).toContain('1.234,50');
  expect(text).toContain('3 Mart 2027');
  expect(text).toContain('Çay makinesi');
  expect(text).toContain('Şeker ğ ı İ');
  expect(text).toContain('Sözleşme: Müşteri');
  expect(text).not.toContain('{{');
  expect(text).not.toContain('data:');
}

describe('data merge through jumpstart', () => {
  it('REST: the values are drawn where the tags stood, the tags removed, the envelope’s document is the merged file; sealed, pdftotext reads the values and pdfsig says valid', async () => {
    const team = await seedTeam(app);
    const made = await template(team, await fixture(TURKISH));
    const answer = await restClient(app, team.apiKey).post(`/envelopes/jumpstart/${made.templateId}`, { recipients: buyer, data: fullData });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    const envelopeId = answer.body.payload.envelopeId;
    const full = await envelopeOf(team, envelopeId);
    const document = full.documents[0];
    expect(document.sha256).not.toBe(made.sha256);
    const draft = await documentBytes(team, envelopeId, document.id);
    expectMerged(textOf(draft, 'draft.pdf'));

    // The audit trail: the document's hash before and after, and the data's hash (canonical JSON).
    const audit = (await restClient(app, team.apiKey).get(`/envelopes/${envelopeId}/audit`)).body.payload.events;
    const created = audit.find((event: any) => event.type === 'envelope.created');
    expect(created.details.dataMerge).toEqual({
      dataSha256: createHash('sha256').update(sortedKeysJson(fullData)).digest('hex'),
      documents: [{ documentId: document.id, name: expect.any(String), sha256Before: made.sha256, sha256After: document.sha256, tags: 5 }],
    });
    // The stored merged file is exactly what its hash names.
    const [row] = await app.orm.em.fork().execute<{ content_sha256: string }[]>(`select content_sha256 from document where id = ?`, [document.id]);
    expect(row!.content_sha256).toBe(document.sha256);

    // Send, sign, seal: the sealed PDF carries the merged values and a valid seal.
    await sendSignAndSeal(team, envelopeId, full.recipients[0].id);
    const sealed = await documentBytes(team, envelopeId, document.id);
    const sealedText = textOf(sealed, 'sealed.pdf');
    expectMerged(sealedText);
    expect(pdfsig(path.join(directory, 'sealed.pdf'))).toContain('Signature Validation: Signature is Valid.');
  });

  it('a LibreOffice Writer export with Turkish text: merged, tags gone (one split across a bold run), sealed; pdftotext and pdfsig agree', async () => {
    const team = await seedTeam(app);
    const made = await template(team, new Uint8Array(fs.readFileSync(path.join(import.meta.dirname, 'fixtures/libreoffice/data-merge.pdf'))));
    const answer = await restClient(app, team.apiKey).post(`/envelopes/jumpstart/${made.templateId}`, { recipients: buyer, data: fullData });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    const envelopeId = answer.body.payload.envelopeId;
    const full = await envelopeOf(team, envelopeId);
    await sendSignAndSeal(team, envelopeId, full.recipients[0].id);
    const sealed = await documentBytes(team, envelopeId, full.documents[0].id);
    const text = textOf(sealed, 'libreoffice-sealed.pdf');
    for (const value of ['Ayşe Yılmaz-Öztürk', 'İzmir', '1.234,50', '3 Mart 2027', 'Çay makinesi', 'Şeker ğ ı İ']) expect(text).toContain(value);
    // The producer's own text around the tags is intact; no piece of a tag is left.
    for (const kept of ['KİRA SÖZLEŞMESİ', 'Kiracı:', 'şubesi, ığüşöç İĞÜŞÖÇ', 'Aylık kira:', 'Başlangıç tarihi:']) expect(text).toContain(kept);
    expect(text).not.toContain('{{');
    expect(text).not.toContain('data:');
    expect(text).not.toContain('format=');
    expect(pdfsig(path.join(directory, 'libreoffice-sealed.pdf'))).toContain('Signature Validation: Signature is Valid.');
  });

  it('GraphQL: jumpstartEnvelope takes data and merges it the same way', async () => {
    const team = await seedTeam(app);
    const made = await template(team, await fixture(TURKISH));
    const result = await graphqlClient(app, team.apiKey)(
      `mutation($t: ID!, $input: JumpstartEnvelopeInput) { jumpstartEnvelope(templateId: $t, input: $input) { id documents { id sha256 } auditEvents { type details } } }`,
      { t: made.templateId, input: { recipients: buyer, data: fullData } },
    );
    expect(result.errors, JSON.stringify(result.errors)).toBeUndefined();
    const envelope = result.data.jumpstartEnvelope;
    expect(envelope.documents[0].sha256).not.toBe(made.sha256);
    expect(envelope.auditEvents[0].details.dataMerge.documents[0]).toMatchObject({ sha256Before: made.sha256, sha256After: envelope.documents[0].sha256 });
    expectMerged(textOf(await documentBytes(team, envelope.id, envelope.documents[0].id), 'graphql.pdf'));
  });

  it('missing paths are refused before anything is made, every one listed, through both faces', async () => {
    const team = await seedTeam(app);
    const made = await template(team, await fixture(TURKISH));
    const data = { customer: { city: 'İzmir' }, items: [{ name: 'Çay' }, { label: 'no name' }] };
    const rest = await restClient(app, team.apiKey).post(`/envelopes/jumpstart/${made.templateId}`, { recipients: buyer, data });
    expect(rest.status).toBe(400);
    expect(rest.body.error.name).toBe('Request.Invalid');
    expect(rest.body.error.context.issues.map((issue: any) => issue.path).sort()).toEqual(['data.customer.name', 'data.items[1].name', 'data.signedOn', 'data.total']);
    const graphql = await graphqlClient(app, team.apiKey)(`mutation($t: ID!, $input: JumpstartEnvelopeInput) { jumpstartEnvelope(templateId: $t, input: $input) { id } }`, {
      t: made.templateId,
      input: { recipients: buyer, data },
    });
    expect(graphql.errors?.[0]?.extensions?.name).toBe('Request.Invalid');
    expect((graphql.errors?.[0]?.extensions?.context as any).issues).toHaveLength(4);
    // No data at all: every path of the template is missing.
    const none = await restClient(app, team.apiKey).post(`/envelopes/jumpstart/${made.templateId}`, { recipients: buyer });
    expect(none.body.error.context.issues.map((issue: any) => issue.path).sort()).toEqual(['data.customer.city', 'data.customer.name', 'data.items[].name', 'data.signedOn', 'data.total']);
    expect(await envelopeCount(team.teamId)).toBe(0);
  });

  it('missingData: "blank" leaves missing values blank and still removes their tags', async () => {
    const team = await seedTeam(app);
    const made = await template(team, await fixture(TURKISH));
    const answer = await restClient(app, team.apiKey).post(`/envelopes/jumpstart/${made.templateId}`, { recipients: buyer, data: { customer: { name: 'Ali Şahin' } }, missingData: 'blank' });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    const full = await envelopeOf(team, answer.body.payload.envelopeId);
    const text = textOf(await documentBytes(team, answer.body.payload.envelopeId, full.documents[0].id), 'blank.pdf');
    expect(text).toContain('Ali Şahin');
    expect(text).toContain('Kalemler:');
    expect(text).not.toContain('{{');
  });

  it('a template without data tags is copied as before (the same stored document), with the data’s hash recorded', async () => {
    const team = await seedTeam(app);
    const made = await template(team, await fixture(['Sözleşme metni, etiket yok.']));
    const answer = await restClient(app, team.apiKey).post(`/envelopes/jumpstart/${made.templateId}`, { recipients: buyer, data: { a: 1 } });
    expect(answer.status).toBe(200);
    const full = await envelopeOf(team, answer.body.payload.envelopeId);
    expect(full.documents[0].sha256).toBe(made.sha256);
  });
});

describe('where and how values are drawn; dry runs and repeats', () => {
  it('each value starts where its tag started (right-aligned ones end where it ended); a list goes down one line per item', async () => {
    const team = await seedTeam(app);
    const original = await fixture(['Ad: {{data:customer.name}} sonu', 'Tutar: {{data;path=total;align=right;format=number:2}} TL', 'Liste: {{data:items[].name}}']);
    const originalFile = path.join(directory, 'placed-original.pdf');
    fs.writeFileSync(originalFile, original);
    const before = wordBoxes(originalFile)[0]!;
    const tagWord = (start: string) => before.find((word) => word.text.startsWith(start))!;
    const made = await template(team, original);
    const answer = await restClient(app, team.apiKey).post(`/envelopes/jumpstart/${made.templateId}`, {
      recipients: buyer,
      data: { customer: { name: 'Öykü' }, total: 7.5, items: [{ name: 'Birinci' }, { name: 'İkinci' }] },
    });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    const envelopeId = answer.body.payload.envelopeId;
    const full = await envelopeOf(team, envelopeId);
    const mergedFile = path.join(directory, 'placed-merged.pdf');
    fs.writeFileSync(mergedFile, await documentBytes(team, envelopeId, full.documents[0].id));
    const after = wordBoxes(mergedFile)[0]!;
    const word = (text: string) => after.find((candidate) => candidate.text === text)!;
    expect(after.some((candidate) => candidate.text.includes('{{'))).toBe(false);
    // The words around the tags stay where they were.
    expect(Math.abs(word('sonu').xMin - before.find((candidate) => candidate.text === 'sonu')!.xMin)).toBeLessThan(0.5);
    expect(Math.abs(word('Öykü').xMin - tagWord('{{data:customer').xMin)).toBeLessThan(1);
    expect(Math.abs(word('7.50').xMax - tagWord('{{data;path=total').xMax)).toBeLessThan(1.5);
    const first = word('Birinci');
    const second = word('İkinci');
    expect(Math.abs(first.xMin - tagWord('{{data:items').xMin)).toBeLessThan(1);
    expect(Math.abs(second.xMin - first.xMin)).toBeLessThan(1);
    expect(second.yMin - first.yMin).toBeGreaterThan(10);
  });

  it('a dry run checks the data against the tags (missing paths listed) and stores nothing', async () => {
    const team = await seedTeam(app);
    const made = await template(team, await fixture(TURKISH));
    const rest = restClient(app, team.apiKey);
    const missing = await rest.post(`/envelopes/jumpstart/${made.templateId}?dryRun=true`, { recipients: buyer, data: { customer: { name: 'x' } } });
    expect(missing.status).toBe(400);
    expect(missing.body.error.context.issues).toHaveLength(4);
    const fine = await rest.post(`/envelopes/jumpstart/${made.templateId}?dryRun=true`, { recipients: buyer, data: fullData });
    expect(fine.status, JSON.stringify(fine.body)).toBe(200);
    expect(await envelopeCount(team.teamId)).toBe(0);
  });

  it('a repeat with its Idempotency-Key answers the first envelope even once the template is gone', async () => {
    const team = await seedTeam(app);
    const made = await template(team, await fixture(TURKISH));
    const headers = { 'idempotency-key': 'merge-repeat-1' };
    const rest = restClient(app, team.apiKey);
    const first = await rest.post(`/envelopes/jumpstart/${made.templateId}`, { recipients: buyer, data: fullData }, headers);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect((await rest.delete(`/templates/${made.templateId}`)).status).toBe(200);
    const repeat = await rest.post(`/envelopes/jumpstart/${made.templateId}`, { recipients: buyer, data: fullData }, headers);
    expect(repeat.status, JSON.stringify(repeat.body)).toBe(200);
    expect(repeat.body.payload.envelopeId).toBe(first.body.payload.envelopeId);
    expect(await envelopeCount(team.teamId)).toBe(1);
  });
});

describe('hostile data and tags: bounded, named, nothing made', () => {
  it('data with 10,000 keys, a 20,000-character text, or nesting 40 deep is Request.Invalid at "data"', async () => {
    const team = await seedTeam(app);
    const made = await template(team, await fixture(TURKISH));
    const manyKeys = Object.fromEntries(Array.from({ length: 10_000 }, (_, index) => [`k${index}`, 1]));
    let deep: Record<string, unknown> = { v: 1 };
    for (let level = 0; level < 40; level++) deep = { d: deep };
    for (const data of [manyKeys, { customer: { name: 'x'.repeat(20_000) } }, deep, [1, 2], 'text']) {
      const answer = await restClient(app, team.apiKey).post(`/envelopes/jumpstart/${made.templateId}`, { recipients: buyer, data });
      expect(answer.status, JSON.stringify(answer.body).slice(0, 300)).toBe(400);
      expect(answer.body.error.name).toBe('Request.Invalid');
      // Nesting past 32 levels is refused by the JSON body's own bound (path ""), before data is looked at.
      if (data !== deep) expect(answer.body.error.context.issues[0].path, JSON.stringify(answer.body.error.context.issues)).toMatch(/^data/);
    }
    const graphql = await graphqlClient(app, team.apiKey)(`mutation($t: ID!, $input: JumpstartEnvelopeInput) { jumpstartEnvelope(templateId: $t, input: $input) { id } }`, {
      t: made.templateId,
      input: { recipients: buyer, data: manyKeys },
    });
    expect(graphql.errors?.[0]?.extensions?.name).toBe('Request.Invalid');
    expect(await envelopeCount(team.teamId)).toBe(0);
  });

  it('tags naming __proto__, constructor or prototype never reach a prototype: missing, even when the data has such a key', async () => {
    const team = await seedTeam(app);
    const made = await template(team, await fixture(['A {{data:__proto__.polluted}}', 'B {{data:customer.constructor}}', 'C {{data:x.prototype}}']));
    const body = `{"recipients":${JSON.stringify(buyer)},"data":{"__proto__":{"polluted":"yes"},"customer":{"name":"n"},"x":{}}}`;
    const response = await fetch(`${app.url}/api/v1/key/envelopes/jumpstart/${made.templateId}`, {
      method: 'POST',
      headers: { 'x-service-api-key': team.apiKey, 'content-type': 'application/json' },
      body,
    });
    const answer = (await response.json()) as any;
    expect(response.status).toBe(400);
    expect(answer.error.context.issues.map((issue: any) => issue.path).sort()).toEqual(['data.__proto__.polluted', 'data.customer.constructor', 'data.x.prototype']);
    expect(({} as any).polluted).toBeUndefined();
    expect(await envelopeCount(team.teamId)).toBe(0);
  });

  it('a malformed data tag refuses the jumpstart by name (Template.DataTagsInvalid), listing it; placing fields from tags passes data tags by', async () => {
    const team = await seedTeam(app);
    const made = await template(team, await fixture(['Ad: {{data;path=customer.name;size=huge}}', 'İmza {{sig;role=buyer}}']));
    const answer = await restClient(app, team.apiKey).post(`/envelopes/jumpstart/${made.templateId}`, { recipients: buyer, data: { customer: { name: 'x' } } });
    expect(answer.status).toBe(422);
    expect(answer.body.error.name).toBe('Template.DataTagsInvalid');
    expect(answer.body.error.context.tags).toEqual([
      { documentId: made.documentId, tag: '{{data;path=customer.name;size=huge}}', page: 0, reason: '"size" must be a number of points from 8 to 72' },
    ]);
    expect(await envelopeCount(team.teamId)).toBe(0);
    const placed = await restClient(app, team.apiKey).post(`/templates/${made.templateId}/documents/${made.documentId}/place-fields`, { from: 'tags', roles: { buyer: made.signerId } });
    expect(placed.status, JSON.stringify(placed.body)).toBe(200);
    expect(placed.body.payload.unmatched).toEqual([]);
    expect(placed.body.payload.fields).toHaveLength(1);
  });

  it('a value of the wrong kind for the tag’s format is listed with the missing paths', async () => {
    const team = await seedTeam(app);
    const made = await template(team, await fixture(TURKISH));
    const answer = await restClient(app, team.apiKey).post(`/envelopes/jumpstart/${made.templateId}`, { recipients: buyer, data: { ...fullData, total: 'a lot', signedOn: '2027-02-30' } });
    expect(answer.status).toBe(400);
    expect(answer.body.error.context.issues.map((issue: any) => issue.path).sort()).toEqual(['data.signedOn', 'data.total']);
  });
});

describe('data merge in bulk send', () => {
  async function drain(teamId: string) {
    const worker = mainWorkerFor(app, teamId, { concurrency: 2 });
    for (let round = 0; round < 1_000; round += 1) if ((await worker.drain()) === 0) break;
  }

  async function rowsOf(team: SeededTeam, bulkSendId: string) {
    return (await restClient(app, team.apiKey).get(`/bulk-sends/${bulkSendId}/rows?limit=100`)).body.payload.rows;
  }

  it('CSV columns data.PATH fill each row’s envelope; a row lacking a path is listed by index before anything is made', async () => {
    const team = await seedTeam(app);
    const made = await template(team, await fixture(TURKISH));
    const header = 'buyer.name,buyer.email,data.customer.name,data.customer.city,data.total,data.signedOn,data.items[0].name,data.items[1].name';
    const rows = [
      '"Ayşe Yılmaz-Öztürk",ayse@example.com,"Ayşe Yılmaz-Öztürk",İzmir,1234.5,2027-03-03,Çay makinesi,"Şeker ğ ı İ"',
      'Cem Kaya,cem@example.com,Cem Kaya,Ankara,10,2027-01-15,Kalem,Defter',
    ];
    const post = async (text: string, fields: Record<string, string> = {}) => {
      const form = new FormData();
      form.append('csv', new Blob([Buffer.from(text, 'utf8')], { type: 'text/csv' }), 'rows.csv');
      for (const [name, value] of Object.entries(fields)) form.append(name, value);
      const response = await fetch(`${app.url}/api/v1/key/templates/${made.templateId}/bulk-sends`, { method: 'POST', headers: { 'x-service-api-key': team.apiKey }, body: form });
      return { status: response.status, body: (await response.json()) as any };
    };
    // A row without its city: refused, listed by index and path; nothing made.
    const refused = await post(`${header}\n${rows[0]}\n"Cem Kaya",cem@example.com,Cem Kaya,,10,2027-01-15,Kalem,Defter\n`);
    expect(refused.status).toBe(400);
    expect(refused.body.error.context.rows).toEqual([{ index: 1, line: 3, issues: [{ path: 'data.customer.city', message: expect.stringContaining('missing') }] }]);
    const forbidden = await post(`buyer.name,buyer.email,data.__proto__.x\nA,a@example.com,1\n`);
    expect(forbidden.status).toBe(400);
    expect(forbidden.body.error.context.issues[0].path).toBe('csv.header[2]');

    const answer = await post(`${header}\n${rows.join('\n')}\n`);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    await drain(team.teamId);
    const made2 = await rowsOf(team, answer.body.payload.bulkSendId);
    expect(made2.map((row: any) => row.status)).toEqual(['sent', 'sent']);
    const first = await envelopeOf(team, made2[0].envelopeId);
    expect(first.documents[0].sha256).not.toBe(made.sha256);
    expectMerged(textOf(await documentBytes(team, made2[0].envelopeId, first.documents[0].id), 'bulk-0.pdf'));
    const second = await envelopeOf(team, made2[1].envelopeId);
    const secondText = textOf(await documentBytes(team, made2[1].envelopeId, second.documents[0].id), 'bulk-1.pdf');
    expect(secondText).toContain('Ankara');
    expect(secondText).toContain('10,00');
    expect(secondText).toContain('15 Ocak 2027');
    expect(secondText).not.toContain('{{');
    const audit = (await restClient(app, team.apiKey).get(`/envelopes/${made2[1].envelopeId}/audit`)).body.payload.events;
    expect(audit.find((event: any) => event.type === 'envelope.created').details.dataMerge.documents[0]).toMatchObject({
      sha256Before: made.sha256,
      sha256After: second.documents[0].sha256,
    });
  });

  it('JSON rows take data (GraphQL), and missingData: "blank" lets a row without data through', async () => {
    const team = await seedTeam(app);
    const made = await template(team, await fixture(['Ad: {{data:customer.name}}', 'Sabit metin']));
    const result = await graphqlClient(app, team.apiKey)(`mutation($t: ID!, $input: CreateBulkSendInput!) { createBulkSend(templateId: $t, input: $input) { id total } }`, {
      t: made.templateId,
      input: {
        missingData: 'blank',
        rows: [
          { recipients: [{ identifier: 'buyer', agents: [{ info: { name: 'Gül Er', email: 'gul@example.com' } }] }], data: { customer: { name: 'Gül Er' } } },
          { recipients: [{ identifier: 'buyer', agents: [{ info: { name: 'Boş', email: 'bos@example.com' } }] }] },
        ],
      },
    });
    expect(result.errors, JSON.stringify(result.errors)).toBeUndefined();
    // A row whose data passes a bound is invalid by index (REST JSON), the others untouched.
    const huge = await restClient(app, team.apiKey).post(`/templates/${made.templateId}/bulk-sends`, {
      rows: [
        { recipients: [{ identifier: 'buyer', agents: [{ info: { name: 'A', email: 'a@example.com' } }] }], data: { customer: { name: 'A' } } },
        {
          recipients: [{ identifier: 'buyer', agents: [{ info: { name: 'B', email: 'b@example.com' } }] }],
          data: Object.fromEntries(Array.from({ length: 5_000 }, (_, index) => [`k${index}`, 1])),
        },
      ],
    });
    expect(huge.status).toBe(400);
    expect(huge.body.error.context.rows).toEqual([{ index: 1, issues: [{ path: 'data', message: 'must hold at most 1000 values' }] }]);
    await drain(team.teamId);
    const rows = await rowsOf(team, result.data.createBulkSend.id);
    expect(rows.map((row: any) => row.status)).toEqual(['sent', 'sent']);
    const texts = await Promise.all(
      rows.map(async (row: any, index: number) => {
        const envelope = await envelopeOf(team, row.envelopeId);
        return textOf(await documentBytes(team, row.envelopeId, envelope.documents[0].id), `json-${index}.pdf`);
      }),
    );
    expect(texts[0]).toContain('Gül Er');
    expect(texts[1]).toContain('Sabit metin');
    for (const text of texts) expect(text).not.toContain('{{');
  });
});

describe('data merge: bulk send repeats', () => {
  it('a bulk send repeated with its Idempotency-Key once the template is gone answers the first bulk send', async () => {
    const team = await seedTeam(app);
    const made = await template(team, await fixture(['Ad: {{data:customer.name}}']));
    const rest = restClient(app, team.apiKey);
    const body = { rows: [{ recipients: [{ identifier: 'buyer', agents: [{ info: { name: 'A', email: 'a@example.com' } }] }], data: { customer: { name: 'A' } } }] };
    const headers = { 'idempotency-key': 'bulk-merge-1' };
    const first = await rest.post(`/templates/${made.templateId}/bulk-sends`, body, headers);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect((await rest.delete(`/templates/${made.templateId}`)).status).toBe(200);
    const repeat = await rest.post(`/templates/${made.templateId}/bulk-sends`, body, headers);
    expect(repeat.status, JSON.stringify(repeat.body)).toBe(200);
    expect(repeat.body.payload.bulkSendId).toBe(first.body.payload.bulkSendId);
  });
});

describe('data merge through public links', () => {
  it('a link carries data (checked against the tags when made, every missing path listed); each envelope it makes has it merged', async () => {
    const team = await seedTeam(app);
    const made = await template(team, await fixture(TURKISH));
    const rest = restClient(app, team.apiKey);
    const refused = await rest.post(`/templates/${made.templateId}/public-links`, { role: 'buyer', verifyEmail: false, data: { customer: { name: 'x' } } });
    expect(refused.status).toBe(400);
    expect(refused.body.error.context.issues.map((issue: any) => issue.path).sort()).toEqual(['data.customer.city', 'data.items[].name', 'data.signedOn', 'data.total']);
    expect((await rest.get('/public-links')).body.payload.publicLinks).toEqual([]);

    const created = await graphqlClient(app, team.apiKey)(
      `mutation($t: ID!, $input: CreatePublicLinkInput!) { createPublicLink(templateId: $t, input: $input) { id url data missingData } }`,
      { t: made.templateId, input: { role: 'buyer', verifyEmail: false, data: fullData } },
    );
    expect(created.errors, JSON.stringify(created.errors)).toBeUndefined();
    const link = created.data.createPublicLink;
    expect(link).toMatchObject({ data: fullData, missingData: 'refuse' });
    const slug = new URL(link.url).pathname.split('/')[2]!;
    const visit = await fetch(`${app.url}/f/${slug}`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ name: 'Deniz Aydın', email: 'deniz@example.com', locale: 'tr-TR' }).toString(),
    });
    expect(visit.status, await visit.text()).toBe(303);
    const listed = (await rest.get(`/envelopes?publicLinkId=${link.id}`)).body.payload.envelopes;
    expect(listed).toHaveLength(1);
    const envelope = await envelopeOf(team, listed[0].id);
    expect(envelope.documents[0].sha256).not.toBe(made.sha256);
    expectMerged(textOf(await documentBytes(team, listed[0].id, envelope.documents[0].id), 'link.pdf'));

    // Made with an Idempotency-Key, repeated once the template is gone: the first link again.
    const other = await template(team, await fixture(TURKISH));
    const headers = { 'idempotency-key': 'link-merge-1' };
    const first = await rest.post(`/templates/${other.templateId}/public-links`, { role: 'buyer', data: fullData }, headers);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect((await rest.delete(`/templates/${other.templateId}`)).status).toBe(200);
    const repeat = await rest.post(`/templates/${other.templateId}/public-links`, { role: 'buyer', data: fullData }, headers);
    expect(repeat.body.payload.publicLink.id).toBe(first.body.payload.publicLink.id);
  });
});
