import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makePdf } from './fixtures/pdfs.ts';
import { createDraftWithDocumentAndSigner, uploadDocument, uploadDocumentThroughGraphql } from './helpers/envelopes.ts';
import { firstErrorName, graphqlClient, restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';

let app: TestApp;
let team: SeededTeam;
let pdf: Uint8Array;

beforeAll(async () => {
  app = await startTestApp();
  team = await seedTeam(app);
  pdf = await makePdf({ pages: 1 });
});
afterAll(async () => {
  await app.close();
});

/**
 * Caller JSON written as text, since an object literal cannot hold an own `__proto__` key. The
 * comparisons go through `canonical` for the same reason: JSON.parse keeps the key as an own
 * property, but `toEqual` would not look at it. Key order is not compared: JSON objects are
 * unordered, and PostgreSQL's jsonb keeps keys in an order of its own.
 */
const contextText = '{"__proto__":{"admin":true},"constructor":{"prototype":1},"nested":{"__proto__":[1,2]},"plain":"é😀"}';
const context = JSON.parse(contextText) as Record<string, unknown>;

/** Every own key and value, keys sorted, as text: `__proto__` and `constructor` are ordinary keys here. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  return `{${Object.keys(value)
    .sort()
    .map((key) => `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])}`)
    .join(',')}}`;
}

async function postRaw(path: string, text: string): Promise<{ status: number; body: any; text: string }> {
  const response = await fetch(`${app.url}/api/v1/key${path}`, {
    method: 'POST',
    headers: { 'x-service-api-key': team.apiKey, 'content-type': 'application/json' },
    body: text,
  });
  const answer = await response.text();
  return { status: response.status, body: JSON.parse(answer), text: answer };
}

/** A multipart upload written byte by byte, the way browsers and curl send a UTF-8 file name. */
async function uploadWithRawFilename(envelopeId: string, filename: string): Promise<{ status: number; body: any }> {
  const boundary = '----exact-data-boundary';
  const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="document"; filename="${filename}"\r\nContent-Type: application/pdf\r\n\r\n`, 'utf8');
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`, 'utf8');
  const response = await fetch(`${app.url}/api/v1/key/envelopes/${envelopeId}/documents`, {
    method: 'POST',
    headers: { 'x-service-api-key': team.apiKey, 'content-type': `multipart/form-data; boundary=${boundary}` },
    body: Buffer.concat([head, Buffer.from(pdf), tail]),
  });
  return { status: response.status, body: await response.json() };
}

async function uploadThroughGraphql(envelopeId: string, filename: string, input: Record<string, unknown> = {}) {
  return (await uploadDocumentThroughGraphql(app, team.apiKey, envelopeId, { bytes: pdf, filename }, input)).body as { data?: any; errors?: any[] };
}

async function newDraft(): Promise<string> {
  return (await restClient(app, team.apiKey).post('/envelopes', { name: 'Exact data' })).body.payload.envelopeId;
}

describe('caller JSON round-trips exactly, __proto__ included', () => {
  it('REST: an envelope context keeps every key through create, read and update', async () => {
    const created = await postRaw('/envelopes', `{"name":"Proto","context":${contextText}}`);
    expect(created.status).toBe(200);
    const envelopeId = created.body.payload.envelopeId;
    const read = await restClient(app, team.apiKey).get(`/envelopes/${envelopeId}`);
    expect(Object.keys(read.body.payload.envelope.context).sort()).toEqual(['__proto__', 'constructor', 'nested', 'plain']);
    expect(canonical(read.body.payload.envelope.context)).toBe(canonical(context));

    const response = await fetch(`${app.url}/api/v1/key/envelopes/${envelopeId}`, {
      method: 'PATCH',
      headers: { 'x-service-api-key': team.apiKey, 'content-type': 'application/json' },
      body: '{"context":{"__proto__":"only"}}',
    });
    const patched = JSON.parse(await response.text());
    expect(response.status).toBe(200);
    expect(canonical(patched.payload.envelope.context)).toBe('{"__proto__":"only"}');
  });

  it('REST: a document context sent as a multipart text part keeps __proto__', async () => {
    const envelopeId = await newDraft();
    const uploaded = await uploadDocument(app, team.apiKey, envelopeId, { bytes: pdf }, { context: contextText });
    expect(uploaded.status).toBe(200);
    expect(canonical(uploaded.body.payload.document.context)).toBe(canonical(context));
  });

  it('GraphQL: a context in variables and in a literal keeps __proto__, and reads back', async () => {
    const gql = graphqlClient(app, team.apiKey);
    const fromVariables = await gql('mutation($input: CreateEnvelopeInput!) { createEnvelope(input: $input) { id context } }', {
      input: { name: 'Proto GraphQL', context },
    });
    expect(fromVariables.errors).toBeUndefined();
    expect(canonical(fromVariables.data.createEnvelope.context)).toBe(canonical(context));
    const read = await gql('query($id: ID!) { envelope(id: $id) { context } }', { id: fromVariables.data.createEnvelope.id });
    expect(canonical(read.data.envelope.context)).toBe(canonical(context));

    // A literal cannot carry the key through the compiled executor: refused by name, not dropped.
    const fromLiteral = await gql('mutation { createEnvelope(input: { name: "Literal", context: { __proto__: { admin: true }, plain: "x" } }) { context } }');
    expect(firstErrorName(fromLiteral)).toBe('Request.Invalid');
    expect(fromLiteral.errors?.[0]?.message).toMatch(/__proto__.*variable/);
    const plainLiteral = await gql('mutation { createEnvelope(input: { name: "Literal", context: { constructor: { admin: true }, plain: "x" } }) { context } }');
    expect(canonical(plainLiteral.data.createEnvelope.context)).toBe('{"constructor":{"admin":true},"plain":"x"}');
  });

  it('refuses __proto__ by name where the shape is fixed (a field config), never dropping it', async () => {
    const draft = await createDraftWithDocumentAndSigner(app, team.apiKey);
    const answer = await postRaw(
      `/envelopes/${draft.envelopeId}/fields`,
      JSON.stringify({
        fields: [
          {
            type: 'text',
            recipientId: draft.signerId,
            identifier: 'proto',
            config: { placeholder: 'x' },
            views: [{ documentId: draft.documentId, page: 0, location: { x: 1, y: 1 }, size: { width: 50, height: 20 } }],
          },
        ],
      }).replace('"config":{', '"config":{"__proto__":{"x":1},'),
    );
    expect(answer.status).toBe(400);
    expect(answer.body.error.name).toBe('Request.Invalid');
    expect(JSON.stringify(answer.body.error.context.issues)).toContain('__proto__');
  });
});

describe('upload file names are UTF-8 on both faces', () => {
  const names = ['café.pdf', 'Sözleşme-İmza.pdf', '契約書 😀.pdf', '𝔘𝔫𝔦𝔠𝔬𝔡𝔢.pdf'];

  it.each(names)('REST keeps %s as the document name', async (filename) => {
    const envelopeId = await newDraft();
    const raw = await uploadWithRawFilename(envelopeId, filename);
    expect(raw.status).toBe(200);
    expect(raw.body.payload.document.name).toBe(filename);
    const viaFormData = await uploadDocument(app, team.apiKey, envelopeId, { bytes: pdf, filename });
    expect(viaFormData.body.payload.document.name).toBe(filename);
  });

  it.each(names)('GraphQL keeps %s as the document name', async (filename) => {
    const envelopeId = await newDraft();
    const answer = await uploadThroughGraphql(envelopeId, filename);
    expect(answer.errors).toBeUndefined();
    expect(answer.data.addDocument.name).toBe(filename);
  });

  it('refuses a file name with a bidirectional override when no name is given, and accepts it with a name', async () => {
    const envelopeId = await newDraft();
    const spoof = 'invoice\u202efdp.exe';
    const refused = await uploadDocument(app, team.apiKey, envelopeId, { bytes: pdf, filename: spoof });
    expect(refused.status).toBe(400);
    expect(refused.body.error.name).toBe('Request.Invalid');
    expect(refused.body.error.context.issues[0].path).toBe('name');
    expect(refused.body.error.context.issues[0].message).toMatch(/bidirectional.*U\+202E/);
    const graphqlRefused = await uploadThroughGraphql(envelopeId, spoof);
    expect(graphqlRefused.errors?.[0]?.extensions?.code).toBe('Request.Invalid');
    const named = await uploadDocument(app, team.apiKey, envelopeId, { bytes: pdf, filename: spoof }, { name: 'Invoice' });
    expect(named.status).toBe(200);
    const documents = await restClient(app, team.apiKey).get(`/envelopes/${envelopeId}/documents`);
    expect(documents.body.payload.documents.map((document: { name: string }) => document.name)).toEqual(['Invoice']);
  });
});

describe('names a signer reads refuse blank, invisible-only and bidirectional text by name', () => {
  const unreadable: [string, string, RegExp][] = [
    ['whitespace only', '   \u2003 ', /blank/],
    ['non-breaking and ideographic spaces', '\u00a0\u3000', /blank/],
    ['zero-width only', '\u200b\u200c\u200d', /visible.*U\+200B/],
    ['word joiner and BOM', '\u2060\ufeff', /visible.*U\+2060/],
    ['right-to-left override', 'Contract\u202eabc', /bidirectional.*U\+202E/],
    ['left-to-right isolate', '\u2066Contract\u2069', /bidirectional.*U\+2066/],
    ['right-to-left mark', 'Contract\u200f', /bidirectional.*U\+200F/],
    ['Arabic letter mark', 'Contract\u061c', /bidirectional.*U\+061C/],
  ];

  it.each(unreadable)('REST and GraphQL refuse a %s name everywhere, and nothing changes', async (_label, text, message) => {
    const rest = restClient(app, team.apiKey);
    const gql = graphqlClient(app, team.apiKey);
    const draft = await createDraftWithDocumentAndSigner(app, team.apiKey);
    const view = { documentId: draft.documentId, page: 0, location: { x: 1, y: 1 }, size: { width: 50, height: 20 } };
    const expectRefused = (answer: { status: number; body: any }, path: string) => {
      expect(answer.status, path).toBe(400);
      expect(answer.body.error.name).toBe('Request.Invalid');
      const issue = answer.body.error.context.issues.find((candidate: { path: string }) => candidate.path === path);
      expect(issue?.message, JSON.stringify(answer.body.error.context.issues)).toMatch(message);
    };
    // Padded to pass the length rules, so the readability rule is what refuses it.
    const padded = text.length >= 2 ? text : `${text}${text}`;
    expectRefused(await rest.post('/envelopes', { name: padded }), 'name');
    expectRefused(await rest.patch(`/envelopes/${draft.envelopeId}`, { name: padded }), 'name');
    expectRefused(await rest.patch(`/envelopes/${draft.envelopeId}/documents/${draft.documentId}`, { name: text }), 'name');
    const upload = await uploadDocument(app, team.apiKey, draft.envelopeId, { bytes: pdf }, { name: text });
    expect(upload.status).toBe(400);
    expectRefused(await rest.post(`/envelopes/${draft.envelopeId}/recipients`, { recipient: { type: 'signer', identifier: 'other', roleName: text, agents: [] } }), 'recipient.roleName');
    expectRefused(await rest.patch(`/envelopes/${draft.envelopeId}/recipients/${draft.signerId}`, { recipient: { roleName: text } }), 'recipient.roleName');
    expectRefused(
      await rest.post(`/envelopes/${draft.envelopeId}/recipients`, {
        recipient: { type: 'signer', identifier: 'other', roleName: 'Other', agents: [{ info: { name: text, email: 'x@example.com' } }] },
      }),
      'recipient.agents[0].info.name',
    );
    for (const key of ['label', 'tooltip']) {
      const answer = await rest.post(`/envelopes/${draft.envelopeId}/fields`, {
        fields: [{ type: 'text', recipientId: draft.signerId, identifier: 'f', [key]: text, views: [view] }],
      });
      expectRefused(answer, `fields[0].${key}`);
    }

    const graphqlAnswers = [
      await gql('mutation($input: CreateEnvelopeInput!) { createEnvelope(input: $input) { id } }', { input: { name: padded } }),
      await gql('mutation($id: ID!, $input: UpdateEnvelopeInput!) { updateEnvelope(id: $id, input: $input) { id } }', { id: draft.envelopeId, input: { name: padded } }),
      await gql('mutation($e: ID!, $d: ID!, $input: UpdateDocumentInput!) { updateDocument(envelopeId: $e, documentId: $d, input: $input) { id } }', {
        e: draft.envelopeId,
        d: draft.documentId,
        input: { name: text },
      }),
      await gql('mutation($e: ID!, $input: AddRecipientInput!) { addRecipient(envelopeId: $e, input: $input) { id } }', {
        e: draft.envelopeId,
        input: { type: 'signer', identifier: 'other', roleName: text },
      }),
      await gql('mutation($e: ID!, $fields: [FieldInput!]!) { createFields(envelopeId: $e, fields: $fields) { id } }', {
        e: draft.envelopeId,
        fields: [{ type: 'text', recipientId: draft.signerId, identifier: 'g', label: text, views: [view] }],
      }),
    ];
    for (const answer of graphqlAnswers) {
      expect(firstErrorName(answer), JSON.stringify(answer)).toBe('Request.Invalid');
      expect(JSON.stringify(answer.errors?.[0]?.extensions?.context?.issues)).toMatch(message);
    }

    const after = await rest.get(`/envelopes/${draft.envelopeId}?includeDocuments=true&includeRecipients=true&includeFields=true`);
    expect(after.body.payload.envelope.name).toBe('Sales agreement');
    expect(after.body.payload.documents).toHaveLength(1);
    expect(after.body.payload.recipients.map((recipient: { roleName: string }) => recipient.roleName)).toEqual(['Buyer']);
    expect(after.body.payload.fields).toHaveLength(0);
  });

  it('still accepts names in right-to-left scripts, emoji and joiners inside visible text', async () => {
    const rest = restClient(app, team.apiKey);
    for (const name of ['عقد البيع', 'חוזה מכר', 'Family 👨‍👩‍👧 deal', ' Padded name ']) {
      const created = await rest.post('/envelopes', { name });
      expect(created.status, name).toBe(200);
      const read = await rest.get(`/envelopes/${created.body.payload.envelopeId}`);
      expect(read.body.payload.envelope.name).toBe(name);
    }
  });
});
