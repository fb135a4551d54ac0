import { defineEntity, p } from '@mikro-orm/core';

/**
 * The rate limiter's counters (src/rate-limit.ts), shared by every instance on one PostgreSQL
 * server. rate-limiter-flexible reads and writes this table itself, with its own statements; the
 * entity exists only so that migrations create it and the schema check knows it. The columns are
 * exactly the ones that library expects: `key` is "<scope>:<id>", `points` those consumed in the
 * current window, `expire` the window's end in epoch milliseconds.
 */
export const RateLimitEntrySchema = defineEntity({
  name: 'RateLimitEntry',
  tableName: 'rate_limit',
  properties: {
    key: p.string().length(255).primary(),
    points: p.integer().default(0),
    expire: p.bigint('number').nullable(),
  },
});
