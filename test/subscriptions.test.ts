import { createClient as createWsClient } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import WebSocket from 'ws';
import { createRequestContext, type ServingDependencies } from '../src/context.ts';
import { appendAuditEvent } from '../src/domain/audit/audit.service.ts';
import { subscribeEnvelopeEvents } from '../src/domain/live/live.service.ts';
import { revokeApiKey } from '../src/domain/team/team.service.ts';
import { fanoutCounters } from '../src/graphql/live-fanout.ts';
import { eventually } from './helpers/eventually.ts';
import { restClient, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { ENVELOPE_EVENTS, type LiveResult, STATUS_CHANGED, subscribe, TRANSPORTS, untilWatching } from './helpers/live.ts';
import { startServerProcess } from './helpers/process.ts';
import { type BuiltEnvelope, buildEnvelope, signAndComplete, tokenFor } from './helpers/signing.ts';

let app: TestApp;

beforeAll(async () => {
  app = await startTestApp();
});

afterAll(async () => {
  await app.close();
});

function events(results: LiveResult[], field: 'envelopeEvents' | 'envelopeStatusChanged' | 'signingSessionChanged') {
  return results.map((result) => {
    expect(result.errors, JSON.stringify(result.errors)).toBeUndefined();
    return result.data[field];
  });
}

/** Sends a one-signer envelope and signs it to the end: sent, ..., finalized. */
async function sendAndSign(apiKey: string, built: BuiltEnvelope) {
  const sent = await restClient(app, apiKey).put(`/envelopes/${built.envelopeId}/send`);
  expect(sent.status, JSON.stringify(sent.body)).toBe(200);
  const signed = await signAndComplete(app, await tokenFor(app, built.envelopeId, built.recipients.ada));
  expect(signed.errors, JSON.stringify(signed.errors)).toBeUndefined();
}

/** The envelope's stored trail, as the table holds it. */
async function storedTrail(envelopeId: string, on: TestApp = app) {
  return on.orm.em.fork().execute<{ seq: number; type: string }[]>('select seq, type from audit_event where stream_id = ? order by seq', [envelopeId]);
}

describe('subscriptions', () => {
  it.each(TRANSPORTS)('over %s: a team watcher sees draft → sent → finalized in order, an envelope watcher every event in sequence', async (transport) => {
    const team = await seedTeam(app);
    const teamWatcher = subscribe(app, transport, { apiKey: team.apiKey }, STATUS_CHANGED);
    await untilWatching(app, 1);
    const built = await buildEnvelope(app, team.apiKey, { recipients: [{ identifier: 'ada' }] });
    const eventWatcher = subscribe(app, transport, { apiKey: team.apiKey }, ENVELOPE_EVENTS, { envelopeId: built.envelopeId, afterSequence: 0 });
    await untilWatching(app, 2);
    await sendAndSign(team.apiKey, built);

    const statuses = events(await teamWatcher.waitFor(3), 'envelopeStatusChanged');
    expect(statuses.map((event) => [event.envelopeId, event.type, event.status])).toEqual([
      [built.envelopeId, 'envelope.created', 'draft'],
      [built.envelopeId, 'envelope.sent', 'sent'],
      [built.envelopeId, 'envelope.finalized', 'finalized'],
    ]);

    const stored = await storedTrail(built.envelopeId);
    const all = events(await eventWatcher.waitFor(stored.length), 'envelopeEvents');
    expect(all.map((event) => event.sequence)).toEqual(stored.map((event) => event.seq));
    expect(all.map((event) => event.type)).toEqual(stored.map((event) => event.type));
    expect(all.at(-1)).toMatchObject({ type: 'envelope.finalized', status: 'finalized' });
    expect(all.find((event) => event.type === 'envelope.sent')).toMatchObject({ status: 'sent' });
    await teamWatcher.close();
    await eventWatcher.close();
    // A client that goes away releases what its subscription held on the server.
    await expect.poll(() => app.dependencies.envelopeEvents!.watcherCount).toBe(0);
  });

  it('a watcher that reconnects with afterSequence while events keep arriving loses nothing and repeats nothing (many seeds)', async () => {
    const team = await seedTeam(app);
    const rest = restClient(app, team.apiKey);
    for (let seed = 1; seed <= 12; seed += 1) {
      const random = seeded(seed);
      const built = await buildEnvelope(app, team.apiKey, { recipients: [{ identifier: 'ada' }] });
      // The writer: draft changes, then the send and the signature, one after another, while the watcher comes and goes.
      let writing = true;
      const writer = (async () => {
        const updates = 10 + Math.floor(random() * 15);
        for (let index = 0; index < updates; index += 1) {
          const updated = await rest.patch(`/envelopes/${built.envelopeId}`, { name: `Seed ${seed} change ${index}` });
          expect(updated.status).toBe(200);
        }
        await sendAndSign(team.apiKey, built);
        writing = false;
      })();
      const seen: { sequence: number; type: string; status: string }[] = [];
      let after = 0;
      for (let round = 0; writing || round === 0 || seen.length < (await storedTrail(built.envelopeId)).length; round += 1) {
        const transport = TRANSPORTS[Math.floor(random() * TRANSPORTS.length)];
        const watcher = subscribe(app, transport, { apiKey: team.apiKey }, ENVELOPE_EVENTS, { envelopeId: built.envelopeId, afterSequence: after });
        const take = 1 + Math.floor(random() * 6);
        // How long this watcher stays before it goes (churn, not a bound: nothing is asserted when
        // it ends early; the next round resumes after the last sequence seen).
        const deadline = Date.now() + 3_000;
        while (watcher.results.length < take && Date.now() < deadline && !watcher.isEnded()) {
          if (!writing && seen.length + watcher.results.length >= (await storedTrail(built.envelopeId)).length) break;
          await new Promise((resolve) => setTimeout(resolve, 2 + Math.floor(random() * 10)));
        }
        await watcher.close();
        for (const event of events(watcher.results, 'envelopeEvents')) seen.push(event);
        after = seen.at(-1)?.sequence ?? after;
        expect(round, 'rounds').toBeLessThan(200);
      }
      await writer;
      const stored = await storedTrail(built.envelopeId);
      expect(
        seen.map((event) => event.sequence),
        `seed ${seed}`,
      ).toEqual(stored.map((event) => event.seq));
      expect(seen.map((event) => event.type)).toEqual(stored.map((event) => event.type));
      // The status after each event, whether it came from the table or live, is the one the trail implies.
      let status = 'draft';
      for (const event of seen) {
        if (event.type === 'envelope.sent') status = 'sent';
        if (event.type === 'envelope.finalized') status = 'finalized';
        expect(event.status, `seed ${seed} seq ${event.sequence} ${event.type}`).toBe(status);
      }
    }
  }, 120_000);

  it('another team’s watcher gets nothing: its id is refused exactly like an unknown one, and its team stream stays silent', async () => {
    const owner = await seedTeam(app);
    const other = await seedTeam(app);
    const built = await buildEnvelope(app, owner.apiKey, { recipients: [{ identifier: 'ada' }] });
    for (const transport of TRANSPORTS) {
      for (const query of [ENVELOPE_EVENTS, STATUS_CHANGED]) {
        const foreign = subscribe(app, transport, { apiKey: other.apiKey }, query, { envelopeId: built.envelopeId, afterSequence: 0 });
        const unknownId = '00000000-0000-4000-8000-000000000000';
        const unknown = subscribe(app, transport, { apiKey: other.apiKey }, query, { envelopeId: unknownId, afterSequence: 0 });
        await foreign.ended;
        await unknown.ended;
        expect(foreign.results).toHaveLength(1);
        const [refused] = foreign.results[0].errors!;
        const [missing] = unknown.results[0].errors!;
        expect(refused.extensions.code).toBe('Envelope.NotFound');
        expect(JSON.stringify({ ...refused, extensions: { ...refused.extensions, context: { ...refused.extensions.context, envelopeId: 'x', requestId: 'x' } } })).toBe(
          JSON.stringify({ ...missing, extensions: { ...missing.extensions, context: { ...missing.extensions.context, envelopeId: 'x', requestId: 'x' } } }),
        );
      }
    }
    const otherTeamWatcher = subscribe(app, 'ws', { apiKey: other.apiKey }, STATUS_CHANGED);
    const ownerWatcher = subscribe(app, 'sse', { apiKey: owner.apiKey }, STATUS_CHANGED);
    await untilWatching(app, 2);
    await sendAndSign(owner.apiKey, built);
    await ownerWatcher.waitFor(2);
    // A marker of the other team's own, after the owner's events: once it arrives, the owner's would have too.
    const marker = await restClient(app, other.apiKey).post('/envelopes', { name: 'Marker' });
    const seen = events(await otherTeamWatcher.waitFor(1), 'envelopeStatusChanged');
    expect(seen).toEqual([expect.objectContaining({ envelopeId: marker.body.payload.envelopeId, type: 'envelope.created' })]);
    await otherTeamWatcher.close();
    await ownerWatcher.close();
  });

  it.each(TRANSPORTS)('over %s: a subscription ends with Subscription.KeyRevoked when its key is revoked', async (transport) => {
    const team = await seedTeam(app);
    const built = await buildEnvelope(app, team.apiKey, { recipients: [{ identifier: 'ada' }] });
    const watcher = subscribe(app, transport, { apiKey: team.apiKey }, ENVELOPE_EVENTS, { envelopeId: built.envelopeId });
    const teamWatcher = subscribe(app, transport, { apiKey: team.apiKey }, STATUS_CHANGED);
    await untilWatching(app, 2);
    await revokeApiKey(app.orm.em.fork(), { keyId: team.keyId });
    for (const stream of [watcher, teamWatcher]) {
      await stream.ended;
      expect(stream.results.map((result) => result.errors?.[0]?.extensions?.code)).toEqual(['Subscription.KeyRevoked']);
    }
    expect(app.dependencies.envelopeEvents!.watcherCount).toBe(0);
  });

  it('a rolled-back change publishes nothing; the event that takes its sequence afterwards is seen once', async () => {
    const team = await seedTeam(app);
    const built = await buildEnvelope(app, team.apiKey, { recipients: [{ identifier: 'ada' }] });
    const watchers = TRANSPORTS.map((transport) => subscribe(app, transport, { apiKey: team.apiKey }, ENVELOPE_EVENTS, { envelopeId: built.envelopeId }));
    await untilWatching(app, TRANSPORTS.length);
    const head = (await storedTrail(built.envelopeId)).length;
    await expect(
      app.orm.em.fork().transactional(async (em) => {
        await appendAuditEvent(em, app.dependencies.auditKey, {
          teamId: team.teamId,
          envelopeId: built.envelopeId,
          type: 'envelope.updated',
          actor: { type: 'system', id: null },
          request: null,
          details: { rolledBack: true },
          at: new Date(),
        });
        await em.flush();
        throw new Error('the change fails after its event was appended');
      }),
    ).rejects.toThrow('the change fails');
    const updated = await restClient(app, team.apiKey).patch(`/envelopes/${built.envelopeId}`, { name: 'Committed' });
    expect(updated.status).toBe(200);
    for (const watcher of watchers) {
      const seen = events(await watcher.waitFor(1), 'envelopeEvents');
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(seen).toEqual([expect.objectContaining({ sequence: head + 1, type: 'envelope.updated', status: 'draft' })]);
      expect(watcher.results).toHaveLength(1);
      await watcher.close();
    }
  });

  it('refuses without a valid key, a bad afterSequence, and past the limits by name', async () => {
    const team = await seedTeam(app);
    const built = await buildEnvelope(app, team.apiKey, { recipients: [{ identifier: 'ada' }] });
    for (const transport of TRANSPORTS) {
      const missing = subscribe(app, transport, {}, STATUS_CHANGED);
      const invalid = subscribe(app, transport, { apiKey: 'sk_not_a_key' }, STATUS_CHANGED);
      const negative = subscribe(app, transport, { apiKey: team.apiKey }, ENVELOPE_EVENTS, { envelopeId: built.envelopeId, afterSequence: -1 });
      for (const [watcher, code] of [
        [missing, 'Auth.MissingApiKey'],
        [invalid, 'Auth.InvalidApiKey'],
        [negative, 'Request.Invalid'],
      ] as const) {
        await watcher.ended;
        expect(
          watcher.results.map((result) => result.errors?.[0]?.extensions?.code),
          `${transport} ${code}`,
        ).toEqual([code]);
      }
    }
  });
});

describe('a signing page’s subscription', () => {
  const SIGNING_CHANGED = 'subscription { signingSessionChanged { envelopeId sequence type status } }';

  it.each(TRANSPORTS)('over %s: its link sees its envelope close, then the subscription completes; a bad link is refused by name', async (transport) => {
    const team = await seedTeam(app);
    const built = await buildEnvelope(app, team.apiKey, { recipients: [{ identifier: 'ada' }, { identifier: 'bob' }] });
    expect((await restClient(app, team.apiKey).put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
    const ada = subscribe(app, transport, { signingToken: await tokenFor(app, built.envelopeId, built.recipients.ada) }, SIGNING_CHANGED);
    await untilWatching(app, 1);
    // Bob signing changes no status: nothing arrives for that.
    const signed = await signAndComplete(app, await tokenFor(app, built.envelopeId, built.recipients.bob));
    expect(signed.errors).toBeUndefined();
    expect((await restClient(app, team.apiKey).post(`/envelopes/${built.envelopeId}/void`, { reason: 'Wrong contract' })).status).toBe(200);
    await ada.ended;
    expect(events(ada.results, 'signingSessionChanged').map((event) => [event.envelopeId, event.type, event.status])).toEqual([[built.envelopeId, 'envelope.voided', 'voided']]);
    expect(app.dependencies.envelopeEvents!.watcherCount).toBe(0);

    const unknown = subscribe(app, transport, { signingToken: 'sgn_not_a_link' }, SIGNING_CHANGED);
    const closed = subscribe(app, transport, { signingToken: await tokenFor(app, built.envelopeId, built.recipients.ada) }, SIGNING_CHANGED);
    for (const [watcher, code] of [
      [unknown, 'Signing.InvalidToken'],
      [closed, 'Envelope.Closed'],
    ] as const) {
      await watcher.ended;
      expect(
        watcher.results.map((result) => result.errors?.[0]?.extensions?.code),
        code,
      ).toEqual([code]);
    }
  });
});

describe.skipIf(inject('databaseKind') === 'embedded')('across instances (a PostgreSQL server; the embedded database belongs to one process)', () => {
  it('an event caused on one service process reaches watchers on another, both ways, on every transport', async () => {
    const team = await seedTeam(app);
    const built = await buildEnvelope(app, team.apiKey, { recipients: [{ identifier: 'ada' }] });
    const other = await startServerProcess(app);
    try {
      const before = (await storedTrail(built.envelopeId)).length;
      // Watching on the other process: its replay arriving shows it is registered for live events.
      const remote = TRANSPORTS.map((transport) => subscribe(other, transport, { apiKey: team.apiKey }, ENVELOPE_EVENTS, { envelopeId: built.envelopeId, afterSequence: 0 }));
      for (const watcher of remote) await watcher.waitFor(before);
      // Watching here, changed there.
      const local = subscribe(app, 'ws', { apiKey: team.apiKey }, STATUS_CHANGED);
      await untilWatching(app, 1);
      const created = await restClient(other, team.apiKey).post('/envelopes', { name: 'Made on the other instance' });
      expect(created.status).toBe(200);
      expect(events(await local.waitFor(1), 'envelopeStatusChanged')).toEqual([
        expect.objectContaining({ envelopeId: created.body.payload.envelopeId, type: 'envelope.created', status: 'draft' }),
      ]);
      // Changed here, watched there.
      await sendAndSign(team.apiKey, built);
      const stored = await storedTrail(built.envelopeId);
      for (const watcher of remote) {
        const seen = events(await watcher.waitFor(stored.length), 'envelopeEvents');
        expect(seen.map((event) => event.sequence)).toEqual(stored.map((event) => event.seq));
        expect(seen.at(-1)).toMatchObject({ type: 'envelope.finalized', status: 'finalized' });
        await watcher.close();
      }
      await local.close();
    } finally {
      await other.stop();
    }
  }, 60_000);
});

describe('subscription limits', () => {
  let limited: TestApp;
  beforeAll(async () => {
    limited = await startTestApp({ liveLimits: { perApiKey: 3, perConnection: 2, maxQueuedEvents: 3 }, webSocketIdleMs: 400 });
  });
  afterAll(async () => {
    await limited.close();
  });

  it('refuses a key’s subscription past its limit (any transport) and a WebSocket connection’s past its own, by name', async () => {
    const team = await seedTeam(limited);
    const open = [subscribe(limited, 'sse', { apiKey: team.apiKey }, STATUS_CHANGED), subscribe(limited, 'graphql-sse', { apiKey: team.apiKey }, STATUS_CHANGED)];
    await untilWatching(limited, 2);
    const third = subscribe(limited, 'ws', { apiKey: team.apiKey }, STATUS_CHANGED);
    await untilWatching(limited, 3);
    const fourth = subscribe(limited, 'sse', { apiKey: team.apiKey }, STATUS_CHANGED);
    await fourth.ended;
    expect(fourth.results[0].errors?.[0]?.extensions).toMatchObject({ code: 'Subscription.TooMany', context: { scope: 'apiKey', limit: 3 } });
    await third.close();
    for (const watcher of open) await watcher.close();

    // One WebSocket carrying several subscriptions: the third on it is refused, another connection is not.
    const client = createWsClient({
      url: limited.url.replace(/^http/, 'ws') + '/graphql',
      webSocketImpl: WebSocket,
      connectionParams: { 'X-Service-Api-Key': team.apiKey },
      retryAttempts: 0,
    });
    const results: LiveResult[][] = [[], [], []];
    const stops = results.map((bucket) =>
      client.subscribe(
        { query: STATUS_CHANGED },
        { next: (value) => void bucket.push(value as LiveResult), error: (error) => void bucket.push({ errors: [{ extensions: { code: String(error) } }] }), complete: () => {} },
      ),
    );
    await untilWatching(limited, 2);
    await eventually(() => results[2].length > 0, { what: "the third subscription's answer" });
    expect(results[2][0]?.errors?.[0]?.extensions).toMatchObject({ code: 'Subscription.TooMany', context: { scope: 'connection', limit: 2 } });
    const elsewhere = subscribe(limited, 'ws', { apiKey: team.apiKey }, STATUS_CHANGED);
    await untilWatching(limited, 3);
    await elsewhere.close();
    for (const stop of stops) stop();
    await client.dispose();
  });
  it('closes a WebSocket connection that runs no operation (credentials or not), but not one with a live subscription', async () => {
    const team = await seedTeam(limited);
    const url = limited.url.replace(/^http/, 'ws') + '/graphql';
    const idle = new WebSocket(url, 'graphql-transport-ws');
    const idleClosed = new Promise<number>((resolve) => idle.once('close', (code) => resolve(code)));
    await new Promise((resolve) => idle.once('open', resolve));
    idle.send(JSON.stringify({ type: 'connection_init', payload: {} }));
    // 4408 is the idle close (connection_init without an operation): the code says why it closed.
    expect(await idleClosed).toBe(4408);

    // One holding a subscription stays open well past the idle time, and its subscription lives.
    const busy = subscribe(limited, 'ws', { apiKey: team.apiKey }, STATUS_CHANGED);
    await untilWatching(limited, 1);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(busy.results).toEqual([]);
    expect(limited.dependencies.envelopeEvents!.watcherCount).toBe(1);
    await busy.close();
  });
  it('refuses a signing link’s subscription past the limit by name', async () => {
    const team = await seedTeam(limited);
    const built = await buildEnvelope(limited, team.apiKey, { recipients: [{ identifier: 'ada' }] });
    expect((await restClient(limited, team.apiKey).put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
    const signingToken = await tokenFor(limited, built.envelopeId, built.recipients.ada);
    const query = 'subscription { signingSessionChanged { sequence } }';
    const open = [0, 1, 2].map(() => subscribe(limited, 'sse', { signingToken }, query));
    await untilWatching(limited, 3);
    const refused = subscribe(limited, 'ws', { signingToken }, query);
    await refused.ended;
    expect(refused.results[0].errors?.[0]?.extensions).toMatchObject({ code: 'Subscription.TooMany', context: { scope: 'signingLink', limit: 3 } });
    for (const watcher of open) await watcher.close();
  });

  it('a reader that lets its events pile up is dropped with Subscription.Interrupted, and resumes by sequence without loss', async () => {
    const team = await seedTeam(limited);
    const built = await buildEnvelope(limited, team.apiKey, { recipients: [{ identifier: 'ada' }] });
    const context = createRequestContext(limited.dependencies as ServingDependencies, {
      headers: new Headers({ 'x-service-api-key': team.apiKey }),
      metadata: { requestId: 'slow-reader-test', ip: null, userAgent: null },
    });
    const head = (await storedTrail(built.envelopeId, limited)).length;
    // Subscribed, and then not read at all while five events arrive (three may wait).
    const stream = (await subscribeEnvelopeEvents(context, { envelopeId: built.envelopeId, afterSequence: head }))[Symbol.asyncIterator]();
    for (let index = 0; index < 5; index += 1) {
      expect((await restClient(limited, team.apiKey).patch(`/envelopes/${built.envelopeId}`, { name: `Change ${index}` })).status).toBe(200);
    }
    const first = await stream.next();
    expect(first.value).toMatchObject({ ended: { name: 'Subscription.Interrupted', context: { reason: 'slow_reader', lastSequence: null } } });
    expect((await stream.next()).done).toBe(true);
    expect(limited.dependencies.envelopeEvents!.watcherCount).toBe(0);
    // Resuming from what it had misses nothing.
    const resumed = subscribe(limited, 'sse', { apiKey: team.apiKey }, ENVELOPE_EVENTS, { envelopeId: built.envelopeId, afterSequence: head });
    expect(events(await resumed.waitFor(5), 'envelopeEvents').map((event) => event.sequence)).toEqual([1, 2, 3, 4, 5].map((step) => head + step));
    await resumed.close();
  });
});

describe('subscriptions and the rate limit', () => {
  it('opening a subscription counts once against the key’s budget; past it the opening is refused by name, on both transports', async () => {
    const limitedApp = await startTestApp({ env: { RATE_LIMIT_PER_MINUTE: '2' } });
    try {
      const team = await seedTeam(limitedApp);
      const open = [subscribe(limitedApp, 'ws', { apiKey: team.apiKey }, STATUS_CHANGED), subscribe(limitedApp, 'sse', { apiKey: team.apiKey }, STATUS_CHANGED)];
      await untilWatching(limitedApp, 2);
      for (const transport of ['ws', 'sse'] as const) {
        const refused = subscribe(limitedApp, transport, { apiKey: team.apiKey }, STATUS_CHANGED);
        await refused.ended;
        expect(
          refused.results.map((result) => result.errors?.[0]?.extensions?.code),
          transport,
        ).toEqual(['Request.RateLimited']);
      }
      for (const watcher of open) await watcher.close();
    } finally {
      await limitedApp.close();
    }
  });
});

describe('fan-out', () => {
  it('executes and serialises an event once for every subscriber sharing operation, variables and team; others get their own', async () => {
    const team = await seedTeam(app);
    const other = await seedTeam(app);
    const built = await buildEnvelope(app, team.apiKey, { recipients: [{ identifier: 'ada' }] });
    const sharing = Array.from({ length: 20 }, () => subscribe(app, 'sse', { apiKey: team.apiKey }, STATUS_CHANGED, { envelopeId: built.envelopeId }));
    const teamWide = subscribe(app, 'sse', { apiKey: team.apiKey }, STATUS_CHANGED);
    const otherTeam = subscribe(app, 'sse', { apiKey: other.apiKey }, STATUS_CHANGED);
    await untilWatching(app, 22);
    const before = { ...fanoutCounters };
    await sendAndSign(team.apiKey, built);
    const expected = [
      ['envelope.sent', 'sent'],
      ['envelope.finalized', 'finalized'],
    ];
    for (const watcher of [...sharing, teamWide]) {
      expect(events(await watcher.waitFor(2), 'envelopeStatusChanged').map((event) => [event.type, event.status])).toEqual(expected);
    }
    // Two events, each executed and serialised once for the twenty, once for the team-wide watcher.
    expect(fanoutCounters.executions - before.executions).toBe(4);
    expect(fanoutCounters.serialisations - before.serialisations).toBe(4);
    expect(otherTeam.results).toEqual([]);
    for (const watcher of [...sharing, teamWide, otherTeam]) await watcher.close();
  });
});

/** A small deterministic generator (mulberry32), so a failing seed can be replayed. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
