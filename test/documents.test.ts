import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listAuditEvents } from '../src/domain/audit/audit.service.ts';
import { PDF_CONTENT_OPERATORS_LIMIT, PDF_FORM_PAINTS_LIMIT, PDF_INFLATED_BYTES_LIMIT } from '../src/domain/pdf/inspect/inspect.ts';
import {
  cutFinalEofMarker,
  makeDeepArraysAfterTagPdf,
  makeEncryptedPdf,
  makeExactSizePdf,
  makeInflatingPdf,
  makeManyTextOperatorsPdf,
  makeNestedFormsPdf,
  makePdf,
  notAPdf,
  truncate,
} from './fixtures/pdfs.ts';
import { forceEnvelopeStatus, unknownId, uploadDocument, uploadDocumentThroughGraphql } from './helpers/envelopes.ts';
import { eventually } from './helpers/eventually.ts';
import { firstErrorName, graphqlClient, restClient, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app.close();
});

async function newDraft(apiKey: string, name = 'Contract'): Promise<string> {
  return (await restClient(app, apiKey).post('/envelopes', { name })).body.payload.envelopeId;
}

function stagingFiles(): string[] {
  const directory = path.join(app.dataDir, 'blobs', 'tmp');
  return fs.existsSync(directory) ? fs.readdirSync(directory) : [];
}

describe('uploading documents', () => {
  it.each([1, 3, 12])('accepts a %i-page PDF through REST and answers one page object per page', async (pages) => {
    const team = await seedTeam(app);
    const envelopeId = await newDraft(team.apiKey);
    const bytes = await makePdf({ pages, size: (index) => (index % 2 === 0 ? [595, 842] : [612, 792]) });
    const uploaded = await uploadDocument(app, team.apiKey, envelopeId, { bytes, filename: `deal-${pages}.pdf` });
    expect(uploaded.status).toBe(200);
    const document = uploaded.body.payload.document;
    expect(document).toMatchObject({ name: `deal-${pages}.pdf`, order: 0, context: {}, pageCount: pages });
    expect(document.pages).toHaveLength(pages);
    expect(document.pages[0]).toMatchObject({ index: 0, width: 595, height: 842 });
    if (pages > 1) expect(document.pages[1]).toMatchObject({ index: 1, width: 612, height: 792 });
    // The original is stored once under its SHA-256.
    const { createHash } = await import('node:crypto');
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    expect(document.sha256).toBe(sha256);
    expect(fs.readFileSync(path.join(app.dataDir, 'blobs', sha256.slice(0, 2), sha256)).equals(Buffer.from(bytes))).toBe(true);
  });

  it.each([1, 3, 12])('accepts a %i-page PDF through the GraphQL multipart request spec', async (pages) => {
    const team = await seedTeam(app);
    const envelopeId = await newDraft(team.apiKey);
    const uploaded = await uploadDocumentThroughGraphql(app, team.apiKey, envelopeId, { bytes: await makePdf({ pages }), filename: 'gql.pdf' });
    expect(uploaded.body.errors).toBeUndefined();
    expect(uploaded.body.data.addDocument).toMatchObject({ name: 'gql.pdf', pageCount: pages, order: 0 });
    expect(uploaded.body.data.addDocument.pages).toHaveLength(pages);
  });

  it('takes name, order and context from the form, and defaults order to after the last document', async () => {
    const team = await seedTeam(app);
    const envelopeId = await newDraft(team.apiKey);
    const bytes = await makePdf({ pages: 1 });
    const first = await uploadDocument(app, team.apiKey, envelopeId, { bytes }, { name: 'Main contract', context: '{"kind":"main"}' });
    expect(first.body.payload.document).toMatchObject({ name: 'Main contract', order: 0, context: { kind: 'main' } });
    const second = await uploadDocument(app, team.apiKey, envelopeId, { bytes, filename: 'annex.pdf' });
    expect(second.body.payload.document).toMatchObject({ name: 'annex.pdf', order: 1 });
    const explicit = await uploadDocument(app, team.apiKey, envelopeId, { bytes }, { order: '7' });
    expect(explicit.body.payload.document.order).toBe(7);
    const viaGraphql = await uploadDocumentThroughGraphql(app, team.apiKey, envelopeId, { bytes }, { name: 'Via GraphQL', order: 3, context: { a: 1 } });
    expect(viaGraphql.body.data.addDocument).toMatchObject({ name: 'Via GraphQL', order: 3, context: { a: 1 } });
    const listed = await restClient(app, team.apiKey).get(`/envelopes/${envelopeId}?includeDocuments=true`);
    expect(listed.body.payload.documents.map((document: { name: string }) => document.name)).toEqual(['Main contract', 'annex.pdf', 'Via GraphQL', 'contract.pdf']);
    expect(listed.body.payload.documents[0]).toMatchObject({ id: expect.any(String), name: 'Main contract', order: 0, status: null });
  });

  it('enforces the 140-character name limit at and past the bound, on both faces', async () => {
    const team = await seedTeam(app);
    const envelopeId = await newDraft(team.apiKey);
    const bytes = await makePdf({ pages: 1 });
    expect((await uploadDocument(app, team.apiKey, envelopeId, { bytes }, { name: 'n'.repeat(140) })).status).toBe(200);
    const refused = await uploadDocument(app, team.apiKey, envelopeId, { bytes }, { name: 'n'.repeat(141) });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ name: 'Request.Invalid', context: { issues: [{ path: 'name', message: expect.any(String) }] } });
    const viaGraphql = await uploadDocumentThroughGraphql(app, team.apiKey, envelopeId, { bytes }, { name: 'n'.repeat(141) });
    expect(viaGraphql.body.errors[0].extensions.code).toBe('Request.Invalid');
    // A long file name is cut to 140 characters when it becomes the default name.
    const longFile = await uploadDocument(app, team.apiKey, envelopeId, { bytes, filename: `${'f'.repeat(150)}.pdf` });
    expect(longFile.body.payload.document.name).toHaveLength(140);
    const negativeOrder = await uploadDocument(app, team.apiKey, envelopeId, { bytes }, { order: '-1' });
    expect(negativeOrder.body.error.context.issues[0].path).toBe('order');
    const badContext = await uploadDocument(app, team.apiKey, envelopeId, { bytes }, { context: 'not json' });
    expect(badContext.body.error.context.issues[0].path).toBe('context');
    const documents = await restClient(app, team.apiKey).get(`/envelopes/${envelopeId}/documents`);
    expect(documents.body.payload.documents).toHaveLength(2);
  });

  it('refuses a non-PDF named .pdf with Document.NotPdf (415), on both faces, storing nothing', async () => {
    const team = await seedTeam(app);
    const envelopeId = await newDraft(team.apiKey);
    for (const bytes of [notAPdf('png'), notAPdf('text')]) {
      const rest = await uploadDocument(app, team.apiKey, envelopeId, { bytes, filename: 'contract.pdf', type: 'application/pdf' });
      expect(rest.status).toBe(415);
      expect(rest.body.error.name).toBe('Document.NotPdf');
      const graphql = await uploadDocumentThroughGraphql(app, team.apiKey, envelopeId, { bytes, filename: 'contract.pdf' });
      expect(graphql.body.errors[0].extensions.code).toBe('Document.NotPdf');
    }
    expect((await restClient(app, team.apiKey).get(`/envelopes/${envelopeId}/documents`)).body.payload.documents).toEqual([]);
    expect(stagingFiles()).toEqual([]);
  });

  it('refuses truncated PDFs with Document.InvalidPdf (422)', async () => {
    const team = await seedTeam(app);
    const envelopeId = await newDraft(team.apiKey);
    const whole = await makePdf({ pages: 3 });
    for (const bytes of [truncate(whole, 0.5), truncate(whole, 0.9), cutFinalEofMarker(whole)]) {
      const rest = await uploadDocument(app, team.apiKey, envelopeId, { bytes });
      expect(rest.status).toBe(422);
      expect(rest.body.error.name).toBe('Document.InvalidPdf');
    }
    const graphql = await uploadDocumentThroughGraphql(app, team.apiKey, envelopeId, { bytes: truncate(whole, 0.5) });
    expect(graphql.body.errors[0].extensions.code).toBe('Document.InvalidPdf');
    expect(stagingFiles()).toEqual([]);
  });

  it('refuses encrypted PDFs with Document.Encrypted (422), on both faces', async () => {
    const team = await seedTeam(app);
    const envelopeId = await newDraft(team.apiKey);
    const bytes = await makeEncryptedPdf();
    const rest = await uploadDocument(app, team.apiKey, envelopeId, { bytes });
    expect(rest.status).toBe(422);
    expect(rest.body.error.name).toBe('Document.Encrypted');
    const graphql = await uploadDocumentThroughGraphql(app, team.apiKey, envelopeId, { bytes });
    expect(graphql.body.errors[0].extensions.code).toBe('Document.Encrypted');
  });

  it('refuses a deflate bomb (a few hundred KB inflating to twice the 256 MiB a document may) with Document.TooComplex (422) on both faces, storing nothing', async () => {
    const team = await seedTeam(app);
    const envelopeId = await newDraft(team.apiKey);
    const refusal = { name: 'Document.TooComplex', context: { limit: 'inflated_bytes', limitBytes: PDF_INFLATED_BYTES_LIMIT } };
    for (const where of ['object_stream', 'content_stream'] as const) {
      const bytes = await makeInflatingPdf({ inflatedBytes: 2 * PDF_INFLATED_BYTES_LIMIT, where });
      const rest = await uploadDocument(app, team.apiKey, envelopeId, { bytes });
      expect(rest.status).toBe(422);
      expect(rest.body.error).toMatchObject({ ...refusal, description: expect.stringContaining('256 MiB') });
      const graphql = await uploadDocumentThroughGraphql(app, team.apiKey, envelopeId, { bytes });
      expect(graphql.body.data?.addDocument ?? null).toBeNull();
      expect(graphql.body.errors[0].extensions).toMatchObject({ code: refusal.name, context: refusal.context });
      const sha256 = createHash('sha256').update(bytes).digest('hex');
      expect(fs.existsSync(path.join(app.dataDir, 'blobs', sha256.slice(0, 2), sha256))).toBe(false);
    }
    expect((await restClient(app, team.apiKey).get(`/envelopes/${envelopeId}/documents`)).body.payload.documents).toEqual([]);
    expect(stagingFiles()).toEqual([]);
  }, 60_000);

  it('refuses a PDF whose pages cost too much to interpret (nested forms, 1.5 million text operators, arrays 200 000 deep) with Document.TooComplex (422) on both faces, storing nothing', async () => {
    const team = await seedTeam(app);
    const envelopeId = await newDraft(team.apiKey);
    const cases = [
      { bytes: makeNestedFormsPdf({ depth: 10, fanOut: 10 }), context: { limit: 'form_paints', maximum: PDF_FORM_PAINTS_LIMIT } },
      { bytes: makeManyTextOperatorsPdf(1_500_000), context: { limit: 'content_operators', maximum: PDF_CONTENT_OPERATORS_LIMIT } },
      { bytes: makeDeepArraysAfterTagPdf(200_000), context: { limit: 'content_nesting', maximum: 32 } },
    ];
    for (const { bytes, context } of cases) {
      const rest = await uploadDocument(app, team.apiKey, envelopeId, { bytes });
      expect(rest.status, JSON.stringify(rest.body)).toBe(422);
      expect(rest.body.error).toMatchObject({ name: 'Document.TooComplex', context });
      const graphql = await uploadDocumentThroughGraphql(app, team.apiKey, envelopeId, { bytes });
      expect(graphql.body.data?.addDocument ?? null).toBeNull();
      expect(graphql.body.errors[0].extensions).toMatchObject({ code: 'Document.TooComplex', context });
    }
    expect((await restClient(app, team.apiKey).get(`/envelopes/${envelopeId}/documents`)).body.payload.documents).toEqual([]);
    expect(stagingFiles()).toEqual([]);
  }, 60_000);

  it('refuses 48 MB + 1 byte with Document.TooLarge (413) on both faces, keeps no partial file, and keeps serving', async () => {
    const team = await seedTeam(app);
    const envelopeId = await newDraft(team.apiKey);
    const limit = 48 * 1024 * 1024;
    const tooLarge = makeExactSizePdf(limit + 1);
    expect(tooLarge.byteLength).toBe(limit + 1);
    const rest = await uploadDocument(app, team.apiKey, envelopeId, { bytes: tooLarge });
    expect(rest.status).toBe(413);
    expect(rest.body.error).toMatchObject({ name: 'Document.TooLarge', context: { limitBytes: limit } });
    const graphql = await uploadDocumentThroughGraphql(app, team.apiKey, envelopeId, { bytes: tooLarge });
    expect(graphql.body.errors[0].extensions.code).toBe('Document.TooLarge');
    expect(stagingFiles()).toEqual([]);
    expect((await fetch(`${app.url}/healthz`)).status).toBe(200);
    expect((await restClient(app, team.apiKey).get(`/envelopes/${envelopeId}/documents`)).body.payload.documents).toEqual([]);
    // Exactly at the limit is accepted.
    const atLimit = await uploadDocument(app, team.apiKey, envelopeId, { bytes: makeExactSizePdf(limit) });
    expect(atLimit.status).toBe(200);
  }, 120_000);

  it('refuses a multipart body without the document part, and a JSON body, with named errors', async () => {
    const team = await seedTeam(app);
    const envelopeId = await newDraft(team.apiKey);
    const form = new FormData();
    form.append('name', 'No file');
    const missing = await fetch(`${app.url}/api/v1/key/envelopes/${envelopeId}/documents`, {
      method: 'POST',
      headers: { 'x-service-api-key': team.apiKey },
      body: form,
    });
    expect(missing.status).toBe(400);
    expect((await missing.json()).error.name).toBe('Document.Missing');
    const json = await restClient(app, team.apiKey).post(`/envelopes/${envelopeId}/documents`, { name: 'x' });
    expect(json.body.error.name).toBe('Request.Invalid');
    const wrongPart = new FormData();
    wrongPart.append('file', new Blob([(await makePdf({ pages: 1 })) as Uint8Array<ArrayBuffer>]), 'a.pdf');
    const wrong = await fetch(`${app.url}/api/v1/key/envelopes/${envelopeId}/documents`, {
      method: 'POST',
      headers: { 'x-service-api-key': team.apiKey },
      body: wrongPart,
    });
    expect((await wrong.json()).error.name).toBe('Request.Invalid');
  });

  it('answers Envelope.NotFound for an unknown envelope without storing the upload', async () => {
    const team = await seedTeam(app);
    const uploaded = await uploadDocument(app, team.apiKey, unknownId, { bytes: await makePdf({ pages: 1 }) });
    expect(uploaded.status).toBe(404);
    expect(uploaded.body.error.name).toBe('Envelope.NotFound');
    expect(stagingFiles()).toEqual([]);
  });
});

describe('renaming and deleting documents', () => {
  it('renames a document through REST PATCH and GraphQL, within the limits', async () => {
    const team = await seedTeam(app);
    const envelopeId = await newDraft(team.apiKey);
    const documentId = (await uploadDocument(app, team.apiKey, envelopeId, { bytes: await makePdf({ pages: 2 }) })).body.payload.document.id;
    const rest = restClient(app, team.apiKey);
    const renamed = await rest.patch(`/envelopes/${envelopeId}/documents/${documentId}`, { name: 'Renamed' });
    expect(renamed.body.payload.document).toMatchObject({ id: documentId, name: 'Renamed', pageCount: 2 });
    const graphql = await graphqlClient(app, team.apiKey)('mutation($e: ID!, $d: ID!) { updateDocument(envelopeId: $e, documentId: $d, input: { name: "From GraphQL" }) { name } }', {
      e: envelopeId,
      d: documentId,
    });
    expect(graphql.data.updateDocument.name).toBe('From GraphQL');
    expect((await rest.patch(`/envelopes/${envelopeId}/documents/${documentId}`, { name: '' })).body.error.name).toBe('Request.Invalid');
    expect((await rest.patch(`/envelopes/${envelopeId}/documents/${documentId}`, { name: 'x'.repeat(141) })).status).toBe(400);
    expect((await rest.patch(`/envelopes/${envelopeId}/documents/${unknownId}`, { name: 'x' })).body.error.name).toBe('Document.NotFound');
  });

  it('deletes a document with the fields placed on it, on both faces', async () => {
    const team = await seedTeam(app);
    const rest = restClient(app, team.apiKey);
    const envelopeId = await newDraft(team.apiKey);
    const bytes = await makePdf({ pages: 1 });
    const first = (await uploadDocument(app, team.apiKey, envelopeId, { bytes })).body.payload.document.id;
    const second = (await uploadDocument(app, team.apiKey, envelopeId, { bytes })).body.payload.document.id;
    const signer = (
      await rest.post(`/envelopes/${envelopeId}/recipients`, {
        recipient: { type: 'signer', identifier: 'signer', roleName: 'Signer', agents: [{ info: { name: 'Sam' } }] },
      })
    ).body.payload.recipient.id;
    const view = (documentId: string) => ({ documentId, page: 0, location: { x: 10, y: 10 }, size: { width: 100, height: 30 } });
    await rest.post(`/envelopes/${envelopeId}/fields`, {
      fields: [
        { type: 'simple_signature', recipientId: signer, identifier: 'on-first', views: [view(first)] },
        { type: 'text', recipientId: signer, identifier: 'on-second', views: [view(second)] },
      ],
    });
    expect(await rest.delete(`/envelopes/${envelopeId}/documents/${first}`)).toMatchObject({ status: 200, body: { payload: { deleted: true } } });
    const after = await rest.get(`/envelopes/${envelopeId}?includeDocuments=true&includeFields=true`);
    expect(after.body.payload.documents.map((document: { id: string }) => document.id)).toEqual([second]);
    expect(after.body.payload.fields.map((field: { identifier: string }) => field.identifier)).toEqual(['on-second']);
    const graphql = await graphqlClient(app, team.apiKey)('mutation($e: ID!, $d: ID!) { deleteDocument(envelopeId: $e, documentId: $d) { id deleted } }', {
      e: envelopeId,
      d: second,
    });
    expect(graphql.data.deleteDocument).toEqual({ id: second, deleted: true });
    const empty = await rest.get(`/envelopes/${envelopeId}?includeDocuments=true&includeFields=true`);
    expect(empty.body.payload.documents).toEqual([]);
    expect(empty.body.payload.fields).toEqual([]);
    expect((await rest.delete(`/envelopes/${envelopeId}/documents/${second}`)).body.error.name).toBe('Document.NotFound');
  });

  it('refuses uploads, renames and deletes once the envelope is closed (voided), on both faces, changing nothing (a sent one is corrected: envelope-corrections.test.ts)', async () => {
    const team = await seedTeam(app);
    const envelopeId = await newDraft(team.apiKey);
    const bytes = await makePdf({ pages: 1 });
    const documentId = (await uploadDocument(app, team.apiKey, envelopeId, { bytes }, { name: 'Kept' })).body.payload.document.id;
    await forceEnvelopeStatus(app, envelopeId, 'voided');
    const upload = await uploadDocument(app, team.apiKey, envelopeId, { bytes });
    expect(upload.status).toBe(409);
    expect(upload.body.error).toMatchObject({ name: 'Envelope.NotDraft', context: { status: 'voided' } });
    expect((await uploadDocumentThroughGraphql(app, team.apiKey, envelopeId, { bytes })).body.errors[0].extensions.code).toBe('Envelope.NotDraft');
    const rest = restClient(app, team.apiKey);
    expect((await rest.patch(`/envelopes/${envelopeId}/documents/${documentId}`, { name: 'Changed' })).body.error.name).toBe('Envelope.NotDraft');
    expect((await rest.delete(`/envelopes/${envelopeId}/documents/${documentId}`)).body.error.name).toBe('Envelope.NotDraft');
    const graphql = graphqlClient(app, team.apiKey);
    expect(firstErrorName(await graphql('mutation($e: ID!, $d: ID!) { deleteDocument(envelopeId: $e, documentId: $d) { id } }', { e: envelopeId, d: documentId }))).toBe('Envelope.NotDraft');
    const documents = (await rest.get(`/envelopes/${envelopeId}/documents`)).body.payload.documents;
    expect(documents.map((document: { name: string }) => document.name)).toEqual(['Kept']);
    expect(stagingFiles()).toEqual([]);
  });

  it('audits every document change with the acting key, IP and user agent', async () => {
    const team = await seedTeam(app);
    const envelopeId = await newDraft(team.apiKey);
    const documentId = (await uploadDocument(app, team.apiKey, envelopeId, { bytes: await makePdf({ pages: 2 }) }, {}, { 'user-agent': 'legacy-client/1.0' })).body.payload.document.id;
    await restClient(app, team.apiKey).patch(`/envelopes/${envelopeId}/documents/${documentId}`, { name: 'Renamed' });
    await restClient(app, team.apiKey).delete(`/envelopes/${envelopeId}/documents/${documentId}`);
    const events = await listAuditEvents(app.orm.em.fork(), envelopeId);
    expect(events.map((event) => event.type)).toEqual(['envelope.created', 'document.added', 'document.updated', 'document.removed']);
    const added = events[1];
    expect(added).toMatchObject({ actorType: 'api_key', actorId: team.keyId, userAgent: 'legacy-client/1.0' });
    expect(added.ip).toMatch(/127\.0\.0\.1/);
    expect(added.details).toMatchObject({ documentId, pageCount: 2 });
  });
});

describe('a client that goes away mid-upload', () => {
  async function abandonUpload(pathname: string, headers: Record<string, string>, head: string) {
    const { default: http } = await import('node:http');
    const target = new URL(`${app.url}${pathname}`);
    await new Promise<void>((resolve) => {
      const request = http.request({
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        method: 'POST',
        headers: { ...headers, 'content-length': String(10 * 1024 * 1024) },
      });
      request.on('error', () => resolve());
      request.write(head);
      request.write(Buffer.alloc(512 * 1024, 0x41));
      setTimeout(() => {
        request.destroy();
        resolve();
      }, 200);
    });
  }

  async function waitForNoStagingFiles() {
    // Bounds a hang, not a latency: removal waits for the aborted request's stream to be torn down.
    await eventually(() => stagingFiles().length === 0, { what: 'staging files removed' }).catch(() => undefined);
    return stagingFiles();
  }

  it('leaves no staging file behind and no envelope change, on both faces', async () => {
    const team = await seedTeam(app);
    const envelopeId = await newDraft(team.apiKey);
    const boundary = 'gone';
    await abandonUpload(
      `/api/v1/key/envelopes/${envelopeId}/documents`,
      { 'x-service-api-key': team.apiKey, 'content-type': `multipart/form-data; boundary=${boundary}` },
      `--${boundary}\r\nContent-Disposition: form-data; name="document"; filename="a.pdf"\r\n\r\n%PDF-1.7\n`,
    );
    expect(await waitForNoStagingFiles()).toEqual([]);
    await abandonUpload(
      '/graphql',
      { 'x-service-api-key': team.apiKey, 'content-type': `multipart/form-data; boundary=${boundary}` },
      `--${boundary}\r\nContent-Disposition: form-data; name="operations"\r\n\r\n${JSON.stringify({
        query: 'mutation($e: ID!, $input: AddDocumentInput!) { addDocument(envelopeId: $e, input: $input) { id } }',
        variables: { e: envelopeId, input: { file: null } },
      })}\r\n--${boundary}\r\nContent-Disposition: form-data; name="map"\r\n\r\n{"0":["variables.input.file"]}\r\n--${boundary}\r\nContent-Disposition: form-data; name="0"; filename="a.pdf"\r\n\r\n%PDF-1.7\n`,
    );
    expect(await waitForNoStagingFiles()).toEqual([]);
    expect((await restClient(app, team.apiKey).get(`/envelopes/${envelopeId}/documents`)).body.payload.documents).toEqual([]);
    expect((await fetch(`${app.url}/healthz`)).status).toBe(200);
  });
});
