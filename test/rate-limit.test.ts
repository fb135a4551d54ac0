import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createApiKey } from '../src/domain/team/team.service.ts';
import { createRateLimiter } from '../src/http/rate-limit.ts';
import { createLogger } from '../src/shared/logger.ts';
import { makePdf } from './fixtures/pdfs.ts';
import { uploadDocument } from './helpers/envelopes.ts';
import { firstErrorName, graphqlClient, restClient, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';

/**
 * Low limits for this file's own app, so the tests reach them quickly. The other test files run
 * with the defaults (600 per key per minute), which none of them comes near.
 */
const PER_KEY = 60;
const ANONYMOUS = 4;
let app: TestApp;

beforeAll(async () => {
  app = await startTestApp({
    // As in production: verified keys are cached, on the embedded database too.
    apiKeyCache: inject('databaseKind') === 'embedded' ? { listen: false } : undefined,
    env: {
      RATE_LIMIT_PER_MINUTE: String(PER_KEY),
      RATE_LIMIT_ANONYMOUS_PER_MINUTE: String(ANONYMOUS),
      // Each anonymous test below comes from an address of its own (X-Forwarded-For), so parallel
      // test files, which all call from 127.0.0.1, never share its budget.
      TRUST_PROXY_HOPS: '1',
    },
  });
});
afterAll(async () => {
  await app.close();
});

function expectBudgetHeaders(headers: Headers, remaining: number) {
  expect(headers.get('x-ratelimit-limit')).toBe(String(PER_KEY));
  expect(headers.get('x-ratelimit-remaining')).toBe(String(remaining));
  const reset = Number(headers.get('x-ratelimit-reset'));
  const now = Date.now() / 1000;
  expect(reset).toBeGreaterThan(now - 1);
  expect(reset).toBeLessThanOrEqual(now + 61);
}

/**
 * Sends requests with `workers` in parallel from a child process until stopped; `started`
 * resolves once the first answer came back, `refused` once the first 429 did, `stop()` with every
 * status it got.
 */
function startBurst(url: string, apiKey: string, workers: number): { started: Promise<void>; refused: Promise<void>; stop(): Promise<number[]> } {
  const script = `
    let running = true;
    let saidRefused = false;
    const statuses = [];
    process.stdin.on('data', () => { running = false; });
    process.stdin.resume();
    const worker = async () => {
      while (running) {
        const answer = await fetch(${JSON.stringify(url)}, { headers: { 'x-service-api-key': ${JSON.stringify(apiKey)} } });
        await answer.arrayBuffer();
        if (statuses.length === 0) process.stdout.write('started\\n');
        if (answer.status === 429 && !saidRefused) {
          saidRefused = true;
          process.stdout.write('refused\\n');
        }
        statuses.push(answer.status);
      }
    };
    Promise.all(Array.from({ length: ${workers} }, worker)).then(() => {
      process.stdout.write(JSON.stringify(statuses) + '\\n');
      process.exit(0);
    });
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  let output = '';
  let markStarted: () => void = () => {};
  let markRefused: () => void = () => {};
  const started = new Promise<void>((resolve) => (markStarted = resolve));
  const refused = new Promise<void>((resolve) => (markRefused = resolve));
  const finished = new Promise<number[]>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
      if (output.startsWith('started')) markStarted();
      if (output.includes('refused\n')) markRefused();
    });
    child.once('error', reject);
    child.once('exit', () => resolve(JSON.parse(output.trim().split('\n').pop() ?? '[]') as number[]));
  });
  // Never left running past the test, whatever happens.
  const timer = setTimeout(() => child.kill(), 60_000);
  return {
    started,
    refused,
    async stop() {
      child.stdin.write('stop\n');
      const statuses = await finished;
      clearTimeout(timer);
      return statuses;
    },
  };
}

describe('rate limits per API key', () => {
  it('REST: every answer carries the budget; past it, 429 Request.RateLimited with Retry-After, and nothing runs', async () => {
    const team = await seedTeam(app);
    const rest = restClient(app, team.apiKey);
    const first = await rest.get('/envelopes');
    expect(first.status).toBe(200);
    expectBudgetHeaders(first.headers, PER_KEY - 1);
    // Errors count and carry the headers too.
    const notFound = await rest.get('/no-such-route');
    expect(notFound.status).toBe(404);
    expectBudgetHeaders(notFound.headers, PER_KEY - 2);
    for (let index = 3; index <= PER_KEY; index += 1) {
      const answer = await rest.get('/envelopes?limit=1');
      expect(answer.status).toBe(200);
      expect(answer.headers.get('x-ratelimit-remaining')).toBe(String(PER_KEY - index));
    }
    const refused = await rest.post('/envelopes', { name: 'Over the limit' });
    expect(refused.status).toBe(429);
    expect(refused.body.error.name).toBe('Request.RateLimited');
    expect(refused.body.error.context.requestId).toBeTruthy();
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(refused.body.error.context.retryAfterSeconds).toBe(retryAfter);
    expectBudgetHeaders(refused.headers, 0);

    // The same budget on GraphQL: HTTP 429 and the same error name.
    const response = await fetch(`${app.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-service-api-key': team.apiKey },
      body: JSON.stringify({ query: '{ viewer { id } }' }),
    });
    const body = (await response.json()) as { data?: unknown; errors?: any[] };
    expect(response.status).toBe(429);
    expect(body.errors?.[0]?.extensions?.code).toBe('Request.RateLimited');
    expect(body.errors?.[0]?.extensions?.context?.requestId).toBeTruthy();
    expect(Number(response.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(response.headers.get('x-ratelimit-remaining')).toBe('0');

    // An upload past the limit is refused too, without waiting for or storing the file.
    const upload = await uploadDocument(app, team.apiKey, '00000000-0000-4000-8000-000000000000', { bytes: await makePdf({ pages: 1 }) });
    expect(upload.status).toBe(429);
    expect(upload.body.error.name).toBe('Request.RateLimited');

    // The refused create changed nothing.
    const rows = await app.orm.em.fork().getConnection().execute<{ count: string }[]>(`select count(*) from envelope where team_id = ?`, [team.teamId]);
    expect(Number(rows[0].count)).toBe(0);
  });

  it('GraphQL: operations count against the key, on the budget REST uses, and answers carry it', async () => {
    const team = await seedTeam(app);
    const graphql = graphqlClient(app, team.apiKey);
    const response = await fetch(`${app.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-service-api-key': team.apiKey },
      body: JSON.stringify({ query: '{ viewer { id } }' }),
    });
    await response.arrayBuffer();
    expectBudgetHeaders(response.headers, PER_KEY - 1);
    const rest = await restClient(app, team.apiKey).get('/envelopes');
    expectBudgetHeaders(rest.headers, PER_KEY - 2);
    for (let index = 3; index <= PER_KEY; index += 1) expect((await graphql('{ viewer { id } }')).errors).toBeUndefined();
    const refused = await graphql('{ viewer { id } }');
    expect(refused.status).toBe(429);
    expect(firstErrorName(refused)).toBe('Request.RateLimited');
    expect(refused.data ?? null).toBeNull();
  });

  it('counts requests without a valid key per client address', async () => {
    const address = `198.51.100.${Math.floor(Math.random() * 250) + 1}`;
    const call = (key: string | undefined) =>
      fetch(`${app.url}/api/v1/key/envelopes`, { headers: { 'x-forwarded-for': address, ...(key === undefined ? {} : { 'x-service-api-key': key }) } });
    const statuses: number[] = [];
    for (let index = 0; index < ANONYMOUS; index += 1) {
      const answer = await call(index % 2 === 0 ? undefined : 'esk_not-a-real-key');
      statuses.push(answer.status);
      expect(answer.headers.get('x-ratelimit-limit')).toBe(String(ANONYMOUS));
    }
    expect(statuses).toEqual(Array(ANONYMOUS).fill(401));
    const refused = await call(undefined);
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as any).error.name).toBe('Request.RateLimited');
    // A valid key from the same address is counted against the key, not the address.
    const team = await seedTeam(app);
    expect((await call(team.apiKey)).status).toBe(200);
  });

  it('one team bursting past its limit leaves another team served while its key is being refused', async () => {
    const bursting = await seedTeam(app);
    const steady = await seedTeam(app);
    const steadyRest = restClient(app, steady.apiKey);
    const envelopeId = (await steadyRest.post('/envelopes', { name: 'Steady' })).body.payload.envelopeId;
    // The bursting team's requests are the heavy kind: a page of 28 envelopes. They are seeded
    // through a second key of that team, which has a budget of its own.
    const seeder = await createApiKey(app.orm.em.fork(), { teamId: bursting.teamId });
    const seedRest = restClient(app, seeder.apiKey);
    for (let batch = 0; batch < 2; batch += 1) {
      await Promise.all(Array.from({ length: 14 }, (_, index) => seedRest.post('/envelopes', { name: `Burst ${batch}-${index}`, context: { note: 'x'.repeat(500) } })));
    }

    const steadyRead = async () => {
      const answer = await steadyRest.get(`/envelopes/${envelopeId}?includeDocuments=true&includeRecipients=true&includeFields=true`);
      expect(answer.status).toBe(200);
    };
    await steadyRead();

    // The burst comes from another process, as another team's integration would: its client-side
    // work must not share this process's event loop with the server and the steady team's client.
    const burst = startBurst(`${app.url}/api/v1/key/envelopes?limit=100`, bursting.apiKey, 8);
    await burst.started;
    // Measured once the burst is past its budget, however long a busy machine takes to get there:
    // the steady team is served while the other team's key is being refused.
    await burst.refused;
    for (let index = 0; index < 20; index += 1) await steadyRead();
    const burstStatuses = await burst.stop();

    const refused = burstStatuses.filter((status) => status === 429).length;
    const served = burstStatuses.filter((status) => status === 200).length;
    // The burst really went past the limit, and no more than the budget was served.
    // (The reads above waited for the first refusal, so the burst went past the budget whatever the machine's speed.)
    expect(served + refused).toBeGreaterThan(PER_KEY);
    expect(refused).toBeGreaterThan(0);
    expect(served).toBeLessThanOrEqual(PER_KEY);
    // Every steady read, made while the other key was being refused, succeeded (steadyRead asserts
    // it): the limit is per key, not shared. How much the burst slows the steady team is a
    // latency, which a loaded machine moves: bench/fairness.ts measures it
    // (p10_flood_p99_ratio, and p10_refused_flood_p99_ratio for refusals that would cost
    // database work), not this test.
  });
});

describe('a client that ignores Retry-After (floods held at the listener)', () => {
  // The longest hold the config allows: the other team's request below must be answered inside it,
  // and that must hold on a loaded machine too (only a hang, not a slow answer, may fail it).
  const HOLD_MS = 10_000;
  let holding: TestApp;
  beforeAll(async () => {
    holding = await startTestApp({ env: { RATE_LIMIT_PER_MINUTE: '3', RATE_LIMIT_REFUSAL_HOLD_MS: String(HOLD_MS) } });
  });
  afterAll(async () => {
    await holding.close();
  });

  it('gets its first refusal at once and each later one only after the hold; other teams are answered meanwhile', async () => {
    const flooding = await seedTeam(holding);
    const other = await seedTeam(holding);
    const rest = restClient(holding, flooding.apiKey);
    for (let index = 0; index < 3; index += 1) expect((await rest.get('/envelopes?limit=1')).status).toBe(200);
    // The limiter's own refusal: answered as soon as it is decided, with when to come back.
    const first = await rest.get('/envelopes?limit=1');
    expect(first.status).toBe(429);
    expect(Number(first.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);

    // Asking again at once: the listener holds the answer.
    let heldAnswered = false;
    const askedAt = performance.now();
    const held = rest.get('/envelopes?limit=1').then((answer) => {
      heldAnswered = true;
      return { answer, afterMs: performance.now() - askedAt };
    });
    // Another team is served while the refusal is held.
    const otherTeam = await restClient(holding, other.apiKey).get('/envelopes?limit=1');
    expect(otherTeam.status).toBe(200);
    expect(heldAnswered).toBe(false);
    const { answer, afterMs } = await held;
    // Timers never fire early by more than a millisecond's rounding; the hold is a lower bound.
    expect(afterMs).toBeGreaterThanOrEqual(HOLD_MS - 5);
    expect(answer.status).toBe(429);
    expect(answer.body.error.name).toBe('Request.RateLimited');
    expect(answer.body.error.context.requestId).toBeTruthy();
    expect(answer.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(Number(answer.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(answer.body.error.context.retryAfterSeconds).toBe(Number(answer.headers.get('retry-after')));
  });

  it('lets a client that goes away during the hold go, and the server keeps answering', async () => {
    const flooding = await seedTeam(holding);
    const rest = restClient(holding, flooding.apiKey);
    for (let index = 0; index < 4; index += 1) await rest.get('/envelopes?limit=1');
    const gone = new AbortController();
    const abandoned = fetch(`${holding.url}/api/v1/key/envelopes`, { headers: { 'x-service-api-key': flooding.apiKey }, signal: gone.signal }).catch((error: Error) => error.name);
    gone.abort();
    expect(await abandoned).toBe('AbortError');
    const again = await rest.get('/envelopes?limit=1');
    expect(again.status).toBe(429);
    expect((await restClient(holding, (await seedTeam(holding)).apiKey).get('/envelopes?limit=1')).status).toBe(200);
  });
});

describe.skipIf(inject('databaseKind') === 'embedded')('rate limits on a PostgreSQL server', () => {
  it("are shared by every instance: two processes' limiters draw on one budget per key", async () => {
    const store = { kind: 'postgres' as const, connectionString: inject('databaseUrl'), preparedStatements: false };
    const limits = { apiKey: 5, client: 0, signingToken: 3 };
    const first = createRateLimiter({ limits, store, logger: createLogger('silent') });
    const second = createRateLimiter({ limits, store, logger: createLogger('silent') });
    try {
      const key = `shared-${Date.now()}-${Math.random()}`;
      const decisions = [];
      for (let index = 0; index < 6; index += 1) decisions.push(await (index % 2 === 0 ? first : second).consume('apiKey', key));
      expect(decisions.map((decision) => decision?.allowed)).toEqual([true, true, true, true, true, false]);
      expect(decisions.map((decision) => decision?.remaining)).toEqual([4, 3, 2, 1, 0, 0]);
      // Signing links have their own scope and limit, keyed by any string.
      const token = `token-${Date.now()}`;
      for (let index = 0; index < 3; index += 1) expect((await second.consume('signingToken', token))?.allowed).toBe(true);
      expect((await first.consume('signingToken', token))?.allowed).toBe(false);
      // A scope set to 0 is not limited.
      expect(await first.consume('client', '203.0.113.9')).toBeUndefined();
    } finally {
      await first.close();
      await second.close();
    }
  });
});
