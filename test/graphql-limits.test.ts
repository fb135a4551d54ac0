import { type GraphQLObjectType, getIntrospectionQuery, getNamedType, isObjectType } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GRAPHQL_LIMITS, operationCosts } from '../src/graphql/limits.ts';
import { schema } from '../src/graphql/schema.ts';
import { firstErrorName, type GraphQLResult, graphqlClient, restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';

/*
 * The per-operation limits (src/graphql/limits.ts, docs/limits.md): each is tested at its value
 * (answered) and one past it (refused with its name, HTTP 400, before any resolver runs).
 */

let app: TestApp;
let team: SeededTeam;
let graphql: ReturnType<typeof graphqlClient>;

beforeAll(async () => {
  app = await startTestApp();
  team = await seedTeam(app);
  graphql = graphqlClient(app, team.apiKey);
});

afterAll(async () => app?.close());

function expectRefused(result: GraphQLResult, name: string, limit: number) {
  expect(result.status).toBe(400);
  expect(result.data).toBeUndefined();
  expect(firstErrorName(result)).toBe(name);
  expect(result.errors?.[0]?.extensions?.context?.limit).toBe(limit);
  expect(result.errors?.[0]?.extensions?.context?.requestId).toEqual(expect.any(String));
}

function expectAnswered(result: GraphQLResult) {
  expect(result.errors).toBeUndefined();
  expect(result.status).toBe(200);
}

/** Every field of a type, nested objects included (the schema has no cycles), skipping fields that need arguments. */
function everything(type: GraphQLObjectType): string {
  return Object.values(type.getFields())
    .filter((field) => field.args.every((argument) => argument.type.toString().endsWith('!') === false))
    .map((field) => {
      const named = getNamedType(field.type);
      return isObjectType(named) ? `${field.name} { ${everything(named)} }` : field.name;
    })
    .join(' ');
}

describe('GraphQL operation limits', () => {
  it('answers a full page of 100 envelopes with everything nested selected, and GraphiQL’s introspection', async () => {
    const envelope = schema.getType('Envelope') as GraphQLObjectType;
    const fullPage = `{ envelopes(first: 100) { edges { cursor node { ${everything(envelope)} } } pageInfo { hasNextPage endCursor } } }`;
    expect(fullPage).toContain('views { documentId page location { x y } size { width height } }');
    const [cost] = operationCosts(schema, fullPage);
    // Room for the schema to grow before a real query comes near the limit: about 513 000 today
    // (310 000 before attachments, approvals, corrections and public links added their fields).
    expect(cost).toBeLessThan(GRAPHQL_LIMITS.cost * 0.6);
    await restClient(app, team.apiKey).post('/envelopes', { name: 'Full page' });
    const page = await graphql(fullPage);
    expectAnswered(page);
    expect(page.data.envelopes.edges[0].node.name).toBe('Full page');

    const introspection = await graphqlClient(app, undefined)(getIntrospectionQuery({ descriptions: true, inputValueDeprecation: true, specifiedByUrl: true }));
    expectAnswered(introspection);
    expect(introspection.data.__schema.queryType.name).toBe('Query');
  });

  it(`depth: ${GRAPHQL_LIMITS.depth} levels are answered, one more is GraphQL.DepthLimit`, async () => {
    // The schema's own types nest 7 deep at most; `__type { ofType … }` is the way to go deeper.
    const nested = (depth: number) => `{ __type(name: "Envelope") { ${'ofType { '.repeat(depth - 2)}name${' }'.repeat(depth - 2)} } }`;
    expectAnswered(await graphql(nested(GRAPHQL_LIMITS.depth)));
    const refused = await graphql(nested(GRAPHQL_LIMITS.depth + 1));
    expectRefused(refused, 'GraphQL.DepthLimit', GRAPHQL_LIMITS.depth);
    expect(refused.errors?.[0]?.extensions?.context?.found).toBe(GRAPHQL_LIMITS.depth + 1);
    // Fragments add no level of their own.
    const viaFragment = `{ ...Q } fragment Q on Query { __type(name: "Envelope") { ${'ofType { '.repeat(GRAPHQL_LIMITS.depth - 2)}name${' }'.repeat(GRAPHQL_LIMITS.depth - 2)} } }`;
    expectAnswered(await graphql(viaFragment));
  });

  it(`cost: ${GRAPHQL_LIMITS.cost} is answered, one more is GraphQL.CostLimit; lists count by their page size`, async () => {
    const pagesOfDocuments = (first: number) => `envelopes(first: ${first}) { nodes { documents { pages { index width height rotation } } } }`;
    // A page multiplies what is below it: `first`, 20 when absent, 100 from a variable.
    const [ten, absent, variable] = [
      operationCosts(schema, `{ ${pagesOfDocuments(10)} }`)[0],
      operationCosts(schema, `{ envelopes { nodes { documents { pages { index width height rotation } } } } }`)[0],
      operationCosts(schema, `query($n: Int) { envelopes(first: $n) { nodes { documents { pages { index width height rotation } } } } }`)[0],
    ];
    expect(absent - 1).toBe(2 * (ten - 1));
    expect(variable - 1).toBe(10 * (ten - 1));
    const documentOf = (cost: number) => {
      // Greedy: at most 20 top-level reads (the alias limit), then 1-cost `__typename`s.
      const blocks: string[] = [];
      let total = 0;
      while (blocks.length < GRAPHQL_LIMITS.aliases) {
        const perEnvelope = operationCosts(schema, `{ ${pagesOfDocuments(1)} }`)[0] - 1;
        const first = Math.min(100, Math.floor((cost - total - 1) / perEnvelope));
        if (first < 1) break;
        blocks.push(`${blocks.length === 0 ? '' : `b${blocks.length}: `}${pagesOfDocuments(first)}`);
        total += 1 + first * perEnvelope;
      }
      const source = `{ ${blocks.join(' ')} ${'__typename '.repeat(cost - total)}}`;
      expect(operationCosts(schema, source)[0]).toBe(cost);
      return source;
    };
    expectAnswered(await graphql(documentOf(GRAPHQL_LIMITS.cost)));
    const refused = await graphql(documentOf(GRAPHQL_LIMITS.cost + 1));
    expectRefused(refused, 'GraphQL.CostLimit', GRAPHQL_LIMITS.cost);
    expect(refused.errors?.[0]?.extensions?.context?.found).toBe(GRAPHQL_LIMITS.cost + 1);
  });

  it(`aliases: ${GRAPHQL_LIMITS.aliases} are answered, one more is GraphQL.AliasLimit, __typename aliases included`, async () => {
    const aliased = (count: number, field: string) => `{ ${Array.from({ length: count }, (_, index) => `a${index}: ${field}`).join(' ')} }`;
    expectAnswered(await graphql(aliased(GRAPHQL_LIMITS.aliases, 'viewer { id }')));
    expectRefused(await graphql(aliased(GRAPHQL_LIMITS.aliases + 1, 'viewer { id }')), 'GraphQL.AliasLimit', GRAPHQL_LIMITS.aliases);
    expectAnswered(await graphql(aliased(GRAPHQL_LIMITS.aliases, '__typename')));
    expectRefused(await graphql(aliased(GRAPHQL_LIMITS.aliases + 1, '__typename')), 'GraphQL.AliasLimit', GRAPHQL_LIMITS.aliases);
    // Aliases in a fragment count where it is spread.
    const inFragment = `{ viewer { ...F } ${Array.from({ length: GRAPHQL_LIMITS.aliases }, (_, index) => `t${index}: __typename`).join(' ')} } fragment F on Team { x: __typename }`;
    expectRefused(await graphql(inFragment), 'GraphQL.AliasLimit', GRAPHQL_LIMITS.aliases);
  });

  it(`directives: ${GRAPHQL_LIMITS.directives} are answered, one more is GraphQL.DirectiveLimit`, async () => {
    const directed = (count: number) => `{ viewer { ${'id @include(if: true) '.repeat(count)}} }`;
    expectAnswered(await graphql(directed(GRAPHQL_LIMITS.directives)));
    expectRefused(await graphql(directed(GRAPHQL_LIMITS.directives + 1)), 'GraphQL.DirectiveLimit', GRAPHQL_LIMITS.directives);
  });

  it(`tokens: ${GRAPHQL_LIMITS.tokens} are answered, one more is GraphQL.TokenLimit`, async () => {
    // Many small operations (5 tokens each: `query Qn { __typename }`) and the one that runs,
    // `query Main { viewer { id } … }` (8 tokens and its repeated `__typename`s): thousands of
    // repeats of one field would instead trip graphql-js's own budget for comparing fields.
    const tokens = (count: number) => {
      const others = Math.floor((count - 8) / 5) - 1;
      const extra = count - 8 - others * 5;
      return `${Array.from({ length: others }, (_, index) => `query Q${index} { __typename }`).join(' ')} query Main { viewer { id } ${'__typename '.repeat(extra)}}`;
    };
    const run = async (source: string): Promise<GraphQLResult> => {
      const response = await fetch(`${app.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json', 'x-service-api-key': team.apiKey },
        body: JSON.stringify({ query: source, operationName: 'Main' }),
      });
      const body = (await response.json()) as { data?: any; errors?: any[] };
      return { status: response.status, data: body.data, errors: body.errors };
    };
    const atLimit = await run(tokens(GRAPHQL_LIMITS.tokens));
    expectAnswered(atLimit);
    expect(atLimit.data.viewer.id).toBe(team.teamId);
    expectRefused(await run(tokens(GRAPHQL_LIMITS.tokens + 1)), 'GraphQL.TokenLimit', GRAPHQL_LIMITS.tokens);
  });

  it('refuses a refused operation before any resolver runs: a mutation past a limit changes nothing', async () => {
    const rest = restClient(app, team.apiKey);
    const before = (await rest.get('/contacts')).body.payload.contacts.length;
    const mutation = `mutation { c: createContact(input: { name: "Ada" }) { id ${'__typename '.repeat(GRAPHQL_LIMITS.tokens)}} }`;
    expectRefused(await graphql(mutation), 'GraphQL.TokenLimit', GRAPHQL_LIMITS.tokens);
    const aliased = `mutation { c: createContact(input: { name: "Ada" }) { id } ${Array.from({ length: GRAPHQL_LIMITS.aliases }, (_, index) => `t${index}: __typename`).join(' ')} }`;
    expectRefused(await graphql(aliased), 'GraphQL.AliasLimit', GRAPHQL_LIMITS.aliases);
    expect((await rest.get('/contacts')).body.payload.contacts.length).toBe(before);
  });

  it('answers a refusal HTTP 400 on POST and GET, whichever JSON media type the client accepts', async () => {
    // graphql-over-http answers a plain validation error 200 to a client that accepts only the
    // legacy application/json; the named limits are 400 for every client, as docs/errors.md says.
    const aliased = `{ ${Array.from({ length: GRAPHQL_LIMITS.aliases + 1 }, (_, index) => `a${index}: __typename`).join(' ')} }`;
    // Short tokens, so that the GET's URL stays within Node's 16 KB request head.
    const tooManyTokens = `{ ${'a '.repeat(GRAPHQL_LIMITS.tokens)}}`;
    const deep = `{ __type(name: "Envelope") { ${'ofType { '.repeat(GRAPHQL_LIMITS.depth - 1)}name${' }'.repeat(GRAPHQL_LIMITS.depth - 1)} } }`;
    const cases: [string, string, number][] = [
      [aliased, 'GraphQL.AliasLimit', GRAPHQL_LIMITS.aliases],
      [tooManyTokens, 'GraphQL.TokenLimit', GRAPHQL_LIMITS.tokens],
      [deep, 'GraphQL.DepthLimit', GRAPHQL_LIMITS.depth],
    ];
    for (const accept of ['application/json', 'application/graphql-response+json', undefined]) {
      for (const [document, name, limit] of cases) {
        const headers: Record<string, string> = { 'x-service-api-key': team.apiKey, ...(accept ? { accept } : {}) };
        const viaPost = await fetch(`${app.url}/graphql`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify({ query: document }) });
        const viaGet = await fetch(`${app.url}/graphql?${new URLSearchParams({ query: document })}`, { headers });
        for (const [transport, response] of [
          ['POST', viaPost],
          ['GET', viaGet],
        ] as const) {
          const body = (await response.json()) as { data?: unknown; errors?: any[] };
          expect(response.status, `${transport} ${accept} ${name}`).toBe(400);
          expectRefused({ status: response.status, data: body.data, errors: body.errors }, name, limit);
          // The transport's own hint never reaches the caller.
          expect(body.errors?.[0]?.extensions?.http, `${transport} ${accept}`).toBeUndefined();
        }
      }
    }
  });

  it('refuses batched requests (an array body)', async () => {
    const response = await fetch(`${app.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json', 'x-service-api-key': team.apiKey },
      body: JSON.stringify([{ query: '{ viewer { id } }' }, { query: '{ viewer { name } }' }]),
    });
    expect(response.status).toBe(400);
    const body = (await response.json()) as { data?: unknown; errors: { message: string }[] };
    expect(body.data).toBeUndefined();
    expect(body.errors[0].message).toMatch(/batching is not supported/i);
  });

  it('never suggests field, argument or enum names', async () => {
    const field = await graphql('{ viewr { id } }');
    expect(field.status).toBe(400);
    expect(field.errors?.[0]?.message).toBe('Cannot query field "viewr" on type "Query".');
    const argument = await graphql('{ envelopes(frist: 5) { nodes { id } } }');
    expect(argument.errors?.[0]?.message).toBe('Unknown argument "frist" on field "Query.envelopes".');
    const enumValue = await graphql('{ envelopes(status: drafts) { nodes { id } } }');
    expect(enumValue.errors?.[0]?.message).toBe('Value "drafts" does not exist in "EnvelopeStatus" enum.');
    for (const result of [field, argument, enumValue]) expect(JSON.stringify(result.errors)).not.toMatch(/did you mean/i);
  });
});

describe('GRAPHQL_INTROSPECTION=false (and graphql-js execution)', () => {
  let closed: TestApp;
  let closedTeam: SeededTeam;

  beforeAll(async () => {
    closed = await startTestApp({ env: { GRAPHQL_INTROSPECTION: 'false', GRAPHQL_JIT: 'false' } });
    closedTeam = await seedTeam(closed);
  });

  afterAll(async () => closed?.close());

  it('refuses __schema and __type with GraphQL.IntrospectionDisabled, and still answers __typename', async () => {
    const query = graphqlClient(closed, closedTeam.apiKey);
    for (const document of [getIntrospectionQuery(), '{ __type(name: "Envelope") { name } }']) {
      const refused = await query(document);
      expect(refused.status).toBe(400);
      expect(firstErrorName(refused)).toBe('GraphQL.IntrospectionDisabled');
      expect(refused.data).toBeUndefined();
    }
    const typename = await query('{ __typename viewer { __typename id } }');
    expectAnswered(typename);
    expect(typename.data.viewer.__typename).toBe('Team');
  });

  it('hides suggestions in variable errors too (graphql-js writes them there)', async () => {
    const query = graphqlClient(closed, closedTeam.apiKey);
    const result = await query('query($s: EnvelopeStatus) { envelopes(status: $s) { nodes { id } } }', { s: 'drafts' });
    expect(result.errors?.[0]?.message).toMatch(/got invalid value "drafts"/);
    expect(JSON.stringify(result.errors)).not.toMatch(/did you mean/i);
  });
});
