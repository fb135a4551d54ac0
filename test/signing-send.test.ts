import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listAuditEvents } from '../src/domain/audit/audit.service.ts';
import { markOutboxMessageDelivered } from '../src/domain/outbox/outbox.ts';
import { hashSecret } from '../src/shared/ids.ts';
import { unknownId } from './helpers/envelopes.ts';
import { firstErrorName, graphqlClient, restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { buildEnvelope, invitationsOf } from './helpers/signing.ts';

let app: TestApp;
let team: SeededTeam;
beforeAll(async () => {
  app = await startTestApp();
  team = await seedTeam(app);
});
afterAll(async () => {
  await app.close();
});

const SEND = `mutation($id: ID!) { sendEnvelope(id: $id) { id status sentAt expiresAt recipients { id activatedAt completedAt delegatedAt } documents { id status } } }`;

async function envelopeState(envelopeId: string) {
  const answer = await restClient(app, team.apiKey).get(`/envelopes/${envelopeId}?includeRecipients=true&includeDocuments=true&includeFields=true`);
  expect(answer.status).toBe(200);
  return answer.body.payload;
}

async function auditTypes(envelopeId: string) {
  return (await listAuditEvents(app.orm.em.fork(), envelopeId)).map((event) => event.type);
}

describe('sending (PUT /envelopes/{id}/send, sendEnvelope)', () => {
  it('lists every missing thing in Envelope.NotSendable and changes nothing, on both faces', async () => {
    const rest = restClient(app, team.apiKey);
    const created = await rest.post('/envelopes', { name: 'Not ready' });
    const envelopeId = created.body.payload.envelopeId;
    // A required signer without agents or fields; an in-person signer without a host is refused at
    // creation, so a host-less one cannot be built here.
    await rest.post(`/envelopes/${envelopeId}/recipients`, { recipient: { type: 'signer', identifier: 'buyer', roleName: 'Buyer', agents: [] } });
    const before = await envelopeState(envelopeId);
    const eventsBefore = await auditTypes(envelopeId);

    const viaRest = await rest.put(`/envelopes/${envelopeId}/send`);
    expect(viaRest.status).toBe(409);
    expect(viaRest.body.error.name).toBe('Envelope.NotSendable');
    const paths = viaRest.body.error.context.issues.map((issue: { path: string }) => issue.path).sort();
    expect(paths).toEqual(['documents', 'recipients[buyer].agents', 'recipients[buyer].fields']);

    const viaGraphql = await graphqlClient(app, team.apiKey)(SEND, { id: envelopeId });
    expect(firstErrorName(viaGraphql)).toBe('Envelope.NotSendable');
    expect(viaGraphql.errors![0].extensions.context.issues).toEqual(viaRest.body.error.context.issues);

    expect(await envelopeState(envelopeId)).toEqual(before);
    expect(await auditTypes(envelopeId)).toEqual(eventsBefore);
    expect(await invitationsOf(app, envelopeId)).toEqual([]);
  });

  it('refuses a signer left without fields when the document they were on was removed', async () => {
    const rest = restClient(app, team.apiKey);
    const built = await buildEnvelope(app, team.apiKey, { recipients: [{ identifier: 'signer' }] });
    expect((await rest.delete(`/envelopes/${built.envelopeId}/documents/${built.documentId}`)).status).toBe(200);
    const fields = (await rest.get(`/envelopes/${built.envelopeId}/fields`)).body.payload.fields;
    const refused = await rest.put(`/envelopes/${built.envelopeId}/send`);
    expect(refused.body.error.name).toBe('Envelope.NotSendable');
    const paths = refused.body.error.context.issues.map((issue: { path: string }) => issue.path);
    expect(paths).toContain('documents');
    // The field went with its last view (field service), so the signer is left without one.
    expect(fields).toEqual([]);
    expect(paths.sort()).toEqual(['documents', 'recipients[signer].fields']);
  });

  it('refuses a draft with no recipients, and one whose only recipient is a viewer', async () => {
    const rest = restClient(app, team.apiKey);
    const empty = (await rest.post('/envelopes', { name: 'Empty' })).body.payload.envelopeId;
    const refused = await rest.put(`/envelopes/${empty}/send`);
    expect(refused.body.error.context.issues.map((issue: { path: string }) => issue.path)).toEqual(['documents', 'recipients']);

    const onlyViewer = await buildEnvelope(app, team.apiKey, { recipients: [{ identifier: 'watcher', type: 'viewer' }] });
    const viewerOnly = await rest.put(`/envelopes/${onlyViewer.envelopeId}/send`);
    expect(viewerOnly.body.error.name).toBe('Envelope.NotSendable');
    expect(viewerOnly.body.error.context.issues).toEqual([expect.objectContaining({ path: 'recipients' })]);
  });

  it('sends through REST: payload { completed: true }, sentAt/expiresAt, first turn active, hashed tokens, invitations in the outbox, audit events', async () => {
    const built = await buildEnvelope(app, team.apiKey, {
      expirationPeriodDays: 10,
      recipients: [
        { identifier: 'first', order: 1 },
        { identifier: 'second', order: 2 },
        { identifier: 'watcher', type: 'viewer', order: 0 },
      ],
    });
    const sent = await restClient(app, team.apiKey).put(`/envelopes/${built.envelopeId}/send`);
    expect(sent.status).toBe(200);
    expect(sent.body.payload).toEqual({ completed: true });

    const state = await envelopeState(built.envelopeId);
    expect(state.envelope.status).toBe('sent');
    const sentAt = Date.parse(state.envelope.sentAt);
    expect(Date.parse(state.envelope.expiresAt) - sentAt).toBe(10 * 24 * 3600 * 1000);
    const byId = Object.fromEntries(state.recipients.map((recipient: any) => [recipient.id, recipient]));
    expect(byId[built.recipients.first].activatedAt).toBe(state.envelope.sentAt);
    expect(byId[built.recipients.second].activatedAt).toBeNull();
    expect(byId[built.recipients.watcher].activatedAt).toBeNull();
    expect(state.documents[0].status).toBeNull();

    const invitations = await invitationsOf(app, built.envelopeId);
    expect(invitations.map((invitation) => invitation.recipientId)).toEqual([built.recipients.first]);
    expect(invitations[0].to.email).toBe('first@example.com');
    const [payload] = await app.orm.em
      .fork()
      .execute<{ payload: any }[]>(`select payload from outbox_message where topic = 'signing.invitation' and payload ->> 'envelopeId' = ?`, [built.envelopeId]);
    expect(payload.payload).toEqual(expect.objectContaining({ envelopeName: 'Workflow test', roleName: 'first', channel: 'email', expiresAt: state.envelope.expiresAt }));
    // At least 128 bits of randomness (base64url of 32 bytes after the prefix), stored hashed only.
    expect(invitations[0].token).toMatch(/^sgn_[A-Za-z0-9_-]{43}$/);
    const stored = await app.orm.em
      .fork()
      .execute<{ token_hash: string }[]>('select token_hash from signing_token t join recipient r on r.id = t.recipient_id where r.envelope_id = ?', [built.envelopeId]);
    expect(stored.map((row) => row.token_hash)).toEqual([hashSecret(invitations[0].token)]);

    expect(await auditTypes(built.envelopeId)).toEqual(expect.arrayContaining(['envelope.sent', 'recipient.activated', 'invitation.queued']));
    const events = await listAuditEvents(app.orm.em.fork(), built.envelopeId);
    // The trail records the invitation, never the link.
    expect(JSON.stringify(events)).not.toContain(invitations[0].token);
    const sentEvent = events.find((event) => event.type === 'envelope.sent')!;
    expect(sentEvent.actorType).toBe('api_key');
    expect(sentEvent.ip).toBe('127.0.0.1');

    // Once its message is delivered, the raw token is nowhere in the database.
    const em = app.orm.em.fork();
    const [message] = await em.execute<{ id: string }[]>(`select id from outbox_message where topic = 'signing.invitation' and payload ->> 'envelopeId' = ?`, [built.envelopeId]);
    expect(await markOutboxMessageDelivered(em, { messageId: message.id, now: new Date() })).toBe(true);
    expect(await markOutboxMessageDelivered(em, { messageId: message.id, now: new Date() })).toBe(false);
    const [leftover] = await em.execute<{ count: string }[]>(`select count(*) from outbox_message where strpos(payload::text, ?) > 0`, [invitations[0].token]);
    expect(Number(leftover.count)).toBe(0);

    // Sending twice is refused and queues nothing more.
    const again = await restClient(app, team.apiKey).put(`/envelopes/${built.envelopeId}/send`);
    expect(again.body.error.name).toBe('Envelope.NotDraft');
    const [queued] = await em.execute<{ count: string }[]>(`select count(*) from outbox_message where topic = 'signing.invitation' and payload ->> 'envelopeId' = ?`, [built.envelopeId]);
    expect(Number(queued.count)).toBe(1);
    // A sent envelope's contents are frozen.
    const edit = await restClient(app, team.apiKey).patch(`/envelopes/${built.envelopeId}`, { name: 'Changed' });
    expect(edit.body.error.name).toBe('Envelope.NotDraft');
  });

  it('sends through GraphQL and answers the envelope with its polling attributes', async () => {
    const built = await buildEnvelope(app, team.apiKey, {
      recipients: [
        { identifier: 'a', order: 1 },
        { identifier: 'b', order: 1 },
      ],
    });
    const sent = await graphqlClient(app, team.apiKey)(SEND, { id: built.envelopeId });
    expect(sent.errors).toBeUndefined();
    expect(sent.data.sendEnvelope.status).toBe('sent');
    expect(sent.data.sendEnvelope.sentAt).not.toBeNull();
    expect(sent.data.sendEnvelope.expiresAt).not.toBeNull();
    // Equal orders are activated together.
    expect(sent.data.sendEnvelope.recipients.every((recipient: any) => recipient.activatedAt === sent.data.sendEnvelope.sentAt)).toBe(true);
    expect((await invitationsOf(app, built.envelopeId)).length).toBe(2);
  });

  it('resolves contact, group and user references and snapshots them: a later contact edit does not change who signs', async () => {
    const rest = restClient(app, team.apiKey);
    const contact = (await rest.post('/contacts', { name: 'Carol Contact', email: 'carol@example.com' })).body.payload.contact;
    const memberA = (await rest.post('/contacts', { name: 'Gina Group', email: 'gina@example.com' })).body.payload.contact;
    const memberB = (await rest.post('/contacts', { name: 'Gus Group', phone: '+905551234567' })).body.payload.contact;
    const group = (await rest.post('/contact-groups', { name: 'Board' })).body.payload.contactGroup;
    await rest.post(`/contact-groups/${group.id}/members/${memberA.id}`);
    await rest.post(`/contact-groups/${group.id}/members/${memberB.id}`);
    const user = (await rest.post('/users', { name: 'Uma User', email: 'uma@example.com' })).body.payload.user;
    const emptyGroup = (await rest.post('/contact-groups', { name: 'Nobody' })).body.payload.contactGroup;

    const refused = await buildEnvelope(app, team.apiKey, { recipients: [{ identifier: 'nobody', agents: [{ groupId: emptyGroup.id }] }] });
    const refusal = await rest.put(`/envelopes/${refused.envelopeId}/send`);
    expect(refusal.body.error.context.issues).toEqual([expect.objectContaining({ path: 'recipients[nobody].agents' })]);

    const built = await buildEnvelope(app, team.apiKey, {
      recipients: [
        { identifier: 'contact', agents: [{ contactId: contact.id }] },
        { identifier: 'group', agents: [{ groupId: group.id }] },
        { identifier: 'user', agents: [{ userId: user.id }] },
      ],
    });
    expect((await rest.put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
    await rest.patch(`/contacts/${contact.id}`, { name: 'Carol Changed', email: 'changed@example.com' });

    const invitations = await invitationsOf(app, built.envelopeId);
    const names = invitations.map((invitation) => `${invitation.to.name}#${invitation.personIndex}`).sort();
    expect(names).toEqual(['Carol Contact#0', 'Gina Group#0', 'Gus Group#1', 'Uma User#0']);
    const snapshots = await app.orm.em
      .fork()
      .execute<{ snapshot: any }[]>('select a.snapshot from agent a join recipient r on r.id = a.recipient_id where r.id = ?', [built.recipients.contact]);
    expect(snapshots[0].snapshot[0].email).toBe('carol@example.com');
  });

  it('gives Envelope.NotFound for unknown and foreign envelopes, identically', async () => {
    const built = await buildEnvelope(app, team.apiKey, { recipients: [{ identifier: 'a' }] });
    const other = await seedTeam(app);
    const foreign = await restClient(app, other.apiKey).put(`/envelopes/${built.envelopeId}/send`);
    const unknown = await restClient(app, other.apiKey).put(`/envelopes/${unknownId}/send`);
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.name).toBe('Envelope.NotFound');
    expect({ ...foreign.body.error, context: {} }).toEqual({ ...unknown.body.error, context: {} });
    expect(firstErrorName(await graphqlClient(app, other.apiKey)(SEND, { id: built.envelopeId }))).toBe('Envelope.NotFound');
    expect((await envelopeState(built.envelopeId)).envelope.status).toBe('draft');
  });
});
