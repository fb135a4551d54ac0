import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { firstErrorName, graphqlClient, restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import {
  buildEnvelope,
  DECLINE_MUTATION,
  DELEGATE_MUTATION,
  HOSTED_MUTATION,
  invitationsOf,
  SESSION_QUERY,
  SUBMIT_MUTATION,
  signAndComplete,
  signingClient,
  tokenFor,
  typedSignature,
} from './helpers/signing.ts';

/*
 * Whole envelopes walked through the workflow: the sender's side on REST and GraphQL, the
 * recipient side by signing link, the state polled on both faces at every step.
 */

let app: TestApp;
let team: SeededTeam;
beforeAll(async () => {
  app = await startTestApp();
  team = await seedTeam(app);
});
afterAll(async () => {
  await app.close();
});

const tinyPng = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';

const ENVELOPE_QUERY = `query($id: ID!) { envelope(id: $id) { status sentAt expiresAt completedAt voidedAt
  recipients { id activatedAt completedAt delegatedAt agents { kind info { name email } } } documents { id status } } }`;

/** The envelope as REST and GraphQL poll it; both faces must agree. */
async function poll(envelopeId: string) {
  const rest = await restClient(app, team.apiKey).get(`/envelopes/${envelopeId}?includeRecipients=true&includeDocuments=true&includeFields=true`);
  expect(rest.status).toBe(200);
  const graphql = await graphqlClient(app, team.apiKey)(ENVELOPE_QUERY, { id: envelopeId });
  expect(graphql.errors).toBeUndefined();
  const { envelope, recipients, documents } = rest.body.payload;
  const fromGraphql = graphql.data.envelope;
  expect(fromGraphql.status).toBe(envelope.status);
  expect(fromGraphql.completedAt).toBe(envelope.completedAt);
  expect(fromGraphql.recipients.map((recipient: any) => [recipient.id, recipient.activatedAt, recipient.completedAt, recipient.delegatedAt])).toEqual(
    recipients.map((recipient: any) => [recipient.id, recipient.activatedAt, recipient.completedAt, recipient.delegatedAt]),
  );
  expect(fromGraphql.documents.map((document: any) => document.status)).toEqual(documents.map((document: any) => document.status));
  const recipientById = Object.fromEntries(recipients.map((recipient: any) => [recipient.id, recipient]));
  return { ...rest.body.payload, recipientById };
}

async function auditEvents(envelopeId: string): Promise<any[]> {
  const answer = await restClient(app, team.apiKey).get(`/envelopes/${envelopeId}/audit`);
  return answer.body.payload.events;
}

async function outboxCount(envelopeId: string, topic: string): Promise<number> {
  const [row] = await app.orm.em.fork().execute<{ count: string }[]>(`select count(*) from outbox_message where topic = ? and payload ->> 'envelopeId' = ?`, [topic, envelopeId]);
  return Number(row.count);
}

async function send(envelopeId: string) {
  const sent = await restClient(app, team.apiKey).put(`/envelopes/${envelopeId}/send`);
  expect(sent.status, JSON.stringify(sent.body)).toBe(200);
}

/** Everything a refusal must leave as it was: the polled state, the trail, the outbox. */
async function snapshot(envelopeId: string) {
  const [state, events, invitations] = await Promise.all([poll(envelopeId), auditEvents(envelopeId), invitationsOf(app, envelopeId)]);
  return { state, events: events.length, invitations: invitations.length };
}

function expectFinalizedOnce(events: any[]) {
  expect(events.filter((event) => event.type === 'envelope.finalized')).toHaveLength(1);
}

describe('turns', () => {
  it('sequential orders: the second is activated and invited only when the first completes; the last completion finalizes', async () => {
    const built = await buildEnvelope(app, team.apiKey, {
      recipients: [
        { identifier: 'first', order: 1 },
        { identifier: 'second', order: 2 },
        { identifier: 'copy', type: 'viewer', order: 3 },
      ],
    });
    await send(built.envelopeId);
    const firstToken = await tokenFor(app, built.envelopeId, built.recipients.first);
    const opened = await signingClient(app, firstToken)(SESSION_QUERY);
    expect(opened.errors).toBeUndefined();
    const session = opened.data.signingSession;
    expect(session.isMyTurn).toBe(true);
    expect(session.signerName).toBe('Person first');
    expect(session.documents[0].pages).toHaveLength(2);
    expect(session.requiredFieldIds).toEqual([built.fields['first-signature']]);
    expect(session.activeRecipients.map((role: any) => role.id)).toEqual([built.recipients.first]);

    expect((await signAndComplete(app, firstToken)).errors).toBeUndefined();
    let state = await poll(built.envelopeId);
    expect(state.envelope.status).toBe('sent');
    expect(state.recipientById[built.recipients.first].completedAt).not.toBeNull();
    expect(state.recipientById[built.recipients.second].activatedAt).toBe(state.recipientById[built.recipients.first].completedAt);
    const secondToken = await tokenFor(app, built.envelopeId, built.recipients.second);

    const completed = await signAndComplete(app, secondToken);
    expect(completed.errors).toBeUndefined();
    expect(completed.data.submitSigning.envelope.status).toBe('finalized');
    state = await poll(built.envelopeId);
    expect(state.envelope.status).toBe('finalized');
    expect(state.envelope.completedAt).toBe(state.recipientById[built.recipients.second].completedAt);
    expect(state.documents.map((document: any) => document.status)).toEqual(['completed']);
    expect(state.fields.every((field: any) => field.submittedAt !== null)).toBe(true);
    // A viewer never acts: no link, no turn.
    expect(state.recipientById[built.recipients.copy].activatedAt).toBeNull();
    expect((await invitationsOf(app, built.envelopeId)).some((invitation) => invitation.recipientId === built.recipients.copy)).toBe(false);
    const events = await auditEvents(built.envelopeId);
    expectFinalizedOnce(events);
    expect(await outboxCount(built.envelopeId, 'artefact.seal')).toBe(1);
    // Links die when the envelope closes.
    expect(firstErrorName(await signingClient(app, firstToken)(SESSION_QUERY))).toBe('Envelope.Closed');
    // The trail has every step, with the signer's address and user agent.
    const types = events.map((event) => event.type);
    expect(types).toEqual(
      expect.arrayContaining(['envelope.sent', 'recipient.activated', 'invitation.queued', 'signing.viewed', 'field.submitted', 'recipient.completed', 'envelope.finalized']),
    );
    const completion = events.find((event) => event.type === 'recipient.completed');
    expect(completion.actor.type).toBe('agent');
    expect(completion.ip).toBe('127.0.0.1');
    expect(completion.userAgent).toBe('signing-test');
    const verified = await restClient(app, team.apiKey).get(`/envelopes/${built.envelopeId}/audit/verify`);
    expect(verified.body.payload.verification.valid).toBe(true);
  });

  it('equal orders sign in parallel, and a non-required recipient never holds the line', async () => {
    const built = await buildEnvelope(app, team.apiKey, {
      recipients: [
        { identifier: 'left', order: 1 },
        { identifier: 'right', order: 1 },
        { identifier: 'optional', order: 1, required: false, fields: [{ identifier: 'note', type: 'text', required: false }] },
        { identifier: 'later-optional', order: 2, required: false },
        { identifier: 'last', order: 3 },
      ],
    });
    await send(built.envelopeId);
    let state = await poll(built.envelopeId);
    const sentAt = state.envelope.sentAt;
    for (const name of ['left', 'right', 'optional']) expect(state.recipientById[built.recipients[name]].activatedAt).toBe(sentAt);
    expect(state.recipientById[built.recipients.last].activatedAt).toBeNull();

    expect((await signAndComplete(app, await tokenFor(app, built.envelopeId, built.recipients.right))).errors).toBeUndefined();
    expect((await poll(built.envelopeId)).recipientById[built.recipients.last].activatedAt).toBeNull();
    expect((await signAndComplete(app, await tokenFor(app, built.envelopeId, built.recipients.left))).errors).toBeUndefined();
    // The optional recipients of orders 1 and 2 have not acted; order 3 is active anyway.
    state = await poll(built.envelopeId);
    expect(state.recipientById[built.recipients['later-optional']].activatedAt).not.toBeNull();
    expect(state.recipientById[built.recipients.last].activatedAt).not.toBeNull();
    // A non-required recipient may still act while the envelope is open.
    const optionalToken = await tokenFor(app, built.envelopeId, built.recipients.optional);
    const note = await signingClient(app, optionalToken)(SUBMIT_MUTATION, { values: [{ fieldId: built.fields.note, value: { text: 'Seen' } }], complete: true });
    expect(note.errors).toBeUndefined();
    expect((await signAndComplete(app, await tokenFor(app, built.envelopeId, built.recipients.last))).errors).toBeUndefined();
    state = await poll(built.envelopeId);
    expect(state.envelope.status).toBe('finalized');
    expect(state.recipientById[built.recipients['later-optional']].completedAt).toBeNull();
    // ... but not after it closed: refused, and nothing changes.
    const closedBefore = await snapshot(built.envelopeId);
    const late = await signingClient(app, await tokenFor(app, built.envelopeId, built.recipients['later-optional']))(SUBMIT_MUTATION, {
      values: [{ fieldId: built.fields['later-optional-signature'], value: typedSignature }],
      complete: true,
    });
    expect(firstErrorName(late)).toBe('Envelope.Closed');
    expect(firstErrorName(await signingClient(app, optionalToken)(DECLINE_MUTATION, { reason: 'Too late' }))).toBe('Envelope.Closed');
    expect(await snapshot(built.envelopeId)).toEqual(closedBefore);
  });

  it('a role with several agents is done when any one completes it; the others see it done', async () => {
    const built = await buildEnvelope(app, team.apiKey, {
      recipients: [
        { identifier: 'board', order: 1, agents: [{ info: { name: 'Ann', email: 'ann@example.com' } }, { info: { name: 'Bob', email: 'bob@example.com' } }] },
        { identifier: 'after', order: 2 },
      ],
    });
    await send(built.envelopeId);
    const invitations = (await invitationsOf(app, built.envelopeId)).filter((invitation) => invitation.recipientId === built.recipients.board);
    expect(invitations.map((invitation) => invitation.to.name)).toEqual(['Ann', 'Bob']);
    expect((await signAndComplete(app, invitations[1].token)).errors).toBeUndefined();
    const annSession = await signingClient(app, invitations[0].token)(SESSION_QUERY);
    expect(annSession.data.signingSession.recipient.completedAt).not.toBeNull();
    expect(annSession.data.signingSession.isMyTurn).toBe(false);
    const annTries = await signingClient(app, invitations[0].token)(SUBMIT_MUTATION, { values: [{ fieldId: built.fields['board-signature'], value: typedSignature }], complete: true });
    expect(firstErrorName(annTries)).toBe('Signing.RecipientCompleted');
    expect((await poll(built.envelopeId)).recipientById[built.recipients.after].activatedAt).not.toBeNull();
  });

  it('a group agent: every member gets a link, one member completes the role', async () => {
    const rest = restClient(app, team.apiKey);
    const members = [];
    for (const name of ['Gia', 'Gil', 'Guy']) members.push((await rest.post('/contacts', { name, email: `${name.toLowerCase()}@example.com` })).body.payload.contact);
    const group = (await rest.post('/contact-groups', { name: 'Signers' })).body.payload.contactGroup;
    for (const member of members) await rest.post(`/contact-groups/${group.id}/members/${member.id}`);
    const built = await buildEnvelope(app, team.apiKey, { recipients: [{ identifier: 'group', agents: [{ groupId: group.id }] }] });
    await send(built.envelopeId);
    const invitations = await invitationsOf(app, built.envelopeId);
    expect(invitations.map((invitation) => invitation.to.name)).toEqual(['Gia', 'Gil', 'Guy']);
    expect(invitations.map((invitation) => invitation.personIndex).sort()).toEqual([0, 1, 2]);
    const gil = await signingClient(app, invitations[1].token)(SESSION_QUERY);
    expect(gil.data.signingSession.signerName).toBe('Gil');
    expect((await signAndComplete(app, invitations[2].token)).data.submitSigning.envelope.status).toBe('finalized');
  });

  it('a host with two in-person signers: the host is invited, its session lists them, each signs on its device in turn', async () => {
    const built = await buildEnvelope(app, team.apiKey, {
      recipients: [
        { identifier: 'host', type: 'host', order: 1 },
        { identifier: 'guest-one', type: 'in_person_signer', order: 1, hostedBy: 'host' },
        { identifier: 'guest-two', type: 'in_person_signer', order: 2, hostedBy: 'host' },
      ],
    });
    await send(built.envelopeId);
    const invitations = await invitationsOf(app, built.envelopeId);
    expect(invitations.map((invitation) => [invitation.recipientId, invitation.hostFor])).toEqual([[built.recipients.host, built.recipients['guest-one']]]);
    const host = signingClient(app, invitations[0].token);
    const hostSession = (await host(SESSION_QUERY)).data.signingSession;
    expect(hostSession.hostedSigners.map((signer: any) => [signer.id, signer.activatedAt !== null])).toEqual([
      [built.recipients['guest-one'], true],
      [built.recipients['guest-two'], false],
    ]);
    expect(hostSession.isMyTurn).toBe(false);

    // Out of turn: the second guest's order has not begun. Nothing changes.
    const before = await snapshot(built.envelopeId);
    expect(firstErrorName(await host(HOSTED_MUTATION, { recipientId: built.recipients['guest-two'] }))).toBe('Signing.NotYourTurn');
    expect(await snapshot(built.envelopeId)).toEqual(before);
    // A host does not sign itself, and only hosts host.
    expect(firstErrorName(await host(SUBMIT_MUTATION, { values: [], complete: true }))).toBe('Signing.HostCannotSubmit');
    expect(firstErrorName(await host(HOSTED_MUTATION, { recipientId: built.recipients.host }))).toBe('Signing.NotHostedSigner');
    expect(firstErrorName(await host(HOSTED_MUTATION, { recipientId: 'not-an-id' }))).toBe('Signing.NotHostedSigner');

    const first = await host(HOSTED_MUTATION, { recipientId: built.recipients['guest-one'] });
    expect(first.errors).toBeUndefined();
    expect(firstErrorName(await signingClient(app, first.data.startHostedSigning.token)(HOSTED_MUTATION, { recipientId: built.recipients['guest-two'] }))).toBe('Signing.NotHost');
    expect((await signAndComplete(app, first.data.startHostedSigning.token)).errors).toBeUndefined();
    let state = await poll(built.envelopeId);
    expect(state.recipientById[built.recipients['guest-two']].activatedAt).not.toBeNull();
    expect(state.recipientById[built.recipients.host].completedAt).toBeNull();

    const second = await host(HOSTED_MUTATION, { recipientId: built.recipients['guest-two'] });
    expect((await signAndComplete(app, second.data.startHostedSigning.token)).data.submitSigning.envelope.status).toBe('finalized');
    state = await poll(built.envelopeId);
    expect(state.recipientById[built.recipients.host].completedAt).not.toBeNull();
    // The in-person signers were never invited themselves: their links came from the host's device.
    expect((await invitationsOf(app, built.envelopeId)).length).toBe(1);
    expect((await auditEvents(built.envelopeId)).filter((event) => event.type === 'signing.hosted')).toHaveLength(2);
  });
});

describe('delegation, decline, void', () => {
  it('a delegator hands its role on: delegatedAt, the new person is the agent and is invited, the old link dies', async () => {
    const built = await buildEnvelope(app, team.apiKey, {
      recipients: [
        { identifier: 'delegator', type: 'delegator' },
        { identifier: 'signer', order: 1 },
      ],
    });
    await send(built.envelopeId);
    const signerToken = await tokenFor(app, built.envelopeId, built.recipients.signer);
    expect(firstErrorName(await signingClient(app, signerToken)(DELEGATE_MUTATION, { person: { name: 'Dee', email: 'dee@example.com' } }))).toBe('Signing.NotDelegator');

    const oldToken = await tokenFor(app, built.envelopeId, built.recipients.delegator);
    const refused = await signingClient(app, oldToken)(DELEGATE_MUTATION, { person: { name: 'Nobody' } });
    expect(firstErrorName(refused)).toBe('Request.Invalid');
    const delegated = await signingClient(app, oldToken)(DELEGATE_MUTATION, { person: { name: 'Dee Legate', email: 'dee@example.com' } });
    expect(delegated.errors).toBeUndefined();
    const state = await poll(built.envelopeId);
    const role = state.recipientById[built.recipients.delegator];
    expect(role.delegatedAt).toBe(delegated.data.delegateSigning.delegatedAt);
    expect(role.agents).toEqual([expect.objectContaining({ kind: 'info', info: expect.objectContaining({ name: 'Dee Legate', email: 'dee@example.com' }) })]);
    // The old link is dead: refused by name, and nothing changes.
    const deadBefore = await snapshot(built.envelopeId);
    expect(firstErrorName(await signingClient(app, oldToken)(SESSION_QUERY))).toBe('Signing.InvalidToken');
    const deadSubmit = await signingClient(app, oldToken)(SUBMIT_MUTATION, { values: [{ fieldId: built.fields['delegator-signature'], value: typedSignature }], complete: true });
    expect(firstErrorName(deadSubmit)).toBe('Signing.InvalidToken');
    expect(await snapshot(built.envelopeId)).toEqual(deadBefore);

    const newToken = await tokenFor(app, built.envelopeId, built.recipients.delegator, 1);
    expect((await invitationsOf(app, built.envelopeId)).at(-1)!.to.email).toBe('dee@example.com');
    expect(firstErrorName(await signingClient(app, newToken)(DELEGATE_MUTATION, { person: { name: 'Again', email: 'again@example.com' } }))).toBe('Signing.AlreadyDelegated');
    expect((await signAndComplete(app, newToken)).errors).toBeUndefined();
    expect((await signAndComplete(app, signerToken)).data.submitSigning.envelope.status).toBe('finalized');
    const delegation = (await auditEvents(built.envelopeId)).find((event) => event.type === 'recipient.delegated');
    expect(delegation.details.to.email).toBe('dee@example.com');
  });

  it('a decline voids the envelope, documents become declined, the trail says who and why', async () => {
    const built = await buildEnvelope(app, team.apiKey, {
      recipients: [
        { identifier: 'a', order: 1 },
        { identifier: 'b', order: 1 },
      ],
    });
    await send(built.envelopeId);
    const token = await tokenFor(app, built.envelopeId, built.recipients.b);
    expect(firstErrorName(await signingClient(app, token)(DECLINE_MUTATION, { reason: '' }))).toBe('Request.Invalid');
    const declined = await signingClient(app, token)(DECLINE_MUTATION, { reason: 'The price is wrong' });
    expect(declined.errors).toBeUndefined();
    expect(declined.data.declineSigning.envelope.status).toBe('voided');
    const state = await poll(built.envelopeId);
    expect(state.envelope.status).toBe('voided');
    expect(state.envelope.voidedAt).not.toBeNull();
    expect(state.documents.map((document: any) => document.status)).toEqual(['declined']);
    const events = await auditEvents(built.envelopeId);
    const decline = events.find((event) => event.type === 'recipient.declined');
    expect(decline.details).toEqual(expect.objectContaining({ recipientId: built.recipients.b, reason: 'The price is wrong' }));
    expect(decline.actor.type).toBe('agent');
    expect(events.find((event) => event.type === 'envelope.voided').details.cause).toBe('decline');
    expect(await outboxCount(built.envelopeId, 'envelope.closed.notice')).toBe(2);
    expect(firstErrorName(await signingClient(app, await tokenFor(app, built.envelopeId, built.recipients.a))(SESSION_QUERY))).toBe('Envelope.Closed');
  });

  it('void: REST { voided: true } and GraphQL voidEnvelope, only from sent, Envelope.Closed afterwards, documents voided', async () => {
    const rest = restClient(app, team.apiKey);
    const graphql = graphqlClient(app, team.apiKey);
    const VOID = 'mutation($id: ID!, $reason: String) { voidEnvelope(id: $id, reason: $reason) { status voidedAt documents { status } } }';
    const draft = await buildEnvelope(app, team.apiKey, { recipients: [{ identifier: 'a' }] });
    const notSent = await rest.post(`/envelopes/${draft.envelopeId}/void`, {});
    expect(notSent.status).toBe(409);
    expect(notSent.body.error.name).toBe('Envelope.NotSent');
    expect(firstErrorName(await graphql(VOID, { id: draft.envelopeId }))).toBe('Envelope.NotSent');

    await send(draft.envelopeId);
    const tooLong = await rest.post(`/envelopes/${draft.envelopeId}/void`, { reason: 'x'.repeat(501) });
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.error.name).toBe('Request.Invalid');
    const voided = await rest.post(`/envelopes/${draft.envelopeId}/void`, { reason: 'Wrong counterparty' });
    expect(voided.status).toBe(200);
    expect(voided.body.payload).toEqual({ voided: true });
    const state = await poll(draft.envelopeId);
    expect(state.envelope.status).toBe('voided');
    expect(state.documents.map((document: any) => document.status)).toEqual(['voided']);
    const again = await rest.post(`/envelopes/${draft.envelopeId}/void`, {});
    expect(again.status).toBe(409);
    expect(again.body.error).toEqual(expect.objectContaining({ name: 'Envelope.Closed', context: expect.objectContaining({ status: 'voided' }) }));
    expect(firstErrorName(await graphql(VOID, { id: draft.envelopeId }))).toBe('Envelope.Closed');
    expect(firstErrorName(await signingClient(app, await tokenFor(app, draft.envelopeId, draft.recipients.a))(SESSION_QUERY))).toBe('Envelope.Closed');
    const event = (await auditEvents(draft.envelopeId)).find((entry) => entry.type === 'envelope.voided');
    expect(event.details).toEqual(expect.objectContaining({ reason: 'Wrong counterparty', cause: 'void' }));

    const viaGraphql = await buildEnvelope(app, team.apiKey, { recipients: [{ identifier: 'a' }] });
    await send(viaGraphql.envelopeId);
    const answer = await graphql(VOID, { id: viaGraphql.envelopeId });
    expect(answer.errors).toBeUndefined();
    expect(answer.data.voidEnvelope).toEqual(expect.objectContaining({ status: 'voided', documents: [{ status: 'voided' }] }));
    // A JSON null reason is no reason.
    const noReason = await buildEnvelope(app, team.apiKey, { recipients: [{ identifier: 'a' }] });
    await send(noReason.envelopeId);
    expect((await rest.post(`/envelopes/${noReason.envelopeId}/void`, { reason: null })).status).toBe(200);
    expect((await auditEvents(noReason.envelopeId)).find((entry) => entry.type === 'envelope.voided').details.reason).toBeNull();
    // A foreign envelope is not found, on both faces.
    const other = await seedTeam(app);
    expect((await restClient(app, other.apiKey).post(`/envelopes/${viaGraphql.envelopeId}/void`, {})).body.error.name).toBe('Envelope.NotFound');
    expect(firstErrorName(await graphqlClient(app, other.apiKey)(VOID, { id: viaGraphql.envelopeId }))).toBe('Envelope.NotFound');
  });
});

describe('the recipient side: values and refusals (each changes nothing)', () => {
  it('validates values against type and config, keeps readonly values, keeps biometric strokes as evidence', async () => {
    const built = await buildEnvelope(app, team.apiKey, {
      recipients: [
        {
          identifier: 'signer',
          fields: [
            { identifier: 'name', type: 'text', config: { maxLength: 5 } },
            { identifier: 'fixed', type: 'text', readonly: true, required: false, value: { text: 'Terms v2' } },
            { identifier: 'bio', type: 'biometric_signature' },
          ],
        },
        { identifier: 'other', order: 2 },
      ],
    });
    await send(built.envelopeId);
    const client = signingClient(app, await tokenFor(app, built.envelopeId, built.recipients.signer));
    const before = await snapshot(built.envelopeId);

    const invalid = await client(SUBMIT_MUTATION, { values: [{ fieldId: built.fields.name, value: { text: 'Too long a name' } }] });
    expect(firstErrorName(invalid)).toBe('Request.Invalid');
    expect(invalid.errors![0].extensions.context.issues[0].path).toBe('values[0].value.text');
    const readonly = await client(SUBMIT_MUTATION, { values: [{ fieldId: built.fields.fixed, value: { text: 'Changed' } }] });
    expect(firstErrorName(readonly)).toBe('Signing.FieldReadonly');
    const foreign = await client(SUBMIT_MUTATION, { values: [{ fieldId: built.fields['other-signature'], value: typedSignature }] });
    expect(firstErrorName(foreign)).toBe('Signing.FieldNotAssigned');
    const unknown = await client(SUBMIT_MUTATION, { values: [{ fieldId: 'nonsense', value: typedSignature }] });
    expect(firstErrorName(unknown)).toBe('Signing.FieldNotAssigned');
    const incomplete = await client(SUBMIT_MUTATION, { values: [{ fieldId: built.fields.name, value: { text: 'Ada' } }], complete: true });
    expect(firstErrorName(incomplete)).toBe('Signing.RequiredFieldsMissing');
    expect(incomplete.errors![0].extensions.context.fieldIds).toEqual([built.fields.bio]);
    // Nothing of the refused submissions stayed (the value of the incomplete one neither).
    expect(await snapshot(built.envelopeId)).toEqual(before);

    const strokes = [
      [
        { x: 1, y: 2, t: 0, p: 0.4 },
        { x: 3, y: 4, t: 16, p: 0.6 },
      ],
      [{ x: 5, y: 6, t: 40, p: 0.5 }],
    ];
    const saved = await client(SUBMIT_MUTATION, {
      values: [
        { fieldId: built.fields.name, value: { text: 'Ada' } },
        { fieldId: built.fields.bio, value: { image: tinyPng, strokes } },
      ],
    });
    expect(saved.errors).toBeUndefined();
    expect(saved.data.submitSigning.requiredFieldIds).toEqual([]);
    expect(saved.data.submitSigning.recipient.completedAt).toBeNull();
    const done = await client(SUBMIT_MUTATION, { values: [], complete: true });
    expect(done.data.submitSigning.recipient.completedAt).not.toBeNull();
    const state = await poll(built.envelopeId);
    const byIdentifier = Object.fromEntries(state.fields.map((field: any) => [field.identifier, field]));
    expect(byIdentifier.fixed.value).toEqual({ text: 'Terms v2' });
    expect(byIdentifier.bio.value.strokes).toEqual(strokes);
    expect(byIdentifier.name.submittedAt).not.toBeNull();
    const submitted = (await auditEvents(built.envelopeId)).filter((event) => event.type === 'field.submitted').at(-1);
    const bio = submitted.details.fields.find((field: any) => field.identifier === 'bio');
    expect(bio.biometric).toEqual(expect.objectContaining({ strokeCount: 2, pointCount: 3, durationMs: 40, pressureCaptured: true }));
    // A completed recipient cannot submit again.
    const after = await snapshot(built.envelopeId);
    expect(firstErrorName(await client(SUBMIT_MUTATION, { values: [{ fieldId: built.fields.name, value: { text: 'Bob' } }] }))).toBe('Signing.RecipientCompleted');
    expect(await snapshot(built.envelopeId)).toEqual(after);
  });

  it('dead, unknown and missing tokens; signing.viewed once per link', async () => {
    expect(firstErrorName(await signingClient(app, undefined)(SESSION_QUERY))).toBe('Signing.MissingToken');
    const unknown = await signingClient(app, 'sgn_nothing')(SESSION_QUERY);
    expect(firstErrorName(unknown)).toBe('Signing.InvalidToken');
    expect(unknown.status).toBe(401);
    const built = await buildEnvelope(app, team.apiKey, { recipients: [{ identifier: 'a' }] });
    await send(built.envelopeId);
    const token = await tokenFor(app, built.envelopeId, built.recipients.a);
    await signingClient(app, token)(SESSION_QUERY);
    await signingClient(app, token)(SESSION_QUERY);
    expect((await auditEvents(built.envelopeId)).filter((event) => event.type === 'signing.viewed')).toHaveLength(1);
    // A team key is no signing link.
    expect(firstErrorName(await graphqlClient(app, team.apiKey)(SESSION_QUERY))).toBe('Signing.MissingToken');
  });

  it('a submission at or after expiresAt is refused before the sweep has run, and changes nothing', async () => {
    const built = await buildEnvelope(app, team.apiKey, { expirationPeriodDays: 30, recipients: [{ identifier: 'late' }] });
    await send(built.envelopeId);
    const token = await tokenFor(app, built.envelopeId, built.recipients.late);
    const session = (await signingClient(app, token)(SESSION_QUERY)).data.signingSession;
    const before = await snapshot(built.envelopeId);
    // This app's clock only (no sweep runs in tests unless asked): other test files are unaffected.
    app.dependencies.clock.advance(30 * 24 * 3600);
    const refused = await signingClient(app, token)(SUBMIT_MUTATION, { values: [{ fieldId: session.fields[0].id, value: typedSignature }], complete: true });
    // The same name and status as once the sweep has closed it (signing/expiry.ts).
    expect(firstErrorName(refused)).toBe('Envelope.Closed');
    expect(refused.errors?.[0]?.extensions?.context).toMatchObject({ status: 'expired' });
    expect(await snapshot(built.envelopeId)).toEqual(before);
    expect((await signingClient(app, token)(SESSION_QUERY)).data.signingSession.isExpired).toBe(true);
    app.dependencies.clock.advance(-30 * 24 * 3600);
  });
});
