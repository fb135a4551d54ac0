import { createHash } from 'node:crypto';
import { isNonNullType } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { schema } from '../src/graphql/schema.ts';
import { sortedKeysJson } from '../src/shared/sorted-keys-json.ts';
import { makePdf } from './fixtures/pdfs.ts';
import { uploadDocument } from './helpers/envelopes.ts';
import { type GraphQLResult, restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';

/*
 * The GraphQL/idempotency contract: a failing mutation never hides a committed sibling (mutation
 * results are nullable), and an Idempotency-Key replay answers the stored first answer, even
 * after what it created was changed or deleted, on both faces.
 */

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => app?.close());

type Caller = { team: SeededTeam; rest: ReturnType<typeof restClient>; graphql: (document: string, variables?: Record<string, unknown>, key?: string) => Promise<GraphQLResult> };

async function newCaller(): Promise<Caller> {
  const team = await seedTeam(app);
  return {
    team,
    rest: restClient(app, team.apiKey),
    async graphql(document, variables = {}, key) {
      const response = await fetch(`${app.url}/graphql`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/graphql-response+json',
          'x-service-api-key': team.apiKey,
          ...(key === undefined ? {} : { 'idempotency-key': key }),
        },
        body: JSON.stringify({ query: document, variables }),
      });
      const body = (await response.json()) as { data?: any; errors?: any[] };
      return { status: response.status, data: body.data, errors: body.errors };
    },
  };
}

describe('several mutations in one operation', () => {
  it('every Mutation field is nullable, so one failure cannot null its siblings', () => {
    const required = Object.values(schema.getMutationType()!.getFields()).filter((field) => isNonNullType(field.type));
    expect(required.map((field) => field.name)).toEqual([]);
  });

  it('answers the first mutation when the second fails, and the first’s effect stays', async () => {
    const caller = await newCaller();
    const result = await caller.graphql(`mutation {
      first: createContact(input: { name: "Ada Lovelace" }) { id name }
      second: createContact(input: { name: "" }) { id name }
    }`);
    expect(result.status).toBe(200);
    expect(result.data.first).toEqual({ id: expect.any(String), name: 'Ada Lovelace' });
    expect(result.data.second).toBeNull();
    expect(result.errors).toHaveLength(1);
    expect(result.errors?.[0]).toMatchObject({ path: ['second'], extensions: { code: 'Request.Invalid' } });
    const stored = await caller.rest.get(`/contacts/${result.data.first.id}`);
    expect(stored.body.payload.contact.name).toBe('Ada Lovelace');
  });

  it('keeps the created envelope’s id when a later mutation on another envelope is refused', async () => {
    const caller = await newCaller();
    const result = await caller.graphql(`mutation {
      created: createEnvelope(input: { name: "Kept" }) { id status }
      refused: updateEnvelope(id: "00000000-0000-4000-8000-000000000000", input: { name: "Nope" }) { id }
    }`);
    expect(result.data.created).toEqual({ id: expect.any(String), status: 'draft' });
    expect(result.data.refused).toBeNull();
    expect(result.errors?.[0]).toMatchObject({ path: ['refused'], extensions: { code: 'Envelope.NotFound' } });
    expect((await caller.rest.get(`/envelopes/${result.data.created.id}`)).status).toBe(200);
  });
});

describe('Idempotency-Key replays answer the stored first answer', () => {
  it('createEnvelope on REST: the same body after the envelope was changed and after it was deleted', async () => {
    const caller = await newCaller();
    const headers = { 'idempotency-key': 'env-rest' };
    const first = await caller.rest.post('/envelopes', { name: 'Original' }, headers);
    const envelopeId = first.body.payload.envelopeId;
    await caller.rest.patch(`/envelopes/${envelopeId}`, { name: 'Renamed' });
    const afterChange = await caller.rest.post('/envelopes', { name: 'Original' }, headers);
    expect(afterChange.status).toBe(200);
    expect(afterChange.body).toEqual(first.body);
    expect((await caller.rest.delete(`/envelopes/${envelopeId}`)).status).toBe(200);
    const afterDelete = await caller.rest.post('/envelopes', { name: 'Original' }, headers);
    expect(afterDelete.status).toBe(200);
    expect(afterDelete.body).toEqual(first.body);
    // Nothing was created again, and a different body is still refused.
    expect((await caller.rest.get('/envelopes')).body.payload.envelopes).toEqual([]);
    expect((await caller.rest.post('/envelopes', { name: 'Other' }, headers)).body.error.name).toBe('Request.IdempotencyKeyReused');
  });

  it('createEnvelope on GraphQL: the envelope as created, for any selection, after a change and after deletion', async () => {
    const caller = await newCaller();
    const create = (selection: string) => caller.graphql(`mutation { createEnvelope(input: { name: "Original", expirationPeriodDays: 14 }) { ${selection} } }`, {}, 'env-gql');
    const first = await create('id name status expirationPeriodDays documents { id } recipients { id } fields { id } auditEvents { type }');
    expect(first.errors).toBeUndefined();
    const envelopeId = first.data.createEnvelope.id;
    expect(first.data.createEnvelope).toMatchObject({ name: 'Original', status: 'draft', documents: [], auditEvents: [{ type: 'envelope.created' }] });
    await caller.graphql(`mutation($id: ID!) { updateEnvelope(id: $id, input: { name: "Renamed" }) { id } }`, { id: envelopeId });
    const afterChange = await create('id name status expirationPeriodDays documents { id } recipients { id } fields { id } auditEvents { type }');
    expect(afterChange.data).toEqual(first.data);
    await caller.graphql(`mutation($id: ID!) { deleteEnvelope(id: $id) { id } }`, { id: envelopeId });
    const afterDelete = await create('id name createdAt updatedAt');
    expect(afterDelete.errors).toBeUndefined();
    expect(afterDelete.data.createEnvelope).toMatchObject({ id: envelopeId, name: 'Original' });
    // The REST face replays the same stored creation (same operation and body).
    const rest = await caller.rest.post('/envelopes', { name: 'Original', expirationPeriodDays: 14 }, { 'idempotency-key': 'env-gql' });
    expect(rest.body.payload).toEqual({ envelopeId });
  });

  it('contacts, groups and users: the first answer after a change and after deletion, on both faces', async () => {
    const caller = await newCaller();
    const cases = [
      { path: '/contacts', key: 'contact', body: { name: 'Ada', email: 'ada@example.com' }, change: { name: 'Ada L.' } },
      { path: '/contact-groups', key: 'contactGroup', body: { name: 'Board' }, change: { name: 'Board 2' } },
      { path: '/users', key: 'user', body: { name: 'Grace', email: 'grace@example.com' }, change: { name: 'Grace H.' } },
    ];
    for (const { path, key, body, change } of cases) {
      const headers = { 'idempotency-key': `rest-${key}` };
      const first = await caller.rest.post(path, body, headers);
      expect(first.status).toBe(200);
      const id = first.body.payload[key].id;
      await caller.rest.patch(`${path}/${id}`, change);
      expect((await caller.rest.post(path, body, headers)).body).toEqual(first.body);
      expect((await caller.rest.delete(`${path}/${id}`)).status).toBe(200);
      const afterDelete = await caller.rest.post(path, body, headers);
      expect(afterDelete.status).toBe(200);
      expect(afterDelete.body).toEqual(first.body);
      expect((await caller.rest.get(`${path}/${id}`)).status).toBe(404);
    }

    const mutations = [
      ['createContact', 'CreateContactInput', '{ name: "Lin", email: "lin@example.com" }', 'id name email', 'deleteContact'],
      ['createContactGroup', 'CreateContactGroupInput', '{ name: "Legal" }', 'id name memberCount members { id }', 'deleteContactGroup'],
      ['createUser', 'CreateUserInput', '{ name: "Mo", email: "mo@example.com" }', 'id name email locale', 'deleteUser'],
    ] as const;
    for (const [mutation, , input, selection, remove] of mutations) {
      const create = () => caller.graphql(`mutation { ${mutation}(input: ${input}) { ${selection} } }`, {}, `gql-${mutation}`);
      const first = await create();
      expect(first.errors).toBeUndefined();
      await caller.graphql(`mutation($id: ID!) { ${remove}(id: $id) { id } }`, { id: first.data[mutation].id });
      const afterDelete = await create();
      expect(afterDelete.errors).toBeUndefined();
      expect(afterDelete.data).toEqual(first.data);
    }
  });

  it('recipients, fields and documents: the first answer after the created thing was changed and deleted', async () => {
    const caller = await newCaller();
    const envelopeId = (await caller.rest.post('/envelopes', { name: 'Draft' })).body.payload.envelopeId;
    const pdf = await makePdf({ pages: 1 });
    const document = await uploadDocument(app, caller.team.apiKey, envelopeId, { bytes: pdf }, { name: 'Contract' }, { 'idempotency-key': 'doc' });
    const documentId = document.body.payload.document.id;
    const recipientBody = { recipient: { type: 'signer', identifier: 'buyer', roleName: 'Buyer', agents: [{ info: { name: 'Ada', email: 'ada@example.com' } }] } };
    const recipient = await caller.rest.post(`/envelopes/${envelopeId}/recipients`, recipientBody, { 'idempotency-key': 'rcp' });
    const recipientId = recipient.body.payload.recipient.id;
    const fieldsBody = {
      fields: [
        {
          type: 'simple_signature',
          recipientId,
          identifier: 'sig',
          views: [{ documentId, page: 0, location: { x: 10, y: 10 }, size: { width: 100, height: 30 } }],
        },
      ],
    };
    const fields = await caller.rest.post(`/envelopes/${envelopeId}/fields`, fieldsBody, { 'idempotency-key': 'fld' });
    const fieldId = fields.body.payload.fields[0].id;

    await caller.rest.patch(`/envelopes/${envelopeId}/recipients/${recipientId}`, { recipient: { roleName: 'Changed' } });
    expect((await caller.rest.post(`/envelopes/${envelopeId}/recipients`, recipientBody, { 'idempotency-key': 'rcp' })).body).toEqual(recipient.body);

    await caller.rest.delete(`/envelopes/${envelopeId}/fields/${fieldId}`);
    await caller.rest.delete(`/envelopes/${envelopeId}/recipients/${recipientId}`);
    await caller.rest.delete(`/envelopes/${envelopeId}/documents/${documentId}`);
    const fieldsAgain = await caller.rest.post(`/envelopes/${envelopeId}/fields`, fieldsBody, { 'idempotency-key': 'fld' });
    expect(fieldsAgain.status).toBe(200);
    expect(fieldsAgain.body).toEqual(fields.body);
    const recipientAgain = await caller.rest.post(`/envelopes/${envelopeId}/recipients`, recipientBody, { 'idempotency-key': 'rcp' });
    expect(recipientAgain.body).toEqual(recipient.body);
    const documentAgain = await uploadDocument(app, caller.team.apiKey, envelopeId, { bytes: pdf }, { name: 'Contract' }, { 'idempotency-key': 'doc' });
    expect(documentAgain.body).toEqual(document.body);
    const viaGraphql = await caller.graphql(
      'mutation($e: ID!, $input: AddRecipientInput!) { addRecipient(envelopeId: $e, input: $input) { id roleName agents { kind info { name } } } }',
      { e: envelopeId, input: recipientBody.recipient },
      'rcp',
    );
    expect(viaGraphql.data.addRecipient).toEqual({ id: recipientId, roleName: 'Buyer', agents: [{ kind: 'info', info: { name: 'Ada' } }] });
    // Nothing was created again.
    const envelope = await caller.rest.get(`/envelopes/${envelopeId}?includeDocuments=true&includeRecipients=true&includeFields=true`);
    expect(envelope.body.payload).toMatchObject({ documents: [], recipients: [], fields: [] });
  });

  it('still answers a record written before answers were stored (it holds only the id) by reading the resource', async () => {
    const caller = await newCaller();
    const created = await caller.rest.post('/contacts', { name: 'Legacy' });
    const contact = created.body.payload.contact;
    const body = { name: 'Legacy' };
    const fingerprint = createHash('sha256')
      .update(sortedKeysJson({ operation: 'createContact', input: body }))
      .digest('hex');
    await app.orm.em.fork().execute(
      `insert into idempotency_record (id, created_at, team_id, key, fingerprint, response, completed_at)
       values (gen_random_uuid(), now(), ?, 'legacy', ?, ?, now())`,
      [caller.team.teamId, fingerprint, JSON.stringify({ resourceId: contact.id })],
    );
    const replay = await caller.rest.post('/contacts', body, { 'idempotency-key': 'legacy' });
    expect(replay.status).toBe(200);
    expect(replay.body.payload.contact).toEqual(contact);
    expect((await caller.rest.get('/contacts')).body.payload.contacts).toHaveLength(1);
  });
});
