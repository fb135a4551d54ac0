import path from 'node:path';
import { MikroORM } from '@mikro-orm/postgresql';
import { createOrmConfig } from '../../mikro-orm.config.ts';
import type { Config } from '../config.ts';
import { startEmbeddedPostgres, type EmbeddedPostgres } from './embedded-postgres.ts';

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
  options: { onQuery?: (sql: string) => void } = {},
): Promise<Database> {
  let embedded: EmbeddedPostgres | undefined;
  let clientUrl = config.databaseUrl;
  if (clientUrl === undefined) {
    embedded = await startEmbeddedPostgres(path.join(config.dataDir, 'postgres'));
    clientUrl = embedded.url;
  }
  try {
    const orm = await MikroORM.init(
      createOrmConfig({
        clientUrl,
        poolMax: embedded ? 1 : 10,
        acquireTimeoutMs: config.databaseAcquireTimeoutMs,
        onQuery: options.onQuery,
        // PGlite shares prepared statements among its connections; see db/prepared-statements.ts.
        prepareStatements: embedded === undefined && (config.databasePreparedStatements ?? true),
      }),
    );
    await orm.migrator.up();
    return {
      orm,
      isEmbedded: embedded !== undefined,
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
