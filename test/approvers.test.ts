import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { firstErrorName, graphqlClient, restClient, seedTeam, startTestApp, type SeededTeam, type TestApp } from './helpers/harness.ts';
import { createDraftWithDocumentAndSigner } from './helpers/envelopes.ts';

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
    const viaRest = await rest.post(`/envelopes/${draft.envelopeId}/recipients`, { recipient: { type: 'approver', identifier: 'board', roleName: 'Board', order: 1, quorum: 2, agents: people(3) } });
    expect(viaRest.status, JSON.stringify(viaRest.body)).toBe(200);
    expect(viaRest.body.payload.recipient).toMatchObject({ type: 'approver', quorum: 2 });
    const viaGraphql = await graphql(
      `mutation($e: ID!, $input: AddRecipientInput!) { addRecipient(envelopeId: $e, input: $input) { type quorum } }`,
      { e: draft.envelopeId, input: { type: 'approver', identifier: 'audit', roleName: 'Audit', agents: people(1) } },
    );
    expect(viaGraphql.errors).toBeUndefined();
    expect(viaGraphql.data.addRecipient).toEqual({ type: 'approver', quorum: 1 });
    expect((await rest.get(`/envelopes/${draft.envelopeId}/recipients/${draft.signerId}`)).body.payload.recipient.quorum).toBe(1);
  });

  it('holds no fields: adding one, or making a recipient with fields an approver, is Field.NotAllowedForRecipient on both faces', async () => {
    const rest = restClient(app, team.apiKey);
    const graphql = graphqlClient(app, team.apiKey);
    const draft = await createDraftWithDocumentAndSigner(app, team.apiKey);
    const approver = (await rest.post(`/envelopes/${draft.envelopeId}/recipients`, { recipient: { type: 'approver', identifier: 'board', roleName: 'Board', agents: people(1) } })).body.payload.recipient;
    const refused = await rest.post(`/envelopes/${draft.envelopeId}/fields`, { fields: [fieldOf(approver.id, draft.documentId)] });
    expect(refused.status).toBe(422);
    expect(refused.body.error).toMatchObject({ name: 'Field.NotAllowedForRecipient', context: { recipientId: approver.id, type: 'approver' } });
    const refusedGraphql = await graphql(
      `mutation($e: ID!, $fields: [FieldInput!]!) { createFields(envelopeId: $e, fields: $fields) { id } }`,
      { e: draft.envelopeId, fields: [fieldOf(approver.id, draft.documentId)] },
    );
    expect(firstErrorName(refusedGraphql), JSON.stringify(refusedGraphql.errors)).toBe('Field.NotAllowedForRecipient');
    expect((await rest.get(`/envelopes/${draft.envelopeId}/fields`)).body.payload.fields).toEqual([]);

    // A signer holding a field does not become an approver (its field would be orphaned).
    const field = (await rest.post(`/envelopes/${draft.envelopeId}/fields`, { fields: [fieldOf(draft.signerId, draft.documentId)] })).body.payload.fields[0];
    const retyped = await rest.patch(`/envelopes/${draft.envelopeId}/recipients/${draft.signerId}`, { recipient: { type: 'approver' } });
    expect(retyped.status).toBe(422);
    expect(retyped.body.error).toMatchObject({ name: 'Field.NotAllowedForRecipient', context: { recipientId: draft.signerId, fieldIds: [field.id] } });
    const retypedGraphql = await graphql('mutation($e: ID!, $r: ID!) { updateRecipient(envelopeId: $e, recipientId: $r, input: { type: approver }) { type } }', { e: draft.envelopeId, r: draft.signerId });
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
    const tooManyGraphql = await graphql(
      `mutation($e: ID!, $input: AddRecipientInput!) { addRecipient(envelopeId: $e, input: $input) { id } }`,
      { e: draft.envelopeId, input: { type: 'approver', identifier: 'board', roleName: 'Board', quorum: 3, agents: people(2) } },
    );
    expect(firstErrorName(tooManyGraphql)).toBe('Recipient.QuorumExceedsAgents');
    const zero = await rest.post(`/envelopes/${draft.envelopeId}/recipients`, { recipient: { type: 'approver', identifier: 'board', roleName: 'Board', quorum: 0, agents: people(2) } });
    expect(zero.status).toBe(400);
    expect(zero.body.error.context.issues[0].path).toBe('recipient.quorum');
    const signerQuorum = await rest.patch(`/envelopes/${draft.envelopeId}/recipients/${draft.signerId}`, { recipient: { quorum: 2 } });
    expect(signerQuorum.status).toBe(422);
    expect(signerQuorum.body.error.name).toBe('Recipient.QuorumNotApprover');
    expect((await rest.get(`/envelopes/${draft.envelopeId}/recipients`)).body.payload.recipients).toHaveLength(1);

    // Replacing the agents with fewer than the quorum is refused as well; lowering the quorum with them is not.
    const board = (await rest.post(`/envelopes/${draft.envelopeId}/recipients`, { recipient: { type: 'approver', identifier: 'board', roleName: 'Board', quorum: 2, agents: people(3) } })).body.payload.recipient;
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
    const board = (await rest.post(`/envelopes/${draft.envelopeId}/recipients`, { recipient: { type: 'approver', identifier: 'board', roleName: 'Board', quorum: 2, agents: people(2) } })).body.payload.recipient;
    // An agent row removed behind the write rules' back (a team user or contact reference deleted is the real-world path).
    await app.orm.em.fork().execute(`delete from agent where id = (select id from agent where recipient_id = ? order by position desc limit 1)`, [board.id]);
    const refused = await rest.put(`/envelopes/${draft.envelopeId}/send`);
    expect(refused.status).toBe(409);
    expect(refused.body.error.name).toBe('Envelope.NotSendable');
    expect(refused.body.error.context.issues).toContainEqual({ path: 'recipients[board].quorum', message: expect.stringContaining('Recipient.QuorumExceedsAgents') });
    expect((await rest.get(`/envelopes/${draft.envelopeId}`)).body.payload.envelope.status).toBe('draft');
  });
});
