import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classifyAddress } from '../src/domain/webhook/webhook-url.ts';
import { firstErrorName, graphqlClient, restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { buildEnvelope } from './helpers/signing.ts';
import { webhookWorkerFor } from './helpers/workers.ts';

/*
 * Where a webhook may point (src/domain/webhook/webhook-url.ts): every spelling of an inside
 * address is refused when saved, on both faces, by create and by update; so is this service
 * itself, however spelled. The delivery's connect-time check judges addresses the same way.
 */

const PUBLIC_URL = 'https://sign.example.com';
let strict: TestApp;
let lenient: TestApp;

beforeAll(async () => {
  strict = await startTestApp({ env: { PUBLIC_URL } });
  // Plain http to this machine works only with the allowance; this service is still refused.
  lenient = await startTestApp({ env: { WEBHOOK_ALLOW_PRIVATE: 'true', PUBLIC_URL: 'http://127.0.0.1:4000' } });
});

afterAll(async () => {
  await strict?.close();
  await lenient?.close();
});

const CREATE = `mutation($input: CreateWebhookInput!) { createWebhook(input: $input) { webhook { id url } } }`;
const UPDATE = `mutation($id: ID!, $input: UpdateWebhookInput!) { updateWebhook(id: $id, input: $input) { id url } }`;

function ipv4Number(address: string): number {
  return address.split('.').reduce((value, part) => value * 256 + Number(part), 0);
}

function hex16(value: number): [string, string] {
  return [(value >>> 16).toString(16), (value & 0xffff).toString(16)];
}

/** Every way a URL can name an IPv4 address: numeric spellings and each IPv6 form that carries it. */
function spellings(ipv4: string): string[] {
  const value = ipv4Number(ipv4);
  const [high, low] = hex16(value);
  const [clientHigh, clientLow] = hex16(~value >>> 0);
  return [
    `https://${ipv4}/`,
    `https://${value}/`,
    `https://0x${value.toString(16)}/`,
    `https://0${value.toString(8)}/`,
    `https://0x${(value >>> 24).toString(16)}.${value & 0xffffff}/`,
    `https://[::ffff:${ipv4}]/`,
    `https://[::ffff:${high}:${low}]/`,
    `https://[0:0:0:0:0:ffff:${ipv4}]/`,
    `https://[::ffff:0:${ipv4}]/`,
    `https://[::${ipv4}]/`,
    `https://[64:ff9b::${ipv4}]/`,
    `https://[64:ff9b::${high}:${low}]/`,
    `https://[64:ff9b:1::${ipv4}]/`,
    `https://[2002:${high}:${low}::1]/`,
    `https://[2002:${high}:${low}:1:2:3:4:5]/`,
    `https://[2001:0:4136:e378:8000:63bf:${clientHigh}:${clientLow}]/`,
    `https://[2001:0:${high}:${low}::1]/`,
    `https://[2001:470:1:2:0:5efe:${ipv4}]/`,
    `https://[2a00:1450:4001:1:200:5efe:${high}:${low}]/`,
  ];
}

const REFUSED_IPV4 = ['127.0.0.1', '10.0.0.1', '169.254.169.254', '192.168.1.1', '100.64.0.1'];

/** Special-purpose ranges and names refused for themselves. */
const REFUSED_OTHERS = [
  'https://LOCALHOST./x',
  'https://localhost./x',
  'https://localhost../x',
  'https://foo.localhost/x',
  'https://Foo.LocalHost./x',
  'https://printer.local./x',
  'https://db.internal./x',
  'https://router.home.arpa/x',
  'https://intranet/x',
  'https://intranet./x',
  'https://192.0.2.10/x',
  'https://198.51.100.10/x',
  'https://203.0.113.10/x',
  'https://198.18.0.1/x',
  'https://0.0.0.0/x',
  'https://255.255.255.255/x',
  'https://[::]/x',
  'https://[::1]/x',
  'https://[2001:db8::1]/x',
  'https://[fd12:3456:789a::1]/x',
  'https://[fe80::1]/x',
  'https://[fec0::1]/x',
  'https://[ff02::1]/x',
  'https://[100::1]/x',
  'https://[2001:2::1]/x',
  'https://[2001:20::1]/x',
  'https://[3fff::1]/x',
  'https://[5f00::1]/x',
  'https://[4000::1]/x',
];

/** Public addresses in forms the network reaches them by. */
const ACCEPTED = [
  'https://8.8.8.8/x',
  'https://[::ffff:8.8.8.8]/x',
  'https://[::ffff:0:8.8.8.8]/x',
  'https://[64:ff9b::8.8.8.8]/x',
  'https://[2001:470:1:2:0:5efe:8.8.8.8]/x',
  'https://[2a00:1450:4001:81c::200e]/x',
  'https://hooks.example.com./x',
];

/** Transition forms refused even around a public IPv4 address (docs/decisions.md, "Where a webhook may point"). */
const REFUSED_WHATEVER_THEY_CARRY = ['https://[2002:808:808::1]/x', 'https://[::8.8.8.8]/x', 'https://[2001:0:4136:e378:8000:63bf:f7f7:f7f7]/x'];

/** Saves `url` four ways (REST create and update, GraphQL create and update) and answers each refusal's name and context. */
async function saveEveryWay(app: TestApp, team: SeededTeam, existingId: string, url: string) {
  const rest = restClient(app, team.apiKey);
  const graphql = graphqlClient(app, team.apiKey);
  const created = await rest.post('/webhooks', { url });
  const updated = await rest.patch(`/webhooks/${existingId}`, { url });
  const createdViaGraphql = await graphql(CREATE, { input: { url } });
  const updatedViaGraphql = await graphql(UPDATE, { id: existingId, input: { url } });
  return [
    { face: 'REST create', status: created.status, name: created.body.error?.name, context: created.body.error?.context },
    { face: 'REST update', status: updated.status, name: updated.body.error?.name, context: updated.body.error?.context },
    { face: 'GraphQL create', status: 200, name: firstErrorName(createdViaGraphql), context: createdViaGraphql.errors?.[0]?.extensions?.context },
    { face: 'GraphQL update', status: 200, name: firstErrorName(updatedViaGraphql), context: updatedViaGraphql.errors?.[0]?.extensions?.context },
  ];
}

async function teamWithEndpoint(app: TestApp, url = 'https://hooks.example.com/kept'): Promise<{ team: SeededTeam; id: string }> {
  const team = await seedTeam(app);
  const created = await restClient(app, team.apiKey).post('/webhooks', { url });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  return { team, id: created.body.payload.webhook.id };
}

async function expectRefused(app: TestApp, url: string, reason: 'private' | 'self', expected: Record<string, unknown> = {}) {
  // A team per URL keeps each within its key's rate limit.
  const { team, id } = await teamWithEndpoint(app, app === lenient ? 'http://localhost:4001/kept' : undefined);
  for (const answer of await saveEveryWay(app, team, id, url)) {
    expect(answer.name, `${answer.face} ${url}`).toBe('Webhook.AddressNotAllowed');
    expect(answer.context, `${answer.face} ${url}`).toMatchObject({ path: 'url', reason, ...expected });
    if (answer.face.startsWith('REST')) expect(answer.status).toBe(400);
  }
  // Nothing was stored: the endpoint kept its URL, and no other appeared.
  const listed = (await restClient(app, team.apiKey).get('/webhooks')).body.payload.webhooks;
  expect(listed.map((webhook: any) => webhook.url)).toEqual([app === lenient ? 'http://localhost:4001/kept' : 'https://hooks.example.com/kept']);
}

describe('webhook addresses', () => {
  it.each(REFUSED_IPV4)('refuse %s in every spelling and every IPv6 form that carries it, on both faces', async (ipv4) => {
    const forms = spellings(ipv4);
    // The table is what it says: each IPv6 form decodes to this address.
    for (const url of forms.filter((form) => form.includes('['))) {
      const literal = new URL(url).hostname.slice(1, -1);
      expect(classifyAddress(literal).allowed, url).toBe(false);
    }
    const { team, id } = await teamWithEndpoint(strict);
    for (const url of forms) {
      for (const answer of await saveEveryWay(strict, team, id, url)) {
        expect(answer.name, `${answer.face} ${url}`).toBe('Webhook.AddressNotAllowed');
        expect(answer.context, `${answer.face} ${url}`).toMatchObject({ path: 'url', reason: 'private' });
      }
    }
    const read = await restClient(strict, team.apiKey).get(`/webhooks/${id}`);
    expect(read.body.payload.webhook.url).toBe('https://hooks.example.com/kept');
  });

  it('say which IPv4 address an IPv6 form carries, and which range refused it', async () => {
    const { team, id } = await teamWithEndpoint(strict);
    const cases: [string, Record<string, unknown>][] = [
      ['https://[64:ff9b::a9fe:a9fe]/latest', { range: 'link-local', embeddedIPv4: '169.254.169.254' }],
      ['https://[::ffff:0:a00:1]/', { range: 'private', embeddedIPv4: '10.0.0.1' }],
      ['https://[2002:a9fe:a9fe::1]/', { range: '6to4', embeddedIPv4: '169.254.169.254' }],
      // Teredo: the client's address is stored inverted.
      ['https://[2001:0:4136:e378:8000:63bf:f5ff:fffe]/', { range: 'teredo', embeddedIPv4: '10.0.0.1' }],
      ['https://[2001:470:1:2:0:5efe:c0a8:101]/', { range: 'private', embeddedIPv4: '192.168.1.1' }],
      ['https://[2001:db8::1]/', { range: 'documentation' }],
    ];
    for (const [url, expected] of cases) {
      const [answer] = await saveEveryWay(strict, team, id, url);
      expect(answer!.context, url).toMatchObject({ reason: 'private', ...expected });
    }
  });

  it.each(REFUSED_OTHERS)('refuse %s (a special-purpose range, or a name that never leads outside)', async (url) => {
    await expectRefused(strict, url, 'private');
  });

  it.each(REFUSED_WHATEVER_THEY_CARRY)('refuse %s: a deprecated transition form, even around a public IPv4 address', async (url) => {
    await expectRefused(strict, url, 'private');
  });

  it('accept public addresses in the forms the network reaches them by', async () => {
    const team = await seedTeam(strict);
    const rest = restClient(strict, team.apiKey);
    const graphql = graphqlClient(strict, team.apiKey);
    for (const url of ACCEPTED) {
      const created = await rest.post('/webhooks', { url });
      expect(created.status, `${url} ${JSON.stringify(created.body)}`).toBe(200);
      const updated = await graphql(UPDATE, { id: created.body.payload.webhook.id, input: { url } });
      expect(updated.errors, url).toBeUndefined();
      expect((await rest.delete(`/webhooks/${created.body.payload.webhook.id}`)).status).toBe(200);
    }
  });

  it.each(['https://SIGN.EXAMPLE.COM./x', 'https://sign.example.com:443/x', 'https://sign.example.com../graphql'])(
    'refuse this service itself: %s (PUBLIC_URL https://sign.example.com)',
    async (url) => {
      await expectRefused(strict, url, 'self');
    },
  );

  it.each([
    'http://127.0.0.1:4000/x',
    'http://2130706433:4000/x',
    'http://0x7f.1:4000/x',
    'http://017700000001:4000/x',
    'http://127.1:4000/x',
    'http://LOCALHOST.:4000/x',
    'http://app.localhost:4000/x',
    'http://[::1]:4000/x',
    'http://[::ffff:127.0.0.1]:4000/x',
    'https://[::ffff:7f00:1]:4000/x',
  ])('refuse this service itself, however spelled, also with WEBHOOK_ALLOW_PRIVATE: %s (PUBLIC_URL http://127.0.0.1:4000)', async (url) => {
    await expectRefused(lenient, url, 'self');
  });

  it('accept another port of this machine with WEBHOOK_ALLOW_PRIVATE, and another port of the public host', async () => {
    const team = await seedTeam(lenient);
    expect((await restClient(lenient, team.apiKey).post('/webhooks', { url: 'http://localhost:4001/other' })).status).toBe(200);
    const strictTeam = await seedTeam(strict);
    expect((await restClient(strict, strictTeam.apiKey).post('/webhooks', { url: 'https://sign.example.com:8443/other' })).status).toBe(200);
  });

  it('refuse at connect time by the same classification: a stored literal in an IPv6 form is never connected to', async () => {
    // Saved while the allowance was on; delivered by a worker without it.
    const team = await seedTeam(lenient);
    const rest = restClient(lenient, team.apiKey);
    const created = await rest.post('/webhooks', { url: 'https://[::ffff:7f00:1]:9/hook', eventTypes: ['envelope.sent'] });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const webhookId = created.body.payload.webhook.id;
    const built = await buildEnvelope(lenient, team.apiKey, { recipients: [{ identifier: 'alice' }] });
    expect((await rest.put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
    const worker = webhookWorkerFor(lenient, team.teamId, { dependencies: { config: { ...lenient.dependencies.config, webhookAllowPrivate: false } } });
    expect(await worker.drain()).toBe(1);
    const [delivery] = (await rest.get(`/webhooks/${webhookId}/deliveries`)).body.payload.deliveries;
    expect(delivery).toMatchObject({ state: 'failed', lastStatusCode: null, lastErrorCode: 'address_not_allowed' });
    expect(delivery.attempts[0]).toMatchObject({ errorCode: 'address_not_allowed', durationMs: 0 });
    // What a host name may resolve to is judged alike (the resolver's answers in every form it gives).
    for (const resolved of ['::ffff:10.0.0.1', '::ffff:a00:1', '64:ff9b::a9fe:a9fe', 'fe80::1%eth0', '::', '100.64.0.1', '2002:a00:1::1']) {
      expect(classifyAddress(resolved).allowed, resolved).toBe(false);
    }
    expect(classifyAddress('2a00:1450:4001:81c::200e').allowed).toBe(true);
    expect(classifyAddress('::ffff:8.8.8.8').allowed).toBe(true);
  });
});
