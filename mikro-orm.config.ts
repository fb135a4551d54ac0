import { Migrator } from '@mikro-orm/migrations';
import { defineConfig } from '@mikro-orm/postgresql';
import type { CompiledQuery, DatabaseConnection } from 'kysely';
import type pg from 'pg';
import { observePoolStatements } from './src/db/direct-reads.ts';
import { entities } from './src/db/entities.ts';
import { answerThroughCallbacks } from './src/db/pg-callbacks.ts';
import { prepareParameterizedStatements } from './src/db/prepared-statements.ts';
import { migrations } from './src/migrations/index.ts';

export type OrmConfigOptions = {
  clientUrl: string;
  /** Connections in the pool; the embedded PostgreSQL has one backend, so it gets exactly one. */
  poolMax?: number;
  /** How long to wait for a pooled connection before failing the query instead of hanging. */
  acquireTimeoutMs?: number;
  debug?: boolean;
  /** Observes every SQL statement sent; tests and benchmarks use it to count statements per request. */
  onQuery?: (sql: string) => void;
  /** Prepare the read model's statements per connection (a PostgreSQL server; never the embedded one). */
  prepareStatements?: boolean;
};

function observeStatements(connection: DatabaseConnection, onQuery: (sql: string) => void) {
  const executeQuery = connection.executeQuery.bind(connection);
  const streamQuery = connection.streamQuery.bind(connection);
  connection.executeQuery = (query: CompiledQuery) => {
    onQuery(query.sql);
    return executeQuery(query);
  };
  connection.streamQuery = (query: CompiledQuery, chunkSize: number) => {
    onQuery(query.sql);
    return streamQuery(query, chunkSize);
  };
}

/**
 * The one ORM configuration: explicit entity list, committed migrations applied from an explicit
 * list (no folder scanning at run time), UTC timestamps.
 */
export function createOrmConfig({ clientUrl, poolMax = 10, acquireTimeoutMs = 15_000, debug = false, onQuery, prepareStatements = false }: OrmConfigOptions) {
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
    // The SQL functions expression indexes use (envelope_search_key, agent_emails) are written
    // by their migration; the entities do not mirror them, and the schema diff must not drop them.
    schemaGenerator: { ignoreRoutines: true },
    pool: { min: 0, max: poolMax, idleTimeoutMillis: 30_000 },
    driverOptions: {
      connectionTimeoutMillis: acquireTimeoutMs,
      onPoolCreated: (pool: pg.Pool) => {
        // First: the prepared-statement wrapper then sends through it.
        pool.on('connect', answerThroughCallbacks);
        if (prepareStatements) pool.on('connect', prepareParameterizedStatements);
        // The read model's direct path (src/db/direct-reads.ts) reports its statements here too.
        if (onQuery) observePoolStatements(pool, onQuery);
      },
    },
    timezone: 'Z',
    forceUtcTimezone: true,
    debug,
    logger: () => {},
    // Counted where every statement passes, the connection: the ORM's own and the read model's
    // Kysely queries alike (transaction control included).
    onCreateConnection: onQuery ? async (connection: unknown) => observeStatements(connection as DatabaseConnection, onQuery) : undefined,
    // Relations are loaded explicitly (populate or request-scoped loaders), never lazily by surprise.
    allowGlobalContext: false,
    ignoreUndefinedInQuery: true,
  });
}

export default createOrmConfig({ clientUrl: process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres' });
