import path from 'node:path';
import { MikroORM } from '@mikro-orm/postgresql';
import pg from 'pg';
import { createOrmConfig } from '../../mikro-orm.config.ts';
import type { Config } from '../config.ts';
import type { Metrics } from '../shared/metrics.ts';
import { enableDirectReads } from './direct-reads.ts';
import { type EmbeddedPostgres, findSharedEmbeddedPostgres, startEmbeddedPostgres } from './embedded-postgres.ts';

export type Database = {
  orm: MikroORM;
  isEmbedded: boolean;
  close(): Promise<void>;
};

/** The advisory lock start-up holds on a PostgreSQL server, keyed like the service's other advisory locks (hashtextextended of a name). */
export const STARTUP_LOCK_NAME = 'envelope-service:start-up';

/**
 * Holds the start-up lock on a connection of its own (a session lock: it must outlive the
 * migrator's transactions, which run on the pool, and it goes away with the connection if this
 * process dies while holding it). Waits, without a limit, while another instance holds it: that
 * instance is migrating, and starting beside a half-migrated schema is what the lock prevents.
 */
async function holdStartupLock(connectionString: string, onWait: () => void): Promise<{ release(): Promise<void> }> {
  const client = new pg.Client({ connectionString });
  // A connection lost while waiting or holding fails the query in flight; without a listener the
  // same loss would also be an uncaught 'error' event.
  client.on('error', () => undefined);
  await client.connect();
  try {
    const [{ locked }] = (await client.query<{ locked: boolean }>('select pg_try_advisory_lock(hashtextextended($1, 0)) as locked', [STARTUP_LOCK_NAME])).rows as [{ locked: boolean }];
    if (!locked) {
      onWait();
      await client.query('select pg_advisory_lock(hashtextextended($1, 0))', [STARTUP_LOCK_NAME]);
    }
  } catch (error) {
    await client.end().catch(() => undefined);
    throw error;
  }
  return {
    async release() {
      // Ending the session releases the lock too; unlocking first says so at once.
      await client.query('select pg_advisory_unlock(hashtextextended($1, 0))', [STARTUP_LOCK_NAME]).catch(() => undefined);
      await client.end().catch(() => undefined);
    },
  };
}

/**
 * Opens the database the configuration names (or the embedded one) and applies every pending
 * migration before anything else may use it. On a PostgreSQL server the migrations and `startUp`
 * (start-up's own writes: the shared-secret fingerprints, the default team) run under one
 * advisory lock, so instances starting at once on an empty database take turns instead of
 * racing to create the same tables and rows (a duplicate-key error killed one before). The
 * embedded database belongs to one process and needs none.
 */
export async function openDatabase(
  config: Pick<Config, 'databaseUrl' | 'dataDir' | 'databaseAcquireTimeoutMs'> & Partial<Pick<Config, 'databasePreparedStatements'>>,
  options: {
    onQuery?: (sql: string) => void;
    /**
     * For short-lived tools (the command line): when the embedded database is held by a running
     * server, use it through that server's socket rather than fail. Its migrations are the
     * server's business, so none are applied then.
     */
    shareRunningEmbedded?: boolean;
    /** Start-up's own writes, run after the migrations and under the same lock; a failure closes the database and is rethrown. */
    startUp?: (orm: MikroORM) => Promise<void>;
    /** Told when another instance holds the start-up lock and this one waits for it. */
    onWaitForStartup?: () => void;
  } = {},
): Promise<Database> {
  let embedded: EmbeddedPostgres | undefined;
  let clientUrl = config.databaseUrl;
  const embeddedDirectory = path.join(config.dataDir, 'postgres');
  const shared = clientUrl === undefined && options.shareRunningEmbedded ? findSharedEmbeddedPostgres(embeddedDirectory) : undefined;
  if (shared) {
    clientUrl = shared;
  } else if (clientUrl === undefined) {
    embedded = await startEmbeddedPostgres(embeddedDirectory);
    clientUrl = embedded.url;
  }
  const isEmbedded = embedded !== undefined || shared !== undefined;
  let startupLock: { release(): Promise<void> } | undefined;
  try {
    if (!isEmbedded) startupLock = await holdStartupLock(clientUrl, options.onWaitForStartup ?? (() => undefined));
    const orm = await MikroORM.init(
      createOrmConfig({
        clientUrl,
        poolMax: isEmbedded ? 1 : 10,
        acquireTimeoutMs: config.databaseAcquireTimeoutMs,
        onQuery: options.onQuery,
        // PGlite shares prepared statements among its connections; see db/prepared-statements.ts.
        prepareStatements: !isEmbedded && (config.databasePreparedStatements ?? true),
      }),
    );
    try {
      if (!shared) await orm.migrator.up();
      await options.startUp?.(orm);
    } catch (error) {
      await orm.close(true);
      throw error;
    }
    await startupLock?.release();
    startupLock = undefined;
    return {
      orm,
      isEmbedded,
      async close() {
        await orm.close(true);
        await embedded?.stop();
      },
    };
  } catch (error) {
    await startupLock?.release();
    await embedded?.stop();
    throw error;
  }
}

/** Readiness: the database answers and no migration is pending. */
export async function isDatabaseReady(orm: MikroORM): Promise<boolean> {
  try {
    await orm.em.fork().getConnection().execute('select 1');
    const pending = await orm.migrator.getPending();
    return pending.length === 0;
  } catch {
    return false;
  }
}

/**
 * Refreshes the pool gauges before each scrape from the `pg` pool behind the ORM (total, idle,
 * waiting). The embedded PostgreSQL is reached through the same kind of pool (of one), so the
 * gauges mean the same there. The rate limiter's own small pool is not counted.
 */
export function watchPoolUsage(orm: MikroORM, metrics: Pick<Metrics, 'onScrape' | 'dbPoolTotal' | 'dbPoolIdle' | 'dbPoolWaiting'>): () => void {
  return metrics.onScrape(async () => {
    const pool = (await orm.driver.getConnection().getNativeClient()) as Pick<pg.Pool, 'totalCount' | 'idleCount' | 'waitingCount'>;
    metrics.dbPoolTotal.set(pool.totalCount);
    metrics.dbPoolIdle.set(pool.idleCount);
    metrics.dbPoolWaiting.set(pool.waitingCount);
  });
}

/**
 * Lets the read model run its statements outside transactions straight on the ORM's `pg` pool
 * (db/direct-reads.ts): the pool-bound Kysely instance that `em.getKysely()` hands out there is
 * registered with its pool. Inside a transaction `getKysely()` answers the transaction's own.
 */
export async function readDirectlyOnPool(orm: MikroORM): Promise<void> {
  const connection = orm.driver.getConnection();
  const pool = (await connection.getNativeClient()) as pg.Pool;
  enableDirectReads(connection.getClient(), pool);
}
