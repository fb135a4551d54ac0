import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { restClient, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { ENVELOPE_EVENTS, STATUS_CHANGED, subscribe, TRANSPORTS, untilWatching, type LiveResult } from './helpers/live.ts';
import { buildEnvelope, signAndComplete, tokenFor, type BuiltEnvelope } from './helpers/signing.ts';

let app: TestApp;

beforeAll(async () => {
  app = await startTestApp();
});

afterAll(async () => {
  await app.close();
});

function events(results: LiveResult[], field: 'envelopeEvents' | 'envelopeStatusChanged') {
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
async function storedTrail(envelopeId: string) {
  return app.orm.em.fork().execute<{ seq: number; type: string }[]>('select seq, type from audit_event where stream_id = ? order by seq', [envelopeId]);
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
  });
});
