import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forceEnvelopeStatus, unknownId } from './helpers/envelopes.ts';
import { firstErrorName, graphqlClient, restClient, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app.close();
});

const envelopeFields = 'id name status expirationPeriodDays reminderInitialDelayDays reminderRepeatIntervalDays reminderBeforeExpirationDays context createdAt completedAt';

describe('creating envelopes', () => {
  it('creates a draft through REST and reads it back with its settings', async () => {
    const team = await seedTeam(app);
    const rest = restClient(app, team.apiKey);
    const created = await rest.post('/envelopes', {
      name: 'NDA',
      expirationPeriodDays: 14,
      reminderInitialDelayDays: 2,
      reminderRepeatIntervalDays: 3,
      reminderBeforeExpirationDays: 1,
      context: { crmId: 'opp-42', nested: { a: [1, 2] } },
    });
    expect(created.status).toBe(200);
    expect(created.body).toEqual({ version: '1', success: true, payload: { envelopeId: expect.any(String) } });
    const fetched = await rest.get(`/envelopes/${created.body.payload.envelopeId}`);
    expect(fetched.body.payload.envelope).toMatchObject({
      id: created.body.payload.envelopeId,
      name: 'NDA',
      status: 'draft',
      expirationPeriodDays: 14,
      reminderInitialDelayDays: 2,
      reminderRepeatIntervalDays: 3,
      reminderBeforeExpirationDays: 1,
      context: { crmId: 'opp-42', nested: { a: [1, 2] } },
      completedAt: null,
    });
    expect(new Date(fetched.body.payload.envelope.createdAt).getTime()).toBeGreaterThan(Date.now() - 60_000);
  });

  it('creates a draft through GraphQL with defaults for the optional settings', async () => {
    const team = await seedTeam(app);
    const result = await graphqlClient(app, team.apiKey)(`mutation($input: CreateEnvelopeInput!) { createEnvelope(input: $input) { ${envelopeFields} } }`, { input: { name: 'Lease' } });
    expect(result.errors).toBeUndefined();
    expect(result.data.createEnvelope).toMatchObject({
      name: 'Lease',
      status: 'draft',
      expirationPeriodDays: 30,
      reminderInitialDelayDays: 0,
      reminderRepeatIntervalDays: 0,
      reminderBeforeExpirationDays: 0,
      context: {},
    });
    const viaRest = await restClient(app, team.apiKey).get(`/envelopes/${result.data.createEnvelope.id}`);
    expect(viaRest.body.payload.envelope.name).toBe('Lease');
  });

  const limits: [string, unknown, boolean][] = [
    ['name', 'ab', true],
    ['name', 'a', false],
    ['name', 'x'.repeat(48), true],
    ['name', 'x'.repeat(49), false],
    ['name', '😀😀', true],
    ['expirationPeriodDays', 1, true],
    ['expirationPeriodDays', 0, false],
    ['expirationPeriodDays', 90, true],
    ['expirationPeriodDays', 91, false],
    ['expirationPeriodDays', 2.5, false],
    ['reminderInitialDelayDays', 0, true],
    ['reminderInitialDelayDays', -1, false],
    ['reminderInitialDelayDays', 30, true],
    ['reminderInitialDelayDays', 31, false],
    ['reminderRepeatIntervalDays', 30, true],
    ['reminderRepeatIntervalDays', 31, false],
    ['reminderRepeatIntervalDays', -1, false],
    ['reminderBeforeExpirationDays', 30, true],
    ['reminderBeforeExpirationDays', 31, false],
    ['reminderBeforeExpirationDays', -1, false],
    ['context', { any: ['json', 1, null] }, true],
    ['context', ['not', 'an', 'object'], false],
    ['context', 'text', false],
  ];

  it.each(limits)('REST and GraphQL agree on %s = %j (accepted: %s)', async (key, value, accepted) => {
    const team = await seedTeam(app);
    const body = { name: 'Valid name', [key]: value };
    const rest = await restClient(app, team.apiKey).post('/envelopes', body);
    const graphql = await graphqlClient(app, team.apiKey)('mutation($input: CreateEnvelopeInput!) { createEnvelope(input: $input) { id } }', {
      input: body,
    });
    if (accepted) {
      expect(rest.status).toBe(200);
      expect(graphql.errors).toBeUndefined();
    } else {
      expect(rest.status).toBe(400);
      expect(rest.body.error.name).toBe('Request.Invalid');
      expect(rest.body.error.context.issues).toEqual([expect.objectContaining({ path: key })]);
      // GraphQL either refuses the value's type itself or reports the same domain error.
      expect(graphql.errors).toBeDefined();
      if (firstErrorName(graphql) !== undefined) {
        expect(firstErrorName(graphql)).toBe('Request.Invalid');
        expect(graphql.errors![0].extensions.context.issues).toEqual([expect.objectContaining({ path: key })]);
      }
    }
    // A refused request changes nothing.
    const listed = await restClient(app, team.apiKey).get('/envelopes');
    expect(listed.body.payload.envelopes).toHaveLength(accepted ? 2 : 0);
  });

  it('lists every problem of a bad request at once and refuses unknown properties', async () => {
    const team = await seedTeam(app);
    const response = await restClient(app, team.apiKey).post('/envelopes', { name: 'x', expirationPeriodDays: 0, colour: 'red' });
    expect(response.status).toBe(400);
    const paths = response.body.error.context.issues.map((issue: { path: string }) => issue.path).sort();
    expect(paths).toEqual(['', 'expirationPeriodDays', 'name']);
    expect(JSON.stringify(response.body.error.context.issues)).toContain('colour');
  });

  it('refuses malformed JSON and non-object bodies with Request.Invalid', async () => {
    const team = await seedTeam(app);
    const broken = await fetch(`${app.url}/api/v1/key/envelopes`, {
      method: 'POST',
      headers: { 'x-service-api-key': team.apiKey, 'content-type': 'application/json' },
      body: '{"name": ',
    });
    expect(broken.status).toBe(400);
    expect((await broken.json()).error.name).toBe('Request.Invalid');
    const array = await restClient(app, team.apiKey).post('/envelopes', [1, 2]);
    expect(array.body.error.name).toBe('Request.Invalid');
  });
});

describe('reading and listing envelopes', () => {
  it('answers Envelope.NotFound for unknown and malformed ids on both faces', async () => {
    const team = await seedTeam(app);
    for (const id of [unknownId, 'not-a-uuid', "1' or '1'='1"]) {
      const rest = await restClient(app, team.apiKey).get(`/envelopes/${encodeURIComponent(id)}`);
      expect(rest.status).toBe(404);
      expect(rest.body.error).toMatchObject({ name: 'Envelope.NotFound', context: { envelopeId: id } });
      const graphql = await graphqlClient(app, team.apiKey)('query($id: ID!) { envelope(id: $id) { id } }', { id });
      expect(firstErrorName(graphql)).toBe('Envelope.NotFound');
    }
  });

  it('pages through envelopes newest first with a cursor and filters by status, on both faces', async () => {
    const team = await seedTeam(app);
    const rest = restClient(app, team.apiKey);
    const ids: string[] = [];
    for (let index = 0; index < 5; index += 1) {
      ids.push((await rest.post('/envelopes', { name: `Envelope ${index}` })).body.payload.envelopeId);
    }
    await forceEnvelopeStatus(app, ids[1], 'sent');
    const first = await rest.get('/envelopes?limit=2');
    expect(first.body.payload.envelopes.map((envelope: { id: string }) => envelope.id)).toEqual([ids[4], ids[3]]);
    const second = await rest.get(`/envelopes?limit=2&cursor=${first.body.payload.nextCursor}`);
    expect(second.body.payload.envelopes.map((envelope: { id: string }) => envelope.id)).toEqual([ids[2], ids[1]]);
    const third = await rest.get(`/envelopes?limit=2&cursor=${second.body.payload.nextCursor}`);
    expect(third.body.payload.envelopes.map((envelope: { id: string }) => envelope.id)).toEqual([ids[0]]);
    expect(third.body.payload.nextCursor).toBeNull();

    const sent = await rest.get('/envelopes?status=sent');
    expect(sent.body.payload.envelopes.map((envelope: { id: string }) => envelope.id)).toEqual([ids[1]]);

    const graphql = graphqlClient(app, team.apiKey);
    const page = await graphql('{ envelopes(first: 3) { nodes { id } pageInfo { hasNextPage endCursor } edges { cursor } } }');
    expect(page.data.envelopes.nodes.map((node: { id: string }) => node.id)).toEqual([ids[4], ids[3], ids[2]]);
    expect(page.data.envelopes.pageInfo.hasNextPage).toBe(true);
    const next = await graphql('query($after: String) { envelopes(first: 3, after: $after) { nodes { id } pageInfo { hasNextPage } } }', {
      after: page.data.envelopes.pageInfo.endCursor,
    });
    expect(next.data.envelopes.nodes.map((node: { id: string }) => node.id)).toEqual([ids[1], ids[0]]);
    expect(next.data.envelopes.pageInfo.hasNextPage).toBe(false);
    const drafts = await graphql('{ envelopes(status: draft) { nodes { id } } }');
    expect(drafts.data.envelopes.nodes).toHaveLength(4);
  });

  it('refuses bad listing parameters', async () => {
    const team = await seedTeam(app);
    const rest = restClient(app, team.apiKey);
    for (const query of ['limit=0', 'limit=101', 'limit=abc', 'status=archived', 'cursor=garbage']) {
      const response = await rest.get(`/envelopes?${query}`);
      expect(response.status, query).toBe(400);
      expect(response.body.error.name).toBe('Request.Invalid');
    }
    expect((await rest.get('/envelopes?limit=100')).status).toBe(200);
    expect((await rest.get('/envelopes?limit=1')).status).toBe(200);
  });

  it('only ever lists the caller’s own envelopes', async () => {
    const mine = await seedTeam(app);
    const theirs = await seedTeam(app);
    await restClient(app, theirs.apiKey).post('/envelopes', { name: 'Theirs' });
    const own = (await restClient(app, mine.apiKey).post('/envelopes', { name: 'Mine' })).body.payload.envelopeId;
    const listed = await restClient(app, mine.apiKey).get('/envelopes');
    expect(listed.body.payload.envelopes.map((envelope: { id: string }) => envelope.id)).toEqual([own]);
  });
});

describe('changing and deleting envelopes', () => {
  it('patches only the given settings of a draft, on both faces', async () => {
    const team = await seedTeam(app);
    const rest = restClient(app, team.apiKey);
    const id = (await rest.post('/envelopes', { name: 'Before', expirationPeriodDays: 10, context: { a: 1 } })).body.payload.envelopeId;
    const patched = await rest.patch(`/envelopes/${id}`, { name: 'After' });
    expect(patched.body.payload.envelope).toMatchObject({ name: 'After', expirationPeriodDays: 10, context: { a: 1 } });
    const graphql = await graphqlClient(app, team.apiKey)(
      'mutation($id: ID!) { updateEnvelope(id: $id, input: { expirationPeriodDays: 60, context: { b: 2 } }) { name expirationPeriodDays context } }',
      { id },
    );
    expect(graphql.data.updateEnvelope).toEqual({ name: 'After', expirationPeriodDays: 60, context: { b: 2 } });
    const invalid = await rest.patch(`/envelopes/${id}`, { expirationPeriodDays: 91 });
    expect(invalid.body.error.name).toBe('Request.Invalid');
    expect((await rest.get(`/envelopes/${id}`)).body.payload.envelope.expirationPeriodDays).toBe(60);
  });

  it('deletes drafts only: a sent envelope gives Envelope.NotDeletable and stays', async () => {
    const team = await seedTeam(app);
    const rest = restClient(app, team.apiKey);
    const draft = (await rest.post('/envelopes', { name: 'Draft' })).body.payload.envelopeId;
    expect((await rest.delete(`/envelopes/${draft}`)).body).toEqual({ version: '1', success: true, payload: { deleted: true } });
    expect((await rest.get(`/envelopes/${draft}`)).body.error.name).toBe('Envelope.NotFound');

    const sent = (await rest.post('/envelopes', { name: 'Sent' })).body.payload.envelopeId;
    await forceEnvelopeStatus(app, sent, 'sent');
    const refused = await rest.delete(`/envelopes/${sent}`);
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatchObject({ name: 'Envelope.NotDeletable', context: { status: 'sent' } });
    const graphql = await graphqlClient(app, team.apiKey)('mutation($id: ID!) { deleteEnvelope(id: $id) { deleted } }', { id: sent });
    expect(firstErrorName(graphql)).toBe('Envelope.NotDeletable');
    expect((await rest.get(`/envelopes/${sent}`)).body.payload.envelope.status).toBe('sent');

    const viaGraphql = (await rest.post('/envelopes', { name: 'Draft 2' })).body.payload.envelopeId;
    const deleted = await graphqlClient(app, team.apiKey)('mutation($id: ID!) { deleteEnvelope(id: $id) { id deleted } }', { id: viaGraphql });
    expect(deleted.data.deleteEnvelope).toEqual({ id: viaGraphql, deleted: true });
  });

  it('refuses to patch a sent envelope with Envelope.NotDraft, on both faces, and changes nothing', async () => {
    const team = await seedTeam(app);
    const rest = restClient(app, team.apiKey);
    const id = (await rest.post('/envelopes', { name: 'Original' })).body.payload.envelopeId;
    await forceEnvelopeStatus(app, id, 'sent');
    const refused = await rest.patch(`/envelopes/${id}`, { name: 'Changed' });
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatchObject({ name: 'Envelope.NotDraft', context: { envelopeId: id, status: 'sent' } });
    const graphql = await graphqlClient(app, team.apiKey)('mutation($id: ID!) { updateEnvelope(id: $id, input: { name: "Changed" }) { id } }', { id });
    expect(firstErrorName(graphql)).toBe('Envelope.NotDraft');
    expect((await rest.get(`/envelopes/${id}`)).body.payload.envelope.name).toBe('Original');
  });
});

describe('Idempotency-Key', () => {
  it('returns the first result for a repeat and creates nothing new; another body gives Request.IdempotencyKeyReused', async () => {
    const team = await seedTeam(app);
    const rest = restClient(app, team.apiKey);
    const headers = { 'idempotency-key': 'create-nda-1' };
    const first = await rest.post('/envelopes', { name: 'NDA' }, headers);
    const repeat = await rest.post('/envelopes', { name: 'NDA' }, headers);
    expect(repeat.body.payload.envelopeId).toBe(first.body.payload.envelopeId);
    const reused = await rest.post('/envelopes', { name: 'Other' }, headers);
    expect(reused.status).toBe(409);
    expect(reused.body.error.name).toBe('Request.IdempotencyKeyReused');
    expect((await rest.get('/envelopes')).body.payload.envelopes).toHaveLength(1);
  });

  it('is scoped to the team: another team may use the same key', async () => {
    const first = await seedTeam(app);
    const second = await seedTeam(app);
    const headers = { 'idempotency-key': 'shared-key' };
    const a = await restClient(app, first.apiKey).post('/envelopes', { name: 'NDA' }, headers);
    const b = await restClient(app, second.apiKey).post('/envelopes', { name: 'NDA' }, headers);
    expect(b.status).toBe(200);
    expect(b.body.payload.envelopeId).not.toBe(a.body.payload.envelopeId);
  });

  it('creates exactly one envelope when the same request races itself', async () => {
    const team = await seedTeam(app);
    const rest = restClient(app, team.apiKey);
    const headers = { 'idempotency-key': 'race-1' };
    const answers = await Promise.all(Array.from({ length: 8 }, () => rest.post('/envelopes', { name: 'Raced' }, headers)));
    const ids = new Set(answers.map((answer) => answer.body.payload?.envelopeId));
    expect(answers.every((answer) => answer.status === 200)).toBe(true);
    expect(ids.size).toBe(1);
    expect((await rest.get('/envelopes')).body.payload.envelopes).toHaveLength(1);
  });

  it('works through GraphQL with the same header', async () => {
    const team = await seedTeam(app);
    const call = () =>
      fetch(`${app.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-service-api-key': team.apiKey, 'idempotency-key': 'gql-1' },
        body: JSON.stringify({ query: 'mutation { createEnvelope(input: { name: "Once" }) { id } }' }),
      }).then((response) => response.json() as Promise<any>);
    const [first, second] = [await call(), await call()];
    expect(second.data.createEnvelope.id).toBe(first.data.createEnvelope.id);
  });
});

describe('request size and headers', () => {
  it('refuses a JSON body over 1 MB with Request.PayloadTooLarge (413) and creates nothing', async () => {
    const team = await seedTeam(app);
    const rest = restClient(app, team.apiKey);
    const response = await rest.post('/envelopes', { name: 'Huge', context: { blob: 'x'.repeat(1024 * 1024) } });
    expect(response.status).toBe(413);
    expect(response.body.error).toMatchObject({ name: 'Request.PayloadTooLarge', context: { limitBytes: 1024 * 1024 } });
    expect((await rest.get('/envelopes')).body.payload.envelopes).toEqual([]);
  });

  it('refuses a context over 16 KB with Request.Invalid at context', async () => {
    const team = await seedTeam(app);
    const response = await restClient(app, team.apiKey).post('/envelopes', { name: 'Big context', context: { blob: 'x'.repeat(17 * 1024) } });
    expect(response.status).toBe(400);
    expect(response.body.error.context.issues).toEqual([expect.objectContaining({ path: 'context' })]);
  });

  it('refuses a malformed Idempotency-Key with Request.Invalid, on both faces', async () => {
    const team = await seedTeam(app);
    const rest = await restClient(app, team.apiKey).post('/envelopes', { name: 'Keyed' }, { 'idempotency-key': 'has spaces in it' });
    expect(rest.status).toBe(400);
    expect(rest.body.error.context.issues).toEqual([expect.objectContaining({ path: 'Idempotency-Key' })]);
    const graphql = await fetch(`${app.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-service-api-key': team.apiKey, 'idempotency-key': 'x'.repeat(256) },
      body: JSON.stringify({ query: 'mutation { createEnvelope(input: { name: "Keyed" }) { id } }' }),
    }).then((response) => response.json() as Promise<any>);
    expect(graphql.errors[0].extensions.code).toBe('Request.Invalid');
    expect((await restClient(app, team.apiKey).get('/envelopes')).body.payload.envelopes).toEqual([]);
  });
});

describe('Idempotency-Key after the envelope has moved on', () => {
  it('answers a repeat of a completed creation with its first result even once the envelope is closed, on both faces', async () => {
    const { forceEnvelopeStatus, uploadDocument } = await import('./helpers/envelopes.ts');
    const { makePdf } = await import('./fixtures/pdfs.ts');
    const team = await seedTeam(app);
    const rest = restClient(app, team.apiKey);
    const envelopeId = (await rest.post('/envelopes', { name: 'Retried' })).body.payload.envelopeId;
    const pdf = await makePdf({ pages: 1 });
    const document = await uploadDocument(app, team.apiKey, envelopeId, { bytes: pdf }, {}, { 'idempotency-key': 'doc-1' });
    const recipientBody = { recipient: { type: 'signer', identifier: 'retry', roleName: 'Retry' } };
    const recipient = await rest.post(`/envelopes/${envelopeId}/recipients`, recipientBody, { 'idempotency-key': 'rcp-1' });
    const fieldsBody = {
      fields: [
        {
          type: 'simple_signature',
          recipientId: recipient.body.payload.recipient.id,
          identifier: 'sig',
          views: [{ documentId: document.body.payload.document.id, page: 0, location: { x: 10, y: 10 }, size: { width: 100, height: 30 } }],
        },
      ],
    };
    const fields = await rest.post(`/envelopes/${envelopeId}/fields`, fieldsBody, { 'idempotency-key': 'fld-1' });
    // Voided: no edit applies any more (a sent envelope would take them as corrections).
    await forceEnvelopeStatus(app, envelopeId, 'voided');

    const documentAgain = await uploadDocument(app, team.apiKey, envelopeId, { bytes: pdf }, {}, { 'idempotency-key': 'doc-1' });
    expect(documentAgain.body.payload.document.id).toBe(document.body.payload.document.id);
    const recipientAgain = await rest.post(`/envelopes/${envelopeId}/recipients`, recipientBody, { 'idempotency-key': 'rcp-1' });
    expect(recipientAgain.body.payload.recipient.id).toBe(recipient.body.payload.recipient.id);
    const fieldsAgain = await rest.post(`/envelopes/${envelopeId}/fields`, fieldsBody, { 'idempotency-key': 'fld-1' });
    expect(fieldsAgain.body.payload.fields.map((field: { id: string }) => field.id)).toEqual(fields.body.payload.fields.map((field: { id: string }) => field.id));
    const viaGraphql = await fetch(`${app.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-service-api-key': team.apiKey, 'idempotency-key': 'rcp-1' },
      body: JSON.stringify({
        query: 'mutation($e: ID!, $input: AddRecipientInput!) { addRecipient(envelopeId: $e, input: $input) { id } }',
        variables: { e: envelopeId, input: recipientBody.recipient },
      }),
    }).then((response) => response.json() as Promise<any>);
    // GraphQL sends the same recipient through a different face: the same request, the same answer.
    expect(viaGraphql.data.addRecipient.id).toBe(recipient.body.payload.recipient.id);

    // Without a key, or with a new one, the envelope's state decides: it is closed.
    expect((await rest.post(`/envelopes/${envelopeId}/recipients`, recipientBody)).body.error.name).toBe('Envelope.NotDraft');
    expect((await rest.post(`/envelopes/${envelopeId}/recipients`, recipientBody, { 'idempotency-key': 'rcp-2' })).body.error.name).toBe('Envelope.NotDraft');
    expect((await uploadDocument(app, team.apiKey, envelopeId, { bytes: pdf })).body.error.name).toBe('Envelope.NotDraft');
    expect((await rest.get(`/envelopes/${envelopeId}/recipients`)).body.payload.recipients).toHaveLength(1);
  });
});
