import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { revokeApiKey } from '../src/domain/team/team.service.ts';
import { openLiveResponseCount, writeLiveResponse } from '../src/graphql/live-fanout.ts';
import { liveLeanCounters } from '../src/graphql/live-lean.ts';
import { restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { ENVELOPE_EVENTS, STATUS_CHANGED, untilWatching } from './helpers/live.ts';

/*
 * GraphQL over SSE is served beside yoga's Node adapter (src/graphql/live-sse.ts) for a GET, or a
 * POST with a declared length; a chunked POST still goes through the adapter. The same request
 * sent both ways must be answered the same, byte for byte but for what differs per request.
 */

let app: TestApp;
let limited: TestApp;

beforeAll(async () => {
  app = await startTestApp();
  limited = await startTestApp({ env: { RATE_LIMIT_PER_MINUTE: '1' }, rateLimitsOwnCounters: true });
});

afterAll(async () => {
  await app.close();
  await limited.close();
});

type Exchange = { status: number; headers: Record<string, string>; body: string };

/** Per-request values: the request id (header and error context), the rate limit's remaining count and reset. */
function normalised(exchange: Exchange): Exchange {
  const headers = { ...exchange.headers };
  for (const name of ['date', 'x-request-id', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'retry-after']) delete headers[name];
  return { status: exchange.status, headers, body: exchange.body.replace(/"requestId":"[^"]*"/g, '"requestId":"…"') };
}

/**
 * One request over its own connection; resolves with what arrived once the answer ended, or
 * `forMs` after it started (an open event stream), and then closes the connection.
 */
function exchange(on: TestApp, options: { method: 'GET' | 'POST'; path?: string; headers: Record<string, string>; body?: string; chunked?: boolean; forMs?: number }): Promise<Exchange> {
  const target = new URL(options.path ?? '/graphql', on.url);
  return new Promise((resolve, reject) => {
    const request = http.request(
      target,
      {
        method: options.method,
        agent: false,
        headers: {
          accept: 'text/event-stream',
          ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
          ...(options.body !== undefined && !options.chunked ? { 'content-length': String(Buffer.byteLength(options.body)) } : {}),
          ...options.headers,
        },
      },
      (response) => {
        let body = '';
        const headers: Record<string, string> = {};
        for (let index = 0; index < response.rawHeaders.length; index += 2) headers[response.rawHeaders[index].toLowerCase()] = response.rawHeaders[index + 1];
        const done = () => {
          clearTimeout(timer);
          response.socket?.destroy();
          resolve({ status: response.statusCode ?? 0, headers, body });
        };
        const timer = setTimeout(done, options.forMs ?? 5_000);
        response.on('data', (chunk: Buffer) => (body += chunk.toString()));
        response.on('end', done);
        response.on('error', () => {});
      },
    );
    request.on('error', reject);
    if (options.body !== undefined && options.chunked) {
      // Two writes without a declared length: Node sends the body chunked (yoga's adapter serves it).
      request.write(options.body.slice(0, 1));
      request.end(options.body.slice(1));
    } else request.end(options.body);
  });
}

/** The same request served beside the adapter and through it. */
async function bothWays(on: TestApp, options: Parameters<typeof exchange>[1]): Promise<[Exchange, Exchange]> {
  const direct = await exchange(on, options);
  const throughAdapter = await exchange(on, { ...options, chunked: true });
  return [normalised(direct), normalised(throughAdapter)];
}

describe('GraphQL over SSE beside yoga’s Node adapter', () => {
  let team: SeededTeam;
  beforeAll(async () => {
    team = await seedTeam(app);
  });

  it('answers refusals exactly as through the adapter: credentials, unknown ids, bad documents, limits, bodies', async () => {
    const key = { 'x-service-api-key': team.apiKey };
    const cases: [string, Parameters<typeof exchange>[1]][] = [
      ['no key', { method: 'POST', headers: {}, body: JSON.stringify({ query: STATUS_CHANGED }) }],
      ['a wrong key', { method: 'POST', headers: { 'x-service-api-key': 'sk_not_a_key' }, body: JSON.stringify({ query: STATUS_CHANGED }) }],
      ['an unknown envelope', { method: 'POST', headers: key, body: JSON.stringify({ query: STATUS_CHANGED, variables: { envelopeId: '00000000-0000-4000-8000-000000000000' } }) }],
      [
        'a bad argument',
        { method: 'POST', headers: key, body: JSON.stringify({ query: ENVELOPE_EVENTS, variables: { envelopeId: '00000000-0000-4000-8000-000000000000', afterSequence: -1 } }) },
      ],
      ['a wrong variable type', { method: 'POST', headers: key, body: JSON.stringify({ query: ENVELOPE_EVENTS, variables: { envelopeId: [1] } }) }],
      ['an unknown field', { method: 'POST', headers: key, body: JSON.stringify({ query: 'subscription { envelopeStatusChange { sequence } }' }) }],
      ['a syntax error', { method: 'POST', headers: key, body: JSON.stringify({ query: 'subscription {' }) }],
      [
        'too many aliases',
        {
          method: 'POST',
          headers: key,
          body: JSON.stringify({ query: `subscription { ${Array.from({ length: 40 }, (_, index) => `a${index}: envelopeStatusChanged { sequence }`).join(' ')} }` }),
        },
      ],
      [
        'two root fields',
        { method: 'POST', headers: key, body: JSON.stringify({ query: 'subscription { envelopeStatusChanged { sequence } envelopeEvents(envelopeId: "x") { sequence } }' }) },
      ],
      ['no query', { method: 'POST', headers: key, body: JSON.stringify({ variables: {} }) }],
      ['a body that is not JSON', { method: 'POST', headers: key, body: '{"query": ' }],
      ['a batch', { method: 'POST', headers: key, body: JSON.stringify([{ query: STATUS_CHANGED }]) }],
      ['a query', { method: 'POST', headers: key, body: JSON.stringify({ query: '{ __typename }' }) }],
      ['a mutation', { method: 'POST', headers: key, body: JSON.stringify({ query: 'mutation { __typename }' }) }],
    ];
    for (const [name, options] of cases) {
      const [direct, throughAdapter] = await bothWays(app, options);
      expect(direct, name).toEqual(throughAdapter);
      expect(direct.status, name).not.toBe(500);
    }
    // Over GET (an EventSource) only the direct path exists; its refusal is the POST's.
    const get = normalised(await exchange(app, { method: 'GET', path: `/graphql?query=${encodeURIComponent(STATUS_CHANGED)}`, headers: {} }));
    const post = normalised(await exchange(app, { method: 'POST', headers: {}, body: JSON.stringify({ query: STATUS_CHANGED }) }));
    expect(get).toEqual(post);
    expect(get.status).toBe(401);
  });

  it('answers past the rate limit as through the adapter (429, Retry-After, the limit headers)', async () => {
    const limitedTeam = await seedTeam(limited);
    const options = { method: 'POST' as const, headers: { 'x-service-api-key': limitedTeam.apiKey }, body: JSON.stringify({ query: STATUS_CHANGED }) };
    // The one allowed opening, then two refusals (one each way).
    await exchange(limited, { ...options, forMs: 300 });
    const metrics = limited.dependencies.metrics;
    if (!metrics) throw new Error('the test app has no metrics');
    const refusals = async () => (await metrics.rateLimited.get()).values.reduce((sum, sample) => sum + sample.value, 0);
    const refusedBefore = await refusals();
    const [direct, throughAdapter] = await bothWays(limited, options);
    expect(direct).toEqual(throughAdapter);
    expect(direct.status).toBe(429);
    expect(direct.body).toContain('Request.RateLimited');
    // Each refusal counted once: the lean path's decision is the one yoga answers with, not a second count.
    expect(await refusals()).toBe(refusedBefore + 2);
  });

  it('opens a stream with the adapter’s head and bytes, and delivers events as it does', async () => {
    // The creation's own event reaches the hub through LISTEN/NOTIFY a moment after the answer; it
    // is let through before the streams open, so that they see only the deletion below.
    const published = new Set<string>();
    const stopWatchingTeam = app.dependencies.envelopeEvents!.watchTeam(team.teamId, (event) => void published.add(event.envelopeId));
    const built = (await restClient(app, team.apiKey).post('/envelopes', { name: 'Watched both ways' })).body.payload;
    await expect.poll(() => published.has(built.envelopeId)).toBe(true);
    stopWatchingTeam();
    const options = {
      method: 'POST' as const,
      headers: { 'x-service-api-key': team.apiKey, origin: 'https://app.example' },
      body: JSON.stringify({ query: STATUS_CHANGED, variables: { envelopeId: built.envelopeId } }),
    };
    const leanBefore = liveLeanCounters.opened;
    const watching = [exchange(app, { ...options, forMs: 3_000 }), exchange(app, { ...options, chunked: true, forMs: 3_000 })];
    await untilWatching(app, 2);
    // One of the two is written straight to Node (its head follows the watcher's registration),
    // opened beside yoga (live-lean.ts).
    await expect.poll(() => openLiveResponseCount()).toBe(1);
    expect(liveLeanCounters.opened).toBe(leanBefore + 1);
    expect((await restClient(app, team.apiKey).delete(`/envelopes/${built.envelopeId}`)).status).toBe(200);
    const [direct, throughAdapter] = (await Promise.all(watching)).map(normalised);
    expect(direct).toEqual(throughAdapter);
    expect(direct.status).toBe(200);
    expect(direct.headers).toMatchObject({ 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'access-control-allow-origin': 'https://app.example' });
    expect(direct.body).toMatch(
      /^:\n\nevent: next\ndata: \{"data":\{"envelopeStatusChanged":\{"envelopeId":"[^"]+","sequence":\d+,"type":"envelope.deleted","status":null,"at":"[^"]+"\}\}\}\n\n$/,
    );
    await expect.poll(() => app.dependencies.envelopeEvents!.watcherCount).toBe(0);
  });

  it('ends a stream opened beside yoga as through the adapter when its key is revoked (the masked error, then the closing event)', async () => {
    const revoked = await seedTeam(app);
    const options = { method: 'POST' as const, headers: { 'x-service-api-key': revoked.apiKey }, body: JSON.stringify({ query: STATUS_CHANGED }) };
    const leanBefore = liveLeanCounters.opened;
    const watching = [exchange(app, { ...options, forMs: 5_000 }), exchange(app, { ...options, chunked: true, forMs: 5_000 })];
    await untilWatching(app, 2);
    expect(liveLeanCounters.opened).toBe(leanBefore + 1);
    await revokeApiKey(app.orm.em.fork(), { keyId: revoked.keyId });
    const [direct, throughAdapter] = (await Promise.all(watching)).map(normalised);
    expect(direct).toEqual(throughAdapter);
    expect(direct.body).toMatch(/^:\n\nevent: next\ndata: \{.*"Subscription\.KeyRevoked".*\}\n\nevent: complete\ndata:\n\n$/s);
  });

  it('completes a stream that ends (a signing link’s envelope closing) with the adapter’s closing event', async () => {
    const ended = normalised(await exchange(app, { method: 'POST', headers: {}, body: JSON.stringify({ query: 'subscription { signingSessionChanged { sequence } }' }), forMs: 2_000 }));
    // Refused (no link): one result and the closing event, as every answer that is not a stream.
    expect(ended.body).toMatch(/^:\n\nevent: next\ndata: \{.*"Signing\.[A-Za-z]+".*\}\n\nevent: complete\ndata:\n\n$/s);
  });

  it('releases everything a stream held when clients go away, however many come and go', async () => {
    const hub = app.dependencies.envelopeEvents!;
    const before = hub.openCount;
    for (let round = 0; round < 3; round += 1) {
      const clients: http.ClientRequest[] = [];
      const opened: Promise<void>[] = [];
      for (let index = 0; index < 40; index += 1) {
        const body = JSON.stringify({ query: STATUS_CHANGED });
        opened.push(
          new Promise((resolve, reject) => {
            const request = http.request(
              `${app.url}/graphql`,
              {
                method: 'POST',
                agent: false,
                headers: { 'x-service-api-key': team.apiKey, accept: 'text/event-stream', 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) },
              },
              (response) => {
                expect(response.statusCode).toBe(200);
                response.once('data', () => resolve());
                response.on('error', () => {});
              },
            );
            request.on('error', reject);
            request.end(body);
            clients.push(request);
          }),
        );
      }
      await Promise.all(opened);
      await untilWatching(app, 40);
      await expect.poll(() => openLiveResponseCount()).toBe(40);
      expect(hub.openCount - before).toBe(40);
      for (const client of clients) client.destroy();
      await expect.poll(() => hub.watcherCount).toBe(0);
      await expect.poll(() => openLiveResponseCount()).toBe(0);
      await expect.poll(() => hub.openCount).toBe(before);
    }
  });

  it('pulls the next result only when the client has taken the last: a client that stops reading holds a bounded amount', async () => {
    let pulled = 0;
    let returned = false;
    const results: AsyncIterableIterator<{ data: { text: string } }> = {
      next: async () => {
        pulled += 1;
        return { value: { data: { text: 'x'.repeat(64 * 1024) } }, done: false };
      },
      return: async () => {
        returned = true;
        return { value: undefined, done: true };
      },
      [Symbol.asyncIterator]: () => results,
    };
    const server = http.createServer((_request, response) => writeLiveResponse(response, new Response(null, { status: 200, headers: { 'content-type': 'text/event-stream' } }), results));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as import('node:net').AddressInfo;
      const response = await new Promise<http.IncomingMessage>((resolve) => http.get({ host: '127.0.0.1', port, agent: false }, resolve));
      // The client reads a little, then stops; an unbounded writer would go on pulling for ever.
      await new Promise((resolve) => response.once('data', resolve));
      response.pause();
      // Once the socket buffers are full the writer stops pulling; a busy machine only takes
      // longer to get there. An unbounded writer never settles, and fails below.
      // Settled means unchanged over three samples in a row: one stalled sample on a loaded machine
      // (the writer not scheduled either) is not taken for the stop.
      let whilePaused = -1;
      for (let sample = 0, unchanged = 0; sample < 150 && unchanged < 3; sample += 1) {
        unchanged = pulled === whilePaused ? unchanged + 1 : 0;
        whilePaused = pulled;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      await new Promise((resolve) => setTimeout(resolve, 300));
      // Bounded by what the socket buffers hold (a few megabytes at most here), and no longer growing.
      expect(pulled).toBe(whilePaused);
      expect(pulled).toBeLessThan(500);
      // Reading again lets it go on; the client going away returns the iterator.
      response.resume();
      await expect.poll(() => pulled).toBeGreaterThan(whilePaused);
      response.destroy();
      await expect.poll(() => returned).toBe(true);
      await expect.poll(() => openLiveResponseCount()).toBe(0);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
