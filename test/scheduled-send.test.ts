import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listAuditEvents } from '../src/domain/audit/audit.service.ts';
import { renderTeamNotice } from '../src/domain/notification/mail-templates.ts';
import { enqueue } from '../src/domain/outbox/outbox.ts';
import { OUTBOX_TOPICS } from '../src/domain/outbox/topics.ts';
import { firstErrorName, graphqlClient, restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { buildEnvelope } from './helpers/signing.ts';
import { mainWorkerFor } from './helpers/workers.ts';

/*
 * Send later (issue 33): `sendAt` on send makes the envelope `scheduled`; the outbox sends it at
 * that time on the service clock (or the sandbox clock's jump does), exactly once; a schedule can
 * be cancelled; an envelope that can no longer be sent goes back to draft and the team is told.
 */

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ env: { SANDBOX_CLOCK: 'true' } });
});
afterAll(async () => {
  await app.close();
});

const HOUR = 3600;
const SCHEDULE = `mutation($id: ID!, $at: DateTime) { sendEnvelope(id: $id, sendAt: $at) { id status sendAt sentAt } }`;
const CANCEL = `mutation($id: ID!) { cancelScheduledSend(id: $id) { id status sendAt } }`;

function inHours(hours: number): string {
  return new Date(app.dependencies.clock.now().getTime() + hours * HOUR * 1000).toISOString();
}

async function stateOf(team: SeededTeam, envelopeId: string) {
  return (await restClient(app, team.apiKey).get(`/envelopes/${envelopeId}`)).body.payload.envelope;
}

/** The invitations queued for the envelope (delivered or not: a worker drops a delivered one's link). */
async function invitationCount(envelopeId: string): Promise<number> {
  const [row] = await app.orm.em.fork().execute<{ count: string }[]>(`select count(*) from outbox_message where topic = 'signing.invitation' and payload ->> 'envelopeId' = ?`, [envelopeId]);
  return Number(row!.count);
}

async function eventTypes(envelopeId: string) {
  return (await listAuditEvents(app.orm.em.fork(), envelopeId)).map((event) => event.type);
}

describe('send later', () => {
  it('REST: schedules (status scheduled, sendAt), refuses edits until then, and the sandbox clock’s jump sends it once', async () => {
    const team = await seedTeam(app);
    const rest = restClient(app, team.apiKey);
    const built = await buildEnvelope(app, team.apiKey, { recipients: [{ identifier: 'signer' }] });
    const sendAt = inHours(2);
    const scheduled = await rest.put(`/envelopes/${built.envelopeId}/send`, { sendAt });
    expect(scheduled.status, JSON.stringify(scheduled.body)).toBe(200);
    expect(scheduled.body.payload).toEqual({ scheduled: true });
    expect(await stateOf(team, built.envelopeId)).toMatchObject({ status: 'scheduled', sendAt, sentAt: null });
    expect(await invitationCount(built.envelopeId)).toBe(0);
    // The listing filters by the new status.
    const listed = await rest.get('/envelopes?status=scheduled');
    expect(listed.status, JSON.stringify(listed.body)).toBe(200);
    expect(listed.body.payload.envelopes.map((envelope: { id: string }) => envelope.id)).toEqual([built.envelopeId]);

    // Not a draft any more: edits and a second send are refused with the draft-only error.
    const edit = await rest.patch(`/envelopes/${built.envelopeId}`, { name: 'Changed' });
    expect(edit.body.error?.name).toBe('Envelope.NotDraft');
    expect((await rest.put(`/envelopes/${built.envelopeId}/send`)).body.error.name).toBe('Envelope.NotDraft');
    const dryRun = (await rest.put(`/envelopes/${built.envelopeId}/send?dryRun=true`)).body.payload.dryRun;
    expect(dryRun.problems.map((problem: { name: string }) => problem.name)).toEqual(['Envelope.NotDraft']);
    // Nothing went out yet: it is not voided (Envelope.NotSent) nor deleted (Envelope.NotDeletable); its schedule is cancelled instead.
    expect((await rest.post(`/envelopes/${built.envelopeId}/void`, {})).body.error).toMatchObject({ name: 'Envelope.NotSent', context: { status: 'scheduled' } });
    expect((await rest.delete(`/envelopes/${built.envelopeId}`)).body.error.name).toBe('Envelope.NotDeletable');

    // An hour on: not yet.
    expect((await rest.post('/sandbox/clock', { seconds: HOUR })).status).toBe(200);
    expect((await stateOf(team, built.envelopeId)).status).toBe('scheduled');
    // Past sendAt: the jump sends it before it answers.
    expect((await rest.post('/sandbox/clock', { seconds: HOUR + 60 })).status).toBe(200);
    const sent = await stateOf(team, built.envelopeId);
    expect(sent).toMatchObject({ status: 'sent', sendAt: null });
    expect(await invitationCount(built.envelopeId)).toBe(1);
    // The queued job then finds it sent and does nothing.
    await mainWorkerFor(app, team.teamId).drain();
    expect((await eventTypes(built.envelopeId)).filter((type) => type === 'envelope.sent')).toHaveLength(1);
    expect(await invitationCount(built.envelopeId)).toBe(1);
    expect(await eventTypes(built.envelopeId)).toEqual(expect.arrayContaining(['envelope.scheduled', 'envelope.sent']));
  });

  it('refuses a bad sendAt (past, over 90 days, not RFC 3339) and an unsendable draft with the send’s own errors, changing nothing, on both faces', async () => {
    const team = await seedTeam(app);
    const rest = restClient(app, team.apiKey);
    const graphql = graphqlClient(app, team.apiKey);
    const built = await buildEnvelope(app, team.apiKey, { recipients: [{ identifier: 'signer' }] });
    for (const sendAt of [inHours(-1), inHours(24 * 90 + 1), 'tomorrow', '2026-12-01T09:00:00']) {
      const refused = await rest.put(`/envelopes/${built.envelopeId}/send`, { sendAt });
      expect(refused.status, sendAt).toBe(400);
      expect(refused.body.error.name).toBe('Request.Invalid');
      expect(refused.body.error.context.issues[0].path).toBe('sendAt');
    }
    expect(firstErrorName(await graphql(SCHEDULE, { id: built.envelopeId, at: inHours(-1) }))).toBe('Request.Invalid');

    const empty = (await rest.post('/envelopes', { name: 'Empty one' })).body.payload.envelopeId;
    const dry = (await rest.put(`/envelopes/${empty}/send?dryRun=true`)).body.payload.dryRun;
    const viaRest = await rest.put(`/envelopes/${empty}/send`, { sendAt: inHours(1) });
    expect(viaRest.body.error.name).toBe('Envelope.NotSendable');
    expect(viaRest.body.error.context.issues).toEqual(dry.problems[0].context.issues);
    const viaGraphql = await graphql(SCHEDULE, { id: empty, at: inHours(1) });
    expect(firstErrorName(viaGraphql)).toBe('Envelope.NotSendable');
    expect((await stateOf(team, built.envelopeId)).status).toBe('draft');
    expect((await stateOf(team, empty)).status).toBe('draft');
    expect(await eventTypes(built.envelopeId)).not.toContain('envelope.scheduled');
  });

  it('GraphQL: schedules and cancels (back to draft, editable; the job then does nothing); cancelling a draft is Envelope.NotScheduled on both faces', async () => {
    const team = await seedTeam(app);
    const graphql = graphqlClient(app, team.apiKey);
    const rest = restClient(app, team.apiKey);
    const built = await buildEnvelope(app, team.apiKey, { recipients: [{ identifier: 'signer' }] });
    const sendAt = inHours(1);
    const scheduled = await graphql(SCHEDULE, { id: built.envelopeId, at: sendAt });
    expect(scheduled.errors).toBeUndefined();
    expect(scheduled.data.sendEnvelope).toMatchObject({ status: 'scheduled', sendAt, sentAt: null });
    const listed = await graphql(`{ envelopes(status: scheduled) { nodes { id status } } }`);
    expect(listed.errors, JSON.stringify(listed.errors)).toBeUndefined();
    expect(listed.data.envelopes.nodes).toEqual([{ id: built.envelopeId, status: 'scheduled' }]);
    // Another team cannot see, let alone cancel, the schedule.
    const stranger = await seedTeam(app);
    expect((await restClient(app, stranger.apiKey).delete(`/envelopes/${built.envelopeId}/schedule`)).body.error.name).toBe('Envelope.NotFound');
    expect(firstErrorName(await graphqlClient(app, stranger.apiKey)(CANCEL, { id: built.envelopeId }))).toBe('Envelope.NotFound');

    const cancelled = await graphql(CANCEL, { id: built.envelopeId });
    expect(cancelled.data.cancelScheduledSend).toEqual({ id: built.envelopeId, status: 'draft', sendAt: null });
    expect((await rest.patch(`/envelopes/${built.envelopeId}`, { name: 'Editable again' })).status).toBe(200);

    app.dependencies.clock.advance(2 * HOUR);
    await mainWorkerFor(app, team.teamId).drain();
    expect((await stateOf(team, built.envelopeId)).status).toBe('draft');
    expect(await invitationCount(built.envelopeId)).toBe(0);
    expect(await eventTypes(built.envelopeId)).toEqual(expect.arrayContaining(['envelope.scheduled', 'envelope.schedule_cancelled']));

    const restCancel = await rest.delete(`/envelopes/${built.envelopeId}/schedule`);
    expect(restCancel.status).toBe(409);
    expect(restCancel.body.error).toMatchObject({ name: 'Envelope.NotScheduled', context: { status: 'draft' } });
    expect(firstErrorName(await graphql(CANCEL, { id: built.envelopeId }))).toBe('Envelope.NotScheduled');

    // REST cancel of a scheduled one.
    expect((await rest.put(`/envelopes/${built.envelopeId}/send`, { sendAt: inHours(1) })).status).toBe(200);
    const restCancelled = await rest.delete(`/envelopes/${built.envelopeId}/schedule`);
    expect(restCancelled.status).toBe(200);
    expect(restCancelled.body.payload).toEqual({ cancelled: true });
    expect((await stateOf(team, built.envelopeId)).status).toBe('draft');
  });

  it('sent exactly once when two workers (and the sandbox clock) race for it, with its job queued twice', async () => {
    const team = await seedTeam(app);
    const rest = restClient(app, team.apiKey);
    for (let round = 0; round < 5; round += 1) {
      const built = await buildEnvelope(app, team.apiKey, {
        recipients: [
          { identifier: 'first', order: 1 },
          { identifier: 'second', order: 1 },
        ],
      });
      const sendAt = inHours(1);
      expect((await rest.put(`/envelopes/${built.envelopeId}/send`, { sendAt })).status).toBe(200);
      // A second job for the same schedule, as a retaken lease or another instance's duplicate would be.
      const [job] = await app.orm.em
        .fork()
        .execute<{ payload: any }[]>(`select payload from outbox_message where topic = ? and payload ->> 'envelopeId' = ?`, [OUTBOX_TOPICS.scheduledSend, built.envelopeId]);
      const em = app.orm.em.fork();
      await em.transactional((tx) => enqueue(tx, OUTBOX_TOPICS.scheduledSend, job!.payload, { now: app.dependencies.clock.now(), runAt: new Date(sendAt) }));

      app.dependencies.clock.advance(HOUR + 1);
      const one = mainWorkerFor(app, team.teamId);
      const two = mainWorkerFor(app, team.teamId);
      await Promise.all([one.drain(), two.drain(), rest.post('/sandbox/clock', { seconds: 1 })]);

      expect((await stateOf(team, built.envelopeId)).status).toBe('sent');
      expect((await eventTypes(built.envelopeId)).filter((type) => type === 'envelope.sent')).toHaveLength(1);
      expect(await invitationCount(built.envelopeId)).toBe(2);
      const [recipients] = await app.orm.em
        .fork()
        .execute<{ activated: string }[]>('select count(*) as activated from recipient where envelope_id = ? and activated_at is not null', [built.envelopeId]);
      expect(Number(recipients!.activated)).toBe(2);
    }
  });

  it('is sent by another instance after the one that scheduled it went away (the job is in the database, not in memory)', async () => {
    const team = await seedTeam(app);
    const built = await buildEnvelope(app, team.apiKey, { recipients: [{ identifier: 'signer' }] });
    expect((await restClient(app, team.apiKey).put(`/envelopes/${built.envelopeId}/send`, { sendAt: inHours(3) })).status).toBe(200);
    // A second instance on the same database, started later (as after a restart), with its own clock.
    const other = await startTestApp({ env: { SANDBOX_CLOCK: 'true' } });
    try {
      other.dependencies.clock.adoptOffset(app.dependencies.clock.now().getTime() - Date.now());
      expect(await mainWorkerFor(other, team.teamId).drain()).toBe(0);
      other.dependencies.clock.advance(3 * HOUR + 1);
      await mainWorkerFor(other, team.teamId).drain();
      expect((await restClient(other, team.apiKey).get(`/envelopes/${built.envelopeId}`)).body.payload.envelope.status).toBe('sent');
      expect((await eventTypes(built.envelopeId)).filter((type) => type === 'envelope.sent')).toHaveLength(1);
      expect(await invitationCount(built.envelopeId)).toBe(1);
    } finally {
      await other.close();
    }
  });

  it('goes back to draft when it can no longer be sent at its time: envelope.send_failed (webhook), the team’s send_failed notice', async () => {
    const team = await seedTeam(app);
    const rest = restClient(app, team.apiKey);
    expect((await rest.patch('/team/settings', { notifications: { emails: ['ops@acme.example'], events: ['send_failed'], locale: 'en-US' } })).status).toBe(200);
    const hook = await rest.post('/webhooks', { url: 'https://hooks.acme.example/envelopes', eventTypes: ['envelope.send_failed'] });
    expect(hook.status, JSON.stringify(hook.body)).toBe(200);
    const contact = (await rest.post('/contacts', { name: 'Ada Contact', email: 'ada.contact@example.com' })).body.payload.contact;
    const built = await buildEnvelope(app, team.apiKey, { recipients: [{ identifier: 'signer', agents: [{ contactId: contact.id }] }] });
    expect((await rest.put(`/envelopes/${built.envelopeId}/send`, { sendAt: inHours(1) })).status).toBe(200);
    // Meanwhile the contact the signer stood for is deleted: nobody is left to invite.
    expect((await rest.delete(`/contacts/${contact.id}`)).status).toBe(200);

    app.dependencies.clock.advance(HOUR + 1);
    await mainWorkerFor(app, team.teamId).drain();
    expect(await stateOf(team, built.envelopeId)).toMatchObject({ status: 'draft', sendAt: null, sentAt: null });
    expect(await invitationCount(built.envelopeId)).toBe(0);
    const events = await listAuditEvents(app.orm.em.fork(), built.envelopeId);
    const failed = events.find((event) => event.type === 'envelope.send_failed');
    expect(failed?.details).toMatchObject({ problems: [{ name: 'Envelope.NotSendable', context: { issues: [expect.objectContaining({ path: 'recipients[signer].agents' })] } }] });
    const em = app.orm.em.fork();
    const notices = await em.execute<{ payload: any }[]>(`select payload from outbox_message where topic = 'team.notice' and payload ->> 'envelopeId' = ?`, [built.envelopeId]);
    expect(notices.map((row) => [row.payload.event, row.payload.to.email])).toEqual([['send_failed', 'ops@acme.example']]);
    expect(notices[0]!.payload.error).toContain('recipients[signer].agents');
    const mail = renderTeamNotice('send_failed', 'en-US', { envelopeName: 'Workflow test', envelopeId: built.envelopeId, error: notices[0]!.payload.error });
    expect(mail.subject).toBe('Not sent: Workflow test');
    expect(mail.text).toContain('is a draft again');
    expect(mail.text).toContain('recipients[signer].agents');
    const deliveries = await em.execute<{ count: string }[]>(`select count(*) from webhook_delivery where team_id = ? and event_type = 'envelope.send_failed'`, [team.teamId]);
    expect(Number(deliveries[0]!.count)).toBe(1);
    // A draft again: it can be fixed and sent.
    expect((await rest.put(`/envelopes/${built.envelopeId}/send`)).body.error.name).toBe('Envelope.NotSendable');
  });
});
