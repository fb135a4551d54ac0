import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';
import { answerThroughCallbacks } from '../src/db/pg-callbacks.ts';
import { prepareParameterizedStatements } from '../src/db/prepared-statements.ts';

const onServer = inject('databaseKind') === 'server';

describe.skipIf(!onServer)('statements answered through callbacks (src/db/pg-callbacks.ts)', () => {
  it('answers promise callers with the same results and failures, leaves callbacks and cursors to pg, and still prepares on top', async () => {
    const client = new pg.Client({ connectionString: inject('databaseUrl') });
    await client.connect();
    try {
      answerThroughCallbacks(client);
      prepareParameterizedStatements(client);

      // Kysely's call, (text, values), and a config: resolved with pg's whole result.
      const answered = await client.query('select $1::int + 1 as answer', [41]);
      expect(answered.rows).toEqual([{ answer: 42 }]);
      expect(answered.command).toBe('SELECT');
      expect(answered.rowCount).toBe(1);
      expect((await client.query({ text: 'select $1::text as said', values: ['hello'] })).rows).toEqual([{ said: 'hello' }]);
      expect((await client.query('select 2 as two')).rows).toEqual([{ two: 2 }]);
      // Prepared on top, as before.
      const prepared = (await client.query<{ name: string }>('select name from pg_prepared_statements')).rows;
      expect(prepared.length).toBeGreaterThanOrEqual(2);

      // A failure rejects with pg's error (its SQLSTATE), and its stack leads back here, not only to the socket.
      const failure = await client.query('select 1 / $1::int as answer', [0]).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(Error);
      expect((failure as { code?: string }).code).toBe('22012');
      expect((failure as Error).stack).toContain('pg-callbacks.test.ts');

      // A caller's own callback is pg's, untouched.
      const viaCallback = await new Promise<pg.QueryResult>((resolve, reject) =>
        client.query('select 3 as three', (error: Error | null, result: pg.QueryResult) => (error ? reject(error) : resolve(result))),
      );
      expect(viaCallback.rows).toEqual([{ three: 3 }]);

      // A submittable (the ORM's streaming reads pass a cursor) goes to pg as it is: pg hands it back and it emits its rows.
      const submittable = new pg.Query('select generate_series(1, 5) as n');
      const rows: number[] = [];
      submittable.on('row', (row: { n: number }) => rows.push(row.n));
      const ended = new Promise((resolve, reject) => {
        submittable.on('end', resolve);
        submittable.on('error', reject);
      });
      expect(client.query(submittable)).toBe(submittable);
      await ended;
      expect(rows).toEqual([1, 2, 3, 4, 5]);

      // The connection is still usable in order after all of that.
      expect((await client.query('select $1::int * 2 as answer', [21])).rows).toEqual([{ answer: 42 }]);
    } finally {
      await client.end();
    }
  });
});
