/**
 * Traces (shared/tracing.ts), recorded by an in-memory exporter while the real app and the outbox
 * worker run a workload: the request that finalizes an envelope, its GraphQL operation and
 * statements, the seal job in the same trace and the PDF work under it; an incoming traceparent;
 * no secret in any span; nothing recorded with tracing off.
 */

import { randomUUID } from 'node:crypto';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace';
import { createClient as createWsClient } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import WebSocket from 'ws';
import { enqueue } from '../src/domain/outbox/outbox.ts';
import { createOutboxWorker } from '../src/domain/outbox/outbox-worker.ts';
import { OUTBOX_TOPICS } from '../src/domain/outbox/topics.ts';
import { createLogger } from '../src/shared/logger.ts';
import { sanitizeSql } from '../src/shared/sql-tracing.ts';
import { activeTraceparent, isTracing, startTracing, stopTracing, withSpan } from '../src/shared/tracing.ts';
import { restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { startServerProcess } from './helpers/process.ts';
import { startRecordingServer } from './helpers/recording-server.ts';
import { buildEnvelope, invitationsOf, SESSION_QUERY, SUBMIT_MUTATION, signingClient, tokenFor, typedSignature } from './helpers/signing.ts';
import { mainWorkerFor } from './helpers/workers.ts';

const exporter = new InMemorySpanExporter();
let app: TestApp;
let team: SeededTeam;
beforeAll(async () => {
  // Before the app opens its connections: the statement hook must be in place first.
  startTracing({ exporter });
  app = await startTestApp();
  team = await seedTeam(app);
});
afterAll(async () => {
  await stopTracing();
  await app?.close();
});

const spans = () => exporter.getFinishedSpans();
const idOf = (span: ReadableSpan) => span.spanContext().spanId;
const traceOf = (span: ReadableSpan) => span.spanContext().traceId;

/** Whether `ancestor` is `span`'s parent, grandparent, … among the recorded spans. */
function descendsFrom(span: ReadableSpan, ancestor: ReadableSpan): boolean {
  const byId = new Map(spans().map((each) => [idOf(each), each]));
  let parentId = span.parentSpanContext?.spanId;
  while (parentId !== undefined) {
    if (parentId === idOf(ancestor)) return true;
    parentId = byId.get(parentId)?.parentSpanContext?.spanId;
  }
  return false;
}

/** Every string a span carries: name, attributes, status message, events' attributes. */
function textsOf(span: ReadableSpan): string[] {
  const values = [span.name, span.status.message ?? '', ...Object.values(span.attributes), ...span.events.flatMap((event) => Object.values(event.attributes ?? {}))];
  return values.flat().map(String);
}

async function sentEnvelope() {
  const built = await buildEnvelope(app, team.apiKey, { recipients: [{ identifier: 'signer' }] });
  const sent = await restClient(app, team.apiKey).put(`/envelopes/${built.envelopeId}/send`);
  expect(sent.status, JSON.stringify(sent.body)).toBe(200);
  return built;
}

describe('traces', () => {
  it('follow the request that finalizes an envelope through its operation and statements into the seal job and its PDF work', async () => {
    const built = await sentEnvelope();
    const token = await tokenFor(app, built.envelopeId, built.recipients.signer);
    const session = await signingClient(app, token)(SESSION_QUERY);
    const values = session.data.signingSession.fields.map((field: any) => ({ fieldId: field.id, value: typedSignature }));
    exporter.reset();

    // The final signature, as the signing page sends it (a named operation).
    const response = await fetch(`${app.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-signing-token': token },
      body: JSON.stringify({ query: SUBMIT_MUTATION.replace('mutation(', 'mutation FinishSigning('), variables: { values, complete: true } }),
    });
    const answer = (await response.json()) as { errors?: unknown };
    expect(answer.errors).toBeUndefined();
    const requestId = response.headers.get('x-request-id');

    // The seal job's row carries the trace of the request that queued it.
    const [sealRow] = await app.orm.em
      .fork()
      .execute<{ id: string; trace_parent: string | null }[]>(`select id, trace_parent from outbox_message where topic = 'artefact.seal' and payload ->> 'envelopeId' = ?`, [
        built.envelopeId,
      ]);
    expect(sealRow.trace_parent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    const [, traceId, enqueuedBy] = sealRow.trace_parent!.split('-');

    const request = spans().find((span) => span.kind === SpanKind.SERVER && traceOf(span) === traceId)!;
    expect(request).toBeDefined();
    expect(request.name).toBe('POST /graphql');
    expect(request.parentSpanContext).toBeUndefined();
    expect(request.attributes).toMatchObject({
      'http.request.method': 'POST',
      'http.route': '/graphql',
      'http.response.status_code': 200,
      'request.id': requestId,
    });
    const operation = spans().find((span) => span.name === 'graphql.operation mutation FinishSigning')!;
    expect(operation.parentSpanContext?.spanId).toBe(idOf(request));
    expect(operation.attributes).toMatchObject({ 'graphql.operation.type': 'mutation', 'graphql.operation.name': 'FinishSigning' });
    // The message was enqueued inside the operation.
    expect(idOf(operation) === enqueuedBy || spans().some((span) => idOf(span) === enqueuedBy && descendsFrom(span, operation))).toBe(true);
    const statements = spans().filter((span) => span.attributes['db.system.name'] === 'postgresql' && traceOf(span) === traceId);
    expect(statements.length).toBeGreaterThan(3);
    for (const statement of statements) {
      expect(statement.kind).toBe(SpanKind.CLIENT);
      expect(descendsFrom(statement, operation)).toBe(true);
    }
    expect(statements.some((span) => /insert into outbox_message/.test(String(span.attributes['db.query.text'])))).toBe(true);

    // The worker runs the seal job in the same trace, under the span that enqueued it.
    expect(await mainWorkerFor(app, team.teamId).drain()).toBeGreaterThanOrEqual(1);
    const job = spans().find((span) => span.name === 'outbox artefact.seal' && span.attributes['outbox.message_id'] === sealRow.id)!;
    expect(job).toBeDefined();
    expect(job.kind).toBe(SpanKind.CONSUMER);
    expect(traceOf(job)).toBe(traceId);
    expect(job.parentSpanContext?.spanId).toBe(enqueuedBy);
    expect(job.attributes).toMatchObject({ 'outbox.topic': 'artefact.seal', 'outbox.attempt': 1 });
    const sealTask = spans().find((span) => span.name === 'pdf render' && span.attributes['pdf.sealed'] === true && descendsFrom(span, job));
    expect(sealTask, 'the sealing render under the job').toBeDefined();
    expect(sealTask!.attributes['pdf.outcome']).toBe('written');
    expect(spans().some((span) => span.attributes['db.system.name'] === 'postgresql' && descendsFrom(span, job))).toBe(true);
    // The sealed file is stored under the job too.
    const stored = spans().find((span) => span.name === 'blob commit' && descendsFrom(span, job));
    expect(stored?.attributes).toMatchObject({ 'blob.store': 'file', 'blob.operation': 'commit' });
  });

  it('continue an incoming traceparent, name REST requests by their route template and carry the request id', async () => {
    const built = await buildEnvelope(app, team.apiKey, { recipients: [{ identifier: 'signer' }] });
    exporter.reset();
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const callerSpan = '00f067aa0ba902b7';
    const answer = await restClient(app, team.apiKey).get(`/envelopes/${built.envelopeId}`, { traceparent: `00-${traceId}-${callerSpan}-01` });
    expect(answer.status).toBe(200);
    const request = spans().find((span) => span.kind === SpanKind.SERVER)!;
    expect(request.name).toBe('GET /api/v1/key/envelopes/:envelopeId');
    expect(traceOf(request)).toBe(traceId);
    expect(request.parentSpanContext).toMatchObject({ spanId: callerSpan, isRemote: true });
    expect(request.attributes).toMatchObject({
      'http.request.method': 'GET',
      'http.route': '/api/v1/key/envelopes/:envelopeId',
      'http.response.status_code': 200,
      'request.id': answer.headers.get('x-request-id'),
    });
    // The envelope id is in the path, not in the span: the route is the template.
    expect(textsOf(request).join(' ')).not.toContain(built.envelopeId);
    expect(spans().some((span) => span.attributes['db.system.name'] === 'postgresql' && descendsFrom(span, request))).toBe(true);
  });

  it('keep every secret out of every span: tokens, API keys, signing links, statement literals', async () => {
    exporter.reset();
    const built = await sentEnvelope();
    const [invitation] = await invitationsOf(app, built.envelopeId);
    // The signing page by its link, the session by its token, and the invitation mail's job.
    expect((await fetch(invitation.link.replace(/^https?:\/\/[^/]+/, app.url))).status).toBe(200);
    expect((await signingClient(app, invitation.token)(SESSION_QUERY)).errors).toBeUndefined();
    await mainWorkerFor(app, team.teamId).drain();
    const recorded = spans();
    expect(recorded.some((span) => span.name === 'GET /sign/:token')).toBe(true);
    expect(recorded.some((span) => span.name === 'outbox signing.invitation')).toBe(true);
    const texts = recorded.flatMap(textsOf);
    for (const secret of [invitation.token, team.apiKey, 'sgn_', 'esk_', '/sign/' + invitation.token.slice(0, 8), 'signer@example.com']) {
      expect(
        texts.filter((text) => text.includes(secret)),
        secret,
      ).toEqual([]);
    }
    for (const span of recorded) {
      expect(Object.keys(span.attributes).filter((key) => key.startsWith('url.'))).toEqual([]);
      const text = span.attributes['db.query.text'];
      if (text !== undefined) expect(String(text), 'a statement keeps no literal').not.toContain("'");
    }
  });

  it('strip string, escaped-string, dollar-quoted and number literals from statement text', () => {
    expect(sanitizeSql(`select * from api_key where key_hash = 'abc''def' and n = 42 and x = E'a\\'b' and y = $tag$body$tag$ and z = $1 and t0.id = 3.5`)).toBe(
      'select * from api_key where key_hash = ? and n = ? and x = ? and y = ? and z = $1 and t0.id = ?',
    );
    // A literal cut off by the length bound is still replaced, to the end.
    expect(sanitizeSql(`insert into t values ('${'s'.repeat(10_000)}')`)).toBe('insert into t values (?…');
  });

  it('mark a failed job span as failed, its exception redacted, under the span that enqueued it', async () => {
    exporter.reset();
    const teamId = randomUUID();
    const enqueuedBy = await withSpan('enqueuing work', {}, async (span) => {
      await app.orm.em.fork().transactional((em) => enqueue(em, OUTBOX_TOPICS.sealArtefacts, { teamId, envelopeId: randomUUID() }, { now: new Date() }));
      return span.spanContext().spanId;
    });
    const link = `${app.url}/sign/sgn_${'x'.repeat(43)}`;
    const worker = createOutboxWorker({
      em: app.orm.em,
      clock: app.dependencies.clock,
      logger: createLogger('silent'),
      handlers: new Map([
        [
          OUTBOX_TOPICS.sealArtefacts,
          async () => {
            throw new Error(`could not reach ${link}`);
          },
        ],
      ]),
      payloadMatch: { teamId },
      maxAttempts: 1,
    });
    expect(await worker.drain()).toBe(1);
    const job = spans().find((span) => span.name === 'outbox artefact.seal')!;
    expect(job.parentSpanContext?.spanId).toBe(enqueuedBy);
    expect(job.status.code).toBe(SpanStatusCode.ERROR);
    const exception = job.events.find((event) => event.name === 'exception')!;
    expect(exception.attributes?.['exception.message']).toBe(`could not reach ${app.url}/sign/[redacted]`);
    expect(textsOf(job).join(' ')).not.toContain('sgn_x');
  });

  it('give each GraphQL operation over WebSocket its own span, named, with its statements under it', async () => {
    const built = await buildEnvelope(app, team.apiKey, { recipients: [{ identifier: 'signer' }] });
    exporter.reset();
    const client = createWsClient({ url: `${app.url.replace(/^http/, 'ws')}/graphql`, webSocketImpl: WebSocket, connectionParams: { 'X-Service-Api-Key': team.apiKey }, retryAttempts: 0 });
    try {
      const result = await new Promise<{ data?: { envelope?: { id: string } | null } }>((resolve, reject) => {
        let received: { data?: { envelope?: { id: string } | null } } = {};
        client.subscribe(
          { query: 'query OneEnvelope($id: ID!) { envelope(id: $id) { id } }', variables: { id: built.envelopeId } },
          { next: (value) => (received = value as typeof received), error: reject, complete: () => resolve(received) },
        );
      });
      expect(result.data?.envelope?.id).toBe(built.envelopeId);
    } finally {
      await client.dispose();
    }
    const operation = spans().find((span) => span.name === 'graphql.operation query OneEnvelope');
    expect(
      operation,
      spans()
        .map((span) => span.name)
        .join(', '),
    ).toBeDefined();
    expect(operation!.kind).toBe(SpanKind.SERVER);
    expect(operation!.parentSpanContext).toBeUndefined();
    expect(operation!.attributes).toMatchObject({ 'graphql.operation.type': 'query', 'graphql.operation.name': 'OneEnvelope', 'network.protocol.name': 'websocket' });
    expect(spans().some((span) => span.attributes['db.system.name'] === 'postgresql' && descendsFrom(span, operation!))).toBe(true);
    expect(textsOf(operation!).join(' ')).not.toContain(team.apiKey);
  });

  it('record nothing and store no trace context when off', async () => {
    await stopTracing();
    exporter.reset();
    expect(isTracing()).toBe(false);
    expect(activeTraceparent()).toBeNull();
    const built = await sentEnvelope();
    expect((await restClient(app, team.apiKey).get(`/envelopes/${built.envelopeId}`, { traceparent: `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01` })).status).toBe(200);
    await mainWorkerFor(app, team.teamId).drain();
    expect(spans()).toEqual([]);
    const rows = await app.orm.em.fork().execute<{ trace_parent: string | null }[]>(`select trace_parent from outbox_message where payload ->> 'envelopeId' = ?`, [built.envelopeId]);
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.every((row) => row.trace_parent === null)).toBe(true);
  });
});

describe.skipIf(inject('databaseKind') === 'embedded')('the service with an OTLP endpoint (skipped on the embedded database: a second process cannot open it)', () => {
  it('exports its spans to OTEL_EXPORTER_OTLP_ENDPOINT with OTEL_EXPORTER_OTLP_HEADERS, flushed on shutdown', async () => {
    const collector = await startRecordingServer();
    try {
      const service = await startServerProcess(app, {
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.url.replace(/\/$/, ''),
        OTEL_EXPORTER_OTLP_HEADERS: 'x-collector-key=test-collector-key',
        OTEL_SERVICE_NAME: 'envelope-tracing-test',
      });
      const answer = await fetch(`${service.url}/api/v1/key/envelopes/00000000-0000-4000-8000-000000000000`, { headers: { 'x-service-api-key': team.apiKey } });
      expect(answer.status).toBe(404);
      // The batch processor would wait 5 s; the graceful shutdown exports at once.
      await service.stop();
      const exported = collector.received.flatMap((request) => request.json.resourceSpans ?? []);
      expect(collector.received.every((request) => request.headers['x-collector-key'] === 'test-collector-key')).toBe(true);
      expect(exported[0].resource.attributes).toContainEqual({ key: 'service.name', value: { stringValue: 'envelope-tracing-test' } });
      const names = exported.flatMap((resource: any) => resource.scopeSpans.flatMap((scope: any) => scope.spans.map((span: any) => span.name)));
      expect(names).toContain('GET /api/v1/key/envelopes/:envelopeId');
      expect(names).toContain('SELECT');
    } finally {
      await collector.close();
    }
  });
});
