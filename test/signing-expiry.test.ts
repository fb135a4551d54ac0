import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expireDueEnvelopes } from '../src/domain/signing/closing.service.ts';
import { firstErrorName, graphqlClient, restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { buildEnvelope, SESSION_QUERY, signingClient, tokenFor } from './helpers/signing.ts';

/*
 * Expiry and the sandbox clock (contract §8). The sandbox clock is the app's own, but its sweep
 * sees the whole test database: every move here stays under five days in all, and envelopes of
 * other test files live 10 days or more, so they are never swept by these moves.
 */

const DAY = 24 * 3600;

let sandbox: TestApp;
let plain: TestApp;
let team: SeededTeam;
beforeAll(async () => {
  sandbox = await startTestApp({ env: { SANDBOX_CLOCK: 'true', RATE_LIMIT_SIGNING_PER_MINUTE: '3' } });
  plain = await startTestApp();
  team = await seedTeam(sandbox);
});
afterAll(async () => {
  await sandbox.close();
  await plain.close();
});

const ADVANCE = 'mutation($seconds: Int!) { advanceSandboxClock(seconds: $seconds) { now expiredEnvelopes } }';

async function sentEnvelope(days: number) {
  const built = await buildEnvelope(sandbox, team.apiKey, { expirationPeriodDays: days, recipients: [{ identifier: 'signer' }] });
  expect((await restClient(sandbox, team.apiKey).put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
  return built;
}

async function statusOf(envelopeId: string) {
  return (await restClient(sandbox, team.apiKey).get(`/envelopes/${envelopeId}?includeDocuments=true`)).body.payload;
}

describe('the sandbox clock', () => {
  it('is refused with Sandbox.Disabled without SANDBOX_CLOCK=true, on both faces, and needs a team key', async () => {
    const other = await seedTeam(plain);
    const rest = await restClient(plain, other.apiKey).post('/sandbox/clock', { seconds: 60 });
    expect(rest.status).toBe(403);
    expect(rest.body.error.name).toBe('Sandbox.Disabled');
    expect(firstErrorName(await graphqlClient(plain, other.apiKey)(ADVANCE, { seconds: 60 }))).toBe('Sandbox.Disabled');
    expect((await restClient(sandbox, undefined).post('/sandbox/clock', { seconds: 60 })).body.error.name).toBe('Auth.MissingApiKey');
    const invalid = await restClient(sandbox, team.apiKey).post('/sandbox/clock', { seconds: 0 });
    expect(invalid.status).toBe(400);
    expect(invalid.body.error.context.issues[0].path).toBe('seconds');
  });

  it('moves time forward; an envelope whose expiresAt passes expires before the call returns (GraphQL)', async () => {
    const built = await sentEnvelope(1);
    const token = await tokenFor(sandbox, built.envelopeId, built.recipients.signer);
    const before = Date.parse((await statusOf(built.envelopeId)).envelope.expiresAt);

    const early = await graphqlClient(sandbox, team.apiKey)(ADVANCE, { seconds: 60 });
    expect(early.errors).toBeUndefined();
    expect((await statusOf(built.envelopeId)).envelope.status).toBe('sent');

    const moved = await graphqlClient(sandbox, team.apiKey)(ADVANCE, { seconds: DAY });
    expect(moved.errors).toBeUndefined();
    expect(Date.parse(moved.data.advanceSandboxClock.now)).toBeGreaterThanOrEqual(before);
    expect(moved.data.advanceSandboxClock.expiredEnvelopes).toBeGreaterThanOrEqual(1);
    const state = await statusOf(built.envelopeId);
    expect(state.envelope.status).toBe('expired');
    expect(state.envelope.completedAt).toBeNull();
    const events = (await restClient(sandbox, team.apiKey).get(`/envelopes/${built.envelopeId}/audit`)).body.payload.events;
    const expired = events.filter((event: any) => event.type === 'envelope.expired');
    expect(expired).toHaveLength(1);
    expect(expired[0].actor).toEqual({ type: 'system', id: null, name: null });
    expect(expired[0].ip).toBeNull();
    // The link died with the envelope; a closed envelope cannot be voided.
    expect(firstErrorName(await signingClient(sandbox, token)(SESSION_QUERY))).toBe('Envelope.Closed');
    const voided = await restClient(sandbox, team.apiKey).post(`/envelopes/${built.envelopeId}/void`, {});
    expect(voided.body.error).toEqual(expect.objectContaining({ name: 'Envelope.Closed', context: expect.objectContaining({ status: 'expired' }) }));
  });

  it('REST twin: POST /sandbox/clock { seconds } answers { now, expiredEnvelopes }', async () => {
    const built = await sentEnvelope(1);
    const moved = await restClient(sandbox, team.apiKey).post('/sandbox/clock', { seconds: DAY / 2 });
    expect(moved.status).toBe(200);
    expect(Object.keys(moved.body.payload).sort()).toEqual(['expiredEnvelopes', 'now']);
    expect((await statusOf(built.envelopeId)).envelope.status).toBe('sent');
    await restClient(sandbox, team.apiKey).post('/sandbox/clock', { seconds: DAY / 2 });
    expect((await statusOf(built.envelopeId)).envelope.status).toBe('expired');
  });
});

describe('the expiry sweep', () => {
  it('is safe with several instances sweeping at once: each envelope expires once', async () => {
    const envelopes = [];
    for (let index = 0; index < 4; index += 1) envelopes.push(await sentEnvelope(1));
    // Both sweepers see the time past the envelopes' expiry; only the sandbox app's clock moved.
    sandbox.dependencies.clock.advance(DAY);
    const dependencies = { auditKey: sandbox.dependencies.auditKey, publicUrl: 'http://test', clock: sandbox.dependencies.clock };
    const counts = await Promise.all([expireDueEnvelopes({ ...dependencies, em: sandbox.orm.em }), expireDueEnvelopes({ ...dependencies, em: plain.orm.em })]);
    expect(counts[0] + counts[1]).toBeGreaterThanOrEqual(envelopes.length);
    for (const built of envelopes) {
      expect((await statusOf(built.envelopeId)).envelope.status).toBe('expired');
      const [row] = await sandbox.orm.em.fork().execute<{ count: string }[]>(`select count(*) from audit_event where stream_id = ? and type = 'envelope.expired'`, [built.envelopeId]);
      expect(Number(row.count)).toBe(1);
    }
  });
});

describe('rate limits per signing link', () => {
  it('past the link budget, 429 Request.RateLimited; another link is still served', async () => {
    const first = await buildEnvelope(sandbox, team.apiKey, { expirationPeriodDays: 60, recipients: [{ identifier: 'a' }, { identifier: 'b' }] });
    await restClient(sandbox, team.apiKey).put(`/envelopes/${first.envelopeId}/send`);
    const tokenA = await tokenFor(sandbox, first.envelopeId, first.recipients.a);
    const tokenB = await tokenFor(sandbox, first.envelopeId, first.recipients.b);
    for (let index = 0; index < 3; index += 1) expect((await signingClient(sandbox, tokenA)(SESSION_QUERY)).status).toBe(200);
    const refused = await signingClient(sandbox, tokenA)(SESSION_QUERY);
    expect(refused.status).toBe(429);
    expect(firstErrorName(refused)).toBe('Request.RateLimited');
    expect((await signingClient(sandbox, tokenB)(SESSION_QUERY)).status).toBe(200);
  });
});

describe('signing links and their client address', () => {
  it('counts a link against its address once per window: colleagues signing from one address are served, invented links still spend its budget', async () => {
    // The office's own address (behind one trusted proxy): budgets are shared through the test database, so no other test's requests count here.
    const office = await startTestApp({ env: { RATE_LIMIT_ANONYMOUS_PER_MINUTE: '3', RATE_LIMIT_SIGNING_PER_MINUTE: '100', TRUST_PROXY_HOPS: '1' } });
    const address = `203.0.113.${1 + Math.floor(Math.random() * 250)}`;
    const signingFromOffice = (token: string) => graphqlClient(office, undefined, { 'x-signing-token': token, 'x-forwarded-for': address });
    try {
      const owner = await seedTeam(office);
      const built = await buildEnvelope(office, owner.apiKey, { expirationPeriodDays: 60, recipients: [{ identifier: 'a' }, { identifier: 'b' }] });
      expect((await restClient(office, owner.apiKey).put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
      const links = [await tokenFor(office, built.envelopeId, built.recipients.a), await tokenFor(office, built.envelopeId, built.recipients.b)];
      // Ten requests from one address, over two links: two of the address's three.
      for (let round = 0; round < 5; round += 1) {
        for (const link of links) expect((await signingFromOffice(link)(SESSION_QUERY)).status).toBe(200);
      }
      // An invented link is a new link: it takes the last one, and the next invented one is refused.
      const invented = await signingFromOffice(`${'x'.repeat(40)}1`)(SESSION_QUERY);
      expect(firstErrorName(invented)).toBe('Signing.InvalidToken');
      const refused = await signingFromOffice(`${'x'.repeat(40)}2`)(SESSION_QUERY);
      expect(refused.status).toBe(429);
      expect(firstErrorName(refused)).toBe('Request.RateLimited');
      // The real links keep working.
      expect((await signingFromOffice(links[0])(SESSION_QUERY)).status).toBe(200);
    } finally {
      await office.close();
    }
  });
});

describe('reminders on the sandbox clock', () => {
  it('advanceSandboxClock queues the reminder whose window it passes, once (the full schedule: notifications-reminders.test.ts)', async () => {
    const built = await buildEnvelope(sandbox, team.apiKey, {
      expirationPeriodDays: 3,
      reminders: { reminderInitialDelayDays: 1 },
      recipients: [{ identifier: 'reminded' }],
    });
    expect((await restClient(sandbox, team.apiKey).put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
    const reminders = async () =>
      sandbox.orm.em.fork().execute<{ payload: any }[]>(`select payload from outbox_message where topic = 'signing.reminder' and payload ->> 'envelopeId' = ?`, [built.envelopeId]);
    expect((await restClient(sandbox, team.apiKey).post('/sandbox/clock', { seconds: DAY / 2 })).status).toBe(200);
    expect(await reminders()).toHaveLength(0);
    expect((await graphqlClient(sandbox, team.apiKey)(ADVANCE, { seconds: DAY / 2 + 60 })).errors).toBeUndefined();
    const [reminder] = await reminders();
    expect(reminder!.payload).toMatchObject({ kind: 'reminder', window: 'n1', recipientId: built.recipients.reminded });
    // The reminder's own link opens the recipient's session.
    const session = await signingClient(sandbox, String(reminder!.payload.secret.link).split('/sign/')[1])(SESSION_QUERY);
    expect(session.data.signingSession.recipient.id).toBe(built.recipients.reminded);
    expect((await restClient(sandbox, team.apiKey).post('/sandbox/clock', { seconds: 60 })).status).toBe(200);
    expect(await reminders()).toHaveLength(1);
  });
});
