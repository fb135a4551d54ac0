import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listAuditEvents } from '../src/domain/audit/audit.service.ts';
import { createDraftWithDocumentAndSigner } from './helpers/envelopes.ts';
import { firstErrorName, graphqlClient, restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { APPROVE_MUTATION, buildEnvelope, DECLINE_MUTATION, invitationsOf, SESSION_QUERY, SUBMIT_MUTATION, signAndComplete, signingClient } from './helpers/signing.ts';
import { createReadyTemplate } from './helpers/templates.ts';

/*
 * Approvers with a quorum (issue 33), the sender's side: the `approver` type holds no fields,
 * its quorum is 1 ≤ quorum ≤ agents (checked on write and again at send), on both faces.
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

const people = (count: number) => Array.from({ length: count }, (_, index) => ({ info: { name: `Board member ${index}`, email: `board${index}@example.com` } }));
const fieldOf = (recipientId: string, documentId: string, identifier = 'sig') => ({
  type: 'simple_signature',
  recipientId,
  identifier,
  views: [{ documentId, page: 0, location: { x: 50, y: 50 }, size: { width: 150, height: 40 } }],
});

describe('the approver type', () => {
  it('is added with a quorum and read back on both faces', async () => {
    const rest = restClient(app, team.apiKey);
    const graphql = graphqlClient(app, team.apiKey);
    const draft = await createDraftWithDocumentAndSigner(app, team.apiKey);
    const viaRest = await rest.post(`/envelopes/${draft.envelopeId}/recipients`, {
      recipient: { type: 'approver', identifier: 'board', roleName: 'Board', order: 1, quorum: 2, agents: people(3) },
    });
    expect(viaRest.status, JSON.stringify(viaRest.body)).toBe(200);
    expect(viaRest.body.payload.recipient).toMatchObject({ type: 'approver', quorum: 2 });
    const viaGraphql = await graphql(`mutation($e: ID!, $input: AddRecipientInput!) { addRecipient(envelopeId: $e, input: $input) { type quorum } }`, {
      e: draft.envelopeId,
      input: { type: 'approver', identifier: 'audit', roleName: 'Audit', agents: people(1) },
    });
    expect(viaGraphql.errors).toBeUndefined();
    expect(viaGraphql.data.addRecipient).toEqual({ type: 'approver', quorum: 1 });
    expect((await rest.get(`/envelopes/${draft.envelopeId}/recipients/${draft.signerId}`)).body.payload.recipient.quorum).toBe(1);
  });

  it('holds no fields: adding one, or making a recipient with fields an approver, is Field.NotAllowedForRecipient on both faces', async () => {
    const rest = restClient(app, team.apiKey);
    const graphql = graphqlClient(app, team.apiKey);
    const draft = await createDraftWithDocumentAndSigner(app, team.apiKey);
    const approver = (await rest.post(`/envelopes/${draft.envelopeId}/recipients`, { recipient: { type: 'approver', identifier: 'board', roleName: 'Board', agents: people(1) } })).body
      .payload.recipient;
    const refused = await rest.post(`/envelopes/${draft.envelopeId}/fields`, { fields: [fieldOf(approver.id, draft.documentId)] });
    expect(refused.status).toBe(422);
    expect(refused.body.error).toMatchObject({ name: 'Field.NotAllowedForRecipient', context: { recipientId: approver.id, type: 'approver' } });
    const refusedGraphql = await graphql(`mutation($e: ID!, $fields: [FieldInput!]!) { createFields(envelopeId: $e, fields: $fields) { id } }`, {
      e: draft.envelopeId,
      fields: [fieldOf(approver.id, draft.documentId)],
    });
    expect(firstErrorName(refusedGraphql), JSON.stringify(refusedGraphql.errors)).toBe('Field.NotAllowedForRecipient');
    expect((await rest.get(`/envelopes/${draft.envelopeId}/fields`)).body.payload.fields).toEqual([]);

    // A signer holding a field does not become an approver (its field would be orphaned).
    const field = (await rest.post(`/envelopes/${draft.envelopeId}/fields`, { fields: [fieldOf(draft.signerId, draft.documentId)] })).body.payload.fields[0];
    const retyped = await rest.patch(`/envelopes/${draft.envelopeId}/recipients/${draft.signerId}`, { recipient: { type: 'approver' } });
    expect(retyped.status).toBe(422);
    expect(retyped.body.error).toMatchObject({ name: 'Field.NotAllowedForRecipient', context: { recipientId: draft.signerId, fieldIds: [field.id] } });
    const retypedGraphql = await graphql('mutation($e: ID!, $r: ID!) { updateRecipient(envelopeId: $e, recipientId: $r, input: { type: approver }) { type } }', {
      e: draft.envelopeId,
      r: draft.signerId,
    });
    expect(firstErrorName(retypedGraphql)).toBe('Field.NotAllowedForRecipient');
    expect((await rest.get(`/envelopes/${draft.envelopeId}/recipients/${draft.signerId}`)).body.payload.recipient.type).toBe('signer');
  });
});

describe('the quorum', () => {
  it('is 1 to the number of agents, and only an approver has one other than 1 (both faces, nothing changed)', async () => {
    const rest = restClient(app, team.apiKey);
    const graphql = graphqlClient(app, team.apiKey);
    const draft = await createDraftWithDocumentAndSigner(app, team.apiKey);
    const tooMany = await rest.post(`/envelopes/${draft.envelopeId}/recipients`, { recipient: { type: 'approver', identifier: 'board', roleName: 'Board', quorum: 3, agents: people(2) } });
    expect(tooMany.status).toBe(422);
    expect(tooMany.body.error).toMatchObject({ name: 'Recipient.QuorumExceedsAgents', context: { quorum: 3, agentCount: 2 } });
    const tooManyGraphql = await graphql(`mutation($e: ID!, $input: AddRecipientInput!) { addRecipient(envelopeId: $e, input: $input) { id } }`, {
      e: draft.envelopeId,
      input: { type: 'approver', identifier: 'board', roleName: 'Board', quorum: 3, agents: people(2) },
    });
    expect(firstErrorName(tooManyGraphql)).toBe('Recipient.QuorumExceedsAgents');
    const zero = await rest.post(`/envelopes/${draft.envelopeId}/recipients`, { recipient: { type: 'approver', identifier: 'board', roleName: 'Board', quorum: 0, agents: people(2) } });
    expect(zero.status).toBe(400);
    expect(zero.body.error.context.issues[0].path).toBe('recipient.quorum');
    const signerQuorum = await rest.patch(`/envelopes/${draft.envelopeId}/recipients/${draft.signerId}`, { recipient: { quorum: 2 } });
    expect(signerQuorum.status).toBe(422);
    expect(signerQuorum.body.error.name).toBe('Recipient.QuorumNotApprover');
    expect((await rest.get(`/envelopes/${draft.envelopeId}/recipients`)).body.payload.recipients).toHaveLength(1);

    // Replacing the agents with fewer than the quorum is refused as well; lowering the quorum with them is not.
    const board = (await rest.post(`/envelopes/${draft.envelopeId}/recipients`, { recipient: { type: 'approver', identifier: 'board', roleName: 'Board', quorum: 2, agents: people(3) } }))
      .body.payload.recipient;
    const fewer = await rest.patch(`/envelopes/${draft.envelopeId}/recipients/${board.id}`, { recipient: { agents: people(1) } });
    expect(fewer.status).toBe(422);
    expect(fewer.body.error).toMatchObject({ name: 'Recipient.QuorumExceedsAgents', context: { recipientId: board.id, quorum: 2, agentCount: 1 } });
    const both = await rest.patch(`/envelopes/${draft.envelopeId}/recipients/${board.id}`, { recipient: { agents: people(1), quorum: 1 } });
    expect(both.status).toBe(200);
    // A role that stops being an approver drops its quorum.
    await rest.patch(`/envelopes/${draft.envelopeId}/recipients/${board.id}`, { recipient: { agents: people(2), quorum: 2 } });
    const retyped = await rest.patch(`/envelopes/${draft.envelopeId}/recipients/${board.id}`, { recipient: { type: 'viewer' } });
    expect(retyped.body.payload.recipient).toMatchObject({ type: 'viewer', quorum: 1 });
  });

  it('is checked again at send: agents that shrank below it since make the envelope not sendable', async () => {
    const rest = restClient(app, team.apiKey);
    const draft = await createDraftWithDocumentAndSigner(app, team.apiKey);
    await rest.post(`/envelopes/${draft.envelopeId}/fields`, { fields: [fieldOf(draft.signerId, draft.documentId)] });
    const board = (await rest.post(`/envelopes/${draft.envelopeId}/recipients`, { recipient: { type: 'approver', identifier: 'board', roleName: 'Board', quorum: 2, agents: people(2) } }))
      .body.payload.recipient;
    // An agent row removed behind the write rules' back (a team user or contact reference deleted is the real-world path).
    await app.orm.em.fork().execute(`delete from agent where id = (select id from agent where recipient_id = ? order by position desc limit 1)`, [board.id]);
    const refused = await rest.put(`/envelopes/${draft.envelopeId}/send`);
    expect(refused.status).toBe(409);
    expect(refused.body.error.name).toBe('Envelope.NotSendable');
    expect(refused.body.error.context.issues).toContainEqual({ path: 'recipients[board].quorum', message: expect.stringContaining('Recipient.QuorumExceedsAgents') });
    expect((await rest.get(`/envelopes/${draft.envelopeId}`)).body.payload.envelope.status).toBe('draft');
  });
});

describe('approving', () => {
  const board = (count: number, quorum: number) => ({ identifier: 'board', type: 'approver' as const, order: 1, quorum, agents: people(count) });

  it('completes the role at quorum distinct agents, then starts the next turn; the rest are no longer needed', async () => {
    const built = await buildEnvelope(app, team.apiKey, { recipients: [board(3, 2), { identifier: 'ceo', order: 2 }] });
    const rest = restClient(app, team.apiKey);
    expect((await rest.put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
    const invitations = await invitationsOf(app, built.envelopeId);
    expect(invitations.map((invitation) => invitation.recipientId)).toEqual([built.recipients.board, built.recipients.board, built.recipients.board]);
    const [first, second, third] = invitations;

    // An approver neither submits nor is approved for by a signer's link.
    const submitted = await signingClient(app, first.token)(SUBMIT_MUTATION, { values: [], complete: true });
    expect(firstErrorName(submitted)).toBe('Signing.ApproverCannotSubmit');

    // An over-long comment is refused by name and approves nothing.
    const overLong = await signingClient(app, first.token)(APPROVE_MUTATION, { comment: 'x'.repeat(2001) });
    expect(firstErrorName(overLong)).toBe('Request.Invalid');
    expect(overLong.errors![0].extensions.context.issues[0].path).toBe('comment');
    const one = await signingClient(app, first.token)(APPROVE_MUTATION, { comment: 'Looks right' });
    expect(one.errors, JSON.stringify(one.errors)).toBeUndefined();
    expect(one.data.approveSigning.approval).toEqual({ quorum: 2, approvals: 1, approvedByMe: true });
    expect(one.data.approveSigning.recipient.completedAt).toBeNull();
    expect(one.data.approveSigning.isMyTurn).toBe(false);
    expect(firstErrorName(await signingClient(app, first.token)(APPROVE_MUTATION))).toBe('Signing.AlreadyApproved');
    expect(firstErrorName(await signingClient(app, first.token)(DECLINE_MUTATION, { reason: 'changed my mind' }))).toBe('Signing.AlreadyApproved');
    expect((await invitationsOf(app, built.envelopeId)).length).toBe(3);

    const two = await signingClient(app, second.token)(APPROVE_MUTATION);
    expect(two.errors, JSON.stringify(two.errors)).toBeUndefined();
    expect(two.data.approveSigning.recipient.completedAt).not.toBeNull();
    const next = (await invitationsOf(app, built.envelopeId)).slice(3);
    expect(next.map((invitation) => invitation.recipientId)).toEqual([built.recipients.ceo]);

    // The third agent's link: no longer needed (410 on GraphQL and on the page); the approvers who approved still read their session.
    const late = await signingClient(app, third.token)(APPROVE_MUTATION);
    expect(firstErrorName(late)).toBe('Signing.RoleCompleted');
    expect(firstErrorName(await signingClient(app, third.token)(SESSION_QUERY))).toBe('Signing.RoleCompleted');
    expect(firstErrorName(await signingClient(app, third.token)(DECLINE_MUTATION, { reason: 'no' }))).toBe('Signing.RoleCompleted');
    const page = await fetch(`${app.url}/sign/${third.token}`);
    expect(page.status).toBe(410);
    expect(await page.text()).toContain('Your approval is no longer needed');
    expect((await fetch(`${app.url}/sign/${first.token}`)).status).toBe(200);
    expect((await signingClient(app, first.token)(SESSION_QUERY)).errors).toBeUndefined();

    const events = (await listAuditEvents(app.orm.em.fork(), built.envelopeId)).filter((event) => event.type === 'recipient.approved' || event.type === 'recipient.completed');
    expect(events.map((event) => [event.type, event.actorId])).toEqual([
      ['recipient.approved', first.agentId],
      ['recipient.approved', second.agentId],
      ['recipient.completed', second.agentId],
    ]);
    expect(events[0].details).toMatchObject({ comment: 'Looks right', approvals: 1, quorum: 2 });
    expect(events[2].details).toMatchObject({ approvedBy: [first.agentId, second.agentId], madeQuorum: second.agentId });

    // The envelope finalizes when the signer after them signs.
    expect((await signAndComplete(app, next[0].token)).errors).toBeUndefined();
    expect((await rest.get(`/envelopes/${built.envelopeId}`)).body.payload.envelope.status).toBe('finalized');
  });

  it('rejecting is declining: the envelope is voided with the reason; a signer link cannot approve', async () => {
    const built = await buildEnvelope(app, team.apiKey, { recipients: [board(2, 2), { identifier: 'ceo', order: 1 }] });
    const rest = restClient(app, team.apiKey);
    expect((await rest.put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
    const invitations = await invitationsOf(app, built.envelopeId);
    const ceo = invitations.find((invitation) => invitation.recipientId === built.recipients.ceo)!;
    expect(firstErrorName(await signingClient(app, ceo.token)(APPROVE_MUTATION))).toBe('Signing.NotApprover');
    const approver = invitations.find((invitation) => invitation.recipientId === built.recipients.board)!;
    const rejected = await signingClient(app, approver.token)(DECLINE_MUTATION, { reason: 'The price is wrong' });
    expect(rejected.errors).toBeUndefined();
    expect(rejected.data.declineSigning.envelope.status).toBe('voided');
    expect((await rest.get(`/envelopes/${built.envelopeId}`)).body.payload.envelope.status).toBe('voided');
    const voided = (await listAuditEvents(app.orm.em.fork(), built.envelopeId)).find((event) => event.type === 'envelope.voided')!;
    expect(voided.details).toMatchObject({ reason: 'The price is wrong', cause: 'decline', recipientId: built.recipients.board });
  });
});

describe('templates', () => {
  it('carry approver roles and quorums (both faces); a jumpstart copies them, and sending checks the quorum against the agents given', async () => {
    const rest = restClient(app, team.apiKey);
    const graphql = graphqlClient(app, team.apiKey);
    const ready = await createReadyTemplate(app, team.apiKey);
    const role = await rest.post(`/templates/${ready.templateId}/recipients`, { recipient: { type: 'approver', identifier: 'board', roleName: 'Board', order: 0, quorum: 2 } });
    expect(role.status, JSON.stringify(role.body)).toBe(200);
    expect(role.body.payload.recipient).toMatchObject({ type: 'approver', quorum: 2 });
    const viaGraphql = await graphql(`query($t: ID!) { template(id: $t) { recipients { identifier type quorum } } }`, { t: ready.templateId });
    expect(viaGraphql.errors, JSON.stringify(viaGraphql.errors)).toBeUndefined();
    expect(viaGraphql.data.template.recipients).toContainEqual({ identifier: 'board', type: 'approver', quorum: 2 });
    const field = await rest.post(`/templates/${ready.templateId}/fields`, { fields: [fieldOf(role.body.payload.recipient.id, ready.documentId)] });
    expect(field.status).toBe(422);
    expect(field.body.error.name).toBe('Field.NotAllowedForRecipient');
    const signerQuorum = await rest.patch(`/templates/${ready.templateId}/recipients/${ready.signerId}`, { recipient: { quorum: 2 } });
    expect(signerQuorum.body.error.name).toBe('Recipient.QuorumNotApprover');

    const buyer = { identifier: 'buyer', agents: [{ info: { name: 'Ada Buyer', email: 'ada@example.com' } }] };
    const enough = await rest.post(`/envelopes/jumpstart/${ready.templateId}`, { recipients: [buyer, { identifier: 'board', agents: people(3) }] });
    expect(enough.status, JSON.stringify(enough.body)).toBe(200);
    const copied = (await rest.get(`/envelopes/${enough.body.payload.envelopeId}/recipients`)).body.payload.recipients;
    expect(copied.find((recipient: any) => recipient.identifier === 'board')).toMatchObject({ type: 'approver', quorum: 2 });
    const sent = await rest.put(`/envelopes/${enough.body.payload.envelopeId}/send`);
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    // The approvers act first (order 0): their invitations, not the buyer's.
    expect(new Set((await invitationsOf(app, enough.body.payload.envelopeId)).map((invitation) => invitation.to.name))).toEqual(
      new Set(['Board member 0', 'Board member 1', 'Board member 2']),
    );

    const tooFew = await rest.post(`/envelopes/jumpstart/${ready.templateId}`, { recipients: [buyer, { identifier: 'board', agents: people(1) }] });
    const refused = await rest.put(`/envelopes/${tooFew.body.payload.envelopeId}/send`);
    expect(refused.status).toBe(409);
    expect(refused.body.error.context.issues).toContainEqual({ path: 'recipients[board].quorum', message: expect.stringContaining('Recipient.QuorumExceedsAgents') });
  });
});

describe('the certificate of completion', () => {
  it('lists every approval with its comment, the quorum, and who made it', async () => {
    const built = await buildEnvelope(app, team.apiKey, {
      recipients: [
        { identifier: 'board', type: 'approver', order: 1, quorum: 2, agents: people(3) },
        { identifier: 'ceo', order: 2 },
      ],
    });
    const rest = restClient(app, team.apiKey);
    expect((await rest.put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
    const [first, second] = await invitationsOf(app, built.envelopeId);
    expect((await signingClient(app, first.token)(APPROVE_MUTATION, { comment: 'Budget checked' })).errors).toBeUndefined();
    expect((await signingClient(app, second.token)(APPROVE_MUTATION)).errors).toBeUndefined();
    // The envelope closes (here by the signer after them declining) and its certificate is fixed.
    const ceo = (await invitationsOf(app, built.envelopeId)).find((invitation) => invitation.recipientId === built.recipients.ceo)!;
    expect((await signingClient(app, ceo.token)(DECLINE_MUTATION, { reason: 'Not this quarter' })).errors).toBeUndefined();
    const response = await fetch(`${app.url}/api/v1/key/envelopes/${built.envelopeId}/audit/pdf`, { headers: { 'x-service-api-key': team.apiKey } });
    expect(response.status).toBe(200);
    const file = path.join(os.tmpdir(), `approvers-certificate-${process.pid}.pdf`);
    fs.writeFileSync(file, Buffer.from(await response.arrayBuffer()));
    try {
      const text = execFileSync('pdftotext', ['-raw', file, '-'], { encoding: 'utf8' }).replace(/\s+/g, ' ');
      expect(text).toContain('board: approver, signing order 1');
      expect(text).toContain('Quorum: 2 approvals needed, 2 given');
      expect(text).toContain('Approval comment: “Budget checked”');
      expect(text.match(/This approval made the quorum/g)).toHaveLength(1);
      expect(text.match(/Approved: /g)).toHaveLength(2);
      expect(text).toContain('approved for the role “board” (1 of 2): “Budget checked”');
      expect(text).toContain('made the quorum: the role “board” was approved');
      // The quorum maker is the second person, listed after the first.
      expect(text.indexOf('This approval made the quorum')).toBeGreaterThan(text.indexOf('Board member 1'));
    } finally {
      fs.rmSync(file, { force: true });
    }
  });
});

describe('reminders', () => {
  it('go to the approvers who have not approved yet, not to those who did', async () => {
    const built = await buildEnvelope(app, team.apiKey, {
      recipients: [
        { identifier: 'board', type: 'approver', order: 1, quorum: 2, agents: people(2) },
        { identifier: 'ceo', order: 2 },
      ],
    });
    const rest = restClient(app, team.apiKey);
    expect((await rest.put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
    const [first, second] = await invitationsOf(app, built.envelopeId);
    expect((await signingClient(app, first.token)(APPROVE_MUTATION)).errors).toBeUndefined();
    const reminded = await rest.post(`/envelopes/${built.envelopeId}/remind`);
    expect(reminded.status, JSON.stringify(reminded.body)).toBe(200);
    expect(reminded.body.payload.reminded.map((entry: any) => entry.agentId)).toEqual([second.agentId]);
  });
});

describe('the envelope read', () => {
  it('counts an approver role in the progress and names its people while it waits', async () => {
    const built = await buildEnvelope(app, team.apiKey, {
      recipients: [
        { identifier: 'board', type: 'approver', order: 1, quorum: 1, agents: people(2) },
        { identifier: 'ceo', order: 2 },
      ],
    });
    const rest = restClient(app, team.apiKey);
    expect((await rest.put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
    const read = await graphqlClient(app, team.apiKey)('query($id: ID!) { envelope(id: $id) { progress { recipients completed pending waitingFor { recipientId names } } } }', {
      id: built.envelopeId,
    });
    expect(read.errors, JSON.stringify(read.errors)).toBeUndefined();
    expect(read.data.envelope.progress).toMatchObject({
      recipients: 2,
      completed: 0,
      pending: 2,
      waitingFor: [{ recipientId: built.recipients.board, names: ['Board member 0', 'Board member 1'] }],
    });
  });
});

describe('the OpenAPI document', () => {
  it('describes the approver type, the quorum and the new refusals of the recipient and field routes', async () => {
    const document = await (await fetch(`${app.url}/api/v1/key/openapi.json`)).json();
    const text = JSON.stringify(document.paths['/envelopes/{envelopeId}/recipients'].post);
    expect(text).toContain('"approver"');
    expect(text).toContain('"quorum"');
    expect(text).toContain('Recipient.QuorumExceedsAgents');
    expect(JSON.stringify(document.paths['/envelopes/{envelopeId}/fields'].post)).toContain('Field.NotAllowedForRecipient');
  });
});

describe('webhooks', () => {
  it('may subscribe to recipient.approved', async () => {
    const created = await restClient(app, team.apiKey).post('/webhooks', { url: 'https://example.com/approvals', eventTypes: ['recipient.approved'] });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(created.body.payload.webhook.eventTypes).toEqual(['recipient.approved']);
  });
});

describe('the sender’s read of approvals', () => {
  const RECIPIENTS_QUERY = `query($id: ID!, $r: ID!) {
    envelope(id: $id) { recipients { id approvals { agentId name approvedAt comment } } }
    recipient(envelopeId: $id, recipientId: $r) { approvals { agentId name approvedAt comment } }
  }`;

  it('lists each approval of an approver role (who, the person’s name, when, the comment) on both faces; other types and template roles have none', async () => {
    const built = await buildEnvelope(app, team.apiKey, {
      recipients: [
        { identifier: 'board', type: 'approver', order: 1, quorum: 2, agents: people(3) },
        { identifier: 'ceo', order: 2 },
      ],
    });
    const rest = restClient(app, team.apiKey);
    const graphql = graphqlClient(app, team.apiKey);
    expect((await rest.put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
    const [first] = await invitationsOf(app, built.envelopeId);
    const board = built.recipients.board;
    const ceo = built.recipients.ceo;

    // None yet: an empty list, not a missing key.
    const before = await rest.get(`/envelopes/${built.envelopeId}/recipients/${board}`);
    expect(before.body.payload.recipient.approvals).toEqual([]);

    expect((await signingClient(app, first.token)(APPROVE_MUTATION, { comment: 'Budget checked' })).errors).toBeUndefined();
    const approvedAt = (await listAuditEvents(app.orm.em.fork(), built.envelopeId)).find((event) => event.type === 'recipient.approved')!.at;
    const expected = [{ agentId: first.agentId, name: first.to.name, approvedAt: expect.any(String), comment: 'Budget checked' }];

    const list = (await rest.get(`/envelopes/${built.envelopeId}/recipients`)).body.payload.recipients;
    expect(list.find((recipient: any) => recipient.id === board).approvals).toEqual(expected);
    expect(list.find((recipient: any) => recipient.id === ceo).approvals).toEqual([]);
    const one = (await rest.get(`/envelopes/${built.envelopeId}/recipients/${board}`)).body.payload.recipient;
    expect(one.approvals).toEqual(expected);
    expect(first.to.name).toBe('Board member 0');
    // The approval's moment, as the trail has it (to the millisecond the answers carry).
    expect(new Date(one.approvals[0].approvedAt).getTime()).toBe(new Date(approvedAt).getTime());
    const withEnvelope = (await rest.get(`/envelopes/${built.envelopeId}?includeRecipients=true`)).body.payload.recipients;
    expect(withEnvelope.find((recipient: any) => recipient.id === board).approvals).toEqual(one.approvals);

    const viaGraphql = await graphql(RECIPIENTS_QUERY, { id: built.envelopeId, r: board });
    expect(viaGraphql.errors, JSON.stringify(viaGraphql.errors)).toBeUndefined();
    expect(viaGraphql.data.envelope.recipients).toEqual([
      { id: board, approvals: one.approvals },
      { id: ceo, approvals: [] },
    ]);
    expect(viaGraphql.data.recipient.approvals).toEqual(one.approvals);

    // A template's roles collect no approvals: their reads have no such key.
    const ready = await createReadyTemplate(app, team.apiKey);
    await rest.post(`/templates/${ready.templateId}/recipients`, { recipient: { type: 'approver', identifier: 'board', roleName: 'Board', quorum: 1 } });
    const roles = (await rest.get(`/templates/${ready.templateId}`)).body.payload.template.recipients;
    expect(roles.length).toBeGreaterThan(0);
    for (const role of roles) expect(role).not.toHaveProperty('approvals');
  });
});

describe('resending an invitation', () => {
  const RESEND_MUTATION = `mutation($e: ID!, $r: ID!, $a: ID) { resendInvitation(envelopeId: $e, recipientId: $r, agentId: $a) { agentId channel } }`;

  it('is refused for an approver’s agent that already approved (Signing.AlreadyApproved, both faces; nothing sent, no link dies), and works for the others', async () => {
    const built = await buildEnvelope(app, team.apiKey, {
      recipients: [
        { identifier: 'board', type: 'approver', order: 1, quorum: 2, agents: people(2) },
        { identifier: 'ceo', order: 2 },
      ],
    });
    const rest = restClient(app, team.apiKey);
    const graphql = graphqlClient(app, team.apiKey);
    expect((await rest.put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
    const [first, second] = await invitationsOf(app, built.envelopeId);
    expect((await signingClient(app, first.token)(APPROVE_MUTATION)).errors).toBeUndefined();

    const named = await rest.post(`/envelopes/${built.envelopeId}/recipients/${built.recipients.board}/resend`, { agentId: first.agentId });
    expect(named.status, JSON.stringify(named.body)).toBe(409);
    expect(named.body.error).toMatchObject({ name: 'Signing.AlreadyApproved', context: { recipientId: built.recipients.board, agentId: first.agentId } });
    // The role's first agent is the default, and it approved.
    const byDefault = await rest.post(`/envelopes/${built.envelopeId}/recipients/${built.recipients.board}/resend`, {});
    expect(byDefault.status).toBe(409);
    expect(byDefault.body.error.name).toBe('Signing.AlreadyApproved');
    const viaGraphql = await graphql(RESEND_MUTATION, { e: built.envelopeId, r: built.recipients.board, a: first.agentId });
    expect(firstErrorName(viaGraphql)).toBe('Signing.AlreadyApproved');
    expect(await invitationsOf(app, built.envelopeId)).toHaveLength(2);
    expect((await signingClient(app, first.token)(SESSION_QUERY)).errors).toBeUndefined();
    const trail = await listAuditEvents(app.orm.em.fork(), built.envelopeId);
    expect(trail.filter((event) => event.type === 'invitation.resent')).toEqual([]);

    // The agent still to approve gets its invitation again.
    const resent = await graphql(RESEND_MUTATION, { e: built.envelopeId, r: built.recipients.board, a: second.agentId });
    expect(resent.errors, JSON.stringify(resent.errors)).toBeUndefined();
    expect(resent.data.resendInvitation).toMatchObject({ agentId: second.agentId, channel: 'email' });
    expect((await invitationsOf(app, built.envelopeId)).map((invitation) => invitation.agentId)).toEqual([first.agentId, second.agentId, second.agentId]);
  });
});
