import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GRAPHQL_PAGE_QUERY } from '../bench/reads/queries.ts';
import { Contact } from '../src/domain/contact/contact.entity.ts';
import { Document } from '../src/domain/document/document.entity.ts';
import { Envelope } from '../src/domain/envelope/envelope.entity.ts';
import { Field } from '../src/domain/field/field.entity.ts';
import { FieldView } from '../src/domain/field/field-view.entity.ts';
import { Agent } from '../src/domain/recipient/agent.entity.ts';
import { Recipient } from '../src/domain/recipient/recipient.entity.ts';
import { Team } from '../src/domain/team/team.entity.ts';
import { type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';

/*
 * The pass-through (src/graphql/pass-through.ts) against ordinary execution: the same database,
 * two apps, one with GRAPHQL_PASS_THROUGH off. Every query must get the same status and the same
 * bytes from both; the plain ones must have gone through the pass-through's statement.
 */

let passing: TestApp;
let executing: TestApp;
let team: SeededTeam;
let emptyTeam: SeededTeam;

beforeAll(async () => {
  [passing, executing] = await Promise.all([startTestApp({ countStatements: true }), startTestApp({ env: { GRAPHQL_PASS_THROUGH: 'false' } })]);
  [team, emptyTeam] = await Promise.all([seedTeam(passing), seedTeam(passing)]);
  await seedVariedEnvelopes(team.teamId);
});
afterAll(async () => {
  await Promise.all([passing?.close(), executing?.close()]);
});

/** Envelopes with every kind of value: nulls and non-nulls, every agent kind, awkward numbers and text. */
async function seedVariedEnvelopes(teamId: string) {
  const em = passing.orm.em.fork();
  const contact = em.create(Contact, { team: em.getReference(Team, teamId), name: 'Contact person', email: 'contact@example.com' });
  // Doubles JavaScript and PostgreSQL write differently unless rewritten (exponents, -0).
  const awkward = [0.00001, 1.5e-7, 1e15 + 0.5, 123456789012345680000, 1e21, 3.0000000000000004, -0, 0.1 + 0.2, 7];
  for (let index = 0; index < 7; index += 1) {
    const envelope = em.create(Envelope, {
      team: em.getReference(Team, teamId),
      name: index === 3 ? 'Quotes " and \\ back\nslash\ttab \u0001 ünïcödé 😀' : `Envelope ${index}`,
      expirationPeriodDays: 30 + index,
      stamp: index % 3 === 0 ? null : index % 3 === 1,
      sentAt: index % 2 === 0 ? new Date(Date.UTC(2026, 0, 1 + index, 12, 0, 0, 7)) : null,
    });
    if (index === 5) continue; // an envelope with no children at all
    const document = em.create(Document, {
      envelope,
      name: `doc ${index}.pdf`,
      order: 0,
      pageCount: 2,
      pages: [
        { width: 595, height: 842, rotation: 0 },
        { width: 595.5, height: 842.25, rotation: 90 },
      ],
      contentSha256: 'a'.repeat(64),
      byteSize: 1000 + index,
      status: index === 1 ? null : undefined,
    });
    em.create(Document, {
      envelope,
      name: 'second.pdf',
      order: 1,
      pageCount: 1,
      pages: [{ width: 100, height: 100, rotation: 0 }],
      contentSha256: 'b'.repeat(64),
      byteSize: 48 * 1024 * 1024,
    });
    const kinds = ['info', 'contact', 'user', 'info'] as const;
    for (const [position, identifier] of ['buyer', 'seller', 'witness'].entries()) {
      const recipient = em.create(Recipient, {
        envelope,
        identifier,
        roleName: `${identifier} role`,
        type: position === 2 ? 'viewer' : 'signer',
        order: position,
        color: '#2563EB',
        activatedAt: position === 0 ? new Date(Date.UTC(2026, 1, 2, 3, 4, 5, 600)) : null,
      });
      const kind = kinds[(index + position) % kinds.length];
      em.create(Agent, {
        recipient,
        position: 0,
        kind,
        info: (kind === 'info'
          ? {
              name: `${identifier} ${index}`,
              ...(position === 1 ? {} : { email: `${identifier}@example.com` }),
              ...(position === 2 ? { phone: '+905551234567', locale: 'tr', embedded: true } : {}),
            }
          : null) as Agent['info'],
        contact: kind === 'contact' ? contact : null,
      });
      em.create(Agent, { recipient, position: 1, kind: 'info', info: { name: `${identifier} deputy`, email: null } });
      em.create(Agent, { recipient, position: 2, kind: 'info', info: { name: 'revoked' }, revokedAt: new Date() });
      const field = em.create(Field, {
        envelope,
        recipient,
        identifier: `${identifier}-signature`,
        type: position === 2 ? 'text' : 'simple_signature',
        required: position !== 2,
        label: position === 1 ? 'Sign "here"' : null,
        tooltip: null,
        config: {},
        submittedAt: position === 0 ? new Date(Date.UTC(2026, 2, 3, 4, 5, 6, 789)) : null,
      });
      for (let view = 0; view < 2; view += 1) {
        const number = awkward[(index * 3 + position * 2 + view) % awkward.length];
        em.create(FieldView, { field, document, page: view, position: view, x: number, y: 10.25, width: 100 + view, height: number === -0 ? 30 : Math.abs(number) || 1 });
      }
    }
  }
  await em.flush();
}

async function post(app: TestApp, apiKey: string | undefined, body: unknown) {
  const response = await fetch(`${app.url}/graphql`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/graphql-response+json, application/json',
      ...(apiKey === undefined ? {} : { 'x-service-api-key': apiKey }),
    },
    body: JSON.stringify(body),
  });
  return { status: response.status, type: response.headers.get('content-type'), text: await response.text() };
}

const ENVELOPE_EVERYTHING = `
  id name status expirationPeriodDays reminderInitialDelayDays reminderRepeatIntervalDays reminderBeforeExpirationDays
  stamp createdAt updatedAt sentAt expiresAt completedAt voidedAt templateId __typename
  documents { id name order status pageCount sha256 byteSize createdAt __typename }
  recipients {
    id identifier roleName type order required color hostedById delegatedById activatedAt completedAt delegatedAt removedAt __typename
    agents { id kind info { name email phone phoneContactMethod embedded __typename } contactId groupId userId __typename }
  }
  fields { id identifier type recipientId label tooltip required readonly submittedAt __typename
    views { documentId page location { x y __typename } size { width height __typename } __typename } }`;

/** The page `npm run bench` times (its answer must go through the pass-through byte for byte). */
const BENCH_PAGE = GRAPHQL_PAGE_QUERY;

/** Plain queries: the pass-through answers them. */
const PLAIN: { name: string; body: (cursor: string) => unknown }[] = [
  { name: 'the bench page', body: () => ({ query: BENCH_PAGE, variables: { first: 20 } }) },
  { name: 'every field, every list', body: () => ({ query: `{ envelopes { nodes { ${ENVELOPE_EVERYTHING} } } }` }) },
  {
    name: 'connection: edges, cursors, pageInfo, __typename, a short page',
    body: () => ({ query: `{ envelopes(first: 2) { __typename pageInfo { endCursor hasNextPage __typename } edges { cursor __typename node { id name } } nodes { id } } }` }),
  },
  { name: 'the last page (no next page)', body: () => ({ query: `{ envelopes(first: 100) { pageInfo { hasNextPage endCursor } nodes { id } } }` }) },
  {
    name: 'continued after a cursor',
    body: (cursor) => ({
      query: `query ($after: String) { envelopes(first: 3, after: $after) { edges { node { id } cursor } pageInfo { hasNextPage endCursor } } }`,
      variables: { after: cursor },
    }),
  },
  {
    name: 'aliases, repeated keys merged, two root fields',
    body: () => ({
      query: `{ a: envelopes(first: 2) { list: nodes { key: id id n: name documents { id } documents { name } } }
                 b: envelopes(first: 1, statuses: [draft]) { nodes { name: id id2: name } } __typename t: __typename }`,
    }),
  },
  {
    name: 'fragments and inline fragments, each alone in its selection',
    body: () => ({
      query: `query Page { envelopes { ...Conn } }
        query Other { __typename }
        fragment Conn on EnvelopeConnection { nodes { ...Env } edges { ... on EnvelopeEdge { cursor } } pageInfo { ... { hasNextPage } } }
        fragment Env on Envelope { id recipients { ...Rec } }
        fragment Rec on Recipient { identifier agents { kind info { name } } }`,
      operationName: 'Page',
    }),
  },
  {
    name: 'filters as variables and literals',
    body: () => ({
      query: `query ($q: String, $s: [EnvelopeStatus!], $after: DateTime) { envelopes(q: $q, statuses: $s, createdAfter: $after, status: draft) { nodes { id name sentAt stamp } } }`,
      variables: { q: 'envelope', s: ['draft', 'sent'], after: '2000-01-01T00:00:00Z' },
    }),
  },
  { name: 'an empty page', body: () => ({ query: `{ envelopes(q: "no such name") { nodes { id } edges { cursor } pageInfo { hasNextPage endCursor } } }` }) },
  { name: 'the same query once more (compiled statement reused)', body: () => ({ query: BENCH_PAGE, variables: { first: 5 } }) },
];

/** Queries that must go to ordinary execution (and answer the same). */
const OTHERS: { name: string; body: (cursor: string) => unknown; apiKey?: 'none' | 'bad' | 'empty' }[] = [
  { name: 'a JSON field (context)', body: () => ({ query: `{ envelopes { nodes { id context } } }` }) },
  { name: 'progress', body: () => ({ query: `{ envelopes { nodes { id progress { recipients pending } } } }` }) },
  { name: 'document pages', body: () => ({ query: `{ envelopes { nodes { documents { pages { index width } } } } }` }) },
  {
    name: 'fragments mixed with fields',
    body: () => ({ query: `{ envelopes { nodes { ...Env ... on Envelope { status } ... { name } createdAt } } } fragment Env on Envelope { id }` }),
  },
  { name: 'a locale (an enum whose names are not its values)', body: () => ({ query: `{ envelopes { nodes { recipients { agents { info { name locale } } } } } }` }) },
  { name: '@skip', body: () => ({ query: `query ($no: Boolean!) { envelopes { nodes { id name @skip(if: $no) } } }`, variables: { no: true } }) },
  { name: 'another root field (envelope by id)', body: () => ({ query: `{ envelope(id: "00000000-0000-4000-8000-000000000000") { id } }` }) },
  { name: 'a bad cursor', body: () => ({ query: `{ envelopes(after: "nonsense") { nodes { id } } }` }) },
  { name: 'a page too large', body: () => ({ query: `{ envelopes(first: 1000) { nodes { id } } }` }) },
  { name: 'first: 0', body: () => ({ query: `{ envelopes(first: 0) { nodes { id } } }` }) },
  { name: 'a bad filter', body: () => ({ query: `{ envelopes(templateId: "x") { nodes { id } } }` }) },
  { name: 'a variable of the wrong type', body: () => ({ query: `query ($first: Int!) { envelopes(first: $first) { nodes { id } } }`, variables: { first: 'x' } }) },
  { name: 'a missing variable', body: () => ({ query: `query ($first: Int!) { envelopes(first: $first) { nodes { id } } }` }) },
  { name: 'an unknown field', body: () => ({ query: `{ envelopes { nodes { id nope } } }` }) },
  { name: 'a syntax error', body: () => ({ query: `{ envelopes { nodes { id } }` }) },
  { name: 'no API key', body: () => ({ query: BENCH_PAGE, variables: { first: 2 } }), apiKey: 'none' },
  { name: 'a wrong API key', body: () => ({ query: BENCH_PAGE, variables: { first: 2 } }), apiKey: 'bad' },
  { name: 'another team (empty page)', body: () => ({ query: `{ envelopes { nodes { id } pageInfo { hasNextPage endCursor } } }` }), apiKey: 'empty' },
  { name: 'a mutation', body: () => ({ query: `mutation { deleteEnvelope(id: "00000000-0000-4000-8000-000000000000") { id } }` }) },
];

describe('GraphQL pass-through answers exactly as execution', () => {
  let cursor = '';
  beforeAll(async () => {
    const first = await post(executing, team.apiKey, { query: `{ envelopes(first: 2) { pageInfo { endCursor } } }` });
    cursor = JSON.parse(first.text).data.envelopes.pageInfo.endCursor;
    expect(cursor).toBeTruthy();
  });

  it.each(PLAIN)('$name (through the pass-through)', async ({ body }) => {
    passing.resetStatements();
    const [passed, executed] = await Promise.all([post(passing, team.apiKey, body(cursor)), post(executing, team.apiKey, body(cursor))]);
    const differsAt = [...passed.text].findIndex((character, index) => character !== executed.text[index]);
    expect(differsAt < 0 ? '' : `…${passed.text.slice(differsAt - 150, differsAt + 100)}`).toBe(differsAt < 0 ? '' : `…${executed.text.slice(differsAt - 150, differsAt + 100)}`);
    expect(passed.text).toBe(executed.text);
    expect(passed.status).toBe(executed.status);
    expect(passed.type).toBe(executed.type);
    expect(executed.status).toBe(200);
    expect(JSON.parse(executed.text).errors).toBeUndefined();
    // It went through the answer statement, not through the read model's page.
    expect(passing.statements.some((statement) => statement.includes('answer_row'))).toBe(true);
  });

  it.each(OTHERS)('$name (executed)', async ({ body, apiKey }) => {
    const key = apiKey === 'none' ? undefined : apiKey === 'bad' ? 'sk_nope' : apiKey === 'empty' ? emptyTeam.apiKey : team.apiKey;
    const [passed, executed] = await Promise.all([post(passing, key, body(cursor)), post(executing, key, body(cursor))]);
    const withoutRequestIds = (text: string) => text.replace(/"requestId":"[^"]*"/g, '"requestId":"…"');
    expect(withoutRequestIds(passed.text)).toBe(withoutRequestIds(executed.text));
    expect(passed.status).toBe(executed.status);
  });

  it('sees nothing of another team', async () => {
    const passed = await post(passing, emptyTeam.apiKey, { query: BENCH_PAGE, variables: { first: 20 } });
    expect(passed.text).toBe('{"data":{"envelopes":{"nodes":[]}}}');
  });
});

describe('pass-through operations served beside yoga', () => {
  /** The answer with every header, one request. */
  async function postRaw(app: TestApp, body: unknown, headers: Record<string, string> = {}) {
    const response = await fetch(`${app.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json, application/json', 'x-service-api-key': team.apiKey, ...headers },
      body: JSON.stringify(body),
    });
    return { status: response.status, headers: Object.fromEntries(response.headers), text: await response.text() };
  }
  /** Headers that differ between any two answers (a new id, a budget counted down, the clock). */
  const comparable = (headers: Record<string, string>) => {
    const { 'x-request-id': _id, 'x-ratelimit-remaining': _remaining, date: _date, ...rest } = headers;
    return rest;
  };

  it.each([{ accept: 'application/graphql-response+json, application/json' }, { accept: 'application/json' }, { accept: '*/*' }, { accept: 'application/graphql-response+json' }])(
    'answers a page yoga answered before with the same status, bytes and headers (Accept: $accept)',
    async ({ accept }) => {
      // A text of its own (the trailing comment), so that yoga answers it first.
      const body = { query: `${BENCH_PAGE} # ${accept}`, variables: { first: 3 } };
      const headers = { accept, origin: 'https://app.example' };
      const before = passing.app.passThrough!.answered;
      const throughYoga = await postRaw(passing, body, headers);
      expect(passing.app.passThrough!.answered).toBe(before);
      const beside = await postRaw(passing, body, headers);
      expect(passing.app.passThrough!.answered).toBe(before + 1);
      expect(beside.status).toBe(200);
      expect(beside.text).toBe(throughYoga.text);
      expect(comparable(beside.headers)).toEqual(comparable(throughYoga.headers));
      expect(Number(beside.headers['x-ratelimit-remaining'])).toBeLessThan(Number(throughYoga.headers['x-ratelimit-remaining']));
      expect(beside.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    },
  );

  it('hands a known text to yoga when it cannot answer it, which answers as it always has', async () => {
    const query = `${BENCH_PAGE} # fallbacks`;
    await postRaw(passing, { query, variables: { first: 2 } });
    const before = passing.app.passThrough!.answered;
    for (const [body, headers] of [
      [{ query, variables: { first: 'x' } }, {}],
      [{ query }, {}],
      [{ query, variables: { first: 2 } }, { 'x-service-api-key': 'sk_nope' }],
      [{ query, variables: { first: 1000 } }, {}],
    ] as const) {
      const [passed, executed] = await Promise.all([postRaw(passing, body, headers), postRaw(executing, body, headers)]);
      const withoutRequestIds = (text: string) => text.replace(/"requestId":"[^"]*"/g, '"requestId":"…"');
      expect(withoutRequestIds(passed.text)).toBe(withoutRequestIds(executed.text));
      expect(passed.status).toBe(executed.status);
    }
    expect(passing.app.passThrough!.answered).toBe(before);
  });
});
