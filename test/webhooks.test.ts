import { createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.ts';
import { pruneDeliveryHistory } from '../src/domain/notification/delivery-history.ts';
import { createMailer } from '../src/domain/notification/mailer.ts';
import { createOutboxWorker, type OutboxHandler } from '../src/domain/outbox/outbox-worker.ts';
import { OUTBOX_TOPICS } from '../src/domain/outbox/topics.ts';
import { webhookDeliveryHandler, webhookDisabledNoticeHandler } from '../src/domain/webhook/webhook-delivery.ts';
import { type Clock, createClock } from '../src/shared/clock.ts';
import { createLogger } from '../src/shared/logger.ts';
import { firstErrorName, graphqlClient, restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { type RecordedRequest, type RecordingServer, startRecordingServer } from './helpers/recording-server.ts';
import { buildEnvelope } from './helpers/signing.ts';
import { startSmtpServer, type TestSmtpServer } from './helpers/smtp.ts';
import { webhookWorkerFor } from './helpers/workers.ts';

/*
 * Team webhooks end to end: endpoints managed on both faces, audit events delivered by the real
 * outbox worker to a local node:http receiver, signed, retried, logged, redelivered, and an
 * endpoint that keeps failing disabled with its team told by mail (a real SMTP server). Every
 * worker here is kept to its own team's rows (`payloadMatch`).
 */

const logger = createLogger('silent');
const DAY_MS = 24 * 60 * 60 * 1000;
let app: TestApp;
let strictApp: TestApp;
let smtp: TestSmtpServer;

/** A webhook receiver on a free local port: records every POST, answers with `respond`'s status. */
function startReceiver(respond?: (request: RecordedRequest) => number): Promise<RecordingServer> {
  return startRecordingServer(respond, '/hooks');
}

/** The README's verification, written independently of the service's code. */
function verifySignature(secret: string, header: string, body: string, toleranceSeconds = 300, nowSeconds = Date.now() / 1000): boolean {
  const parts = header.split(',').map((part) => part.split('=', 2) as [string, string]);
  const timestamp = Number(parts.find(([name]) => name === 't')?.[1]);
  if (!Number.isInteger(timestamp) || Math.abs(nowSeconds - timestamp) > toleranceSeconds) return false;
  const expected = createHmac('sha256', secret).update(`${timestamp}.${body}`).digest();
  // Any v1 may match: after a rotation the previous secret signs too, for a while.
  return parts
    .filter(([name]) => name === 'v1')
    .some(([, value]) => {
      const given = Buffer.from(value ?? '', 'hex');
      return given.length === expected.length && timingSafeEqual(given, expected);
    });
}

/**
 * The webhook worker as main.ts runs it, kept to one team's rows, with a 2 s time limit per POST
 * and no jitter (`random: () => 1`, so backoff waits are exact); `handler` replaces the delivery
 * handler (a crash, a stricter address policy).
 */
function webhookWorker(
  team: SeededTeam,
  options: {
    clock?: Clock;
    maxAttempts?: number;
    baseBackoffMs?: number;
    leaseMs?: number;
    renewIntervalMs?: number;
    handler?: OutboxHandler<'webhook.delivery'>;
    allowPrivate?: boolean;
  } = {},
) {
  const { handler, allowPrivate, ...overrides } = options;
  // A receiver in this process answers at once; the timeout only has to outlast a loaded machine's
  // pause (the timeout itself is tested with a handler of its own, 1000 ms, against a receiver that never answers).
  const config = { ...app.dependencies.config, webhookTimeoutMs: 15_000, webhookAllowPrivate: allowPrivate ?? true };
  return webhookWorkerFor(app, team.teamId, {
    random: () => 1,
    dependencies: { config },
    ...(handler ? { handlers: new Map([[OUTBOX_TOPICS.webhookDelivery, handler]]) } : {}),
    ...overrides,
  });
}

function clients(team: SeededTeam, target: TestApp = app) {
  return { rest: restClient(target, team.apiKey), graphql: graphqlClient(target, team.apiKey) };
}

async function createEndpoint(team: SeededTeam, body: Record<string, unknown>) {
  const created = await clients(team).rest.post('/webhooks', body);
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  return created.body.payload as { webhook: any; secret: string };
}

async function sendEnvelope(team: SeededTeam): Promise<string> {
  const built = await buildEnvelope(app, team.apiKey, { recipients: [{ identifier: 'alice' }] });
  expect((await clients(team).rest.put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
  return built.envelopeId;
}

async function auditTrail(envelopeId: string) {
  return app.orm.em.fork().execute<{ id: string; seq: number; type: string }[]>('select id, seq, type from audit_event where stream_id = ? order by seq', [envelopeId]);
}

const DELIVERIES_QUERY = `query($id: ID!, $first: Int, $after: String) { webhook(id: $id) { id enabled disabledReason disabledAt }
  deliveries: webhookDeliveries(webhookId: $id, first: $first, after: $after) { nodes { id eventType envelopeId sequence state attemptCount lastStatusCode lastErrorCode lastError nextAttemptAt deliveredAt failedAt payload
    attempts { statusCode durationMs errorCode error nextRetryAt } } pageInfo { hasNextPage endCursor } } }`;

beforeAll(async () => {
  smtp = await startSmtpServer();
  app = await startTestApp({ env: { WEBHOOK_ALLOW_PRIVATE: 'true', SMTP_URL: smtp.url }, countStatements: true });
  strictApp = await startTestApp();
});
afterAll(async () => {
  await app.close();
  await strictApp.close();
  await smtp.close();
});

describe('webhook endpoints', () => {
  it('are created, read, listed, changed and deleted over REST; the secret is shown on creation and rotation only', async () => {
    const team = await seedTeam(app);
    const { rest } = clients(team);
    const created = await createEndpoint(team, { url: 'https://example.com/hooks', eventTypes: ['envelope.sent', 'envelope.sent'], description: 'ERP' });
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    expect(created.webhook).toMatchObject({ url: 'https://example.com/hooks', eventTypes: ['envelope.sent'], enabled: true, description: 'ERP', disabledReason: null });
    const id = created.webhook.id;
    const read = await rest.get(`/webhooks/${id}`);
    expect(read.status).toBe(200);
    expect(read.body.payload.webhook).toEqual(created.webhook);
    expect(JSON.stringify(read.body)).not.toContain(created.secret);
    const second = await createEndpoint(team, { url: 'https://example.org/other' });
    expect(second.webhook.eventTypes).toEqual([]);
    const page = await rest.get('/webhooks?limit=1');
    expect(page.body.payload.webhooks.map((webhook: any) => webhook.id)).toEqual([second.webhook.id]);
    const next = await rest.get(`/webhooks?limit=1&cursor=${page.body.payload.nextCursor}`);
    expect(next.body.payload).toMatchObject({ webhooks: [{ id }], nextCursor: null });
    const changed = await rest.patch(`/webhooks/${id}`, { description: null, eventTypes: [], enabled: false });
    expect(changed.body.payload.webhook).toMatchObject({ description: null, eventTypes: [], enabled: false });
    const rotated = await rest.post(`/webhooks/${id}/rotate-secret`);
    expect(rotated.status).toBe(200);
    expect(rotated.body.payload.secret).toMatch(/^whsec_/);
    expect(rotated.body.payload.secret).not.toBe(created.secret);
    expect((await rest.delete(`/webhooks/${id}`)).body.payload).toEqual({ deleted: true });
    expect((await rest.get(`/webhooks/${id}`)).body.error.name).toBe('Webhook.NotFound');

    // Each change is in the team's trail, by the key that made it, and no secret ever is.
    const trail = await app.orm.em
      .fork()
      .execute<{ type: string; actor_type: string; details: any }[]>(
        `select type, actor_type, details from audit_event where team_id = ? and envelope_id is null and type like 'webhook.%' order by seq`,
        [team.teamId],
      );
    expect(trail.map((event) => [event.type, event.details.webhookId])).toEqual([
      ['webhook.created', id],
      ['webhook.created', second.webhook.id],
      ['webhook.updated', id],
      ['webhook.secret_rotated', id],
      ['webhook.deleted', id],
    ]);
    expect(trail.every((event) => event.actor_type === 'api_key')).toBe(true);
    expect(trail[2]!.details.changed).toEqual(['eventTypes', 'enabled', 'description']);
    expect(trail[3]!.details.previousSecretExpiresAt).toBe(rotated.body.payload.webhook.previousSecretExpiresAt);
    const serialized = JSON.stringify(trail);
    expect(serialized).not.toContain(created.secret);
    expect(serialized).not.toContain(rotated.body.payload.secret);
    expect(serialized).not.toContain('whsec_');
  });

  it('are managed through GraphQL too, with the secret only in the creation and rotation answers', async () => {
    const team = await seedTeam(app);
    const { graphql, rest } = clients(team);
    const created = await graphql(`mutation($input: CreateWebhookInput!) { createWebhook(input: $input) { secret webhook { id url eventTypes enabled description } } }`, {
      input: { url: 'https://example.com/gql', eventTypes: ['envelope.finalized'] },
    });
    expect(created.errors).toBeUndefined();
    const { secret, webhook } = created.data.createWebhook;
    expect(secret).toMatch(/^whsec_/);
    expect(webhook).toMatchObject({ url: 'https://example.com/gql', eventTypes: ['envelope.finalized'], enabled: true, description: null });
    // The read type has no secret field at all.
    expect(firstErrorName(await graphql(`query($id: ID!) { webhook(id: $id) { secret } }`, { id: webhook.id }))).toBeDefined();
    const updated = await graphql(`mutation($id: ID!, $input: UpdateWebhookInput!) { updateWebhook(id: $id, input: $input) { description eventTypes } }`, {
      id: webhook.id,
      input: { description: 'Finance', eventTypes: ['envelope.voided', 'envelope.finalized'] },
    });
    expect(updated.data.updateWebhook).toEqual({ description: 'Finance', eventTypes: ['envelope.voided', 'envelope.finalized'] });
    const listed = await graphql(`{ webhooks(first: 5) { nodes { id description } pageInfo { hasNextPage } } }`);
    expect(listed.data.webhooks).toEqual({ nodes: [{ id: webhook.id, description: 'Finance' }], pageInfo: { hasNextPage: false } });
    const rotated = await graphql(`mutation($id: ID!) { rotateWebhookSecret(id: $id) { secret webhook { id } } }`, { id: webhook.id });
    expect(rotated.data.rotateWebhookSecret.secret).not.toBe(secret);
    expect((await rest.get(`/webhooks/${webhook.id}`)).body.payload.webhook.description).toBe('Finance');
    const deleted = await graphql(`mutation($id: ID!) { deleteWebhook(id: $id) { id deleted } }`, { id: webhook.id });
    expect(deleted.data.deleteWebhook).toEqual({ id: webhook.id, deleted: true });
    expect(firstErrorName(await graphql(`query($id: ID!) { webhook(id: $id) { id } }`, { id: webhook.id }))).toBe('Webhook.NotFound');
  });

  it('refuse bad URLs and unknown event types by name on both faces', async () => {
    const team = await seedTeam(app);
    const { rest, graphql } = clients(team);
    const cases: [Record<string, unknown>, string][] = [
      [{ url: 'ftp://example.com/x' }, 'Webhook.UnsupportedScheme'],
      [{ url: 'http://example.com/x' }, 'Webhook.UnsupportedScheme'],
      [{ url: 'https://user:pass@example.com/x' }, 'Webhook.CredentialsInUrl'],
      [{ url: 'not a url' }, 'Webhook.InvalidUrl'],
      [{ url: 'https://example.com/x#part' }, 'Webhook.InvalidUrl'],
      [{ url: 'https://example.com:0/x' }, 'Webhook.InvalidUrl'],
      [{ url: 'https://example.com:000/x' }, 'Webhook.InvalidUrl'],
      [{ url: `${app.dependencies.config.publicUrl}/graphql` }, 'Webhook.AddressNotAllowed'],
      [{ url: 'https://example.com/x', eventTypes: ['envelope.sent', 'envelope.exploded'] }, 'Webhook.UnknownEventType'],
      [{ url: 'https://example.com/x', extra: 1 }, 'Request.Invalid'],
      [{ eventTypes: [] }, 'Request.Invalid'],
    ];
    for (const [body, name] of cases) {
      const answer = await rest.post('/webhooks', body);
      expect(answer.body.error?.name, JSON.stringify(body)).toBe(name);
      expect(answer.status).toBe(400);
    }
    const unknown = await rest.post('/webhooks', { url: 'https://example.com/x', eventTypes: ['envelope.exploded'] });
    expect(unknown.body.error.context.eventTypes).toEqual(['envelope.exploded']);
    const viaGraphql = await graphql(`mutation($input: CreateWebhookInput!) { createWebhook(input: $input) { secret } }`, {
      input: { url: 'https://a:b@example.com/' },
    });
    expect(firstErrorName(viaGraphql)).toBe('Webhook.CredentialsInUrl');
    const portZero = await graphql(`mutation($input: CreateWebhookInput!) { createWebhook(input: $input) { secret } }`, { input: { url: 'https://example.com:0/' } });
    expect(firstErrorName(portZero)).toBe('Webhook.InvalidUrl');
    const { webhook } = await createEndpoint(team, { url: 'https://example.com/ok' });
    expect((await rest.patch(`/webhooks/${webhook.id}`, { url: 'gopher://example.com' })).body.error.name).toBe('Webhook.UnsupportedScheme');
    expect((await rest.patch(`/webhooks/${webhook.id}`, { url: 'https://example.com:0/' })).body.error.name).toBe('Webhook.InvalidUrl');
    expect((await rest.patch(`/webhooks/${webhook.id}`, { eventTypes: ['nope'] })).body.error.name).toBe('Webhook.UnknownEventType');
    expect((await rest.get('/webhooks/not-a-uuid')).body.error.name).toBe('Webhook.NotFound');
    // Nothing was stored by the refusals.
    expect((await rest.get('/webhooks')).body.payload.webhooks).toHaveLength(1);
  });

  it('refuse loopback and private addresses unless WEBHOOK_ALLOW_PRIVATE is set', async () => {
    const team = await seedTeam(strictApp);
    const { rest, graphql } = clients(team, strictApp);
    for (const url of ['http://127.0.0.1:9/x', 'https://10.1.2.3/x', 'https://[::1]/x', 'https://localhost/x', 'https://192.168.0.10/x', 'https://169.254.169.254/latest']) {
      const answer = await rest.post('/webhooks', { url });
      expect(answer.body.error?.name, url).toBe('Webhook.AddressNotAllowed');
      expect(answer.body.error.context.reason).toBe('private');
    }
    const viaGraphql = await graphql(`mutation($input: CreateWebhookInput!) { createWebhook(input: $input) { secret } }`, { input: { url: 'https://172.16.0.1/' } });
    expect(firstErrorName(viaGraphql)).toBe('Webhook.AddressNotAllowed');
    expect((await rest.post('/webhooks', { url: 'https://hooks.example.com/x' })).status).toBe(200);
  });

  it("answer another team's endpoint and deliveries as not found, on both faces", async () => {
    const owner = await seedTeam(app);
    const stranger = await seedTeam(app);
    const { webhook } = await createEndpoint(owner, { url: 'https://example.com/mine' });
    const { rest, graphql } = clients(stranger);
    const someId = '00000000-0000-4000-8000-000000000000';
    for (const answer of [
      await rest.get(`/webhooks/${webhook.id}`),
      await rest.patch(`/webhooks/${webhook.id}`, { enabled: false }),
      await rest.delete(`/webhooks/${webhook.id}`),
      await rest.post(`/webhooks/${webhook.id}/rotate-secret`),
      await rest.get(`/webhooks/${webhook.id}/deliveries`),
      await rest.get(`/webhooks/${webhook.id}/deliveries/${someId}`),
      await rest.post(`/webhooks/${webhook.id}/deliveries/${someId}/redeliver`),
    ]) {
      expect(answer.status).toBe(404);
      expect(answer.body.error.name).toBe('Webhook.NotFound');
    }
    expect(firstErrorName(await graphql(`query($id: ID!) { webhook(id: $id) { id } }`, { id: webhook.id }))).toBe('Webhook.NotFound');
    expect(firstErrorName(await graphql(`mutation($id: ID!) { rotateWebhookSecret(id: $id) { secret } }`, { id: webhook.id }))).toBe('Webhook.NotFound');
    expect(firstErrorName(await graphql(`mutation($id: ID!) { deleteWebhook(id: $id) { id } }`, { id: webhook.id }))).toBe('Webhook.NotFound');
    expect(firstErrorName(await graphql(`mutation($id: ID!) { updateWebhook(id: $id, input: { enabled: false }) { id } }`, { id: webhook.id }))).toBe('Webhook.NotFound');
    expect(firstErrorName(await graphql(`query($id: ID!) { webhookDeliveries(webhookId: $id) { nodes { id } } }`, { id: webhook.id }))).toBe('Webhook.NotFound');
    expect(firstErrorName(await graphql(`query($w: ID!, $id: ID!) { webhookDelivery(webhookId: $w, id: $id) { id } }`, { w: webhook.id, id: someId }))).toBe('Webhook.NotFound');
    expect(firstErrorName(await graphql(`mutation($w: ID!, $id: ID!) { redeliverWebhookDelivery(webhookId: $w, id: $id) { id } }`, { w: webhook.id, id: someId }))).toBe('Webhook.NotFound');
    expect((await rest.get('/webhooks')).body.payload.webhooks).toEqual([]);
    // The owner's endpoint is untouched, and its own unknown delivery is WebhookDelivery.NotFound.
    const own = clients(owner).rest;
    expect((await own.get(`/webhooks/${webhook.id}`)).body.payload.webhook.enabled).toBe(true);
    expect((await own.get(`/webhooks/${webhook.id}/deliveries/${someId}`)).body.error.name).toBe('WebhookDelivery.NotFound');
    expect((await own.post(`/webhooks/${webhook.id}/deliveries/${someId}/redeliver`)).body.error.name).toBe('WebhookDelivery.NotFound');
  });

  it('are capped per team', async () => {
    const team = await seedTeam(app);
    for (let index = 0; index < 20; index += 1) await createEndpoint(team, { url: `https://example.com/${index}` });
    const refused = await clients(team).rest.post('/webhooks', { url: 'https://example.com/one-too-many' });
    expect(refused.status).toBe(422);
    expect(refused.body.error).toMatchObject({ name: 'Webhook.CapacityExceeded', context: { limit: 20 } });
  });
});

describe('webhook deliveries', () => {
  it("deliver a sent envelope's events, signed, with stable ids and the audit sequence; a crash between POST and acknowledgement repeats the same id", async () => {
    const team = await seedTeam(app);
    const receiver = await startReceiver();
    try {
      const { webhook, secret } = await createEndpoint(team, { url: receiver.url });
      const envelopeId = await sendEnvelope(team);
      const trail = await auditTrail(envelopeId);
      expect(trail.map((event) => event.type)).toContain('envelope.sent');

      // The first worker POSTs the first delivery and dies before acknowledging it.
      const real = webhookDeliveryHandler({ auditKey: app.dependencies.auditKey, allowPrivate: true, timeoutMs: 15_000 });
      let crashed = 0;
      const dying = webhookWorker(team, {
        leaseMs: 60_000,
        // Never renewed: the process is gone.
        renewIntervalMs: 3_600_000,
        handler: async (message, context) => {
          crashed += 1;
          await real(message, context);
          return new Promise<void>(() => undefined);
        },
      });
      void dying.drain(1);
      await expect.poll(() => receiver.received.length).toBe(1);
      // A restarted worker finds the claim still leased; its clock moved past the lease (however
      // long this machine took), it takes the claim again with the rest.
      const restartedClock = createClock();
      expect(await webhookWorker(team, { clock: restartedClock }).drain()).toBe(trail.length - 1);
      restartedClock.advance(61);
      expect(await webhookWorker(team, { clock: restartedClock }).drain()).toBe(1);
      expect(crashed).toBe(1);

      // One POST per event, plus the crashed one again with the same id.
      expect(receiver.received).toHaveLength(trail.length + 1);
      const ids = receiver.received.map((entry) => entry.json.id);
      expect(new Set(ids).size).toBe(trail.length);
      expect(ids.filter((id) => id === receiver.received[0]!.json.id)).toHaveLength(2);
      for (const entry of receiver.received) {
        expect(entry.headers['content-type']).toBe('application/json');
        expect(entry.headers['x-envelope-webhook-id']).toBe(entry.json.id);
        expect(entry.headers['x-envelope-signature']).toBe(`t=${entry.headers['x-envelope-webhook-timestamp']},v1=${(entry.headers['x-envelope-signature'] as string).split('v1=')[1]}`);
        expect(verifySignature(secret, entry.headers['x-envelope-signature'] as string, entry.body)).toBe(true);
        expect(verifySignature(secret, entry.headers['x-envelope-signature'] as string, entry.body.replace('"id"', '"Id"'))).toBe(false);
        expect(verifySignature('whsec_other', entry.headers['x-envelope-signature'] as string, entry.body)).toBe(false);
        expect(Object.keys(entry.json)).toEqual(['id', 'type', 'occurredAt', 'teamId', 'envelopeId', 'sequence', 'data']);
        expect(entry.json).toMatchObject({ teamId: team.teamId, envelopeId });
      }
      // Every event arrived once (by id), with its type and its sequence in the envelope's trail.
      const unique = [...new Map(receiver.received.map((entry) => [entry.json.id, entry.json])).values()];
      expect(unique.map((event) => [event.sequence, event.type]).sort((a, b) => a[0] - b[0])).toEqual(trail.map((event) => [event.seq, event.type]));
      const sent = unique.find((event) => event.type === 'envelope.sent');
      expect(sent.data).toBeTypeOf('object');

      // The log shows every delivery delivered; nothing is left to do.
      const log = await clients(team).rest.get(`/webhooks/${webhook.id}/deliveries?limit=100`);
      expect(log.body.payload.deliveries).toHaveLength(trail.length);
      // One delivery per audit event, naming it.
      expect(log.body.payload.deliveries.map((delivery: any) => delivery.eventId).sort()).toEqual(trail.map((event) => event.id).sort());
      expect(log.body.payload.deliveries.every((delivery: any) => delivery.state === 'delivered' && delivery.attempts[0].statusCode === 200)).toBe(true);
      expect(await webhookWorker(team).drain()).toBe(0);
    } finally {
      await receiver.close();
    }
  });

  it('after a rotation sign with the previous secret too for its grace period (24 h by default, 0 ends it at once), on both faces', async () => {
    const team = await seedTeam(app);
    const { rest, graphql } = clients(team);
    const receiver = await startReceiver();
    try {
      const { webhook, secret: first } = await createEndpoint(team, { url: receiver.url, eventTypes: ['envelope.sent'] });
      const clock = createClock();
      const rotated = await rest.post(`/webhooks/${webhook.id}/rotate-secret`);
      const second = rotated.body.payload.secret as string;
      const graceEnds = Date.parse(rotated.body.payload.webhook.previousSecretExpiresAt);
      expect(Math.abs(graceEnds - (Date.now() + 24 * 3600_000))).toBeLessThan(60_000);

      // Within the grace period: two v1 signatures, and either secret verifies.
      await sendEnvelope(team);
      expect(await webhookWorker(team, { clock }).drain()).toBe(1);
      const during = receiver.received[0]!;
      const header = during.headers['x-envelope-signature'] as string;
      expect(header.match(/v1=/g)).toHaveLength(2);
      expect(verifySignature(first, header, during.body)).toBe(true);
      expect(verifySignature(second, header, during.body)).toBe(true);

      // After it, only the new secret signs.
      clock.advance(25 * 3600);
      await sendEnvelope(team);
      expect(await webhookWorker(team, { clock }).drain()).toBe(1);
      const after = receiver.received[1]!;
      const afterHeader = after.headers['x-envelope-signature'] as string;
      const signedAt = clock.now().getTime() / 1000;
      expect(afterHeader.match(/v1=/g)).toHaveLength(1);
      expect(verifySignature(first, afterHeader, after.body, 300, signedAt)).toBe(false);
      expect(verifySignature(second, afterHeader, after.body, 300, signedAt)).toBe(true);

      // A leaked secret: rotating with 0 ends the old one at once.
      const now = await graphql(`mutation($id: ID!) { rotateWebhookSecret(id: $id, previousSecretValidSeconds: 0) { secret webhook { previousSecretExpiresAt } } }`, { id: webhook.id });
      expect(now.data.rotateWebhookSecret.webhook.previousSecretExpiresAt).toBeNull();
      const third = now.data.rotateWebhookSecret.secret as string;
      await sendEnvelope(team);
      expect(await webhookWorker(team).drain()).toBe(1);
      const last = receiver.received[2]!;
      expect(verifySignature(second, last.headers['x-envelope-signature'] as string, last.body)).toBe(false);
      expect(verifySignature(third, last.headers['x-envelope-signature'] as string, last.body)).toBe(true);

      // Out of range: refused by name on both faces, the secret unchanged.
      const refused = await rest.post(`/webhooks/${webhook.id}/rotate-secret`, { previousSecretValidSeconds: 8 * 24 * 3600 });
      expect(refused.status).toBe(400);
      expect(refused.body.error.name).toBe('Request.Invalid');
      expect(firstErrorName(await graphql(`mutation($id: ID!) { rotateWebhookSecret(id: $id, previousSecretValidSeconds: -1) { secret } }`, { id: webhook.id }))).toBe('Request.Invalid');
      await sendEnvelope(team);
      expect(await webhookWorker(team).drain()).toBe(1);
      const unchanged = receiver.received[3]!;
      expect(verifySignature(third, unchanged.headers['x-envelope-signature'] as string, unchanged.body)).toBe(true);
    } finally {
      await receiver.close();
    }
  });

  it('deliver only the subscribed event types; a disabled endpoint gets nothing', async () => {
    const team = await seedTeam(app);
    const receiver = await startReceiver();
    try {
      await createEndpoint(team, { url: receiver.url, eventTypes: ['envelope.sent', 'recipient.activated'] });
      await createEndpoint(team, { url: receiver.url, enabled: false });
      await sendEnvelope(team);
      await webhookWorker(team).drain();
      expect(receiver.received.map((entry) => entry.json.type).sort()).toEqual(['envelope.sent', 'recipient.activated']);
    } finally {
      await receiver.close();
    }
  });

  it('retry a receiver that answers 500 three times, then 200, and log each attempt on both faces', async () => {
    const team = await seedTeam(app);
    let calls = 0;
    const receiver = await startReceiver(() => (++calls <= 3 ? 500 : 200));
    const clock = createClock();
    try {
      const { webhook } = await createEndpoint(team, { url: receiver.url, eventTypes: ['envelope.sent'] });
      await sendEnvelope(team);
      const worker = webhookWorker(team, { clock });
      expect(await worker.drain()).toBe(1);
      const rest = clients(team).rest;
      let [delivery] = (await rest.get(`/webhooks/${webhook.id}/deliveries`)).body.payload.deliveries;
      expect(delivery).toMatchObject({ state: 'pending', attemptCount: 1, lastStatusCode: 500, lastErrorCode: 'http_status', lastError: 'HTTP 500' });
      // With no jitter the first wait is exactly the base step (1 minute).
      expect(Date.parse(delivery.nextAttemptAt) - Date.parse(delivery.attempts[0].at)).toBeGreaterThanOrEqual(59_000);
      expect(delivery.attempts[0].nextRetryAt).toBe(delivery.nextAttemptAt);
      expect(await worker.drain()).toBe(0);
      for (const minutes of [1, 2, 4]) {
        clock.advance(minutes * 60 + 1);
        expect(await worker.drain()).toBe(1);
      }
      expect(calls).toBe(4);
      [delivery] = (await rest.get(`/webhooks/${webhook.id}/deliveries`)).body.payload.deliveries;
      expect(delivery).toMatchObject({ state: 'delivered', attemptCount: 4, lastStatusCode: 200, nextAttemptAt: null, eventType: 'envelope.sent' });
      expect(delivery.attempts.map((attempt: any) => attempt.statusCode)).toEqual([200, 500, 500, 500]);
      expect(delivery.attempts.map((attempt: any) => attempt.nextRetryAt === null)).toEqual([true, false, false, false]);
      expect(delivery.attempts.every((attempt: any) => Number.isInteger(attempt.durationMs))).toBe(true);
      // The same id every time.
      expect(new Set(receiver.received.map((entry) => entry.json.id))).toEqual(new Set([delivery.id]));

      const viaGraphql = await clients(team).graphql(DELIVERIES_QUERY, { id: webhook.id });
      expect(viaGraphql.errors).toBeUndefined();
      const node = viaGraphql.data.deliveries.nodes[0];
      expect(node).toMatchObject({ id: delivery.id, state: 'delivered', attemptCount: 4, sequence: delivery.sequence, envelopeId: delivery.envelopeId });
      expect(node.attempts.map((attempt: any) => attempt.statusCode)).toEqual([200, 500, 500, 500]);
      const one = await rest.get(`/webhooks/${webhook.id}/deliveries/${delivery.id}`);
      expect(one.body.payload.delivery).toEqual(delivery);
      const oneViaGraphql = await clients(team).graphql(`query($w: ID!, $id: ID!) { webhookDelivery(webhookId: $w, id: $id) { id webhookId eventId state attempts { statusCode } } }`, {
        w: webhook.id,
        id: delivery.id,
      });
      expect(oneViaGraphql.data.webhookDelivery).toEqual({
        id: delivery.id,
        webhookId: webhook.id,
        eventId: delivery.eventId,
        state: 'delivered',
        attempts: [{ statusCode: 200 }, { statusCode: 500 }, { statusCode: 500 }, { statusCode: 500 }],
      });
    } finally {
      await receiver.close();
    }
  });

  it('disable an endpoint whose delivery failed for good, record why on both faces, tell the team by mail, and come back when enabled and redelivered (same id)', async () => {
    const team = await seedTeam(app);
    const { rest, graphql } = clients(team);
    expect((await rest.post('/users', { name: 'Ops Person', email: 'ops@example.com', locale: 'tr-TR' })).status).toBe(200);
    expect((await rest.post('/users', { name: 'Dev Person', email: 'dev@example.com' })).status).toBe(200);
    let status = 500;
    const receiver = await startReceiver(() => status);
    const clock = createClock();
    try {
      const { webhook } = await createEndpoint(team, { url: receiver.url, eventTypes: ['envelope.sent'] });
      await sendEnvelope(team);
      const worker = webhookWorker(team, { clock, maxAttempts: 2 });
      expect(await worker.drain()).toBe(1);
      clock.advance(61);
      expect(await worker.drain()).toBe(1);

      const read = (await rest.get(`/webhooks/${webhook.id}`)).body.payload.webhook;
      expect(read.enabled).toBe(false);
      // The reason as the team may read it: never the worker's error class.
      expect(read.disabledReason).toMatch(/failed for good after 2 attempt\(s\): HTTP 500$/);
      const [disabledEvent] = await app.orm.em
        .fork()
        .execute<{ actor_type: string; details: any }[]>(`select actor_type, details from audit_event where team_id = ? and type = 'webhook.disabled'`, [team.teamId]);
      expect(disabledEvent).toMatchObject({ actor_type: 'system', details: { webhookId: webhook.id, reason: read.disabledReason } });
      expect(read.disabledAt).not.toBeNull();
      const viaGraphql = await graphql(DELIVERIES_QUERY, { id: webhook.id });
      expect(viaGraphql.data.webhook).toMatchObject({ enabled: false, disabledReason: read.disabledReason, disabledAt: read.disabledAt });
      const [failed] = viaGraphql.data.deliveries.nodes;
      expect(failed).toMatchObject({ state: 'failed', attemptCount: 2, nextAttemptAt: null });
      expect(failed.failedAt).not.toBeNull();
      expect(failed.attempts.map((attempt: any) => attempt.statusCode)).toEqual([500, 500]);
      expect(failed).toMatchObject({ lastErrorCode: 'http_status', lastError: 'HTTP 500' });
      expect(failed.attempts.map((attempt: any) => [attempt.errorCode, attempt.error])).toEqual([
        ['http_status', 'HTTP 500'],
        ['http_status', 'HTTP 500'],
      ]);

      // The team's users are told, each in their language.
      const mailer = createMailer({ smtpUrl: smtp.url, from: app.dependencies.config.mailFrom, dataDir: app.dataDir, logger });
      const notices = createOutboxWorker({
        em: app.orm.em,
        clock,
        logger,
        handlers: new Map([[OUTBOX_TOPICS.webhookDisabledNotice, webhookDisabledNoticeHandler({ mailer, publicUrl: app.dependencies.config.publicUrl })]]),
        payloadMatch: { teamId: team.teamId },
      });
      expect(await notices.drain()).toBe(2);
      mailer.close();
      const [english] = smtp.to('dev@example.com');
      const [turkish] = smtp.to('ops@example.com');
      expect(english!.mail.subject).toBe('A webhook endpoint was disabled');
      expect(english!.mail.text).toContain(receiver.url);
      expect(english!.mail.text).toContain('HTTP 500');
      expect(turkish!.mail.subject).toBe('Bir webhook uç noktası devre dışı bırakıldı');

      // Nothing is delivered to a disabled endpoint, and a redelivery is refused.
      const redeliverPath = `/webhooks/${webhook.id}/deliveries/${failed.id}/redeliver`;
      const refused = await rest.post(redeliverPath);
      expect(refused.status).toBe(409);
      expect(refused.body.error.name).toBe('Webhook.Disabled');
      expect(firstErrorName(await graphql(`mutation($w: ID!, $id: ID!) { redeliverWebhookDelivery(webhookId: $w, id: $id) { id } }`, { w: webhook.id, id: failed.id }))).toBe(
        'Webhook.Disabled',
      );

      // Enabled again by an update: the reason goes; a redelivery carries the same id.
      const enabled = await rest.patch(`/webhooks/${webhook.id}`, { enabled: true });
      expect(enabled.body.payload.webhook).toMatchObject({ enabled: true, disabledReason: null, disabledAt: null });
      status = 200;
      const redelivered = await rest.post(redeliverPath);
      expect(redelivered.status).toBe(200);
      expect(redelivered.body.payload.delivery).toMatchObject({ id: failed.id, state: 'pending', failedAt: null });
      expect(await worker.drain()).toBe(1);
      const last = receiver.received.at(-1)!;
      expect(last.json.id).toBe(failed.id);
      expect(last.body).toBe(receiver.received[0]!.body);
      const after = (await rest.get(`/webhooks/${webhook.id}/deliveries/${failed.id}`)).body.payload.delivery;
      expect(after).toMatchObject({ state: 'delivered', attemptCount: 3 });
      expect(after.attempts.map((attempt: any) => attempt.statusCode)).toEqual([200, 500, 500]);

      // And through GraphQL: the same id once more.
      const again = await graphql(`mutation($w: ID!, $id: ID!) { redeliverWebhookDelivery(webhookId: $w, id: $id) { id state } }`, { w: webhook.id, id: failed.id });
      expect(again.data.redeliverWebhookDelivery).toEqual({ id: failed.id, state: 'pending' });
      expect(await worker.drain()).toBe(1);
      expect(receiver.received.at(-1)!.json.id).toBe(failed.id);
      expect(receiver.received).toHaveLength(4);
    } finally {
      await receiver.close();
    }
  });

  it('check the addresses a host name resolves to when connecting: allowed by WEBHOOK_ALLOW_PRIVATE, else refused for good', async () => {
    const team = await seedTeam(app);
    const receiver = await startReceiver();
    try {
      // Saved by name (localhost), so the connection goes through the resolver and its check.
      const { webhook } = await createEndpoint(team, { url: receiver.url.replace('127.0.0.1', 'localhost'), eventTypes: ['envelope.sent'] });
      await sendEnvelope(team);
      expect(await webhookWorker(team).drain()).toBe(1);
      expect(receiver.received.map((entry) => entry.json.type)).toEqual(['envelope.sent']);
      const rest = clients(team).rest;
      const [delivery] = (await rest.get(`/webhooks/${webhook.id}/deliveries`)).body.payload.deliveries;
      expect(delivery.state).toBe('delivered');

      // A worker without the allowance refuses the same name at connect time: nothing is sent, the
      // delivery fails at once (no retry can fix it) and the endpoint is disabled.
      expect((await rest.post(`/webhooks/${webhook.id}/deliveries/${delivery.id}/redeliver`)).status).toBe(200);
      const strict = webhookWorker(team, { allowPrivate: false });
      expect(await strict.drain()).toBe(1);
      expect(receiver.received).toHaveLength(1);
      const after = (await rest.get(`/webhooks/${webhook.id}/deliveries/${delivery.id}`)).body.payload.delivery;
      expect(after.state).toBe('failed');
      expect(after.attempts[0]).toMatchObject({ statusCode: null, nextRetryAt: null });
      // The team learns why, by a stable code, and not which address the name resolved to (a probe of the inside).
      expect(after.attempts[0]).toMatchObject({ errorCode: 'address_not_allowed', error: expect.stringMatching(/not a public one/) });
      expect(after).toMatchObject({ lastErrorCode: 'address_not_allowed', lastError: after.attempts[0].error });
      expect(JSON.stringify(after.attempts)).not.toContain('127.0.0.1');
      const read = (await rest.get(`/webhooks/${webhook.id}`)).body.payload.webhook;
      expect(read.enabled).toBe(false);
      expect(read.disabledReason).toBe(`Delivery ${delivery.id} (envelope.sent) failed for good after 2 attempt(s): ${after.attempts[0].error}`);
      expect(read.disabledReason).not.toMatch(/Error|127\.0\.0\.1/);
    } finally {
      await receiver.close();
    }
  });

  it('count a redirect as a failure (never followed) and a receiver that does not answer in time as a failure, both retried', async () => {
    const team = await seedTeam(app);
    const redirecting = await startReceiver(() => 302);
    const silent = http.createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const toRedirect = await createEndpoint(team, { url: redirecting.url, eventTypes: ['envelope.sent'] });
      const toSilent = await createEndpoint(team, { url: `http://127.0.0.1:${(silent.address() as { port: number }).port}/`, eventTypes: ['envelope.sent'] });
      await sendEnvelope(team);
      const worker = webhookWorker(team, { handler: webhookDeliveryHandler({ auditKey: app.dependencies.auditKey, allowPrivate: true, timeoutMs: 1000 }) });
      expect(await worker.drain()).toBe(2);
      const rest = clients(team).rest;
      const [redirected] = (await rest.get(`/webhooks/${toRedirect.webhook.id}/deliveries`)).body.payload.deliveries;
      expect(redirected).toMatchObject({ state: 'pending', lastStatusCode: 302, lastErrorCode: 'http_status', lastError: 'HTTP 302' });
      expect(redirected.nextAttemptAt).not.toBeNull();
      expect(redirecting.received).toHaveLength(1);
      const [timedOut] = (await rest.get(`/webhooks/${toSilent.webhook.id}/deliveries`)).body.payload.deliveries;
      expect(timedOut).toMatchObject({ state: 'pending', lastStatusCode: null, lastErrorCode: 'timeout', lastError: 'no answer within 1000 ms' });
      expect(timedOut.attempts[0].durationMs).toBeGreaterThanOrEqual(900);
      expect(timedOut.nextAttemptAt).not.toBeNull();
    } finally {
      await redirecting.close();
      silent.closeAllConnections();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });

  it('drop the queued deliveries of a deleted endpoint without calling it', async () => {
    const team = await seedTeam(app);
    const receiver = await startReceiver();
    try {
      const { webhook } = await createEndpoint(team, { url: receiver.url });
      await sendEnvelope(team);
      expect((await clients(team).rest.delete(`/webhooks/${webhook.id}`)).status).toBe(200);
      expect(await webhookWorker(team).drain()).toBeGreaterThan(0);
      expect(receiver.received).toEqual([]);
    } finally {
      await receiver.close();
    }
  });

  it("deliver the webhooks' own configuration events only to endpoints that name them", async () => {
    const team = await seedTeam(app);
    const { rest } = clients(team);
    const watcher = await createEndpoint(team, { url: 'https://example.com/config-watch', eventTypes: ['webhook.created', 'webhook.deleted'] });
    const other = await createEndpoint(team, { url: 'https://example.com/everything' });
    expect((await rest.post('/contacts', { name: 'Someone' })).status).toBe(200);
    // The all-types endpoint hears of the contact, not of its own creation.
    const everything = (await rest.get(`/webhooks/${other.webhook.id}/deliveries`)).body.payload.deliveries;
    expect(everything.map((delivery: any) => delivery.eventType)).toEqual(['contact.created']);
    expect((await rest.delete(`/webhooks/${other.webhook.id}`)).status).toBe(200);
    const watched = (await rest.get(`/webhooks/${watcher.webhook.id}/deliveries`)).body.payload.deliveries;
    // Newest first; the watcher, which names webhook.created, also heard of its own creation.
    expect(watched.map((delivery: any) => [delivery.eventType, delivery.payload.data.webhookId])).toEqual([
      ['webhook.deleted', other.webhook.id],
      ['webhook.created', other.webhook.id],
      ['webhook.created', watcher.webhook.id],
    ]);
  });

  it('page the delivery log newest first on both faces', async () => {
    const team = await seedTeam(app);
    const { webhook } = await createEndpoint(team, { url: 'https://example.com/never-called' });
    const rest = clients(team).rest;
    // Team-level events (contacts) are delivered too, with the team's trail sequence.
    for (const name of ['One', 'Two', 'Three']) expect((await rest.post('/contacts', { name })).status).toBe(200);
    const first = await rest.get(`/webhooks/${webhook.id}/deliveries?limit=2`);
    expect(first.body.payload.deliveries.map((delivery: any) => delivery.payload.data.name)).toEqual(['Three', 'Two']);
    expect(first.body.payload.deliveries.map((delivery: any) => [delivery.eventType, delivery.envelopeId, delivery.state])).toEqual([
      ['contact.created', null, 'pending'],
      ['contact.created', null, 'pending'],
    ]);
    const second = await rest.get(`/webhooks/${webhook.id}/deliveries?limit=2&cursor=${first.body.payload.nextCursor}`);
    expect(second.body.payload).toMatchObject({ nextCursor: null });
    // Sequence 2 of the team's trail: the endpoint's own creation is 1 (not delivered to an all-types endpoint).
    expect(second.body.payload.deliveries.map((delivery: any) => [delivery.payload.data.name, delivery.sequence])).toEqual([['One', 2]]);
    const graphql = clients(team).graphql;
    const page = await graphql(DELIVERIES_QUERY, { id: webhook.id, first: 2 });
    expect(page.data.deliveries.pageInfo.hasNextPage).toBe(true);
    const rest2 = await graphql(DELIVERIES_QUERY, { id: webhook.id, first: 2, after: page.data.deliveries.pageInfo.endCursor });
    expect(rest2.data.deliveries.nodes.map((node: any) => node.payload.data.name)).toEqual(['One']);
    expect((await rest.get(`/webhooks/${webhook.id}/deliveries?limit=0`)).body.error.name).toBe('Request.Invalid');
    expect((await rest.get(`/webhooks/${webhook.id}/deliveries?cursor=bogus`)).body.error.name).toBe('Request.Invalid');
  });

  it('cost a team without endpoints nothing but the one probe per event: no delivery and no queue row', async () => {
    const team = await seedTeam(app);
    app.resetStatements();
    expect((await clients(team).rest.post('/contacts', { name: 'Probe' })).status).toBe(200);
    expect(app.statements.filter((statement) => statement.includes('webhook'))).toHaveLength(1);
    await sendEnvelope(team);
    const [counted] = await app.orm.em
      .fork()
      .execute<{ count: number }[]>(`select count(*)::int as count from outbox_message where topic = ? and payload ->> 'teamId' = ?`, [OUTBOX_TOPICS.webhookDelivery, team.teamId]);
    expect(counted!.count).toBe(0);
  });
});

describe('delivery history retention', () => {
  it('prunes settled queue rows and webhook deliveries (with their attempts) older than the retention, and nothing pending or recent', async () => {
    const team = await seedTeam(app);
    const receiver = await startReceiver();
    try {
      const { webhook } = await createEndpoint(team, { url: receiver.url, eventTypes: ['envelope.sent'] });
      const envelopeId = await sendEnvelope(team);
      expect(await webhookWorker(team).drain()).toBe(1);
      expect(receiver.received).toHaveLength(1);
      // A second envelope's delivery stays queued (no worker runs): pending is never pruned.
      await sendEnvelope(team);
      const countOf = async () =>
        (
          await app.orm.em.fork().execute<{ outbox: string; deliveries: string; attempts: string }[]>(
            `select (select count(*) from outbox_message where payload ->> 'teamId' = ?) as outbox,
                    (select count(*) from webhook_delivery where team_id = ?) as deliveries,
                    (select count(*) from webhook_attempt a join webhook_delivery d on d.id = a.delivery_id where d.team_id = ?) as attempts`,
            [team.teamId, team.teamId, team.teamId],
          )
        )[0]!;
      const before = await countOf();
      expect(Number(before.deliveries)).toBe(2);
      expect(Number(before.attempts)).toBe(1);

      // 29 days later nothing is old enough; 31 days later the settled rows go.
      const now = Date.now();
      expect(await pruneDeliveryHistory({ em: app.orm.em, now: new Date(now + 29 * DAY_MS), retentionDays: 30, teamId: team.teamId })).toEqual({
        outboxMessages: 0,
        webhookDeliveries: 0,
        phoneMessages: 0,
        signingOtps: 0,
        publicLinkVisits: 0,
      });
      const pruned = await pruneDeliveryHistory({ em: app.orm.em, now: new Date(now + 31 * DAY_MS), retentionDays: 30, teamId: team.teamId });
      expect(pruned.webhookDeliveries).toBe(1);
      // Of the queue rows only the delivered webhook's is settled (no mail worker ran: the invitations wait).
      expect(pruned.outboxMessages).toBe(1);
      const after = await countOf();
      expect(Number(after.deliveries)).toBe(1);
      expect(Number(after.attempts)).toBe(0);
      expect(Number(after.outbox)).toBe(Number(before.outbox) - 1);
      const log = await clients(team).graphql(DELIVERIES_QUERY, { id: webhook.id });
      expect(log.data.deliveries.nodes.map((node: any) => [node.envelopeId === envelopeId, node.state])).toEqual([[false, 'pending']]);
    } finally {
      await receiver.close();
    }
  });
});

describe('webhook configuration', () => {
  it('defaults to public addresses only and a 10 s limit, and refuses bad values by name', () => {
    expect(loadConfig({})).toMatchObject({ webhookAllowPrivate: false, webhookTimeoutMs: 10_000 });
    expect(loadConfig({ WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_TIMEOUT_MS: '2500' })).toMatchObject({ webhookAllowPrivate: true, webhookTimeoutMs: 2500 });
    for (const [name, value] of [
      ['WEBHOOK_ALLOW_PRIVATE', 'maybe'],
      ['WEBHOOK_TIMEOUT_MS', '10'],
      ['WEBHOOK_TIMEOUT_MS', '120000'],
      ['WEBHOOK_TIMEOUT_MS', 'soon'],
    ] as const) {
      expect(() => loadConfig({ [name]: value }), `${name}=${value}`).toThrow(ConfigError);
      try {
        loadConfig({ [name]: value });
      } catch (error) {
        expect((error as ConfigError).variable).toBe(name);
      }
    }
  });
});
