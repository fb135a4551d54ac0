import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unknownId } from './helpers/envelopes.ts';
import { firstErrorName, graphqlClient, restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { blackPngDataUrl, pdfsig } from './helpers/pdf-tools.ts';
import { buildEnvelope, SUBMIT_MUTATION, signAndComplete, signingClient, tokenFor } from './helpers/signing.ts';
import { mainWorkerFor } from './helpers/workers.ts';

let app: TestApp;
let team: SeededTeam;
let directory: string;
beforeAll(async () => {
  app = await startTestApp();
  team = await seedTeam(app);
  directory = fs.mkdtempSync(path.join(os.tmpdir(), 'audit-pdf-'));
});
afterAll(async () => {
  fs.rmSync(directory, { recursive: true, force: true });
  await app.close();
});

const strokes = [
  [
    { x: 1, y: 2, t: 0, p: 0.25 },
    { x: 5, y: 8, t: 40, p: 0.75 },
  ],
  [{ x: 9, y: 3, t: 90, p: 0.5 }],
];

async function sentEnvelope() {
  const built = await buildEnvelope(app, team.apiKey, {
    name: 'Kira sözleşmesi',
    recipients: [
      {
        identifier: 'signer',
        fields: [
          { identifier: 'signature', required: true },
          { identifier: 'pen', type: 'biometric_signature', required: false },
        ],
      },
    ],
  });
  expect((await restClient(app, team.apiKey).put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
  return built;
}

async function finalizedEnvelope() {
  const built = await sentEnvelope();
  const token = await tokenFor(app, built.envelopeId, built.recipients.signer!);
  const pen = await signingClient(app, token)(SUBMIT_MUTATION, { values: [{ fieldId: built.fields.pen, value: { image: blackPngDataUrl(), strokes } }] });
  expect(pen.errors, JSON.stringify(pen.errors)).toBeUndefined();
  expect((await signAndComplete(app, token)).errors).toBeUndefined();
  return built;
}

async function fetchAuditPdf(envelopeId: string, query = '', headers: Record<string, string> = {}) {
  const response = await fetch(`${app.url}/api/v1/key/envelopes/${envelopeId}/audit/pdf${query}`, { headers: { 'x-service-api-key': team.apiKey, ...headers } });
  return { status: response.status, type: response.headers.get('content-type'), bytes: Buffer.from(await response.arrayBuffer()) };
}

function textOf(bytes: Buffer, name: string): { file: string; text: string } {
  const file = path.join(directory, name);
  fs.writeFileSync(file, bytes);
  // -raw: the text in drawing order, so wrapped long lines (hashes, JSON) are not interleaved.
  return { file, text: execFileSync('pdftotext', ['-raw', file, '-'], { encoding: 'utf8' }) };
}

describe('the audit-log PDF', () => {
  it('is refused with Envelope.NotFinalized (status in context) while the envelope is sent, on both faces', async () => {
    const built = await sentEnvelope();
    const rest = await fetchAuditPdf(built.envelopeId);
    expect(rest.status).toBe(409);
    expect(JSON.parse(rest.bytes.toString()).error).toMatchObject({ name: 'Envelope.NotFinalized', context: { status: 'sent' } });
    const graphql = await graphqlClient(app, team.apiKey)('query($id: ID!) { auditLogPdfUrl(envelopeId: $id) { url } }', { id: built.envelopeId });
    expect(firstErrorName(graphql)).toBe('Envelope.NotFinalized');
    expect(graphql.errors![0].extensions.context.status).toBe('sent');
  });

  it('lists the envelope, documents with both hashes, recipients, every event as a sentence, biometric summaries and the chain head, sealed (en-US)', async () => {
    const built = await finalizedEnvelope();
    const answer = await fetchAuditPdf(built.envelopeId);
    expect(answer.status).toBe(200);
    expect(answer.type).toBe('application/pdf');
    // The certificate was fixed on this first download (no artefact job ran in this test): the
    // documents were sealed first, and it holds every event up to then.
    const verify = (await restClient(app, team.apiKey).get(`/envelopes/${built.envelopeId}/audit/verify`)).body.payload.verification;
    const trail = (await restClient(app, team.apiKey).get(`/envelopes/${built.envelopeId}/audit`)).body.payload.events;
    const download = trail.at(-1);
    expect(download).toMatchObject({ seq: verify.length, type: 'artefact.downloaded', details: { format: 'audit-pdf', locale: 'en-US', current: false } });
    const head = trail.at(-2);
    expect(download.details.chainHead).toBe(head.hash);
    const { file, text } = textOf(answer.bytes, 'audit-en.pdf');
    const report = pdfsig(file);
    expect(report).toContain('Signature Type: ETSI.CAdES.detached');
    expect(report).toContain('Total document signed');
    expect(report).toContain('Signature is Valid.');
    const flat = text.replace(/\s+/g, ' ');
    expect(flat).toContain('Certificate of completion: Kira sözleşmesi');
    expect(flat).toContain(built.envelopeId);
    const document = (await restClient(app, team.apiKey).get(`/envelopes/${built.envelopeId}/documents/${built.documentId}`)).body.payload.document;
    expect(flat).toContain(document.sha256 ?? document.contentSha256);
    for (const sentence of [
      'created the envelope.',
      'sent the envelope for signing',
      'Person signer (signer@example.com) filled in',
      'Person signer (signer@example.com) completed the role',
      'the envelope was completed.',
      'The service sealed the document',
    ]) {
      expect(flat).toContain(sentence);
    }
    // The raw appendix keeps the types.
    for (const type of ['envelope.created', 'envelope.sent', 'field.submitted', 'recipient.completed', 'envelope.finalized', 'artefact.sealed']) expect(flat).toContain(type);
    expect(flat).toMatch(/pen \(Person signer \(signer@example\.com\)\): 2 strokes, 3 points, 90 ms, pressure 0.25–0.75/);
    expect(flat).toContain(`Chain head: ${head.hash}`);
    expect(flat).toContain(`The chain of ${head.seq} events verifies.`);
  });

  it('names each person in each event sentence as they were then: an invitation sent to a mistyped address says that address after a resend corrected it', async () => {
    const built = await buildEnvelope(app, team.apiKey, {
      name: 'Corrected address',
      recipients: [{ identifier: 'signer', agents: [{ info: { name: 'Ada Typo', email: 'ada@exmaple.com' } }], fields: [{ identifier: 'signature', required: true }] }],
    });
    expect((await restClient(app, team.apiKey).put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
    // The first invitation goes out to the typo.
    await mainWorkerFor(app, team.teamId).drain();
    const resent = await restClient(app, team.apiKey).post(`/envelopes/${built.envelopeId}/recipients/${built.recipients.signer}/resend`, { email: 'ada@example.com' });
    expect(resent.status, JSON.stringify(resent.body)).toBe(200);
    // The new link, read before its delivery clears it from the queue (the first one's is gone).
    const [pending] = await app.orm.em
      .fork()
      .execute<{ link: string }[]>(
        `select payload -> 'secret' ->> 'link' as link from outbox_message where topic = 'signing.invitation' and payload ->> 'envelopeId' = ? and payload -> 'secret' ->> 'link' is not null`,
        [built.envelopeId],
      );
    await mainWorkerFor(app, team.teamId).drain();
    expect((await signAndComplete(app, pending!.link.split('/sign/')[1]!)).errors).toBeUndefined();
    const answer = await fetchAuditPdf(built.envelopeId);
    expect(answer.status).toBe(200);
    const flat = textOf(answer.bytes, 'audit-corrected.pdf').text.replace(/\s+/g, ' ');
    const sentTo = [...flat.matchAll(/The invitation was sent to Ada Typo \(([^)]+)\) by email\./g)].map((match) => match[1]);
    expect(sentTo).toEqual(['ada@exmaple.com', 'ada@example.com']);
    expect(flat).toContain('The invitation of Ada Typo (ada@exmaple.com) to the role');
    expect(flat).toContain('Ada Typo (ada@example.com) completed the role');
  });

  it("says who sent it by the team's display name when it has one, else by the team's name", async () => {
    const named = await seedTeam(app);
    expect((await restClient(app, named.apiKey).patch('/team/settings', { displayName: 'Acme Legal' })).status).toBe(200);
    for (const [owner, sender] of [
      [named, 'Acme Legal'],
      [team, null],
    ] as const) {
      const built = await buildEnvelope(app, owner.apiKey, { name: 'Sender', recipients: [{ identifier: 'signer', fields: [{ identifier: 'signature', required: true }] }] });
      expect((await restClient(app, owner.apiKey).put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
      expect((await signAndComplete(app, await tokenFor(app, built.envelopeId, built.recipients.signer!))).errors).toBeUndefined();
      const response = await fetch(`${app.url}/api/v1/key/envelopes/${built.envelopeId}/audit/pdf`, { headers: { 'x-service-api-key': owner.apiKey } });
      expect(response.status).toBe(200);
      const flat = textOf(Buffer.from(await response.arrayBuffer()), `audit-sender-${sender ?? 'team'}.pdf`).text.replace(/\s+/g, ' ');
      const [row] = await app.orm.em.fork().execute<{ name: string }[]>('select name from team where id = ?', [owner.teamId]);
      expect(flat).toContain(`Sent by: ${sender ?? row!.name}`);
      if (sender) expect(flat).not.toContain(`Sent by: ${row!.name}`);
    }
  });

  it('speaks Turkish when asked (locale=tr-TR or Accept-Language: tr), and refuses other locales by name', async () => {
    const built = await finalizedEnvelope();
    for (const [query, headers] of [
      ['?locale=tr-TR', {}],
      ['', { 'accept-language': 'tr-TR,tr;q=0.9' }],
    ] as const) {
      const answer = await fetchAuditPdf(built.envelopeId, query, headers);
      expect(answer.status).toBe(200);
      const flat = textOf(answer.bytes, 'audit-tr.pdf').text.replace(/\s+/g, ' ');
      expect(flat).toContain('Tamamlanma sertifikası: Kira sözleşmesi');
      expect(flat).toContain('Denetim zinciri');
      expect(flat).toContain('Biyometrik imzalar');
    }
    const invalid = await fetchAuditPdf(built.envelopeId, '?locale=de-DE');
    expect(invalid.status).toBe(400);
    expect(JSON.parse(invalid.bytes.toString()).error.context.issues[0].path).toBe('locale');
  });

  it('comes through a signed GraphQL URL too; a foreign envelope is not found on both faces', async () => {
    const built = await finalizedEnvelope();
    const link = await graphqlClient(app, team.apiKey)('query($id: ID!) { auditLogPdfUrl(envelopeId: $id, locale: TR_TR) { url } }', { id: built.envelopeId });
    expect(link.errors).toBeUndefined();
    const fetched = await fetch(`${app.url}${new URL(link.data.auditLogPdfUrl.url).pathname}`);
    expect(fetched.status).toBe(200);
    expect(textOf(Buffer.from(await fetched.arrayBuffer()), 'audit-link.pdf').text).toContain('Tamamlanma sertifikası');

    const stranger = await seedTeam(app);
    const foreign = await fetch(`${app.url}/api/v1/key/envelopes/${built.envelopeId}/audit/pdf`, { headers: { 'x-service-api-key': stranger.apiKey } });
    expect(foreign.status).toBe(404);
    expect(((await foreign.json()) as any).error.name).toBe('Envelope.NotFound');
    expect(firstErrorName(await graphqlClient(app, stranger.apiKey)('query($id: ID!) { auditLogPdfUrl(envelopeId: $id) { url } }', { id: built.envelopeId }))).toBe('Envelope.NotFound');
    expect(firstErrorName(await graphqlClient(app, stranger.apiKey)('query($id: ID!) { auditLogPdfUrl(envelopeId: $id) { url } }', { id: unknownId }))).toBe('Envelope.NotFound');
  });
});
