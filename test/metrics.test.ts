import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createApp } from '../src/app.ts';
import { DELIVERY_FAILURES } from '../src/domain/outbox/delivery-failures.ts';
import { createOutboxWorker, PermanentOutboxError } from '../src/domain/outbox/outbox-worker.ts';
import { OUTBOX_TOPICS } from '../src/domain/outbox/topics.ts';
import { listenForMetrics } from '../src/http/metrics.ts';
import type { RunningServer } from '../src/server.ts';
import { createFileBlobStore, instrumentBlobStore } from '../src/shared/blob-store/index.ts';
import { createLogger } from '../src/shared/logger.ts';
import { createMetrics, MAX_OPERATION_NAMES, type Metrics } from '../src/shared/metrics.ts';
import { eventually } from './helpers/eventually.ts';
import { graphqlClient, listenWithBodyTimeouts, restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { STATUS_CHANGED, subscribe, untilWatching } from './helpers/live.ts';
import { rawRequest } from './helpers/raw-http.ts';
import { buildEnvelope, signAndComplete, tokenFor } from './helpers/signing.ts';
import { mainWorkerFor } from './helpers/workers.ts';

const TOKEN = 'metrics-test-token-0123456789abcdef';
const ANONYMOUS_PER_MINUTE = 2;

/** The value of one sample of the exposition (`name{labels} value`), labels given in any order; undefined when absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const found = Object.fromEntries([...(match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)].map((pair) => [pair[1], pair[2]]));
    if (Object.entries(labels).every(([key, value]) => found[key] === value)) return Number(match[3]);
  }
  return undefined;
}

describe('Prometheus metrics', () => {
  let app: TestApp;
  let metrics: Metrics;
  let team: SeededTeam;

  async function scrape(token: string | undefined = TOKEN): Promise<Response> {
    return fetch(`${app.url}/metrics`, { headers: token === undefined ? {} : { authorization: `Bearer ${token}` } });
  }

  async function scrapeText(): Promise<string> {
    const response = await scrape();
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    return response.text();
  }

  beforeAll(async () => {
    metrics = createMetrics();
    app = await startTestApp({
      metrics,
      captureLog: true,
      rateLimitsOwnCounters: true,
      env: { METRICS_TOKEN: TOKEN, RATE_LIMIT_ANONYMOUS_PER_MINUTE: String(ANONYMOUS_PER_MINUTE), TRUST_PROXY_HOPS: '1' },
    });
    team = await seedTeam(app);
  });

  afterAll(async () => {
    await app?.close();
  });

  it('counts a workload through the real app and shows it without ids, names or credentials', async () => {
    const rest = restClient(app, team.apiKey);

    // Envelope A: created, sent, signed, finalized (and sealed below). Envelope B: created, sent, voided.
    const a = await buildEnvelope(app, team.apiKey, { name: 'Metrics A (Ada Lovelace)', recipients: [{ identifier: 'signer' }] });
    const b = await buildEnvelope(app, team.apiKey, { name: 'Metrics B', recipients: [{ identifier: 'signer' }] });
    expect((await rest.put(`/envelopes/${a.envelopeId}/send`)).status).toBe(200);
    expect((await rest.put(`/envelopes/${b.envelopeId}/send`)).status).toBe(200);
    const signingToken = await tokenFor(app, a.envelopeId, a.recipients.signer);
    const signed = await signAndComplete(app, signingToken);
    expect(signed.errors, JSON.stringify(signed.errors)).toBeUndefined();
    expect((await rest.post(`/envelopes/${b.envelopeId}/void`, { reason: 'metrics test' })).status).toBe(200);

    // GraphQL: a named query, and one without a name.
    const graphql = graphqlClient(app, team.apiKey);
    const named = await graphql(`query MetricsProbe($id: ID!) { envelope(id: $id) { id status } }`, { id: a.envelopeId });
    expect(named.data.envelope.status).toBe('finalized');
    expect((await graphql(`{ viewer { id } }`)).errors).toBeUndefined();

    // A client address without a key, past its budget: refused with 429.
    const statuses: number[] = [];
    for (let attempt = 0; attempt <= ANONYMOUS_PER_MINUTE + 2 && !statuses.includes(429); attempt += 1) {
      statuses.push((await fetch(`${app.url}/api/v1/key/envelopes`, { headers: { 'x-forwarded-for': '203.0.113.41' } })).status);
    }
    expect(statuses).toContain(429);

    // A live subscription, open while one scrape reads it.
    const watcher = subscribe(app, 'sse', { apiKey: team.apiKey }, STATUS_CHANGED, { envelopeId: a.envelopeId });
    await untilWatching(app, 1);
    const whileOpen = await scrapeText();
    expect(sample(whileOpen, 'envelope_subscriptions_open')).toBeGreaterThanOrEqual(1);
    await watcher.close();

    // The queue as it stands: B's closing notice and the invitations and A's seal wait (no worker ran yet).
    expect(sample(whileOpen, 'envelope_outbox_pending', { topic: OUTBOX_TOPICS.sealArtefacts })).toBeGreaterThanOrEqual(1);
    expect(sample(whileOpen, 'envelope_outbox_pending', { topic: OUTBOX_TOPICS.invitation })).toBeGreaterThanOrEqual(2);
    expect(sample(whileOpen, 'envelope_outbox_oldest_age_seconds', { topic: OUTBOX_TOPICS.sealArtefacts })).toBeGreaterThanOrEqual(0);

    // One job given up for good (B's closing notice, refused by a handler), the rest run: A is sealed.
    const refusing = createOutboxWorker({
      em: app.orm.em,
      clock: app.dependencies.clock,
      logger: createLogger('silent'),
      handlers: new Map([
        [
          OUTBOX_TOPICS.closedNotice,
          async () => {
            throw new PermanentOutboxError(DELIVERY_FAILURES.messageIncomplete, 'refused by the metrics test');
          },
        ],
      ]),
      payloadMatch: { teamId: team.teamId },
      metrics,
    });
    expect(await refusing.drain()).toBeGreaterThanOrEqual(1);
    expect(await mainWorkerFor(app, team.teamId, { dependencies: { metrics } }).drain()).toBeGreaterThanOrEqual(1);

    // Closing a subscription releases it (asynchronously, once the stream's end reaches the server).
    let text = await scrapeText();
    await eventually(async () => sample((text = await scrapeText()), 'envelope_subscriptions_open') === 0, { what: 'the subscription released' }).catch(() => undefined);
    expect(sample(text, 'envelope_subscriptions_open')).toBe(0);

    // HTTP: REST routes by template, GraphQL, unknown paths as one label.
    expect(sample(text, 'http_server_request_duration_seconds_count', { route: '/api/v1/key/envelopes', method: 'POST', status: '200' })).toBeGreaterThanOrEqual(2);
    expect(sample(text, 'http_server_request_duration_seconds_count', { route: '/api/v1/key/envelopes/{envelopeId}/send', method: 'PUT', status: '200' })).toBe(2);
    expect(sample(text, 'http_server_request_duration_seconds_count', { route: '/api/v1/key/envelopes/{envelopeId}/void', method: 'POST', status: '200' })).toBe(1);
    expect(sample(text, 'http_server_request_duration_seconds_count', { route: '/api/v1/key/envelopes', method: 'GET', status: '429' })).toBe(1);
    expect(sample(text, 'http_server_request_duration_seconds_count', { route: '/graphql', method: 'POST', status: '200' })).toBeGreaterThanOrEqual(2);
    expect(sample(text, 'http_server_request_duration_seconds_bucket', { route: '/metrics', method: 'GET', status: '200', le: '+Inf' })).toBeGreaterThanOrEqual(1);
    await fetch(`${app.url}/no/such/path/${a.envelopeId}`);
    text = await scrapeText();
    expect(sample(text, 'http_server_request_duration_seconds_count', { route: 'unmatched', method: 'GET', status: '404' })).toBeGreaterThanOrEqual(1);

    // GraphQL operations by name and type.
    expect(sample(text, 'graphql_operation_duration_seconds_count', { operation_name: 'MetricsProbe', operation_type: 'query', result: 'success' })).toBe(1);
    expect(sample(text, 'graphql_operation_duration_seconds_count', { operation_name: 'anonymous', operation_type: 'query' })).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'graphql_operation_duration_seconds_count', { operation_type: 'mutation' })).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'graphql_operation_duration_seconds_count', { operation_type: 'subscription' })).toBeGreaterThanOrEqual(1);

    // Status changes this instance committed.
    expect(sample(text, 'envelope_status_transitions_total', { from: 'none', to: 'draft' })).toBe(2);
    expect(sample(text, 'envelope_status_transitions_total', { from: 'draft', to: 'sent' })).toBe(2);
    expect(sample(text, 'envelope_status_transitions_total', { from: 'sent', to: 'finalized' })).toBe(1);
    expect(sample(text, 'envelope_status_transitions_total', { from: 'sent', to: 'voided' })).toBe(1);

    // The rest of the list.
    expect(sample(text, 'envelope_rate_limited_total', { scope: 'client' })).toBe(1);
    expect(sample(text, 'envelope_outbox_failed_total', { topic: OUTBOX_TOPICS.closedNotice })).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'envelope_seal_duration_seconds_count', { outcome: 'sealed' })).toBe(1);
    expect(sample(text, 'envelope_seal_duration_seconds_sum', { outcome: 'sealed' })).toBeGreaterThan(0);
    expect(text).toContain('# TYPE envelope_blob_store_errors_total counter');
    expect(sample(text, 'envelope_db_pool_connections')).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'envelope_db_pool_idle_connections')).toBeGreaterThanOrEqual(0);
    expect(sample(text, 'envelope_db_pool_waiting_requests')).toBeGreaterThanOrEqual(0);
    expect(sample(text, 'nodejs_eventloop_lag_seconds')).toBeGreaterThanOrEqual(0);
    expect(sample(text, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);

    // Nothing identifying: no id, name, email, token or key.
    for (const secret of [a.envelopeId, b.envelopeId, a.documentId, a.recipients.signer, team.teamId, team.apiKey, signingToken, TOKEN, 'Ada Lovelace', 'signer@example.com']) {
      expect(text).not.toContain(secret);
    }
    // …nor in the log lines of the scrapes (the request log writes the path, never the Authorization header).
    expect(app.logLines.join('\n')).not.toContain(TOKEN);
  });

  it('refuses a missing or wrong token on the main port with 401 and the usual error body', async () => {
    for (const authorization of [undefined, 'Bearer wrong-token-0123456789abcdef', `Basic ${TOKEN}`, `Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(0, -1)}`]) {
      const response = await fetch(`${app.url}/metrics`, { headers: authorization === undefined ? {} : { authorization } });
      expect(response.status, String(authorization)).toBe(401);
      const body = (await response.json()) as any;
      expect(body).toMatchObject({ success: false, error: { name: 'Auth.InvalidMetricsToken' } });
      expect(typeof body.error.context.requestId).toBe('string');
    }
    expect((await scrape()).status).toBe(200);
  });

  it('answers 404 on the main port when METRICS_TOKEN is not set', async () => {
    const off = createApp({ ...app.dependencies, config: { ...app.dependencies.config, metricsToken: undefined }, metrics: createMetrics({ defaultMetrics: false }) });
    try {
      const response = await off.fetch('http://localhost/metrics', { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(response.status).toBe(404);
      expect(await response.text()).not.toContain('# TYPE');
    } finally {
      await off.dispose();
    }
  });

  it('serves GET /metrics alone, without a token, on METRICS_PORT', async () => {
    const server = await listenForMetrics({ port: 0, host: '127.0.0.1', metrics, logger: createLogger('silent') });
    try {
      const response = await fetch(`${server.url}/metrics`);
      expect(response.status).toBe(200);
      const text = await response.text();
      expect(sample(text, 'envelope_status_transitions_total', { from: 'draft', to: 'sent' })).toBeGreaterThanOrEqual(2);
      expect(sample(text, 'envelope_db_pool_connections')).toBeGreaterThanOrEqual(1);
      expect((await fetch(`${server.url}/graphql`)).status).toBe(404);
      expect((await fetch(`${server.url}/metrics`, { method: 'POST' })).status).toBe(404);
    } finally {
      await server.close();
    }
  });
});

describe('answers the Node server writes below the faces', () => {
  // A server on the same app dependencies (one registry, one log) with a short idle clock, so a
  // stalled body is refused in seconds; the total clock is out of reach.
  let app: TestApp;
  let metrics: Metrics;
  let team: SeededTeam;
  let slow: RunningServer;
  beforeAll(async () => {
    metrics = createMetrics({ defaultMetrics: false });
    app = await startTestApp({ metrics, captureLog: true });
    team = await seedTeam(app);
    slow = await listenWithBodyTimeouts(app, { idleMs: 1000, rateWindowMs: 3000, minBytesPerSecond: 1, totalMs: 600_000, lingerMs: 200 });
  });
  afterAll(async () => {
    await slow?.close(1000);
    await app?.close();
  });

  const timed = async (route: string, method: string, status?: string) => {
    const text = await metrics.scrape();
    if (status !== undefined) return sample(text, 'http_server_request_duration_seconds_count', { route, method, status }) ?? 0;
    let total = 0;
    for (const line of text.split('\n')) {
      if (line.startsWith('http_server_request_duration_seconds_count{') && line.includes(`route="${route}"`) && line.includes(`method="${method}"`)) total += Number(line.split(' ').pop());
    }
    return total;
  };
  const accessLines = (requestId: string) =>
    app.logLines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((entry) => entry.msg === 'request' && entry.requestId === requestId);
  /** A plain request on a new connection, timed and logged once it is answered: what was pending on the slow server before it is done. */
  const marker = async () => {
    const before = await timed('/api/v1/key/me', 'GET', '200');
    expect((await fetch(`${slow.url}/api/v1/key/me`, { headers: { 'x-service-api-key': team.apiKey } })).status).toBe(200);
    await eventually(async () => (await timed('/api/v1/key/me', 'GET', '200')) === before + 1, { what: 'the marker request timed' });
  };

  it('a stalled REST body: 408 timed and logged once, under its route and the request id the client got', async () => {
    const route = '/api/v1/key/envelopes';
    const [before408, beforeAny] = [await timed(route, 'POST', '408'), await timed(route, 'POST')];
    const answer = await rawRequest(slow.url, {
      path: route,
      headers: { 'content-type': 'application/json', 'x-service-api-key': team.apiKey },
      body: { head: '{"name":"Stalled', fillerBytes: 100, tail: '"}', stallAfterBytes: 10 },
    });
    expect(answer.status).toBe(408);
    const requestId = answer.headers['x-request-id'];
    expect(answer.body.error.context.requestId).toBe(requestId);
    // The REST face, which was reading the body, finishes after the refusal; it must not add its own answer.
    await eventually(() => accessLines(requestId).length === 1, { what: 'the access line' });
    await marker();
    expect(await timed(route, 'POST', '408')).toBe(before408 + 1);
    expect(await timed(route, 'POST')).toBe(beforeAny + 1);
    expect(accessLines(requestId)).toEqual([expect.objectContaining({ method: 'POST', path: route, status: 408, durationMs: expect.any(Number) })]);
  });

  it('a stalled GraphQL body and an upload without a key: timed and logged once under /graphql', async () => {
    const [before408, before401, beforeAny] = [await timed('/graphql', 'POST', '408'), await timed('/graphql', 'POST', '401'), await timed('/graphql', 'POST')];
    const stalled = await rawRequest(slow.url, {
      path: '/graphql',
      headers: { 'content-type': 'application/json', 'x-service-api-key': team.apiKey, 'x-request-id': 'stalled-graphql-body-1' },
      body: { head: '{"query":"{ viewer { id } }"', fillerBytes: 100, tail: '}', stallAfterBytes: 20 },
    });
    expect(stalled.status).toBe(408);
    expect(stalled.headers['x-request-id']).toBe('stalled-graphql-body-1');
    const boundary = 'below-the-faces';
    const keyless = await rawRequest(slow.url, {
      path: '/graphql',
      headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, 'x-request-id': 'keyless-upload-1' },
      body: { head: `--${boundary}\r\nContent-Disposition: form-data; name="operations"\r\n\r\n{}\r\n`, fillerBytes: 1000, tail: `--${boundary}--\r\n` },
    });
    expect(keyless.status).toBe(401);
    expect(keyless.body.errors[0].extensions.code).toBe('Auth.MissingApiKey');
    await marker();
    expect(await timed('/graphql', 'POST', '408')).toBe(before408 + 1);
    expect(await timed('/graphql', 'POST', '401')).toBe(before401 + 1);
    expect(await timed('/graphql', 'POST')).toBe(beforeAny + 2);
    expect(accessLines('stalled-graphql-body-1')).toEqual([expect.objectContaining({ method: 'POST', path: '/graphql', status: 408 })]);
    expect(accessLines('keyless-upload-1')).toEqual([expect.objectContaining({ method: 'POST', path: '/graphql', status: 401 })]);
  });

  it('a WebSocket upgrade: 101 timed and logged under /graphql', async () => {
    const before = await timed('/graphql', 'GET', '101');
    const socket = new WebSocket(`${slow.url.replace('http', 'ws')}/graphql`, 'graphql-transport-ws', { headers: { 'x-request-id': 'websocket-upgrade-1' } });
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    socket.close();
    expect(await timed('/graphql', 'GET', '101')).toBe(before + 1);
    expect(accessLines('websocket-upgrade-1')).toEqual([expect.objectContaining({ method: 'GET', path: '/graphql', status: 101 })]);
  });
});

describe('metric labels and hooks', () => {
  it('bounds GraphQL operation names: a name, anonymous, or other', () => {
    const metrics = createMetrics({ defaultMetrics: false });
    expect(metrics.operationNameLabel('CreateEnvelope')).toBe('CreateEnvelope');
    expect(metrics.operationNameLabel(undefined)).toBe('anonymous');
    expect(metrics.operationNameLabel('')).toBe('anonymous');
    expect(metrics.operationNameLabel('ada@example.com')).toBe('other');
    expect(metrics.operationNameLabel('x'.repeat(65))).toBe('other');
    for (let index = 0; index < MAX_OPERATION_NAMES * 2; index += 1) metrics.operationNameLabel(`Invented${index}`);
    expect(metrics.operationNameLabel('CreateEnvelope')).toBe('CreateEnvelope');
    expect(metrics.operationNameLabel(`Invented${MAX_OPERATION_NAMES - 2}`)).toBe(`Invented${MAX_OPERATION_NAMES - 2}`);
    expect(metrics.operationNameLabel(`Invented${MAX_OPERATION_NAMES * 2 - 1}`)).toBe('other');
  });

  it('keeps separate counts per registry (two apps in one process)', async () => {
    const first = createMetrics({ defaultMetrics: false });
    const second = createMetrics({ defaultMetrics: false });
    first.rateLimited.inc({ scope: 'apiKey' });
    expect(sample(await first.scrape(), 'envelope_rate_limited_total', { scope: 'apiKey' })).toBe(1);
    expect(sample(await second.scrape(), 'envelope_rate_limited_total', { scope: 'apiKey' })).toBeUndefined();
  });

  it('counts a blob store commit that fails on the service side', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'envelope-blob-metrics-'));
    try {
      const store = instrumentBlobStore(createFileBlobStore(directory), (operation) => metrics.blobStoreErrors.inc({ operation }));
      const staged = await store.stage(Readable.from([Buffer.from('%PDF-1.7 metrics')]));
      // The staging file vanishes before the commit (a disk gone away): the rename fails.
      fs.rmSync(staged.stagingPath);
      await expect(staged.commit()).rejects.toThrow();
      expect(sample(await metrics.scrape(), 'envelope_blob_store_errors_total', { operation: 'commit' })).toBe(1);
    } finally {
      fs.rmSync(directory, { recursive: true, force: true });
    }
  });
});
