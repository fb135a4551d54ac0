import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';
import { prepareParameterizedStatements } from '../src/db/prepared-statements.ts';

const onServer = inject('databaseKind') === 'server';

describe.skipIf(!onServer)('prepared read statements (PostgreSQL server only: PGlite shares one namespace among connections)', () => {
  it('prepares each parameterized statement once per connection, leaves the rest alone, and stops at its bound', async () => {
    const client = new pg.Client({ connectionString: inject('databaseUrl') });
    await client.connect();
    try {
      prepareParameterizedStatements(client);
      const preparedNames = async () => (await client.query<{ name: string }>('select name from pg_prepared_statements order by name')).rows.map((row) => row.name);

      expect((await client.query('select $1::int + 1 as answer', [41])).rows[0].answer).toBe(42);
      expect((await client.query('select $1::int + 1 as answer', [1])).rows[0].answer).toBe(2);
      await client.query('select 1');
      const afterOne = await preparedNames();
      expect(afterOne).toHaveLength(1);
      expect(afterOne[0]).toMatch(/^r[A-Za-z0-9_-]+$/);

      // The direct read path's one config with its callback (db/direct-reads.ts) is prepared too, and answered through the callback.
      const viaCallback = await new Promise<pg.QueryResult>((resolve, reject) =>
        client.query({ text: 'select $1::int * 2 as answer', values: [21] }, (error: Error | null, result: pg.QueryResult) => (error ? reject(error) : resolve(result))),
      );
      expect(viaCallback.rows[0].answer).toBe(42);
      expect(await preparedNames()).toHaveLength(2);
      await expect(
        new Promise((resolve, reject) =>
          client.query({ text: 'select $1::int / 0 as answer', values: [1] }, (error: Error | null, result: unknown) => (error ? reject(error) : resolve(result))),
        ),
      ).rejects.toThrow(/division by zero/);

      // Many shapes (GraphQL selections can be spelled many ways): at most 200 stay prepared.
      for (let shape = 0; shape < 230; shape += 1) await client.query(`select $1::int + ${shape} as answer`, [shape]);
      expect(await preparedNames()).toHaveLength(200);
      expect((await client.query('select $1::int * 3 as answer', [5])).rows[0].answer).toBe(15);
    } finally {
      await client.end();
    }
  });
});
