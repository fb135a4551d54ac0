import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { restRoutes } from '../src/rest/routes/index.ts';
import { createDraftWithDocumentAndSigner } from './helpers/envelopes.ts';
import { graphqlClient, restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';

let app: TestApp;
let team: SeededTeam;
let ids: Record<string, string>;
let workflowEnvelopeId: string;

beforeAll(async () => {
  // Every write route gets every hostile body from one key: far past the per-key budget, which is
  // not under test here (rate-limit.test.ts tests it).
  app = await startTestApp({ env: { RATE_LIMIT_PER_MINUTE: '0' } });
  team = await seedTeam(app);
  const draft = await createDraftWithDocumentAndSigner(app, team.apiKey);
  const field = await restClient(app, team.apiKey).post(`/envelopes/${draft.envelopeId}/fields`, {
    fields: [
      {
        type: 'text',
        recipientId: draft.signerId,
        identifier: 'probe',
        views: [{ documentId: draft.documentId, page: 0, location: { x: 1, y: 1 }, size: { width: 50, height: 20 } }],
      },
    ],
  });
  ids = { envelopeId: draft.envelopeId, documentId: draft.documentId, recipientId: draft.signerId, fieldId: field.body.payload.fields[0].id };
  // Sending takes no body and may succeed: the workflow routes get an envelope of their own, so
  // the draft above stays a draft for the upload tests.
  workflowEnvelopeId = (await createDraftWithDocumentAndSigner(app, team.apiKey)).envelopeId;
});
afterAll(async () => {
  await app.close();
});

/** Bodies a careless or hostile client might send: wrong types at every level. */
const hostileBodies: unknown[] = [
  null,
  [],
  'text',
  42,
  { name: null, expirationPeriodDays: '7', context: 'x' },
  { name: { $gt: '' } },
  { recipient: null },
  { recipient: [] },
  { recipient: { type: 'signer', identifier: 'x', roleName: 'x', agents: [null, 1, { info: null }, { info: { name: 5 } }] } },
  { recipient: { type: 'in_person_signer', identifier: 'x', roleName: 'x', hostedById: { id: 1 } } },
  { fields: null },
  { fields: [null, 1, 'x', []] },
  { fields: [{ type: 'radio', config: { options: 'abc' }, views: [null, { location: null, size: [] }] }] },
  { fields: [{ type: 'text', recipientId: [], identifier: {}, views: [{ documentId: 5, page: '0', location: { x: 'NaN' }, size: { width: 1e309 } }] }] },
  { field: null },
  { field: { views: 'all', value: [], config: 7 } },
  { deeply: JSON.parse('{"a":'.repeat(200) + '1' + '}'.repeat(200)) },
  { name: 'x'.repeat(100_000) },
];

function pathFor(template: string): string {
  if (template.endsWith('/send') || template.endsWith('/void')) return template.replace(':envelopeId', workflowEnvelopeId);
  return template.replace(/:(\w+)/g, (_, name: string) => ids[name] ?? ids.envelopeId);
}

describe('bad input never crashes the service nor returns a 500', () => {
  it.each(restRoutes.filter((route) => route.method === 'POST' || route.method === 'PATCH' || route.method === 'PUT').map((route) => [`${route.method} ${route.path}`, route] as const))(
    'REST %s',
    async (_name, route) => {
      const rest = restClient(app, team.apiKey);
      for (const body of hostileBodies) {
        const answer = await rest.call(route.method, pathFor(route.path), body);
        expect(answer.status, JSON.stringify(body).slice(0, 80)).toBeLessThan(500);
        expect(answer.body.version).toBe('1');
      }
      // Raw bytes that are not JSON at all, with a JSON content type.
      const raw = await fetch(`${app.url}/api/v1/key${pathFor(route.path)}`, {
        method: route.method,
        headers: { 'x-service-api-key': team.apiKey, 'content-type': 'application/json' },
        body: Buffer.from([0xff, 0xfe, 0x00, 0x7b]),
      });
      expect(raw.status).toBeLessThan(500);
    },
  );

  it('REST uploads: malformed multipart bodies are Request.Invalid', async () => {
    const upload = (contentType: string, body: string) =>
      fetch(`${app.url}/api/v1/key/envelopes/${ids.envelopeId}/documents`, {
        method: 'POST',
        headers: { 'x-service-api-key': team.apiKey, 'content-type': contentType },
        body,
      }).then(async (response) => ({ status: response.status, body: (await response.json()) as any }));
    for (const [contentType, body] of [
      ['multipart/form-data', 'garbage'],
      ['multipart/form-data; boundary=xyz', 'garbage'],
      ['multipart/form-data; boundary=xyz', '--xyz\r\nContent-Disposition: form-data; name="document"; filename="a.pdf"\r\n\r\n%PDF-1.7 cut'],
    ]) {
      const answer = await upload(contentType, body);
      expect(answer.status, contentType).toBe(400);
      expect(answer.body.error.name).toBe('Request.Invalid');
    }
  });

  it.each([
    ['a few bytes', '%PDF-1.7 and then nothing'],
    ['3 MB', `%PDF-1.7 ${'x'.repeat(3 * 1024 * 1024)}`],
  ])('GraphQL uploads: a body cut off after %s of the file is Document.UploadIncomplete, and the service keeps serving', async (_size, partialFile) => {
    const boundary = 'cut';
    const body = [
      `--${boundary}\r\nContent-Disposition: form-data; name="operations"\r\n\r\n`,
      JSON.stringify({
        query: 'mutation($e: ID!, $input: AddDocumentInput!) { addDocument(envelopeId: $e, input: $input) { id } }',
        variables: { e: ids.envelopeId, input: { file: null } },
      }),
      `\r\n--${boundary}\r\nContent-Disposition: form-data; name="map"\r\n\r\n{"0":["variables.input.file"]}`,
      `\r\n--${boundary}\r\nContent-Disposition: form-data; name="0"; filename="a.pdf"\r\nContent-Type: application/pdf\r\n\r\n${partialFile}`,
    ].join('');
    const response = await fetch(`${app.url}/graphql`, {
      method: 'POST',
      headers: { 'x-service-api-key': team.apiKey, 'content-type': `multipart/form-data; boundary=${boundary}` },
      body,
    });
    expect(response.status).toBeLessThan(500);
    const answer = (await response.json()) as any;
    expect(answer.errors[0].extensions.code).toBe('Document.UploadIncomplete');
    expect((await fetch(`${app.url}/healthz`)).status).toBe(200);
  });

  it('refuses JSON nested deeper than 32 levels with Request.Invalid on REST and a client error on GraphQL', async () => {
    const nested = (depth: number) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
    const post = (body: string) =>
      fetch(`${app.url}/api/v1/key/envelopes`, {
        method: 'POST',
        headers: { 'x-service-api-key': team.apiKey, 'content-type': 'application/json' },
        body,
      }).then(async (response) => ({ status: response.status, body: (await response.json()) as any }));
    expect((await post(`{"name":"Deep","context":${nested(32)}}`)).status).toBe(200);
    const tooDeep = await post(`{"name":"Deep","context":${nested(33)}}`);
    expect(tooDeep.status).toBe(400);
    expect(tooDeep.body.error.context.issues).toEqual([{ path: 'context', message: 'must nest at most 32 levels deep' }]);
    const absurd = await post(`{"name":"Deep","context":${nested(100_000)}}`);
    expect(absurd.status).toBe(400);
    expect(absurd.body.error.name).toBe('Request.Invalid');
    // GraphQL: the same value as a variable, sent as raw JSON text (it is too deep to build here).
    const graphql = await fetch(`${app.url}/graphql`, {
      method: 'POST',
      headers: { 'x-service-api-key': team.apiKey, 'content-type': 'application/json' },
      body: `{"query":"mutation($c: JSONObject) { createEnvelope(input: { name: \\"Deep\\", context: $c }) { id } }","variables":{"c":${nested(5_000)}}}`,
    });
    expect(graphql.status).toBeLessThan(500);
    const answer = (await graphql.json()) as any;
    expect(answer.errors[0].message).toContain('32 levels');
  });

  it('refuses text PostgreSQL cannot store (NUL, broken Unicode) with Request.Invalid instead of failing at the database', async () => {
    const rest = restClient(app, team.apiKey);
    const cases: [string, unknown, string][] = [
      ['/envelopes', { name: 'ab\u0000c' }, 'name'],
      ['/envelopes', { name: 'ab\ud800' }, 'name'],
      ['/envelopes', { name: 'abc', context: { note: 'x\u0000y' } }, 'context.note'],
      ['/envelopes', { name: 'abc', context: { ['k\u0000']: 1 } }, 'context'],
      [`/envelopes/${ids.envelopeId}/recipients`, { recipient: { type: 'viewer', identifier: 'nul', roleName: 'R\u0000' } }, 'recipient.roleName'],
      [
        `/envelopes/${ids.envelopeId}/recipients`,
        { recipient: { type: 'viewer', identifier: 'nul', roleName: 'R', agents: [{ info: { name: 'N\u0000' } }] } },
        'recipient.agents[0].info.name',
      ],
      ['/contacts', { name: 'N\u0000' }, 'name'],
    ];
    for (const [path, body, issuePath] of cases) {
      const answer = await rest.post(path, body);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(answer.body.error.context.issues).toEqual([expect.objectContaining({ path: issuePath })]);
    }
    const search = await rest.get(`/contacts?search=${encodeURIComponent('a\u0000')}`);
    expect(search.status).toBe(400);
    const graphql = await graphqlClient(app, team.apiKey)('mutation { createEnvelope(input: { name: "ab\\u0000c" }) { id } }');
    expect(graphql.errors?.[0]?.extensions?.code).toBe('Request.Invalid');
  });

  it('GraphQL: wrong variable types and malformed documents are client errors', async () => {
    const graphql = graphqlClient(app, team.apiKey);
    const answers = await Promise.all([
      graphql('mutation($input: CreateEnvelopeInput!) { createEnvelope(input: $input) { id } }', { input: { name: 5 } }),
      graphql('mutation($input: CreateEnvelopeInput!) { createEnvelope(input: $input) { id } }', { input: { name: 'ok', context: [1] } }),
      graphql('{ envelope(id: "x") { id nope } }'),
      graphql('mutation { createFields(envelopeId: "x", fields: []) { id } }'),
      graphql('{ envelopes(first: 100000) { nodes { id } } }'),
      graphql('{'),
    ]);
    for (const answer of answers) {
      expect(answer.status).toBeLessThan(500);
      expect(answer.errors?.length).toBeGreaterThan(0);
      expect(JSON.stringify(answer.errors)).not.toContain('Server.Internal');
    }
  });

  it('is still healthy and unchanged afterwards', async () => {
    expect((await fetch(`${app.url}/healthz`)).status).toBe(200);
    const envelope = await restClient(app, team.apiKey).get(`/envelopes/${ids.envelopeId}?includeFields=true`);
    expect(envelope.body.payload.envelope.name).toBe('Sales agreement');
    expect(envelope.body.payload.fields.map((field: { identifier: string }) => field.identifier)).toEqual(['probe']);
  });
});

describe('GraphQL operation limits', () => {
  it('refuses more than 20 aliases and oversized documents, but serves GraphiQL’s introspection', async () => {
    const graphql = graphqlClient(app, team.apiKey);
    const aliased = (count: number) => `{ ${Array.from({ length: count }, (_, index) => `a${index}: viewer { id }`).join(' ')} }`;
    expect((await graphql(aliased(20))).errors).toBeUndefined();
    const tooMany = await graphql(aliased(21));
    expect(tooMany.status).toBeLessThan(500);
    expect(tooMany.errors?.[0]?.message).toMatch(/aliases/i);
    const huge = await graphql(`{ viewer { ${Array(6000).fill('id').join(' ')} } }`);
    expect(huge.errors?.[0]?.message).toMatch(/token/i);
    const { getIntrospectionQuery } = await import('graphql');
    const introspection = await graphqlClient(app, undefined)(getIntrospectionQuery());
    expect(introspection.errors).toBeUndefined();
    expect(introspection.data.__schema.queryType.name).toBe('Query');
  });
});
