import path from 'node:path';
import { MikroORM } from '@mikro-orm/postgresql';
import { createOrmConfig } from '../../mikro-orm.config.ts';
import type pg from 'pg';
import type { Config } from '../config.ts';
import type { Metrics } from '../shared/metrics.ts';
import { findSharedEmbeddedPostgres, startEmbeddedPostgres, type EmbeddedPostgres } from './embedded-postgres.ts';

export type Database = {
  orm: MikroORM;
  isEmbedded: boolean;
  close(): Promise<void>;
};

/**
 * Opens the database the configuration names (or the embedded one) and applies every pending
 * migration before anything else may use it.
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
  try {
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
    if (!shared) await orm.migrator.up();
    return {
      orm,
      isEmbedded,
      async close() {
        await orm.close(true);
        await embedded?.stop();
      },
    };
  } catch (error) {
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
