import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDraftWithDocumentAndSigner, unknownId } from './helpers/envelopes.ts';
import { firstErrorName, graphqlClient, restClient, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ countStatements: true, apiKeyCache: {} });
});
afterAll(async () => {
  await app.close();
});

const everything = '?includeDocuments=true&includeRecipients=true&includeFields=true';

/** A raw GET, so that a 304's empty body and its headers are seen as a poller sees them. */
async function get(path: string, apiKey: string, headers: Record<string, string> = {}) {
  const response = await fetch(`${app.url}/api/v1/key${path}`, { headers: { 'x-service-api-key': apiKey, ...headers } });
  return { status: response.status, etag: response.headers.get('etag'), cacheControl: response.headers.get('cache-control'), text: await response.text() };
}

describe('conditional GET of an envelope (ETag / If-None-Match)', () => {
  it('answers a strong ETag, and 304 with no body while nothing in the answer changed', async () => {
    const team = await seedTeam(app);
    const { envelopeId } = await createDraftWithDocumentAndSigner(app, team.apiKey);

    const first = await get(`/envelopes/${envelopeId}${everything}`, team.apiKey);
    expect(first.status).toBe(200);
    expect(first.etag).toMatch(/^"[A-Za-z0-9_-]{32}"$/);
    expect(first.cacheControl).toBe('private, no-cache');
    // The same answer gets the same tag.
    expect((await get(`/envelopes/${envelopeId}${everything}`, team.apiKey)).etag).toBe(first.etag);

    const notModified = await get(`/envelopes/${envelopeId}${everything}`, team.apiKey, { 'if-none-match': first.etag! });
    expect(notModified.status).toBe(304);
    expect(notModified.text).toBe('');
    expect(notModified.etag).toBe(first.etag);
    // A list of tags, a weak form of the same tag and `*` all match (RFC 9110 weak comparison).
    expect((await get(`/envelopes/${envelopeId}${everything}`, team.apiKey, { 'if-none-match': `"other", W/${first.etag}` })).status).toBe(304);
    expect((await get(`/envelopes/${envelopeId}${everything}`, team.apiKey, { 'if-none-match': '*' })).status).toBe(304);
    expect((await get(`/envelopes/${envelopeId}${everything}`, team.apiKey, { 'if-none-match': '"stale"' })).status).toBe(200);
  });

  it('changes the tag with any change to what the answer contains, nested ones included', async () => {
    const team = await seedTeam(app);
    const rest = restClient(app, team.apiKey);
    const { envelopeId, documentId, signerId } = await createDraftWithDocumentAndSigner(app, team.apiKey);
    const tagOf = async (path = `/envelopes/${envelopeId}${everything}`) => (await get(path, team.apiKey)).etag;

    const seen = new Set<string | null>([await tagOf()]);
    const expectNewTag = async (what: string) => {
      const tag = await tagOf();
      expect(seen.has(tag), `${what} must change the tag`).toBe(false);
      seen.add(tag);
    };

    await rest.patch(`/envelopes/${envelopeId}/documents/${documentId}`, { name: 'Renamed.pdf' });
    await expectNewTag('renaming a document');
    await rest.patch(`/envelopes/${envelopeId}/recipients/${signerId}`, { recipient: { agents: [{ info: { name: 'Someone Else' } }] } });
    await expectNewTag("replacing a recipient's agents");
    const created = await rest.post(`/envelopes/${envelopeId}/fields`, {
      fields: [{ type: 'text', recipientId: signerId, identifier: 'city', views: [{ documentId, page: 0, location: { x: 10, y: 10 }, size: { width: 100, height: 20 } }] }],
    });
    await expectNewTag('adding a field');
    await rest.patch(`/envelopes/${envelopeId}/fields/${created.body.payload.fields[0].id}`, {
      field: { views: [{ documentId, page: 1, location: { x: 10, y: 10 }, size: { width: 100, height: 20 } }] },
    });
    await expectNewTag("moving a field's view to another page");
    await rest.patch(`/envelopes/${envelopeId}`, { context: { crm: 1 } });
    await expectNewTag("changing the envelope's context");

    // Another representation of the same envelope has its own tag.
    expect(seen.has(await tagOf(`/envelopes/${envelopeId}`))).toBe(false);
  });

  it('costs one statement whether the answer is 200 or 304', async () => {
    const team = await seedTeam(app);
    const { envelopeId } = await createDraftWithDocumentAndSigner(app, team.apiKey);
    const first = await get(`/envelopes/${envelopeId}${everything}`, team.apiKey);
    for (const headers of [{}, { 'if-none-match': first.etag! }] as Record<string, string>[]) {
      app.resetStatements();
      await get(`/envelopes/${envelopeId}${everything}`, team.apiKey, headers);
      // The key was verified by the first GET and is cached: the read is the only statement.
      expect(app.statements).toHaveLength(1);
    }
  });

  it('never answers 304 for an envelope the caller cannot see', async () => {
    const owner = await seedTeam(app);
    const stranger = await seedTeam(app);
    const { envelopeId } = await createDraftWithDocumentAndSigner(app, owner.apiKey);
    const { etag } = await get(`/envelopes/${envelopeId}`, owner.apiKey);
    for (const path of [`/envelopes/${envelopeId}`, `/envelopes/${unknownId}`]) {
      const answer = await get(path, stranger.apiKey, { 'if-none-match': etag! });
      expect(answer.status).toBe(404);
      expect(JSON.parse(answer.text).error.name).toBe('Envelope.NotFound');
    }
  });
});

describe('forged cursors', () => {
  it('refuses a cursor whose date PostgreSQL cannot hold as Request.Invalid, on every listing of both faces', async () => {
    const team = await seedTeam(app);
    const rest = restClient(app, team.apiKey);
    for (const date of ['-271821-04-20T00:00:00.000Z', '+275760-09-13T00:00:00.000Z']) {
      const cursor = Buffer.from(JSON.stringify([date, unknownId])).toString('base64url');
      for (const listing of ['/envelopes', '/contacts', '/contact-groups', '/users']) {
        const answer = await rest.get(`${listing}?cursor=${cursor}`);
        expect(answer.status, listing).toBe(400);
        expect(answer.body.error.name).toBe('Request.Invalid');
      }
      for (const listing of ['envelopes', 'contacts', 'contactGroups', 'users']) {
        const answer = await graphqlClient(app, team.apiKey)(`query($after: String) { ${listing}(after: $after) { pageInfo { hasNextPage } } }`, { after: cursor });
        expect(firstErrorName(answer), listing).toBe('Request.Invalid');
      }
    }
  });
});
