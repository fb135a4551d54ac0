import type pg from 'pg';

/*
 * The read model's statements straight on the `pg` pool behind the ORM, when they run outside a
 * transaction (docs/decisions.md, "Reads straight on pg"). Kysely's executor (connection
 * provider, plugins, result wrapping) cost a light read's process more than the statement's own
 * round trip; the compiled text and its values are all a read needs. A read inside a write's
 * transaction still goes through the transaction's Kysely, so it sees that transaction.
 */

/** What a read needs of the pool: the pool itself and the statement observer tests count with. */
export type DirectReads = { pool: pg.Pool; onQuery?: (sql: string) => void };

/** The pool-bound Kysely instance of each ORM connection → its pool (registered at start-up). */
const directReadsByClient = new WeakMap<object, DirectReads>();
/** Statement observers by pool, set where the pool is made (mikro-orm.config.ts). */
const observersByPool = new WeakMap<pg.Pool, (sql: string) => void>();

export function observePoolStatements(pool: pg.Pool, onQuery: (sql: string) => void): void {
  observersByPool.set(pool, onQuery);
}

/** Lets reads on `client` (the ORM connection's pool-bound Kysely) run on `pool` directly. */
export function enableDirectReads(client: object, pool: pg.Pool): void {
  directReadsByClient.set(client, { pool, onQuery: observersByPool.get(pool) });
}

/** The direct path for a reader, or undefined (a transaction's Kysely, or none registered). */
export function directReadsOf(reader: object): DirectReads | undefined {
  return directReadsByClient.get(reader);
}

/**
 * Runs `text` with `values` on a pooled connection. The pool's connections prepare every
 * parameterized statement by name when statements are prepared (db/prepared-statements.ts), so
 * PostgreSQL plans a shape once per connection, as through Kysely. The read model's answers are
 * one `::text` column (JSON written by PostgreSQL), which pg's type parser hands over as it came.
 *
 * The pool's connections answer through pg's callback even though this awaits a promise
 * (db/pg-callbacks.ts): on pg's own promise path a page's 67 KiB of text survived every
 * young-generation collection until the next full one (docs/performance.md, "What survived young
 * collections").
 */
export async function queryDirect<Row>(reads: DirectReads, text: string, values: unknown[]): Promise<Row[]> {
  reads.onQuery?.(text);
  // One argument, as the prepared-statement wrapper expects of this path (pool.query would pass three).
  const client = await reads.pool.connect();
  try {
    const result = await client.query<Row & pg.QueryResultRow>({ text, values });
    return result.rows;
  } finally {
    client.release();
  }
}
