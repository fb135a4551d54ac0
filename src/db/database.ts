import path from 'node:path';
import { MikroORM } from '@mikro-orm/postgresql';
import { createOrmConfig } from '../../mikro-orm.config.ts';
import type { Config } from '../config.ts';
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
