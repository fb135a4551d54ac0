import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { graphqlClient, restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { buildEnvelope, SESSION_QUERY, signingClient } from './helpers/signing.ts';
import { signingLinkIn, startSmtpServer, type TestSmtpServer } from './helpers/smtp.ts';
import { mainWorkerFor } from './helpers/workers.ts';

/*
 * Issue 24 part 2: the sender's nudges, on both faces, delivered through a real SMTP server.
 */

let app: TestApp;
let smtp: TestSmtpServer;
let team: SeededTeam;
beforeAll(async () => {
  smtp = await startSmtpServer();
  app = await startTestApp({ env: { SMTP_URL: smtp.url } });
  team = await seedTeam(app);
});
afterAll(async () => {
  await app.close();
  await smtp.close();
});

const deliver = () => mainWorkerFor(app, team.teamId).drain();
const reminders = (address: string) => smtp.to(address).filter((entry) => /^Reminder/.test(entry.mail.subject ?? ''));

async function sentEnvelope(prefix: string, options: { deliver?: boolean } = {}) {
  const built = await buildEnvelope(app, team.apiKey, {
    name: `Nudged ${prefix}`,
    recipients: [
      { identifier: 'first', order: 1, agents: [{ info: { name: 'First', email: `${prefix}-first@example.com` } }] },
      { identifier: 'both', order: 1, agents: [{ info: { name: 'Both A', email: `${prefix}-a@example.com` } }, { info: { name: 'Both B', email: `${prefix}-b@example.com` } }] },
      { identifier: 'embedded', order: 1, agents: [{ info: { name: 'Embedded', email: `${prefix}-emb@example.com`, embedded: true } }] },
      { identifier: 'later', order: 2, agents: [{ info: { name: 'Later', email: `${prefix}-later@example.com` } }] },
    ],
  });
  expect((await restClient(app, team.apiKey).put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
  if (options.deliver !== false) await deliver();
  return built;
}

describe('remind', () => {
  it('REST: one reminder per waiting person now, embedded and later people skipped; a second within the hour is Envelope.RemindTooSoon', async () => {
    const built = await sentEnvelope('rr');
    const rest = restClient(app, team.apiKey);
    const answer = await rest.post(`/envelopes/${built.envelopeId}/remind`);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    const reminded = answer.body.payload.reminded as { recipientId: string; agentId: string; channel: string }[];
    expect(reminded.map((entry) => entry.recipientId).sort()).toEqual([built.recipients.first, built.recipients.both, built.recipients.both].sort());
    expect(new Set(reminded.map((entry) => entry.agentId)).size).toBe(3);
    expect(reminded.every((entry) => entry.channel === 'email')).toBe(true);
    await deliver();
    for (const address of ['rr-first@example.com', 'rr-a@example.com', 'rr-b@example.com']) expect(reminders(address)).toHaveLength(1);
    expect(smtp.to('rr-emb@example.com')).toHaveLength(0);
    expect(smtp.to('rr-later@example.com')).toHaveLength(0);
    // The reminder's fresh link opens the session.
    const session = await signingClient(app, signingLinkIn(reminders('rr-first@example.com')[0]!)!.token)(SESSION_QUERY);
    expect(session.data.signingSession.recipient.id).toBe(built.recipients.first);

    const again = await rest.post(`/envelopes/${built.envelopeId}/remind`);
    expect(again.status).toBe(429);
    expect(again.body.error.name).toBe('Envelope.RemindTooSoon');
    expect(again.body.error.context.retryAfterSeconds).toBeGreaterThan(3500);
    expect(Number(again.headers.get('retry-after'))).toBe(again.body.error.context.retryAfterSeconds);
    await deliver();
    expect(reminders('rr-first@example.com')).toHaveLength(1);

    const trail = await app.orm.em.fork().execute<{ type: string }[]>(`select type from audit_event where envelope_id = ? and type like 'reminder.%' order by seq`, [built.envelopeId]);
    expect(trail.map((event) => event.type)).toEqual(['reminder.requested', 'reminder.sent', 'reminder.sent', 'reminder.sent']);
  });

  it('GraphQL: remindEnvelope answers who was reminded, then refuses within the window; a draft and another team’s envelope are refused', async () => {
    const built = await sentEnvelope('gr');
    const gql = graphqlClient(app, team.apiKey);
    const mutation = `mutation($id: ID!) { remindEnvelope(id: $id) { reminded { recipientId agentId channel } } }`;
    const first = await gql(mutation, { id: built.envelopeId });
    expect(first.errors).toBeUndefined();
    expect(first.data.remindEnvelope.reminded).toHaveLength(3);
    const second = await gql(mutation, { id: built.envelopeId });
    expect(second.errors?.[0]?.extensions?.code).toBe('Envelope.RemindTooSoon');
    expect(second.data?.remindEnvelope ?? null).toBeNull();
    await deliver();
    expect(reminders('gr-a@example.com')).toHaveLength(1);

    const other = await seedTeam(app);
    const foreign = await graphqlClient(app, other.apiKey)(mutation, { id: built.envelopeId });
    expect(foreign.errors?.[0]?.extensions?.code).toBe('Envelope.NotFound');
    const draft = await buildEnvelope(app, team.apiKey, { recipients: [{ identifier: 'd' }] });
    const refused = await restClient(app, team.apiKey).post(`/envelopes/${draft.envelopeId}/remind`);
    expect(refused.body.error.name).toBe('Envelope.NotSent');
  });
});

describe('resend', () => {
  it('REST: a corrected address kills the old link (Signing.InvalidToken) and invites the new address; the trail records both', async () => {
    const built = await sentEnvelope('rs');
    const oldToken = signingLinkIn(smtp.to('rs-first@example.com')[0]!)!.token;
    expect((await signingClient(app, oldToken)(SESSION_QUERY)).errors).toBeUndefined();
    const rest = restClient(app, team.apiKey);
    const answer = await rest.post(`/envelopes/${built.envelopeId}/recipients/${built.recipients.first}/resend`, { email: 'rs-fixed@example.com' });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body.payload).toMatchObject({ recipientId: built.recipients.first, channel: 'email', revokedLinks: 1 });
    await deliver();
    expect((await signingClient(app, oldToken)(SESSION_QUERY)).errors?.[0]?.extensions?.code).toBe('Signing.InvalidToken');
    const fixed = smtp.to('rs-fixed@example.com');
    expect(fixed).toHaveLength(1);
    expect(fixed[0]!.mail.subject).toBe('Please sign: Nudged rs');
    expect(smtp.to('rs-first@example.com')).toHaveLength(1);
    const session = await signingClient(app, signingLinkIn(fixed[0]!)!.token)(SESSION_QUERY);
    expect(session.data.signingSession.recipient.id).toBe(built.recipients.first);
    // The envelope now shows the corrected address.
    const read = await rest.get(`/envelopes/${built.envelopeId}?includeRecipients=true`);
    expect(JSON.stringify(read.body)).toContain('rs-fixed@example.com');

    const events = await app.orm.em
      .fork()
      .execute<{ type: string; details: any }[]>(`select type, details from audit_event where envelope_id = ? and type in ('invitation.resent', 'invitation.queued') order by seq`, [
        built.envelopeId,
      ]);
    const resent = events.find((event) => event.type === 'invitation.resent')!;
    expect(resent.details).toMatchObject({ recipientId: built.recipients.first, changed: { email: { from: 'rs-first@example.com', to: 'rs-fixed@example.com' } } });
    expect(resent.details.revokedTokenIds).toHaveLength(1);
    expect(events.at(-1)!.type).toBe('invitation.queued');

    // The same address again within the hour is held back; a further correction is not.
    const same = await rest.post(`/envelopes/${built.envelopeId}/recipients/${built.recipients.first}/resend`, {});
    expect(same.status).toBe(429);
    expect(same.body.error.name).toBe('Envelope.RemindTooSoon');
    const embedded = await rest.post(`/envelopes/${built.envelopeId}/recipients/${built.recipients.embedded}/resend`, { email: 'x@example.com' });
    expect(embedded.status).toBe(409);
    expect(embedded.body.error.name).toBe('Signing.EmbeddedAgent');
    const notYet = await rest.post(`/envelopes/${built.envelopeId}/recipients/${built.recipients.later}/resend`, {});
    expect(notYet.body.error.name).toBe('Signing.NotYourTurn');
  });

  it('GraphQL: resendInvitation to a corrected address for the second agent of a role', async () => {
    const built = await sentEnvelope('gs');
    const oldToken = signingLinkIn(smtp.to('gs-b@example.com')[0]!)!.token;
    const agents = await app.orm.em.fork().execute<{ id: string }[]>('select id from agent where recipient_id = ? order by position', [built.recipients.both]);
    const gql = graphqlClient(app, team.apiKey);
    const mutation = `mutation($e: ID!, $r: ID!, $a: ID, $email: String) { resendInvitation(envelopeId: $e, recipientId: $r, agentId: $a, email: $email) { recipientId agentId channel revokedLinks } }`;
    const result = await gql(mutation, { e: built.envelopeId, r: built.recipients.both, a: agents[1]!.id, email: 'gs-b-fixed@example.com' });
    expect(result.errors).toBeUndefined();
    expect(result.data.resendInvitation).toMatchObject({ agentId: agents[1]!.id, channel: 'email', revokedLinks: 1 });
    await deliver();
    expect((await signingClient(app, oldToken)(SESSION_QUERY)).errors?.[0]?.extensions?.code).toBe('Signing.InvalidToken');
    expect(smtp.to('gs-b-fixed@example.com')).toHaveLength(1);
    // The other agent's link still works.
    expect((await signingClient(app, signingLinkIn(smtp.to('gs-a@example.com')[0]!)!.token)(SESSION_QUERY)).errors).toBeUndefined();
    const embedded = await gql(mutation, { e: built.envelopeId, r: built.recipients.embedded });
    expect(embedded.errors?.[0]?.extensions?.code).toBe('Signing.EmbeddedAgent');
  });

  it('an invitation still queued for the mistyped address is never mailed once corrected', async () => {
    const built = await sentEnvelope('rq', { deliver: false });
    const answer = await restClient(app, team.apiKey).post(`/envelopes/${built.envelopeId}/recipients/${built.recipients.first}/resend`, { email: 'rq-fixed@example.com' });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    await deliver();
    expect(smtp.to('rq-first@example.com')).toHaveLength(0);
    expect(smtp.to('rq-fixed@example.com')).toHaveLength(1);
    expect(smtp.to('rq-a@example.com')).toHaveLength(1);
  });
});
