import { LRUCache } from 'lru-cache';
import pg from 'pg';
import { type RateLimiterAbstract, RateLimiterMemory, RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import { DomainError } from '../shared/errors.ts';
import { hashSecret } from '../shared/ids.ts';
import type { Logger } from '../shared/logger.ts';
import type { Metrics } from '../shared/metrics.ts';

/**
 * Who a request is counted against. `apiKey`: an authenticated caller, by key id (each key of a
 * team has its own budget, so one integration cannot starve another). `client`: a request
 * without a valid key, by client address. `signingToken`: a signer's link (a request carrying
 * `X-Signing-Token`), by a hash of the token, so a leaked link cannot hammer the service.
 * `signingPage`: the document pages a link's signing page fetches as the signer scrolls, by the
 * same hash, apart from the link's other requests: a long document scrolled through must not
 * spend the budget the signer's own operations (the signature) need.
 * `publicLink`: every request to one public link's page (`/f/<slug>`), by a hash of the slug,
 * known or not, so a flood on one team's link is refused before any database work;
 * `publicLinkAddress`: every request to any public link's page from one client address.
 */
export type RateLimitScope = 'apiKey' | 'client' | 'signingToken' | 'signingPage' | 'publicLink' | 'publicLinkAddress';

/** Requests per minute per scope; 0 turns that scope's limit off. */
export type RateLimits = Partial<Record<RateLimitScope, number>>;

export type RateLimitDecision = {
  allowed: boolean;
  /** The budget of the window (`X-RateLimit-Limit`). */
  limit: number;
  /** What is left of it after this request (`X-RateLimit-Remaining`). */
  remaining: number;
  /** When the window ends, in epoch seconds (`X-RateLimit-Reset`). */
  resetAt: number;
  /** Whole seconds until a refused request is worth retrying (`Retry-After`); at least 1. */
  retryAfterSeconds: number;
  scope: RateLimitScope;
  /** When the window ends, in epoch milliseconds (the over-budget marks keep a refusal until then). */
  windowEndsAtMs?: number;
};

const SCOPE_WORDS: Record<RateLimitScope, string> = {
  client: 'from one client address without an API key',
  apiKey: 'per API key',
  signingToken: 'per signing link',
  signingPage: 'of document pages per signing link',
  publicLink: 'per public link',
  publicLinkAddress: 'from one client address on public links',
};

/** `Request.RateLimited` (429): too many requests in the window; `context.retryAfterSeconds` says when to retry. */
export class RateLimitedError extends DomainError {
  constructor(decision: RateLimitDecision) {
    super('Request.RateLimited', `Too many requests: at most ${decision.limit} per minute ${SCOPE_WORDS[decision.scope]}. Retry after ${decision.retryAfterSeconds} s.`, {
      limit: decision.limit,
      retryAfterSeconds: decision.retryAfterSeconds,
      resetAt: decision.resetAt,
    });
  }
}

export type RateLimiter = {
  /** Counts one request against `key` in `scope`; undefined when that scope is not limited. */
  consume(scope: RateLimitScope, key: string): Promise<RateLimitDecision | undefined>;
  close(): Promise<void>;
};

export type RateLimitStore =
  | { kind: 'memory' }
  | {
      kind: 'postgres';
      connectionString: string;
      preparedStatements: boolean;
      /**
       * Counters of limiters with the same namespace are shared; others are apart although in one
       * table. Unset in the service (every instance shares its budgets); the test harness gives each
       * test file's process its own, so files running side by side do not spend one another's
       * budgets for 127.0.0.1.
       */
      namespace?: string;
    };

const WINDOW_SECONDS = 60;
/** The table the migration creates (src/db/rate-limit.entity.ts); the limiter never creates it. */
const TABLE = 'rate_limit';

/** The rate-limit headers of an answer: on every REST answer, and on GraphQL answers. */
export function rateLimitHeaders(decision: RateLimitDecision): Record<string, string> {
  const headers: Record<string, string> = {
    'x-ratelimit-limit': String(decision.limit),
    'x-ratelimit-remaining': String(decision.remaining),
    'x-ratelimit-reset': String(decision.resetAt),
  };
  if (!decision.allowed) headers['retry-after'] = String(decision.retryAfterSeconds);
  return headers;
}

function decisionOf(scope: RateLimitScope, limit: number, result: RateLimiterRes, allowed: boolean): RateLimitDecision {
  return refusalUntil(scope, limit, Date.now() + Math.max(0, result.msBeforeNext), allowed ? { allowed, remaining: Math.max(0, result.remainingPoints) } : undefined);
}

/** The decision for a window ending at `windowEndsAtMs`: a refusal, unless `granted` says it is allowed with `remaining` points left. */
function refusalUntil(scope: RateLimitScope, limit: number, windowEndsAtMs: number, granted?: { allowed: boolean; remaining: number }): RateLimitDecision {
  const { allowed, remaining } = granted ?? { allowed: false, remaining: 0 };
  const msBeforeNext = Math.max(0, windowEndsAtMs - Date.now());
  return {
    allowed,
    limit,
    remaining,
    resetAt: Math.ceil(windowEndsAtMs / 1000),
    retryAfterSeconds: Math.max(1, Math.ceil(msBeforeNext / 1000)),
    scope,
    windowEndsAtMs,
  };
}

/**
 * API keys known to be over their budget until their window ends, in this process: the REST
 * listener asks before anything else (before the URL's route, the request context, the key's
 * verification or the shared counter), so a client that ignores `Retry-After` costs a lookup and
 * a small answer per request rather than a whole request's work (docs/decisions.md, "REST beside
 * yoga"). A key is marked only when the limiter itself refused it (in whichever store, so the
 * budget shared by every instance is what decides); the mark lasts exactly until that refusal's
 * window ends, so no request the limiter would serve is refused. Keys are kept hashed.
 */
export function createOverBudgetMarks(options: { max?: number } = {}) {
  const marks = new LRUCache<string, { limit: number; windowEndsAtMs: number }>({ max: options.max ?? 10_000 });
  return {
    /** Remembers a refusal of `apiKey` (the header's value) in the apiKey scope. */
    mark(apiKey: string, decision: RateLimitDecision): void {
      if (decision.allowed || decision.scope !== 'apiKey' || decision.windowEndsAtMs === undefined) return;
      marks.set(hashSecret(apiKey), { limit: decision.limit, windowEndsAtMs: decision.windowEndsAtMs });
    },
    /** The refusal to answer for `apiKey` now, if its window has not ended. */
    refusal(apiKey: string): RateLimitDecision | undefined {
      if (marks.size === 0) return undefined;
      const key = hashSecret(apiKey);
      const mark = marks.get(key);
      if (!mark) return undefined;
      if (Date.now() >= mark.windowEndsAtMs) {
        marks.delete(key);
        return undefined;
      }
      return refusalUntil('apiKey', mark.limit, mark.windowEndsAtMs);
    },
  };
}

export type OverBudgetMarks = ReturnType<typeof createOverBudgetMarks>;

/**
 * Tokens this process took from the shared counter ahead of use (PostgreSQL store): a request
 * spends a local token when it has one and asks the database for a new chunk (a twentieth of the
 * budget) only when they are gone, so counting costs one statement per chunk, not per request.
 * The tokens expire with the counter's window. Several instances may each hold part of a chunk,
 * so a key can be refused a few requests early; it is never served more than its budget.
 */
type Lease = { remaining: number; sharedRemaining: number; expiresAt: number };

function chunkOf(points: number): number {
  return Math.max(1, Math.floor(points / 20));
}

/**
 * Fixed one-minute windows per key (rate-limiter-flexible). The whole minute's budget may be spent
 * in a burst; past it, requests are refused until the window ends.
 *
 * - `postgres`: the counters live in the `rate_limit` table of the service's own database, so every
 *   instance shares them. The limiter has a small pool of its own: its statements never wait
 *   behind, nor count as, a request's own. Once a key is over its limit it is also blocked in
 *   this process's memory until its window ends, so a burst past the limit costs no database
 *   work and cannot slow other teams down. If the database cannot be reached, counting falls back
 *   to memory (an "insurance" limiter) rather than refusing or failing every request.
 * - `memory`: counters in this process (the embedded database serves one process only).
 */
export function createRateLimiter(options: { limits: RateLimits; store: RateLimitStore; logger: Logger }): RateLimiter {
  const { limits, store } = options;
  let pool: pg.Pool | undefined;
  let client: { query(query: { text: string; values?: unknown[]; name?: string }): Promise<unknown> } | undefined;
  if (store.kind === 'postgres') {
    pool = new pg.Pool({ connectionString: store.connectionString, max: 4, connectionTimeoutMillis: 2000, idleTimeoutMillis: 30_000 });
    // An idle connection that breaks must not become an unhandled 'error' (which ends the process).
    pool.on('error', (error) => options.logger.warn({ err: { message: error.message } }, 'rate limiter connection lost'));
    const owned = pool;
    // The library names its statements; behind a transaction-pooling proxy they must stay unnamed.
    client = {
      query: (query) => owned.query(store.preparedStatements ? query : { text: query.text, values: query.values }),
    };
  }
  const limiters = new Map<RateLimitScope, RateLimiterAbstract>();
  // Only a shared store is worth leasing from: memory counters cost nothing to ask.
  const leasing = store.kind === 'postgres';
  for (const [scope, perMinute] of Object.entries(limits) as [RateLimitScope, number | undefined][]) {
    if (perMinute === undefined) continue;
    if (perMinute <= 0) continue;
    const common = { keyPrefix: store.kind === 'postgres' && store.namespace ? `${store.namespace}:${scope}` : scope, points: perMinute, duration: WINDOW_SECONDS };
    limiters.set(
      scope,
      client
        ? new RateLimiterPostgres({
            ...common,
            storeClient: client,
            storeType: 'pool',
            tableName: TABLE,
            tableCreated: true,
            inMemoryBlockOnConsumed: perMinute,
            insuranceLimiter: new RateLimiterMemory(common),
          })
        : new RateLimiterMemory(common),
    );
  }
  const leases = new LRUCache<string, Lease>({ max: 10_000 });
  const pending = new Map<string, Promise<RateLimitDecision | undefined>>();

  /** One request counted straight in the store (memory), or a chunk of them (PostgreSQL, see Lease). */
  async function take(key: string, limiter: RateLimiterAbstract, points: number): Promise<{ result: RateLimiterRes; allowed: boolean } | undefined> {
    try {
      return { result: await limiter.consume(key, points), allowed: true };
    } catch (rejection) {
      if (rejection instanceof RateLimiterRes) return { result: rejection, allowed: false };
      // Neither the store nor the insurance limiter answered: count nothing rather than fail the request.
      options.logger.warn({ err: { message: (rejection as Error)?.message } }, 'rate limiter unavailable');
      return undefined;
    }
  }

  async function leaseChunk(scope: RateLimitScope, key: string, limiter: RateLimiterAbstract, leaseKey: string): Promise<RateLimitDecision | undefined> {
    const previous = leases.get(leaseKey);
    // Never ask for more than the shared counter had left last time: a refused chunk would still be
    // counted, and the requests it stood for would be refused although some of them fit.
    const chunk = Math.max(1, Math.min(chunkOf(limiter.points), previous ? previous.sharedRemaining : chunkOf(limiter.points)));
    const taken = await take(key, limiter, chunk);
    if (!taken) return undefined;
    if (!taken.allowed) return decisionOf(scope, limiter.points, taken.result, false);
    const expiresAt = Date.now() + Math.max(0, taken.result.msBeforeNext);
    // This request uses one of the chunk's tokens; the rest stay here for the next ones.
    leases.set(leaseKey, { remaining: chunk - 1, sharedRemaining: Math.max(0, taken.result.remainingPoints), expiresAt });
    return { ...decisionOf(scope, limiter.points, taken.result, true), remaining: Math.max(0, taken.result.remainingPoints) + chunk - 1 };
  }

  return {
    async consume(scope, key) {
      const limiter = limiters.get(scope);
      if (!limiter) return undefined;
      if (!leasing) {
        const taken = await take(key, limiter, 1);
        return taken && decisionOf(scope, limiter.points, taken.result, taken.allowed);
      }
      const leaseKey = `${scope}:${key}`;
      for (;;) {
        const lease = leases.get(leaseKey);
        const now = Date.now();
        if (lease && lease.remaining > 0 && now < lease.expiresAt) {
          lease.remaining -= 1;
          return {
            allowed: true,
            limit: limiter.points,
            remaining: lease.sharedRemaining + lease.remaining,
            resetAt: Math.ceil(lease.expiresAt / 1000),
            retryAfterSeconds: Math.max(1, Math.ceil((lease.expiresAt - now) / 1000)),
            scope,
          };
        }
        // One chunk request per key at a time; requests that arrive meanwhile wait and then use it.
        const inFlight = pending.get(leaseKey);
        if (inFlight) {
          await inFlight;
          continue;
        }
        const request = leaseChunk(scope, key, limiter, leaseKey).finally(() => pending.delete(leaseKey));
        pending.set(leaseKey, request);
        return request;
      }
    },
    async close() {
      await pool?.end();
    },
  };
}

/**
 * Counts a request of either face: against its API key once the key is known valid, otherwise
 * against the client address. Authenticating here costs nothing extra: the caller is looked up
 * once per request and remembered, and a request with a bad key still gets its own error later,
 * in the same order as before (this only decides whom to count it against).
 */
/** Signing links already counted against their client address in the current window (bounded). */
const linksSeenThisWindow = new LRUCache<string, true>({ max: 50_000, ttl: WINDOW_SECONDS * 1000 });

export async function consumeForRequest(
  limiter: RateLimiter,
  context: { caller(): Promise<{ apiKeyId: string }>; metadata: { ip: string | null }; signingToken?: string; metrics?: Pick<Metrics, 'rateLimited'> },
  /** `signingPage`: a document page of the signing page, counted in its link's page budget. */
  linkScope: 'signingToken' | 'signingPage' = 'signingToken',
): Promise<RateLimitDecision | undefined> {
  const decision = await decide(limiter, context, linkScope);
  // Counted here, where both faces and the signing page's document route ask, once per refused request.
  if (decision && !decision.allowed) context.metrics?.rateLimited.inc({ scope: decision.scope });
  return decision;
}

async function decide(
  limiter: RateLimiter,
  context: { caller(): Promise<{ apiKeyId: string }>; metadata: { ip: string | null }; signingToken?: string },
  linkScope: 'signingToken' | 'signingPage',
): Promise<RateLimitDecision | undefined> {
  // The recipient side carries a link: each link has its own budget (and its pages another).
  if (context.signingToken) {
    const linkHash = hashSecret(context.signingToken);
    const perLink = await limiter.consume(linkScope, linkHash);
    if (perLink && !perLink.allowed) return perLink;
    // A link counts against its client address only the first time this process sees it in a
    // window: inventing links still spends the address's budget (one request per invented link),
    // while fifty colleagues signing from one office address cost it fifty requests a minute, not
    // every request of every page they have open.
    if (linksSeenThisWindow.has(linkHash)) return perLink;
    linksSeenThisWindow.set(linkHash, true);
    // The answer's budget headers stay the link's, unless it is the address that refuses.
    const byAddress = await decideByCaller(limiter, context);
    return byAddress && !byAddress.allowed ? byAddress : (perLink ?? byAddress);
  }
  return decideByCaller(limiter, context);
}

/** Counts a request against its API key once the key is known valid, otherwise against its client address. */
async function decideByCaller(limiter: RateLimiter, context: { caller(): Promise<{ apiKeyId: string }>; metadata: { ip: string | null } }): Promise<RateLimitDecision | undefined> {
  let caller: { apiKeyId: string } | undefined;
  try {
    caller = await context.caller();
  } catch (error) {
    // Only a request without a valid key (Auth.*) is counted against its client address. One whose
    // key could not be checked (the database is away) is not counted as anonymous traffic: it is
    // answered by that failure (Server.Unavailable), not refused with 429 once an outage has
    // spent the address's budget.
    if (!(error instanceof DomainError && error.name.startsWith('Auth.'))) return undefined;
  }
  if (caller) return limiter.consume('apiKey', caller.apiKeyId);
  return limiter.consume('client', context.metadata.ip ?? 'unknown');
}

/**
 * A bulk send's rows spend their key's budget like requests (workers.ts `spendRateBudget`): one
 * request per row, from the same counter the key's requests use. Answers the milliseconds until
 * the window ends when the budget is spent (the job waits that long), else 0.
 */
export function rateBudgetSpender(limiter: RateLimiter): (apiKeyId: string) => Promise<number> {
  return async (apiKeyId) => {
    const decision = await limiter.consume('apiKey', apiKeyId);
    if (!decision || decision.allowed) return 0;
    return Math.max(1000, (decision.windowEndsAtMs ?? Date.now() + decision.retryAfterSeconds * 1000) - Date.now());
  };
}
