/**
 * SQL statements per request from pg_stat_statements. Every server under test connects as its
 * own role, so a count filtered by role (and database) contains that server's statements and
 * nothing else: not the harness's own reset and read (made as `postgres`, from the `postgres`
 * database), not another server's. Utility statements (BEGIN, COMMIT, SET) are counted: they
 * are round trips like any other.
 */
import pg from 'pg';

export type StatementCounter = {
  reset(): Promise<void>;
  calls(role: string): Promise<number>;
  /** The statements behind the count, most frequent first (BENCH_SHOW_STATEMENTS=1 prints them). */
  statements(role: string): Promise<{ calls: number; query: string }[]>;
  close(): Promise<void>;
};

export async function openStatementCounter(adminUrl: string, database: string): Promise<StatementCounter> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  await client.query('create extension if not exists pg_stat_statements');
  return {
    async reset() {
      await client.query('select pg_stat_statements_reset()');
    },
    async calls(role) {
      const { rows } = await client.query<{ calls: string }>(
        `select coalesce(sum(s.calls), 0)::text as calls
           from pg_stat_statements s
           join pg_roles r on r.oid = s.userid
           join pg_database d on d.oid = s.dbid
          where r.rolname = $1 and d.datname = $2`,
        [role, database],
      );
      return Number(rows[0].calls);
    },
    async statements(role) {
      const { rows } = await client.query<{ calls: string; query: string }>(
        `select s.calls::text as calls, s.query
           from pg_stat_statements s
           join pg_roles r on r.oid = s.userid
           join pg_database d on d.oid = s.dbid
          where r.rolname = $1 and d.datname = $2
          order by s.calls desc`,
        [role, database],
      );
      return rows.map((row) => ({ calls: Number(row.calls), query: row.query }));
    },
    close: () => client.end(),
  };
}
