import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { restRoutes } from '../src/rest/routes/index.ts';
import { makePdf } from './fixtures/pdfs.ts';
import { createDraftWithDocumentAndSigner, unknownId, uploadDocument } from './helpers/envelopes.ts';
import { firstErrorName, graphqlClient, restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { rawRequest } from './helpers/raw-http.ts';
import { buildEnvelope } from './helpers/signing.ts';
import { createReadyTemplate } from './helpers/templates.ts';

/*
 * NUL and lone surrogates are refused as `Request.Invalid` wherever caller text is parsed (issue
 * 31): every REST route's documented example body with the character put into each of its
 * strings and keys, every route's path parameters and query string, multipart form fields, and
 * GraphQL variables and literals over HTTP and WebSocket. Before, a NUL that reached PostgreSQL
 * failed the request with 500 (or 503), e.g. a signing URL's `returnUrl`.
 */

const NUL = '\u0000';
const LONE = ['\ud800', '\udc00'];
const BAD = [NUL, ...LONE];

let app: TestApp;
let team: SeededTeam;
beforeAll(async () => {
  // Hundreds of requests from one key and from no key: past the usual per-minute budgets.
  app = await startTestApp({
    env: { SANDBOX_CLOCK: 'true', SIGNING_FRAME_ANCESTORS: 'https://app.example.com', RATE_LIMIT_PER_MINUTE: '100000', RATE_LIMIT_ANONYMOUS_PER_MINUTE: '100000' },
    rateLimitsOwnCounters: true,
  });
  team = await seedTeam(app);
}, 60_000);
afterAll(async () => {
  await app?.close();
});

/** Every string leaf and key of a JSON value, as paths, each with a copy of the value where only it holds `bad`. */
function variants(value: unknown, bad: string): unknown[] {
  const found: unknown[] = [];
  const walk = (current: unknown, replace: (next: unknown) => unknown) => {
    if (typeof current === 'string') {
      found.push(replace(`${current}${bad}`));
    } else if (Array.isArray(current)) {
      current.forEach((item, index) => walk(item, (next) => replace(current.map((other, at) => (at === index ? next : other)))));
    } else if (current !== null && typeof current === 'object') {
      const entries = Object.entries(current);
      for (const [key, child] of entries) {
        walk(child, (next) => replace({ ...current, [key]: next }));
        found.push(replace(Object.fromEntries(entries.map(([other, otherChild]) => [other === key ? `${key}${bad}` : other, otherChild]))));
      }
    }
  };
  walk(value, (next) => next);
  return found;
}

/**
 * Real ids for a route's parameters, so that a body reaches the rules (and the database) behind
 * it: a draft envelope with a document, a signer and a field; a sent one for the routes of the
 * signing workflow; a template with the same; a contact, a group, a team user, a webhook.
 */
async function realParams(): Promise<(path: string) => Record<string, string>> {
  const rest = restClient(app, team.apiKey);
  const draft = await createDraftWithDocumentAndSigner(app, team.apiKey);
  const field = await rest.post(`/envelopes/${draft.envelopeId}/fields`, {
    fields: [
      { type: 'text', recipientId: draft.signerId, identifier: 'note', views: [{ documentId: draft.documentId, page: 0, location: { x: 50, y: 50 }, size: { width: 120, height: 30 } }] },
    ],
  });
  const sent = await buildEnvelope(app, team.apiKey, { name: 'Sent for the sweep', recipients: [{ identifier: 'signer', order: 1 }] });
  expect((await rest.put(`/envelopes/${sent.envelopeId}/send`)).status).toBe(200);
  const template = await createReadyTemplate(app, team.apiKey);
  const contactId = (await rest.post('/contacts', { name: 'Sweep Contact', email: 'sweep-contact@example.com' })).body.payload.contact.id as string;
  const groupId = (await rest.post('/contact-groups', { name: 'Sweep group' })).body.payload.contactGroup.id as string;
  const userId = (await rest.post('/users', { name: 'Sweep User', email: 'sweep-user@example.com' })).body.payload.user.id as string;
  const webhookId = (await rest.post('/webhooks', { url: 'https://example.com/sweep' })).body.payload.webhook.id as string;
  const common = { contactId, groupId, userId, webhookId };
  return (path) => {
    if (path.startsWith('/templates/')) return { ...common, templateId: template.templateId, documentId: template.documentId, recipientId: template.signerId, fieldId: template.fieldId };
    if (/signing-url|resend|remind|void/.test(path)) return { ...common, envelopeId: sent.envelopeId, recipientId: sent.recipients.signer!, documentId: sent.documentId };
    return { ...common, envelopeId: draft.envelopeId, documentId: draft.documentId, recipientId: draft.signerId, fieldId: field.body.payload.fields[0].id as string };
  };
}

function pathOf(template: string, params: Record<string, string> = {}): string {
  return template.replace(/:(\w+)/g, (_match, name: string) => params[name] ?? unknownId);
}

/** The seeded team's rows of a table (other test files share the database and write meanwhile). */
async function countRows(table: string): Promise<number> {
  const scoped: Record<string, string> = {
    signing_url: 'select count(*) from signing_url u join recipient r on r.id = u.recipient_id join envelope e on e.id = r.envelope_id where e.team_id = ?',
    document: 'select count(*) from document d join envelope e on e.id = d.envelope_id where e.team_id = ?',
  };
  const [row] = await app.orm.em.fork().execute<{ count: string }[]>(scoped[table] ?? `select count(*) from ${table} where team_id = ?`, [team.teamId]);
  return Number(row!.count);
}

describe('REST', () => {
  it("refuses NUL and lone surrogates in every string and key of every route's documented body, on real ids, as Request.Invalid", async () => {
    const rest = restClient(app, team.apiKey);
    const params = await realParams();
    const routes = restRoutes.filter((route) => route.doc.body && route.doc.body.example !== undefined);
    expect(routes.length).toBeGreaterThan(20);
    const tables = ['envelope', 'template', 'contact', 'webhook_endpoint', 'audit_event', 'signing_url', 'bulk_send'];
    const before = await Promise.all(tables.map(countRows));
    let requests = 0;
    for (const route of routes) {
      const example = route.doc.body!.wrap ? { [route.doc.body!.wrap]: route.doc.body!.example } : route.doc.body!.example;
      for (const bad of BAD) {
        for (const body of variants(example, bad)) {
          const answer = await rest.call(route.method, pathOf(route.path, params(route.path)), body);
          requests += 1;
          expect(answer.status, `${route.method} ${route.path} ${JSON.stringify(body)}`).toBe(400);
          expect(answer.body.error.name).toBe('Request.Invalid');
          expect(answer.body.error.context.issues[0].message).toMatch(/NUL characters or broken Unicode/);
        }
      }
    }
    expect(requests).toBeGreaterThan(100);
    // Nothing was stored by any refusal.
    expect(await Promise.all(tables.map(countRows))).toEqual(before);
  }, 120_000);

  it('refuses a NUL in any path parameter or query string of every route (also unauthenticated ones) as Request.Invalid', async () => {
    const rest = restClient(app, team.apiKey);
    for (const route of restRoutes) {
      const query = await rest.call(route.method, `${pathOf(route.path)}?anything=a%00b`, route.method === 'GET' || route.method === 'DELETE' ? undefined : {});
      expect(query.status, `${route.method} ${route.path}?anything=a%00b`).toBe(400);
      expect(query.body.error).toMatchObject({ name: 'Request.Invalid', context: { issues: [{ path: 'anything[0]' }] } });
      if (!route.path.includes(':')) continue;
      const parameter = await rest.call(route.method, pathOf(route.path).replace(unknownId, 'a%00b'), route.method === 'GET' || route.method === 'DELETE' ? undefined : {});
      expect(parameter.status, `${route.method} ${route.path} with %00`).toBe(400);
      expect(parameter.body.error.name).toBe('Request.Invalid');
    }
    // A query parameter named __proto__ is a name like any other.
    const proto = await rest.get('/envelopes?__proto__=%00');
    expect(proto.body.error).toMatchObject({ name: 'Request.Invalid', context: { issues: [{ path: '__proto__[0]' }] } });
  }, 120_000);

  it('refuses NUL in multipart field names, values and file names, storing nothing', async () => {
    const draft = await createDraftWithDocumentAndSigner(app, team.apiKey);
    const pdf = await makePdf({ pages: 1 });
    const documentsBefore = await countRows('document');
    // (A form is sent as UTF-8, where a lone surrogate cannot be written: only NUL reaches a part.)
    for (const fields of [{ name: `Annex${NUL}` }, { [`na${NUL}me`]: 'Annex' }, { context: JSON.stringify({ note: `x${NUL}` }) }, { context: '{"note":"\\ud800"}' }] as Record<
      string,
      string
    >[]) {
      const answer = await uploadDocument(app, team.apiKey, draft.envelopeId, { bytes: pdf }, fields);
      expect(answer.status, JSON.stringify(fields)).toBe(400);
      expect(answer.body.error.name).toBe('Request.Invalid');
    }
    expect(await countRows('document')).toBe(documentsBefore);
    // In a part's header a NUL is a malformed body to the form parser.
    const named = await uploadDocument(app, team.apiKey, draft.envelopeId, { bytes: pdf, filename: `Annex${NUL}.pdf` });
    expect(named.status, JSON.stringify(named.body)).toBe(400);
    expect(named.body.error.name).toBe('Request.Invalid');
    expect(await countRows('document')).toBe(documentsBefore);
  });

  it('leaves headers to the HTTP parser: a NUL in a header is answered 400 by it; other bytes are stored as text', async () => {
    const headers = { 'x-service-api-key': team.apiKey, 'content-type': 'application/json' };
    const withNul = await rawRequest(app.url, { path: '/api/v1/key/envelopes', headers: { ...headers, 'idempotency-key': 'a\u0000b' }, body: { fillerBytes: 0, tail: '{"name":"Header"}' } });
    expect(withNul.status).toBe(400);
    // Bytes past ASCII arrive as Latin-1 text, which PostgreSQL stores like any other.
    const latin1 = await rawRequest(app.url, {
      path: '/api/v1/key/envelopes',
      headers: { ...headers, 'user-agent': 'agent caf\u00e9 \u00fe', connection: 'close' },
      body: { fillerBytes: 0, tail: '{"name":"Header"}' },
    });
    expect(latin1.status, JSON.stringify(latin1.body)).toBe(200);
  });
});

describe('the signing URL (the reported case)', () => {
  it('refuses a NUL or lone surrogate in returnUrl, frameOrigin, agentId or locale on both faces; no URL is made', async () => {
    const built = await buildEnvelope(app, team.apiKey, { name: 'Text check', recipients: [{ identifier: 'signer', order: 1 }] });
    expect((await restClient(app, team.apiKey).put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
    const recipientId = built.recipients.signer!;
    const graphql = graphqlClient(app, team.apiKey);
    for (const bad of BAD) {
      for (const input of [
        { returnUrl: `https://app.example.com/done${bad}` },
        { returnUrl: `https://app.example.com/${bad}done?x=1` },
        { frameOrigin: `https://app.example.com${bad}` },
        { agentId: `agent${bad}` },
        { locale: `en${bad}` },
      ]) {
        const rest = await restClient(app, team.apiKey).post(`/envelopes/${built.envelopeId}/recipients/${recipientId}/signing-url`, input);
        expect(rest.status, JSON.stringify(input)).toBe(400);
        expect(rest.body.error.name).toBe('Request.Invalid');
        // locale is an enum there: GraphQL's own validation names a value that is not one.
        if ('locale' in input) continue;
        const viaGraphql = await graphql(
          'mutation($e: ID!, $r: ID!, $returnUrl: String, $frameOrigin: String, $agentId: ID) { createSigningUrl(envelopeId: $e, recipientId: $r, returnUrl: $returnUrl, frameOrigin: $frameOrigin, agentId: $agentId) { url } }',
          { e: built.envelopeId, r: recipientId, ...input },
        );
        expect(firstErrorName(viaGraphql), JSON.stringify(input)).toBe('Request.Invalid');
      }
    }
    const [{ count }] = await app.orm.em
      .fork()
      .execute<{ count: string }[]>('select count(*) from signing_url u join recipient r on r.id = u.recipient_id where r.envelope_id = ?', [built.envelopeId]);
    expect(Number(count)).toBe(0);
  });
});

describe('GraphQL', () => {
  const mutations: [string, Record<string, unknown>][] = [
    ['mutation($input: CreateEnvelopeInput!) { createEnvelope(input: $input) { id } }', { input: { name: 'Envelope', context: { note: 'x' } } }],
    ['mutation($input: CreateWebhookInput!) { createWebhook(input: $input) { secret } }', { input: { url: 'https://example.com/hook', description: 'hook' } }],
    ['mutation($input: CreateContactInput!) { createContact(input: $input) { id } }', { input: { name: 'Ada', email: 'ada@example.com' } }],
    ['query($q: String, $after: String) { envelopes(q: $q, after: $after) { nodes { id } } }', { q: 'x', after: 'cursor' }],
  ];

  it('refuses NUL and lone surrogates anywhere in the variables, naming the path, before any resolver runs', async () => {
    const graphql = graphqlClient(app, team.apiKey);
    const before = await Promise.all(['envelope', 'webhook_endpoint', 'contact'].map(countRows));
    for (const [query, variables] of mutations) {
      for (const bad of BAD) {
        for (const changed of variants(variables, bad)) {
          const answer = await graphql(query, changed as Record<string, unknown>);
          expect(firstErrorName(answer), `${query} ${JSON.stringify(changed)}`).toBe('Request.Invalid');
          expect(answer.errors![0].extensions.context.issues[0].message).toMatch(/NUL characters or broken Unicode/);
        }
      }
    }
    expect(await Promise.all(['envelope', 'webhook_endpoint', 'contact'].map(countRows))).toEqual(before);
    // Even a variable the operation does not use.
    expect(firstErrorName(await graphql('{ viewer { id } }', { unused: NUL }))).toBe('Request.Invalid');
  });

  it('refuses a "\\u0000" escape in a string literal by name', async () => {
    const graphql = graphqlClient(app, team.apiKey);
    const answer = await graphql('mutation { createEnvelope(input: { name: "Lit\\u0000eral" }) { id } }');
    expect(firstErrorName(answer)).toBe('Request.Invalid');
    const context = await graphql('mutation { createEnvelope(input: { name: "Literal", context: { a: "\\u0000" } }) { id } }');
    expect(firstErrorName(context)).toBe('Request.Invalid');
  });

  it('refuses them over WebSocket too', async () => {
    const socket = new WebSocket(`${app.url.replace(/^http/, 'ws')}/graphql`, 'graphql-transport-ws');
    const messages: any[] = [];
    socket.on('message', (data) => messages.push(JSON.parse(String(data))));
    await new Promise((resolve) => socket.once('open', resolve));
    socket.send(JSON.stringify({ type: 'connection_init', payload: { 'X-Service-Api-Key': team.apiKey } }));
    await expect.poll(() => messages.some((message) => message.type === 'connection_ack')).toBe(true);
    socket.send(
      JSON.stringify({ id: '1', type: 'subscribe', payload: { query: 'subscription($id: ID) { envelopeStatusChanged(envelopeId: $id) { type } }', variables: { id: `a${NUL}` } } }),
    );
    await expect.poll(() => messages.find((message) => message.id === '1' && (message.type === 'next' || message.type === 'error'))).toBeTruthy();
    const answer = messages.find((message) => message.id === '1');
    const errors = answer.type === 'next' ? answer.payload.errors : answer.payload;
    expect(errors[0].extensions.code, JSON.stringify(errors)).toBe('Request.Invalid');
    socket.close();
  });

  it('over WebSocket, a credential no header could carry (NUL, a line break) is a missing one, not a server error', async () => {
    for (const key of [`${team.apiKey}\u0000`, `${team.apiKey}\r\nX: y`, `${team.apiKey}\u0100`]) {
      const socket = new WebSocket(`${app.url.replace(/^http/, 'ws')}/graphql`, 'graphql-transport-ws');
      const messages: any[] = [];
      let closedWith: number | undefined;
      socket.on('message', (data) => messages.push(JSON.parse(String(data))));
      socket.on('close', (code) => (closedWith = code));
      await new Promise((resolve) => socket.once('open', resolve));
      socket.send(JSON.stringify({ type: 'connection_init', payload: { 'X-Service-Api-Key': key } }));
      await expect.poll(() => messages.some((message) => message.type === 'connection_ack')).toBe(true);
      socket.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: 'subscription { envelopeStatusChanged { type } }' } }));
      await expect.poll(() => closedWith !== undefined || messages.some((message) => message.id === '1')).toBe(true);
      expect(closedWith, JSON.stringify(key)).not.toBe(4500);
      const answer = messages.find((message) => message.id === '1');
      const errors = answer.type === 'next' ? answer.payload.errors : answer.payload;
      expect(errors[0].extensions.code).toBe('Auth.MissingApiKey');
      socket.close();
    }
  });
});
