import pg from 'pg';
import { RateLimiterMemory, RateLimiterPostgres, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { DomainError } from './shared/errors.ts';
import type { Logger } from './shared/logger.ts';

/**
 * Who a request is counted against. `apiKey`: an authenticated caller, by key id (each key of a
 * team has its own budget, so one integration cannot starve another). `client`: a request
 * without a valid key, by client address. `signingToken`: a signer's link, by token id; nothing
 * calls it yet (signing arrives with a later issue), the signing routes use `consume` with it.
 */
export type RateLimitScope = 'apiKey' | 'client' | 'signingToken';

/** Requests per minute per scope; 0 turns that scope's limit off. */
export type RateLimits = Record<RateLimitScope, number>;

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
};

/** `Request.RateLimited` (429): too many requests in the window; `context.retryAfterSeconds` says when to retry. */
export class RateLimitedError extends DomainError {
  constructor(decision: RateLimitDecision) {
    super(
      'Request.RateLimited',
      `Too many requests: at most ${decision.limit} per minute ${decision.scope === 'client' ? 'from one client address without an API key' : decision.scope === 'apiKey' ? 'per API key' : 'per signing link'}. Retry after ${decision.retryAfterSeconds} s.`,
      { limit: decision.limit, retryAfterSeconds: decision.retryAfterSeconds, resetAt: decision.resetAt },
    );
  }
}

export type RateLimiter = {
  /** Counts one request against `key` in `scope`; undefined when that scope is not limited. */
  consume(scope: RateLimitScope, key: string): Promise<RateLimitDecision | undefined>;
  close(): Promise<void>;
};

export type RateLimitStore = { kind: 'memory' } | { kind: 'postgres'; connectionString: string; preparedStatements: boolean };

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
  const msBeforeNext = Math.max(0, result.msBeforeNext);
  return {
    allowed,
    limit,
    remaining: allowed ? Math.max(0, result.remainingPoints) : 0,
    resetAt: Math.ceil((Date.now() + msBeforeNext) / 1000),
    retryAfterSeconds: Math.max(1, Math.ceil(msBeforeNext / 1000)),
    scope,
  };
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
  for (const [scope, perMinute] of Object.entries(limits) as [RateLimitScope, number][]) {
    if (perMinute <= 0) continue;
    const common = { keyPrefix: scope, points: perMinute, duration: WINDOW_SECONDS };
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
  return {
    async consume(scope, key) {
      const limiter = limiters.get(scope);
      if (!limiter) return undefined;
      try {
        return decisionOf(scope, limiter.points, await limiter.consume(key), true);
      } catch (rejection) {
        if (rejection instanceof RateLimiterRes) return decisionOf(scope, limiter.points, rejection, false);
        // Neither the store nor the insurance limiter answered: count nothing rather than fail the request.
        options.logger.warn({ err: { message: (rejection as Error)?.message } }, 'rate limiter unavailable');
        return undefined;
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
export async function consumeForRequest(
  limiter: RateLimiter,
  context: { caller(): Promise<{ apiKeyId: string }>; metadata: { ip: string | null } },
): Promise<RateLimitDecision | undefined> {
  const caller = await context.caller().catch(() => undefined);
  if (caller) return limiter.consume('apiKey', caller.apiKeyId);
  return limiter.consume('client', context.metadata.ip ?? 'unknown');
}
