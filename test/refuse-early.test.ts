import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../src/server.ts';
import { makeLargePdf, makePdf } from './fixtures/pdfs.ts';
import { forceEnvelopeStatus, unknownId } from './helpers/envelopes.ts';
import { eventually } from './helpers/eventually.ts';
import { listenWithBodyTimeouts, restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { type RawAnswer, rawRequest } from './helpers/raw-http.ts';

let app: TestApp;
let team: SeededTeam;
beforeAll(async () => {
  app = await startTestApp();
  team = await seedTeam(app);
});
afterAll(async () => {
  await app.close();
});

const MB = 1024 * 1024;
const DOCUMENT_LIMIT = 48 * MB;
const boundary = 'early-refusal-boundary';
const multipartType = `multipart/form-data; boundary=${boundary}`;
const documentPartHead = `--${boundary}\r\nContent-Disposition: form-data; name="document"; filename="big.pdf"\r\nContent-Type: application/pdf\r\n\r\n%PDF-1.7\n`;
const multipartTail = `\r\n--${boundary}--\r\n`;

async function newDraft(): Promise<string> {
  return (await restClient(app, team.apiKey).post('/envelopes', { name: 'Early refusals' })).body.payload.envelopeId;
}

function stagingFiles(): string[] {
  const directory = path.join(app.dataDir, 'blobs', 'tmp');
  return fs.existsSync(directory) ? fs.readdirSync(directory) : [];
}

/**
 * A client that sends the first megabyte of a body, then waits for an answer without sending
 * more: a server that answers anyway decided without the body, whatever the machine's speed (one
 * that waited for it would answer 408 Request.Timeout after the idle clock, 10 s, instead of the
 * refusal asserted). So the "before the body" tests assert answers, not how fast they came.
 */
const STALL_AFTER_BYTES = 1 * MB;

/** A REST upload whose body (40 MB declared, under the limit) is sent slowly: 64 KB every 20 ms, stalling after 1 MB. */
function slowRestUpload(envelopeId: string, headers: Record<string, string>): Promise<RawAnswer> {
  return rawRequest(app.url, {
    path: `/api/v1/key/envelopes/${envelopeId}/documents`,
    headers: { 'content-type': multipartType, ...headers },
    body: { head: documentPartHead, fillerBytes: 40 * MB, tail: multipartTail, intervalMs: 20, stallAfterBytes: STALL_AFTER_BYTES },
  });
}

/** The answer came early and the connection was closed by the server rather than reset. */
function expectClosedAfterAnswer(answer: RawAnswer) {
  expect(answer.reset).toBe(false);
  expect(answer.headers.connection).toBe('close');
}

describe('REST uploads are refused from their headers and path, before the body is read', () => {
  it('answers 401 Auth.MissingApiKey / Auth.InvalidApiKey after far less than the body', async () => {
    const envelopeId = await newDraft();
    const missing = await slowRestUpload(envelopeId, {});
    expect(missing.status).toBe(401);
    expect(missing.body.error.name).toBe('Auth.MissingApiKey');
    expect(missing.bytesSentBeforeAnswer).toBeLessThan(2 * MB);
    expectClosedAfterAnswer(missing);
    const invalid = await slowRestUpload(envelopeId, { 'x-service-api-key': 'not-a-key' });
    expect(invalid.status).toBe(401);
    expect(invalid.body.error.name).toBe('Auth.InvalidApiKey');
    expect(invalid.bytesSentBeforeAnswer).toBeLessThan(2 * MB);
  });

  it('answers 404 Envelope.NotFound and 409 Envelope.NotDraft after far less than the body', async () => {
    const unknown = await slowRestUpload(unknownId, { 'x-service-api-key': team.apiKey });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.name).toBe('Envelope.NotFound');
    expect(unknown.bytesSentBeforeAnswer).toBeLessThan(2 * MB);
    expectClosedAfterAnswer(unknown);
    // Another team's envelope is unknown to this caller.
    const other = await seedTeam(app);
    const foreign = await slowRestUpload(await newDraft(), { 'x-service-api-key': other.apiKey });
    expect(foreign.status).toBe(404);
    expect(foreign.bytesSentBeforeAnswer).toBeLessThan(2 * MB);
    // A sent envelope takes documents as a correction (docs/decisions.md): a voided one takes none.
    const voided = await newDraft();
    await forceEnvelopeStatus(app, voided, 'voided');
    const notDraft = await slowRestUpload(voided, { 'x-service-api-key': team.apiKey });
    expect(notDraft.status).toBe(409);
    expect(notDraft.body.error).toMatchObject({ name: 'Envelope.NotDraft', context: { status: 'voided' } });
    expect(notDraft.bytesSentBeforeAnswer).toBeLessThan(2 * MB);
    expect(stagingFiles()).toEqual([]);
  });

  it('answers 413 Document.TooLarge at once for a declared 1 GB body, without reading it', async () => {
    const envelopeId = await newDraft();
    const answer = await rawRequest(app.url, {
      path: `/api/v1/key/envelopes/${envelopeId}/documents`,
      headers: { 'content-type': multipartType, 'x-service-api-key': team.apiKey },
      body: { head: documentPartHead, fillerBytes: 1024 * MB, tail: multipartTail, intervalMs: 20, stallAfterBytes: STALL_AFTER_BYTES },
    });
    expect(answer.status).toBe(413);
    expect(answer.body.error).toMatchObject({ name: 'Document.TooLarge', context: { limitBytes: DOCUMENT_LIMIT } });
    expect(answer.bytesSentBeforeAnswer).toBeLessThan(2 * MB);
    expectClosedAfterAnswer(answer);
  });

  it('answers 413 Document.TooLarge for a chunked upload as soon as the file passes 48 MB, and closes the connection', async () => {
    const envelopeId = await newDraft();
    const answer = await rawRequest(app.url, {
      path: `/api/v1/key/envelopes/${envelopeId}/documents`,
      headers: { 'content-type': multipartType, 'x-service-api-key': team.apiKey },
      body: { head: documentPartHead, fillerBytes: 400 * MB, tail: multipartTail, chunked: true, chunkBytes: 256 * 1024, intervalMs: 1 },
      timeoutMs: 30_000,
    });
    expect(answer.status).toBe(413);
    expect(answer.body.error.name).toBe('Document.TooLarge');
    // The limit, plus what sits in socket buffers on both sides while the answer is made: far
    // from the 400 MB the client would send.
    expect(answer.bytesSentBeforeAnswer).toBeGreaterThan(DOCUMENT_LIMIT);
    expect(answer.bytesSentBeforeAnswer).toBeLessThan(DOCUMENT_LIMIT + 48 * MB);
    expectClosedAfterAnswer(answer);
    await eventually(() => stagingFiles().length === 0, { what: 'staging files removed' });
    expect((await restClient(app, team.apiKey).get(`/envelopes/${envelopeId}/documents`)).body.payload.documents).toEqual([]);
  }, 60_000);

  it('still accepts an upload sent slowly in small pieces', async () => {
    const envelopeId = await newDraft();
    const pdf = Buffer.from(await makePdf({ pages: 2 }));
    const head = Buffer.concat([Buffer.from(documentPartHead.replace('%PDF-1.7\n', '')), pdf]);
    const answer = await rawRequest(app.url, {
      path: `/api/v1/key/envelopes/${envelopeId}/documents`,
      headers: { 'content-type': multipartType, 'x-service-api-key': team.apiKey },
      body: { head, fillerBytes: 0, tail: multipartTail, chunked: true, chunkBytes: 512, intervalMs: 5 },
    });
    expect(answer.status).toBe(200);
    expect(answer.body.payload.document.pageCount).toBe(2);
  });
});

describe('JSON bodies over 1 MB', () => {
  const oneMbPlus = 1024 * 1024 + 1;

  it.each([
    ['with Content-Length', false],
    ['chunked', true],
  ])('REST answers 413 Request.PayloadTooLarge %s, without a reset and without reading the rest', async (_label, chunked) => {
    const answer = await rawRequest(app.url, {
      path: '/api/v1/key/envelopes',
      headers: { 'content-type': 'application/json', 'x-service-api-key': team.apiKey },
      // Declared too large (Content-Length): refused from the header, so the client stalls after
      // 1 MB and waits. Chunked: refused once past the limit, which the client must send.
      body: { head: '{"name":"', fillerBytes: 64 * MB, tail: '"}', chunked, chunkBytes: 64 * 1024, intervalMs: chunked ? 2 : 20, stallAfterBytes: chunked ? undefined : STALL_AFTER_BYTES },
    });
    expect(answer.status).toBe(413);
    expect(answer.body.error).toMatchObject({ name: 'Request.PayloadTooLarge', context: { limitBytes: 1024 * 1024 } });
    expect(answer.bytesSentBeforeAnswer).toBeLessThan(chunked ? oneMbPlus + 16 * MB : 2 * MB);
    expectClosedAfterAnswer(answer);
  });

  it.each([
    ['with Content-Length', false],
    ['chunked', true],
  ])('GraphQL answers 413 with the error Request.PayloadTooLarge %s', async (_label, chunked) => {
    const answer = await rawRequest(app.url, {
      path: '/graphql',
      headers: { 'content-type': 'application/json', accept: 'application/json', 'x-service-api-key': team.apiKey },
      body: {
        head: '{"query":"mutation($i: CreateEnvelopeInput!) { createEnvelope(input: $i) { envelopeId } }","variables":{"i":{"name":"',
        fillerBytes: 17 * MB,
        tail: '"}}}',
        chunked,
        chunkBytes: 64 * 1024,
        intervalMs: chunked ? 2 : 20,
      },
    });
    expect(answer.status).toBe(413);
    expect(answer.body.errors[0].extensions).toMatchObject({ code: 'Request.PayloadTooLarge', context: { limitBytes: 1024 * 1024 } });
    expect(answer.bytesSentBeforeAnswer).toBeLessThan(chunked ? oneMbPlus + 16 * MB : 2 * MB);
    expectClosedAfterAnswer(answer);
  });

  it('GraphQL bodies up to the limit are still served', async () => {
    const response = await fetch(`${app.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-service-api-key': team.apiKey },
      body: JSON.stringify({ query: '{ viewer { id } }', variables: { padding: 'x'.repeat(900 * 1024) } }),
    });
    expect(response.status).toBe(200);
    expect((await response.json()).data.viewer.id).toBeTruthy();
  });
});

describe('GraphQL multipart uploads', () => {
  function operationsPart(envelopeId: string): string {
    const operations = JSON.stringify({
      query: 'mutation($e: ID!, $input: AddDocumentInput!) { addDocument(envelopeId: $e, input: $input) { id } }',
      variables: { e: envelopeId, input: { file: null } },
    });
    return (
      `--${boundary}\r\nContent-Disposition: form-data; name="operations"\r\n\r\n${operations}\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="map"\r\n\r\n{"0":["variables.input.file"]}\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="0"; filename="big.pdf"\r\nContent-Type: application/pdf\r\n\r\n%PDF-1.7\n`
    );
  }

  function slowGraphqlUpload(envelopeId: string, headers: Record<string, string>, body: Partial<Parameters<typeof rawRequest>[1]['body']> = {}) {
    return rawRequest(app.url, {
      path: '/graphql',
      headers: { 'content-type': multipartType, ...headers },
      body: { head: operationsPart(envelopeId), fillerBytes: 40 * MB, tail: multipartTail, intervalMs: 20, stallAfterBytes: STALL_AFTER_BYTES, ...body },
      timeoutMs: 30_000,
    });
  }

  it('answers a missing key with 401 before reading the body', async () => {
    const answer = await slowGraphqlUpload(await newDraft(), {});
    expect(answer.status).toBe(401);
    expect(answer.body.errors[0].extensions.code).toBe('Auth.MissingApiKey');
    expect(answer.bytesSentBeforeAnswer).toBeLessThan(2 * MB);
    expectClosedAfterAnswer(answer);
  });

  it('answers an invalid key and an unknown envelope as soon as the operations are read', async () => {
    const invalid = await slowGraphqlUpload(await newDraft(), { 'x-service-api-key': 'not-a-key' });
    expect(invalid.body.errors[0].extensions.code).toBe('Auth.InvalidApiKey');
    expect(invalid.bytesSentBeforeAnswer).toBeLessThan(2 * MB);
    expectClosedAfterAnswer(invalid);
    const unknown = await slowGraphqlUpload(unknownId, { 'x-service-api-key': team.apiKey });
    expect(unknown.body.errors[0].extensions.code).toBe('Envelope.NotFound');
    expect(unknown.bytesSentBeforeAnswer).toBeLessThan(2 * MB);
    expectClosedAfterAnswer(unknown);
  });

  it('answers an operations part over 1 MB with 413 Request.PayloadTooLarge, like any JSON body', async () => {
    const operations = JSON.stringify({
      query: 'mutation($e: ID!, $input: AddDocumentInput!) { addDocument(envelopeId: $e, input: $input) { id } }',
      variables: { e: unknownId, input: { file: null, name: 'x'.repeat(MB + 10) } },
    });
    const answer = await rawRequest(app.url, {
      path: '/graphql',
      headers: { 'content-type': multipartType, 'x-service-api-key': team.apiKey },
      body: {
        head: `--${boundary}\r\nContent-Disposition: form-data; name="operations"\r\n\r\n${operations}\r\n--${boundary}\r\nContent-Disposition: form-data; name="map"\r\n\r\n`,
        fillerBytes: 8 * MB,
        tail: multipartTail,
        chunked: true,
        intervalMs: 2,
      },
    });
    expect(answer.status).toBe(413);
    expect(answer.body.errors[0].extensions).toMatchObject({ code: 'Request.PayloadTooLarge', context: { limitBytes: MB } });
    expect(answer.bytesSentBeforeAnswer).toBeLessThan(4 * MB);
    expectClosedAfterAnswer(answer);
  });

  it('answers 413 at once for a declared body over the limit', async () => {
    const answer = await slowGraphqlUpload(await newDraft(), { 'x-service-api-key': team.apiKey }, { fillerBytes: 1024 * MB });
    expect(answer.status).toBe(413);
    expect(answer.body.errors[0].extensions.code).toBe('Document.TooLarge');
    expect(answer.bytesSentBeforeAnswer).toBeLessThan(2 * MB);
    expectClosedAfterAnswer(answer);
  });

  it('answers Document.TooLarge as soon as a chunked file passes 48 MB', async () => {
    const envelopeId = await newDraft();
    const answer = await slowGraphqlUpload(
      envelopeId,
      { 'x-service-api-key': team.apiKey },
      { fillerBytes: 400 * MB, chunked: true, intervalMs: 1, chunkBytes: 256 * 1024, stallAfterBytes: undefined },
    );
    expect(answer.body.errors[0].extensions.code).toBe('Document.TooLarge');
    expect(answer.bytesSentBeforeAnswer).toBeGreaterThan(DOCUMENT_LIMIT);
    expect(answer.bytesSentBeforeAnswer).toBeLessThan(DOCUMENT_LIMIT + 48 * MB);
    expectClosedAfterAnswer(answer);
    await eventually(() => stagingFiles().length === 0, { what: 'staging files removed' });
  }, 60_000);
});

describe('bodies that stall or trickle', () => {
  // A second server on the same app dependencies, with the body clocks shortened so the test stays
  // fast (production values: BODY_TIMEOUTS in body-guard.ts). The total clock is far out of reach,
  // so a 408 here can only come from the stall and trickle checks under test: the answer itself
  // shows which clock fired, with no wall-clock bound. The idle clock is long enough that a loaded
  // machine's pause between two pieces of the steady upload below is not taken for a stall.
  let slow: RunningServer;
  beforeAll(async () => {
    slow = await listenWithBodyTimeouts(app, { idleMs: 2000, rateWindowMs: 3000, minBytesPerSecond: 1024, totalMs: 600_000, lingerMs: 300 });
  });
  afterAll(async () => {
    await slow.close(1000);
  });

  function expectTimeout(answer: RawAnswer) {
    expect(answer.status).toBe(408);
    expectClosedAfterAnswer(answer);
  }

  it('answers a REST JSON body that stops arriving with 408 Request.Timeout and closes the connection', async () => {
    const answer = await rawRequest(slow.url, {
      path: '/api/v1/key/envelopes',
      headers: { 'content-type': 'application/json', 'x-service-api-key': team.apiKey },
      body: { head: '{"name":"Stalled', fillerBytes: 100, tail: '"}', stallAfterBytes: 10 },
    });
    expectTimeout(answer);
    expect(answer.body.error).toMatchObject({ name: 'Request.Timeout', context: { idleMs: 2000, totalMs: 600_000 } });
    expect(answer.body.error.context.requestId).toBeTruthy();
  });

  it('answers a body trickled at a few bytes a second with 408, though it never stops', async () => {
    const answer = await rawRequest(slow.url, {
      path: '/api/v1/key/envelopes',
      headers: { 'content-type': 'application/json', 'x-service-api-key': team.apiKey },
      body: { head: '{"name":"Trickled', fillerBytes: 10_000, tail: '"}', chunkBytes: 1, intervalMs: 100 },
    });
    expectTimeout(answer);
    expect(answer.body.error.name).toBe('Request.Timeout');
    // Refused long before its 10,000 bytes were all sent (at 10 a second, 1,000 s).
    expect(answer.bytesSent).toBeLessThan(10_000);
  });

  it('answers a REST upload that stalls mid-file with 408, keeping no partial file and changing nothing', async () => {
    const envelopeId = await newDraft();
    const answer = await rawRequest(slow.url, {
      path: `/api/v1/key/envelopes/${envelopeId}/documents`,
      headers: { 'content-type': multipartType, 'x-service-api-key': team.apiKey },
      body: { head: documentPartHead, fillerBytes: 4 * MB, tail: multipartTail, stallAfterBytes: 256 * 1024 },
    });
    expectTimeout(answer);
    expect(answer.body.error.name).toBe('Request.Timeout');
    await eventually(() => stagingFiles().length === 0, { what: 'staging files removed' });
    expect((await restClient(app, team.apiKey).get(`/envelopes/${envelopeId}/documents`)).body.payload.documents).toEqual([]);
  });

  it('answers GraphQL bodies that stall (JSON and multipart) with the error Request.Timeout', async () => {
    const json = await rawRequest(slow.url, {
      path: '/graphql',
      headers: { 'content-type': 'application/json', 'x-service-api-key': team.apiKey },
      body: { head: '{"query":"{ viewer { id } }"', fillerBytes: 100, tail: '}', stallAfterBytes: 20 },
    });
    expectTimeout(json);
    expect(json.body.errors[0].extensions).toMatchObject({ code: 'Request.Timeout' });
    const envelopeId = await newDraft();
    const operations = JSON.stringify({
      query: 'mutation($e: ID!, $input: AddDocumentInput!) { addDocument(envelopeId: $e, input: $input) { id } }',
      variables: { e: envelopeId, input: { file: null } },
    });
    const multipart = await rawRequest(slow.url, {
      path: '/graphql',
      headers: { 'content-type': multipartType, 'x-service-api-key': team.apiKey },
      body: {
        head:
          `--${boundary}\r\nContent-Disposition: form-data; name="operations"\r\n\r\n${operations}\r\n` +
          `--${boundary}\r\nContent-Disposition: form-data; name="map"\r\n\r\n{"0":["variables.input.file"]}\r\n` +
          `--${boundary}\r\nContent-Disposition: form-data; name="0"; filename="a.pdf"\r\n\r\n%PDF-1.7\n`,
        fillerBytes: 4 * MB,
        tail: multipartTail,
        stallAfterBytes: 256 * 1024,
      },
    });
    expectTimeout(multipart);
    expect(multipart.body.errors[0].extensions.code).toBe('Request.Timeout');
    await eventually(() => stagingFiles().length === 0, { what: 'staging files removed' });
  });

  it('lets a slow but steady upload through', async () => {
    const envelopeId = await newDraft();
    const pdf = Buffer.from(makeLargePdf(400 * 1024));
    const head = Buffer.concat([Buffer.from(documentPartHead.replace('%PDF-1.7\n', '')), pdf]);
    // About 80 KB/s, in pieces 100 ms apart, for longer than the idle and rate windows.
    const answer = await rawRequest(slow.url, {
      path: `/api/v1/key/envelopes/${envelopeId}/documents`,
      headers: { 'content-type': multipartType, 'x-service-api-key': team.apiKey },
      body: { head, fillerBytes: 0, tail: multipartTail, chunked: true, chunkBytes: 8 * 1024, intervalMs: 100 },
    });
    expect(answer.status).toBe(200);
    expect(answer.body.payload.document.byteSize).toBe(pdf.length);
  });
});

describe('afterwards', () => {
  it('the service is healthy and serves requests on new connections', async () => {
    expect((await fetch(`${app.url}/healthz`)).status).toBe(200);
    expect((await restClient(app, team.apiKey).get('/me')).status).toBe(200);
  });
});
