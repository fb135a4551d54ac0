import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDraftWithDocumentAndSigner } from './helpers/envelopes.ts';
import { restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { buildEnvelope, tokenFor } from './helpers/signing.ts';

/*
 * HEAD (issue 31): answered as GET without a body wherever a GET is, and never doing what only
 * fetching does (a signing URL's HEAD is in embedded-signing.test.ts: it consumes nothing).
 */

let app: TestApp;
let team: SeededTeam;
beforeAll(async () => {
  app = await startTestApp();
  team = await seedTeam(app);
}, 60_000);
afterAll(async () => {
  await app?.close();
});

async function both(path: string, headers: Record<string, string> = { 'x-service-api-key': team.apiKey }) {
  const get = await fetch(`${app.url}${path}`, { headers });
  const head = await fetch(`${app.url}${path}`, { method: 'HEAD', headers });
  return {
    get: { status: get.status, type: get.headers.get('content-type'), body: await get.text() },
    head: { status: head.status, type: head.headers.get('content-type'), body: await head.text(), headers: head.headers },
  };
}

describe('HEAD', () => {
  it('answers every REST read as its GET does, without a body', async () => {
    const draft = await createDraftWithDocumentAndSigner(app, team.apiKey);
    for (const path of ['/api/v1/key/me', '/api/v1/key/envelopes', `/api/v1/key/envelopes/${draft.envelopeId}?includeDocuments=true`, '/api/v1/key/openapi.json', '/healthz', '/readyz']) {
      const { get, head } = await both(path);
      expect([head.status, head.type, head.body], path).toEqual([get.status, get.type, '']);
      expect(get.status, path).toBe(200);
    }
    // Counted as a request of the key, as its GET would be.
    expect((await both('/api/v1/key/me')).head.headers.get('x-ratelimit-limit')).toBe('600');
    // A path whose GET is unknown stays unknown; a write-only path names what it allows.
    expect((await both(`/api/v1/key/envelopes/${draft.envelopeId}/nothing`)).head.status).toBe(404);
    const sendOnly = await fetch(`${app.url}/api/v1/key/envelopes/${draft.envelopeId}/send`, { method: 'HEAD', headers: { 'x-service-api-key': team.apiKey } });
    expect(sendOnly.status).toBe(405);
  });

  it('is refused (405, GET allowed) on downloads, which record each download: a link checker records none', async () => {
    const draft = await createDraftWithDocumentAndSigner(app, team.apiKey);
    const headers = { 'x-service-api-key': team.apiKey };
    for (const path of [`/envelopes/${draft.envelopeId}/documents/${draft.documentId}/pdf`, `/envelopes/${draft.envelopeId}/pdf`]) {
      const head = await fetch(`${app.url}/api/v1/key${path}`, { method: 'HEAD', headers });
      expect(head.status, path).toBe(405);
    }
    const downloads = await app.orm.em.fork().execute<{ n: number }[]>(`select count(*)::int as n from audit_event where stream_id = ? and type = 'artefact.downloaded'`, [draft.envelopeId]);
    expect(downloads[0]!.n).toBe(0);
    const refusal = await restClient(app, team.apiKey).call('POST', `/envelopes/${draft.envelopeId}/pdf`);
    expect(refusal.body.error).toMatchObject({ name: 'Route.MethodNotAllowed', context: { allowed: ['GET'] } });
  });

  it("answers the signing page's document route as its GET, without the bytes", async () => {
    const built = await buildEnvelope(app, team.apiKey, { name: 'Head', recipients: [{ identifier: 'signer', order: 1 }] });
    expect((await restClient(app, team.apiKey).put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
    const token = await tokenFor(app, built.envelopeId, built.recipients.signer!);
    const { get, head } = await both(`/signing/documents/${built.documentId}`, { 'x-signing-token': token });
    expect([get.status, get.type]).toEqual([200, 'application/pdf']);
    expect([head.status, head.type, head.body]).toEqual([200, 'application/pdf', '']);
    const bytes = (await (await fetch(`${app.url}/signing/documents/${built.documentId}`, { headers: { 'x-signing-token': token } })).arrayBuffer()).byteLength;
    expect(head.headers.get('content-length')).toBe(String(bytes));
  });
});
