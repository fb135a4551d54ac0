import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makePdf } from './fixtures/pdfs.ts';
import { createDraftWithDocumentAndSigner, uploadDocument } from './helpers/envelopes.ts';
import { graphqlClient, restClient, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';

/*
 * No input reaches PostgreSQL as an out-of-range value. Every numeric input of both faces is sent
 * the values that overflow its column or JavaScript's integers: each answer is either a success
 * that stored the value exactly (read back equal) or a named 4xx refusal that changed nothing;
 * never a 5xx (the harness also fails the file on any Server.Internal).
 */
const hostileIntegers = [2 ** 31, -(2 ** 31) - 1, 2 ** 53, Number.MAX_VALUE, -Number.MAX_VALUE, 1.5, 5e-324];
const hostileQueryValues = ['2147483648', '-2147483649', '9007199254740993', '1e308', '-1', '1.5', '0x10', 'NaN', 'Infinity', ' 1'];

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ env: { RATE_LIMIT_PER_MINUTE: '0' } });
});
afterAll(async () => {
  await app.close();
});

/** A 4xx with a dotted name; with `about`, refused for that input (its name appears in the error's context), not for another reason. */
function expectNamedRefusal(answer: { status: number; body: any }, context: string, about?: string) {
  expect(answer.status, `${context}: ${JSON.stringify(answer.body).slice(0, 300)}`).toBeGreaterThanOrEqual(400);
  expect(answer.status, context).toBeLessThan(500);
  expect(answer.body.error?.name, context).toMatch(/^[A-Z][A-Za-z]+\.[A-Z][A-Za-z]+$/);
  if (about) expect(JSON.stringify(answer.body.error.context), context).toContain(about);
}

describe('numbers out of range, REST', () => {
  it('envelope settings, recipient order and field views: stored exactly or refused by name', async () => {
    const team = await seedTeam(app);
    const rest = restClient(app, team.apiKey);
    const draft = await createDraftWithDocumentAndSigner(app, team.apiKey);
    const settings = ['expirationPeriodDays', 'reminderInitialDelayDays', 'reminderRepeatIntervalDays', 'reminderBeforeExpirationDays'];
    for (const setting of settings) {
      for (const value of hostileIntegers) {
        const created = await rest.post('/envelopes', { name: 'Range', [setting]: value });
        expectNamedRefusal(created, `create ${setting}=${value}`, setting);
        const patched = await rest.patch(`/envelopes/${draft.envelopeId}`, { [setting]: value });
        expectNamedRefusal(patched, `patch ${setting}=${value}`, setting);
      }
    }
    for (const value of hostileIntegers) {
      const recipient = await rest.post(`/envelopes/${draft.envelopeId}/recipients`, {
        recipient: { type: 'signer', identifier: `r${Math.random().toString(36).slice(2, 8)}`, roleName: 'Range', order: value, agents: [{ info: { name: 'Ada' } }] },
      });
      expectNamedRefusal(recipient, `recipient order=${value}`, 'order');
      const reordered = await rest.patch(`/envelopes/${draft.envelopeId}/recipients/${draft.signerId}`, { recipient: { order: value } });
      expectNamedRefusal(reordered, `recipient patch order=${value}`, 'order');
    }
    const view = { documentId: draft.documentId, page: 0, location: { x: 10, y: 10 }, size: { width: 20, height: 20 } };
    const variants = [
      ...hostileIntegers.map((page) => ({ ...view, page })),
      ...[Number.MAX_VALUE, -Number.MAX_VALUE, 2 ** 53].flatMap((number) => [
        { ...view, location: { x: number, y: 10 } },
        { ...view, location: { x: 10, y: number } },
        { ...view, size: { width: number, height: 20 } },
        { ...view, size: { width: 20, height: number } },
      ]),
    ];
    for (const variant of variants) {
      const fields = await rest.post(`/envelopes/${draft.envelopeId}/fields`, { fields: [{ type: 'text', identifier: 'range', recipientId: draft.signerId, views: [variant] }] });
      expectNamedRefusal(fields, `field view ${JSON.stringify(variant)}`, 'views[0]');
    }
    // The smallest positive double is a valid position: it is stored and read back exactly.
    const tiny = await rest.post(`/envelopes/${draft.envelopeId}/fields`, {
      fields: [{ type: 'text', identifier: 'tiny', recipientId: draft.signerId, views: [{ ...view, location: { x: 5e-324, y: 1e-300 } }] }],
    });
    expect(tiny.status, JSON.stringify(tiny.body)).toBe(200);
    const stored = await rest.get(`/envelopes/${draft.envelopeId}/fields/${tiny.body.payload.fields[0].id}`);
    expect(stored.body.payload.field.views[0].location).toEqual({ x: 5e-324, y: 1e-300 });

    const after = await rest.get(`/envelopes/${draft.envelopeId}?includeRecipients=true&includeFields=true`);
    expect(after.body.payload.recipients).toHaveLength(1);
    expect(after.body.payload.fields).toHaveLength(1); // the tiny one
    expect((await rest.get('/envelopes?limit=100')).body.payload.envelopes).toHaveLength(1);
  });

  it('document order in a multipart upload and in a patch', async () => {
    const team = await seedTeam(app);
    const rest = restClient(app, team.apiKey);
    const draft = await createDraftWithDocumentAndSigner(app, team.apiKey);
    const pdf = await makePdf({ pages: 1 });
    for (const value of [...hostileQueryValues, '1e3']) {
      const uploaded = await uploadDocument(app, team.apiKey, draft.envelopeId, { bytes: pdf }, { order: value });
      if (uploaded.status === 200) {
        // Only a plain integer in range is accepted (surrounding blanks aside), and it is the order stored.
        expect(value, 'accepted order').toBe(' 1');
        expect(uploaded.body.payload.document.order).toBe(1);
      } else expectNamedRefusal(uploaded, `upload order=${value}`, 'order');
    }
    for (const value of hostileIntegers) {
      expectNamedRefusal(await rest.patch(`/envelopes/${draft.envelopeId}/documents/${draft.documentId}`, { order: value }), `document order=${value}`, 'order');
    }
  });

  it('paging parameters of every listing', async () => {
    const team = await seedTeam(app);
    const rest = restClient(app, team.apiKey);
    const draft = await createDraftWithDocumentAndSigner(app, team.apiKey);
    const listings = ['/envelopes', '/contacts', '/contact-groups', `/envelopes/${draft.envelopeId}/audit`];
    for (const listing of listings) {
      for (const value of hostileQueryValues) {
        expectNamedRefusal(await rest.get(`${listing}?limit=${encodeURIComponent(value)}`), `${listing}?limit=${value}`, 'limit');
      }
    }
    for (const value of hostileQueryValues) {
      expectNamedRefusal(await rest.get(`/envelopes/${draft.envelopeId}/audit?afterSeq=${encodeURIComponent(value)}`), `audit afterSeq=${value}`, 'afterSeq');
    }
  });
});

describe('numbers out of range, GraphQL', () => {
  it('Int arguments past 32 bits are refused by the schema; Floats and page sizes by name', async () => {
    const team = await seedTeam(app);
    const query = graphqlClient(app, team.apiKey);
    const draft = await createDraftWithDocumentAndSigner(app, team.apiKey);
    for (const first of [2 ** 31, -(2 ** 31) - 1, 2 ** 53]) {
      const page = await query('query($first: Int) { envelopes(first: $first) { nodes { id } } }', { first });
      expect(page.errors?.[0]?.message, `first=${first}`).toMatch(/Int cannot represent/);
      expect(page.status).toBeLessThan(500);
    }
    for (const first of [0, -1, 1_000_000]) {
      const page = await query('query($first: Int) { envelopes(first: $first) { nodes { id } } }', { first });
      expect(page.errors?.[0]?.extensions?.code, `first=${first}`).toBe('Request.Invalid');
    }
    for (const [setting, value] of [
      ['expirationPeriodDays', 91],
      ['reminderRepeatIntervalDays', 2 ** 31 - 1],
    ] as const) {
      const created = await query('mutation($input: CreateEnvelopeInput!) { createEnvelope(input: $input) { id } }', { input: { name: 'Range', [setting]: value } });
      expect(created.errors?.[0]?.extensions?.code, `${setting}=${value}`).toBe('Request.Invalid');
    }
    const createFields = `mutation($envelopeId: ID!, $fields: [FieldInput!]!) { createFields(envelopeId: $envelopeId, fields: $fields) { id } }`;
    for (const view of [
      { documentId: draft.documentId, page: 2 ** 31 - 1, location: { x: 1, y: 1 }, size: { width: 1, height: 1 } },
      { documentId: draft.documentId, page: 0, location: { x: Number.MAX_VALUE, y: 1 }, size: { width: 1, height: 1 } },
      { documentId: draft.documentId, page: 0, location: { x: 1, y: 1 }, size: { width: Number.MAX_VALUE, height: 1 } },
    ]) {
      const answer = await query(createFields, { envelopeId: draft.envelopeId, fields: [{ type: 'text', identifier: 'range', recipientId: draft.signerId, views: [view] }] });
      expect(answer.errors?.[0]?.extensions?.code, JSON.stringify(view)).toMatch(/^(Request|Field)\.Invalid/);
    }
    const envelope = await query('query($id: ID!) { envelope(id: $id) { fields { id } recipients { id } } }', { id: draft.envelopeId });
    expect(envelope.data.envelope.fields).toEqual([]);
  });
});
