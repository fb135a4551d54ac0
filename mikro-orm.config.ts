import { defineConfig } from '@mikro-orm/postgresql';
import { Migrator } from '@mikro-orm/migrations';
import { entities } from './src/db/entities.ts';
import { migrations } from './src/migrations/index.ts';

export type OrmConfigOptions = {
  clientUrl: string;
  /** Connections in the pool; the embedded PostgreSQL has one backend, so it gets exactly one. */
  poolMax?: number;
  /** How long to wait for a pooled connection before failing the query instead of hanging. */
  acquireTimeoutMs?: number;
  debug?: boolean;
  /** Observes every SQL statement; tests use it to count statements per request. */
  onQuery?: (sql: string) => void;
};

/**
 * The one ORM configuration: explicit entity list, committed migrations applied from an explicit
 * list (no folder scanning at run time), UTC timestamps.
 */
export function createOrmConfig({ clientUrl, poolMax = 10, acquireTimeoutMs = 15_000, debug = false, onQuery }: OrmConfigOptions) {
  return defineConfig({
    clientUrl,
    entities,
    extensions: [Migrator],
    migrations: {
      path: 'src/migrations',
      pathTs: 'src/migrations',
      migrationsList: migrations,
      tableName: 'mikro_orm_migrations',
      transactional: true,
      allOrNothing: true,
      snapshot: false,
      emit: 'ts',
      silent: true,
    },
    pool: { min: 0, max: poolMax, idleTimeoutMillis: 30_000 },
    driverOptions: { connectionTimeoutMillis: acquireTimeoutMs },
    timezone: 'Z',
    forceUtcTimezone: true,
    debug: debug || onQuery !== undefined,
    logger: onQuery ? (message: string) => onQuery(message) : () => {},
    // Relations are loaded explicitly (populate or request-scoped loaders), never lazily by surprise.
    allowGlobalContext: false,
    ignoreUndefinedInQuery: true,
  });
}

export default createOrmConfig({ clientUrl: process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres' });
