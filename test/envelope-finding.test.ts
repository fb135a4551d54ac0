import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRequestContext, type ServingDependencies } from '../src/context.ts';
import { Envelope } from '../src/domain/envelope/envelope.entity.ts';
import { type EnvelopePageOptions, readEnvelopePage } from '../src/domain/envelope/envelope.read.ts';
import { Agent } from '../src/domain/recipient/agent.entity.ts';
import { Recipient } from '../src/domain/recipient/recipient.entity.ts';
import { Team } from '../src/domain/team/team.entity.ts';
import { Template } from '../src/domain/template/template.entity.ts';
import { graphqlClient, restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { buildEnvelope, signAndComplete, tokenFor } from './helpers/signing.ts';

/*
 * Finding envelopes (issue 24): every filter of the listing, alone and combined, on both faces,
 * over two teams holding look-alike envelopes (same names, contexts and addresses): a team never
 * sees the other's.
 */

let app: TestApp;
let teamA: SeededTeam;
let teamB: SeededTeam;
const ids: Record<'A' | 'B', Record<string, string>> = { A: {}, B: {} };
const templates: Record<'A' | 'B', string> = { A: '', B: '' };

const day = (text: string) => new Date(`${text}T12:00:00.000Z`);

/** The same five envelopes for a team, straight through the ORM (created times chosen). */
async function seed(team: SeededTeam, which: 'A' | 'B') {
  const em = app.orm.em.fork();
  const teamRef = em.getReference(Team, team.teamId);
  const template = em.create(Template, { team: teamRef, name: `Lease template ${which}` });
  const rows: {
    key: string;
    name: string;
    status: Envelope['status'];
    created: string;
    completed?: string;
    context?: Record<string, unknown>;
    template?: boolean;
    email?: string;
    snapshotEmail?: string;
  }[] = [
    { key: 'a1', name: 'İstanbul lease', status: 'sent', created: '2026-01-05', context: { dealId: 'D-1', region: 'eu' }, email: 'tom@example.com' },
    { key: 'a2', name: 'istanbul office', status: 'finalized', created: '2026-01-04', completed: '2026-02-10', context: { dealId: 'D-2' }, template: true, snapshotEmail: 'Ann@Example.com' },
    { key: 'a3', name: 'Çağrı contract', status: 'draft', created: '2026-01-03', context: { dealId: 'D-1', amount: 5 } },
    { key: 'a4', name: 'Izmir 50%_deal', status: 'voided', created: '2026-01-02', template: true },
    { key: 'a5', name: 'ISTANBUL warehouse', status: 'finalized', created: '2026-01-01', completed: '2026-03-01', email: 'TOM@example.com' },
  ];
  for (const row of rows) {
    const envelope = em.create(Envelope, {
      team: teamRef,
      name: row.name,
      status: row.status,
      expirationPeriodDays: 30,
      context: row.context ?? {},
      createdAt: day(row.created),
      updatedAt: day(row.created),
      completedAt: row.completed ? day(row.completed) : null,
      template: row.template ? template : null,
    });
    const recipient = em.create(Recipient, { envelope, identifier: 'signer', roleName: 'Signer', type: 'signer', color: '#2563EB', createdAt: day(row.created) });
    if (row.email) em.create(Agent, { recipient, kind: 'info', info: { name: 'Tom Tenant', email: row.email }, position: 0 });
    if (row.snapshotEmail) em.create(Agent, { recipient, kind: 'contact', snapshot: [{ name: 'Ann Owner', email: row.snapshotEmail }], position: 0 });
    ids[which][row.key] = envelope.id;
  }
  await em.flush();
  templates[which] = template.id;
}

beforeAll(async () => {
  app = await startTestApp();
  teamA = await seedTeam(app);
  teamB = await seedTeam(app);
  await seed(teamA, 'A');
  await seed(teamB, 'B');
});
afterAll(async () => {
  await app.close();
});

/** The keys (a1…a5) a REST listing of the team answers, in order, after checking none is foreign. */
async function listed(which: 'A' | 'B', query: string): Promise<string[]> {
  const team = which === 'A' ? teamA : teamB;
  const answer = await restClient(app, team.apiKey).get(`/envelopes?${query}`);
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  const byId = new Map(Object.entries(ids[which]).map(([key, id]) => [id, key]));
  return answer.body.payload.envelopes.map((envelope: { id: string }) => {
    const key = byId.get(envelope.id);
    // Another team's envelope (or anything unseeded) never appears.
    expect(key, `envelope ${envelope.id} is not team ${which}'s`).toBeDefined();
    return key;
  });
}

describe('finding envelopes over REST', () => {
  it('searches names ignoring case, accents and Turkish dotted/dotless i', async () => {
    for (const team of ['A', 'B'] as const) {
      for (const q of ['İSTANBUL', 'istanbul', 'ISTANBUL', 'ıstanbul', 'Istanbul']) {
        expect(await listed(team, `q=${encodeURIComponent(q)}`), q).toEqual(['a1', 'a2', 'a5']);
      }
      expect(await listed(team, `q=${encodeURIComponent('CAGRI')}`)).toEqual(['a3']);
      expect(await listed(team, `q=${encodeURIComponent('çağrı')}`)).toEqual(['a3']);
      // LIKE's own characters match themselves.
      expect(await listed(team, `q=${encodeURIComponent('50%_')}`)).toEqual(['a4']);
      expect(await listed(team, `q=${encodeURIComponent('%')}`)).toEqual(['a4']);
      expect(await listed(team, `q=${encodeURIComponent('_')}`)).toEqual(['a4']);
    }
  });

  it('filters by several statuses, repeated or comma-separated', async () => {
    expect(await listed('A', 'status=finalized')).toEqual(['a2', 'a5']);
    expect(await listed('A', 'status=finalized,draft')).toEqual(['a2', 'a3', 'a5']);
    expect(await listed('A', 'status=finalized&status=draft')).toEqual(['a2', 'a3', 'a5']);
  });

  it('filters by a person’s address (given or resolved), letter case ignored', async () => {
    expect(await listed('A', 'recipientEmail=tom@EXAMPLE.com')).toEqual(['a1', 'a5']);
    expect(await listed('A', 'recipientEmail=ann@example.com')).toEqual(['a2']);
    expect(await listed('A', 'recipientEmail=nobody@example.com')).toEqual([]);
  });

  it('filters by template, creation and completion times', async () => {
    expect(await listed('A', `templateId=${templates.A}`)).toEqual(['a2', 'a4']);
    // Another team's template id matches nothing, as an unknown one.
    expect(await listed('A', `templateId=${templates.B}`)).toEqual([]);
    expect(await listed('A', 'createdAfter=2026-01-03T12:00:00Z')).toEqual(['a1', 'a2', 'a3']);
    expect(await listed('A', 'createdBefore=2026-01-03T12:00:00Z')).toEqual(['a4', 'a5']);
    expect(await listed('A', 'createdAfter=2026-01-03T00:00:00Z&createdBefore=2026-01-04T00:00:00Z')).toEqual(['a3']);
    expect(await listed('A', 'completedAfter=2026-02-15T00:00:00Z')).toEqual(['a5']);
    expect(await listed('A', 'completedBefore=2026-02-15T00:00:00%2B01:00')).toEqual(['a2']);
  });

  it('matches context values exactly, several keys together', async () => {
    expect(await listed('A', 'context.dealId=D-1')).toEqual(['a1', 'a3']);
    expect(await listed('A', 'context.dealId=D-1&context.region=eu')).toEqual(['a1']);
    expect(await listed('A', 'context.dealId=D')).toEqual([]);
    expect(await listed('B', 'context.dealId=D-2')).toEqual(['a2']);
  });

  it('combines every filter with "and"', async () => {
    expect(await listed('A', 'q=istanbul&status=finalized&recipientEmail=tom@example.com')).toEqual(['a5']);
    expect(await listed('A', `q=istanbul&templateId=${templates.A}&completedBefore=2026-02-11T00:00:00Z&context.dealId=D-2`)).toEqual(['a2']);
    expect(await listed('A', 'q=istanbul&status=sent,finalized&createdAfter=2026-01-02T00:00:00Z&context.dealId=D-1')).toEqual(['a1']);
    expect(await listed('B', 'status=draft,voided&createdBefore=2026-01-04T00:00:00Z')).toEqual(['a3', 'a4']);
  });

  it('pages a filtered listing newest first with stable cursors', async () => {
    const rest = restClient(app, teamA.apiKey);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const answer: any = await rest.get(`/envelopes?q=istanbul&limit=1${cursor ? `&cursor=${cursor}` : ''}`);
      expect(answer.status).toBe(200);
      seen.push(...answer.body.payload.envelopes.map((envelope: { id: string }) => envelope.id));
      cursor = answer.body.payload.nextCursor;
    } while (cursor);
    expect(seen).toEqual([ids.A.a1, ids.A.a2, ids.A.a5]);
  });

  it('refuses unknown, repeated and malformed parameters with Request.Invalid', async () => {
    const rest = restClient(app, teamA.apiKey);
    for (const [query, path] of [
      ['stauts=sent', 'stauts'],
      ['search=istanbul', 'search'],
      ['q=a&q=b', 'q'],
      ['status=signed', 'status[0]'],
      ['createdAfter=yesterday', 'createdAfter'],
      ['templateId=nope', 'templateId'],
      ['context.=x', 'context'],
    ] as const) {
      const answer = await rest.get(`/envelopes?${query}`);
      expect(answer.status, query).toBe(400);
      expect(answer.body.error.name, query).toBe('Request.Invalid');
      expect(JSON.stringify(answer.body.error.context.issues), query).toContain(path);
    }
  });
});

describe('finding envelopes over GraphQL', () => {
  it('takes the same filters', async () => {
    const graphql = graphqlClient(app, teamA.apiKey);
    const query = `query($q: String, $status: EnvelopeStatus, $statuses: [EnvelopeStatus!], $recipientEmail: String, $templateId: ID, $createdAfter: DateTime, $completedBefore: DateTime, $context: JSONObject) {
      envelopes(first: 10, q: $q, status: $status, statuses: $statuses, recipientEmail: $recipientEmail, templateId: $templateId, createdAfter: $createdAfter, completedBefore: $completedBefore, context: $context) { nodes { id } }
    }`;
    const keys = async (variables: Record<string, unknown>) => {
      const result = await graphql(query, variables);
      expect(result.errors, JSON.stringify(result.errors)).toBeUndefined();
      const byId = new Map(Object.entries(ids.A).map(([key, id]) => [id, key]));
      return result.data.envelopes.nodes.map((node: { id: string }) => byId.get(node.id) ?? `foreign:${node.id}`);
    };
    expect(await keys({ q: 'İSTANBUL' })).toEqual(['a1', 'a2', 'a5']);
    expect(await keys({ statuses: ['finalized', 'draft'] })).toEqual(['a2', 'a3', 'a5']);
    // One status keeps its single-valued argument (operations written before `statuses` still validate).
    expect(await keys({ status: 'finalized' })).toEqual(['a2', 'a5']);
    expect(await keys({ status: 'finalized', statuses: ['draft'] })).toEqual(['a2', 'a3', 'a5']);
    expect(await keys({ recipientEmail: 'TOM@example.com' })).toEqual(['a1', 'a5']);
    expect(await keys({ templateId: templates.A, createdAfter: '2026-01-03T00:00:00Z' })).toEqual(['a2']);
    expect(await keys({ completedBefore: '2026-02-15T00:00:00Z' })).toEqual(['a2']);
    expect(await keys({ context: { dealId: 'D-1' }, q: 'cagri' })).toEqual(['a3']);
    const refused = await graphql(query, { context: { dealId: 5 } });
    expect(refused.errors?.[0].extensions.name).toBe('Request.Invalid');
  });
});

describe('the progress summary', () => {
  it('counts the acting roles and names whose turn it is, on both faces', async () => {
    const team = await seedTeam(app);
    const built = await buildEnvelope(app, team.apiKey, {
      name: 'Progress',
      recipients: [
        { identifier: 'first', order: 1, agents: [{ info: { name: 'Tom Tenant', email: 'tom@example.com' } }, { info: { name: 'Tina Tenant', email: 'tina@example.com' } }] },
        { identifier: 'second', order: 2 },
        { identifier: 'watcher', type: 'viewer', order: 1 },
      ],
    });
    const rest = restClient(app, team.apiKey);
    const progress = async () => (await rest.get('/envelopes')).body.payload.envelopes[0].progress;
    expect(await progress()).toEqual({ recipients: 2, completed: 0, pending: 2, waitingFor: [] });
    expect((await rest.put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
    expect(await progress()).toEqual({
      recipients: 2,
      completed: 0,
      pending: 2,
      waitingFor: [{ recipientId: built.recipients.first, roleName: 'first', names: ['Tom Tenant', 'Tina Tenant'] }],
    });
    const signed = await signAndComplete(app, await tokenFor(app, built.envelopeId, built.recipients.first));
    expect(signed.errors, JSON.stringify(signed.errors)).toBeUndefined();
    const expected = { recipients: 2, completed: 1, pending: 1, waitingFor: [{ recipientId: built.recipients.second, roleName: 'second', names: ['Person second'] }] };
    expect(await progress()).toEqual(expected);
    const graphql = await graphqlClient(app, team.apiKey)('{ envelopes(first: 5) { nodes { progress { recipients completed pending waitingFor { recipientId roleName names } } } } }');
    expect(graphql.errors).toBeUndefined();
    expect(graphql.data.envelopes.nodes[0].progress).toEqual(expected);
  });
});

describe('the REST listing written by PostgreSQL', () => {
  /** The listing's body as sent, and what the domain's page read (rows parsed, then written by JSON.stringify) gives for the same options. */
  async function bothWays(apiKey: string, query: string, options: EnvelopePageOptions) {
    const response = await fetch(`${app.url}/api/v1/key/envelopes?${query}`, { headers: { 'x-service-api-key': apiKey } });
    expect(response.status).toBe(200);
    const context = createRequestContext(app.dependencies as ServingDependencies, {
      headers: new Headers({ 'x-service-api-key': apiKey }),
      metadata: { requestId: 'listing-differential', ip: null, userAgent: null },
    });
    const page = await readEnvelopePage(context, options, { progress: true });
    return { sent: await response.text(), written: JSON.stringify({ version: '1', success: true, payload: page }) };
  }

  it('sends byte for byte what parsing the rows and writing them would, for every filter, page and cursor', async () => {
    for (const [query, options] of [
      ['', {}],
      ['limit=2', { limit: 2 }],
      ['q=istanbul&limit=1', { q: 'istanbul', limit: 1 }],
      ['status=finalized,voided&context.dealId=D-2', { status: ['finalized', 'voided'], context: { dealId: 'D-2' } }],
      [`templateId=${templates.A}&createdAfter=2026-01-01T00:00:00Z`, { templateId: templates.A, createdAfter: '2026-01-01T00:00:00Z' }],
      ['recipientEmail=tom@example.com', { recipientEmail: 'tom@example.com' }],
    ] as [string, EnvelopePageOptions][]) {
      const first = await bothWays(teamA.apiKey, query, options);
      expect(first.sent, query).toBe(first.written);
      const nextCursor = (JSON.parse(first.sent) as { payload: { nextCursor: string | null } }).payload.nextCursor;
      if (nextCursor) {
        const next = await bothWays(teamA.apiKey, `${query}&cursor=${nextCursor}`, { ...options, cursor: nextCursor });
        expect(next.sent, `${query}, second page`).toBe(next.written);
      }
    }
  });

  it('writes contexts as JavaScript would, also those it must parse and write again (exponents, index-like keys, escapes)', async () => {
    const team = await seedTeam(app);
    const rest = restClient(app, team.apiKey);
    for (const context of [
      { dealId: 'D-9', nested: { list: [1, 2.5, -3, true, null], text: 'Çağrı "quoted" \\ back\tslash' } },
      { big: 1e21, small: 1e-7, precise: 0.1 },
      { '10': 'index-like', '2': 'keys', name: 'moved first by JavaScript' },
      { emoji: '✍️ 𝒮', control: '\u0001' },
    ]) {
      const created = await rest.post('/envelopes', { name: 'Context shapes', context });
      expect(created.status, JSON.stringify(created.body)).toBe(200);
    }
    const both = await bothWays(team.apiKey, '', {});
    expect(both.sent).toBe(both.written);
    expect((JSON.parse(both.sent) as { payload: { envelopes: unknown[] } }).payload.envelopes).toHaveLength(4);
  });
});
