/**
 * The envelope listing's filters on 100,000 envelopes of one team (and 20,000 of another): each
 * filter's statement, exactly as the service builds it (`readEnvelopePage`), run under
 * `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)`. Fails when a plan reads the envelope or agent table
 * sequentially (an index was not used) or when a page takes longer than 50 ms; prints each plan's
 * access paths and time.
 *
 *   npm run bench:finding [-- --quick]
 *
 * Needs a PostgreSQL server (DATABASE_URL, default the local one); a scratch database is created
 * and dropped. A bench rather than a test: seeding and analysing 100,000 envelopes takes longer
 * than the suite should spend on it. Quick mode seeds 2,000 and checks nothing but that it runs
 * (PostgreSQL rightly prefers sequential scans on small tables).
 */

import { MikroORM } from '@mikro-orm/postgresql';
import { CompiledQuery } from 'kysely';
import pg from 'pg';
import { createOrmConfig } from '../mikro-orm.config.ts';
import { type EnvelopePageOptions, readEnvelopePage } from '../src/domain/envelope/envelope.read.ts';
import { type ReadDb, readerOf } from '../src/domain/read-model.ts';
import type { ServiceContext } from '../src/domain/service-context.ts';

const quick = process.argv.includes('--quick') || process.env.BENCH_QUICK === '1';
const COUNT = quick ? 2_000 : 100_000;
const OTHER_COUNT = quick ? 400 : 20_000;
const BUDGET_MS = 50;

const adminUrl = new URL(process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres');
const databaseName = `envelope_bench_finding_${Date.now()}`;
const databaseUrl = new URL(adminUrl);
databaseUrl.pathname = `/${databaseName}`;

async function admin(sql: string) {
  const client = new pg.Client({ connectionString: adminUrl.toString() });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** Envelopes with one signer each (an inline agent with an address), names from a small vocabulary. */
async function seed(orm: MikroORM, teamId: string, count: number, salt: string) {
  const connection = orm.em.getConnection();
  await connection.execute(
    `insert into envelope (id, created_at, updated_at, team_id, template_id, name, status, expiration_period_days, context, completed_at)
     select gen_random_uuid(), now() - make_interval(secs => n * 60), now() - make_interval(secs => n * 60), ?, null,
       (array['İstanbul lease', 'Izmir office', 'Çağrı contract', 'Ankara NDA', 'Bursa supply'])[1 + n % 5] || ' ' || n,
       (array['draft', 'sent', 'finalized', 'voided', 'expired'])[1 + n % 5],
       30, jsonb_build_object('dealId', 'D-' || n, 'region', (array['eu', 'us', 'tr'])[1 + n % 3]),
       case when n % 5 = 2 then now() - make_interval(secs => n * 30) end
     from generate_series(1, ?) n`,
    [teamId, count],
  );
  await connection.execute(
    `insert into recipient (id, created_at, updated_at, envelope_id, identifier, role_name, type, "order", color, activated_at)
     select gen_random_uuid(), e.created_at, e.created_at, e.id, 'signer', 'Signer', 'signer', 1, '#2563EB', case when e.status = 'sent' then e.created_at end
     from envelope e where e.team_id = ?`,
    [teamId],
  );
  await connection.execute(
    `insert into agent (id, created_at, recipient_id, kind, info, position)
     select gen_random_uuid(), r.created_at, r.id, 'info', jsonb_build_object('name', 'Person ' || r.id, 'email', 'person-${salt}-' || row_number() over () || '@example.com'), 0
     from recipient r join envelope e on e.id = r.envelope_id where e.team_id = ?`,
    [teamId],
  );
}

type Plan = { 'Node Type': string; 'Relation Name'?: string; 'Index Name'?: string; Plans?: Plan[] };

function accessPaths(plan: Plan, into: string[] = []): string[] {
  if (plan['Relation Name']) into.push(`${plan['Node Type']} ${plan['Relation Name']}${plan['Index Name'] ? ` (${plan['Index Name']})` : ''}`);
  for (const child of plan.Plans ?? []) accessPaths(child, into);
  return into;
}

/** A reader that builds statements as the service does and runs each under EXPLAIN instead. */
function explainingReader(reader: ReadDb, plans: { plan: Plan; ms: number }[]): ReadDb {
  return new Proxy(reader, {
    get(target, property) {
      if (property === 'executeQuery') {
        return async (query: CompiledQuery) => {
          const result = await target.executeQuery<{ 'QUERY PLAN': [{ Plan: Plan; 'Execution Time': number }] }>(
            CompiledQuery.raw(`explain (analyze, buffers, format json) ${query.sql}`, [...query.parameters]),
          );
          const [explained] = result.rows[0]['QUERY PLAN'];
          plans.push({ plan: explained.Plan, ms: explained['Execution Time'] });
          return { rows: [] };
        };
      }
      const value = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

await admin(`create database ${databaseName}`);
const orm = await MikroORM.init(createOrmConfig({ clientUrl: databaseUrl.toString(), poolMax: 1 }));
let failed = false;
try {
  await orm.migrator.up();
  const connection = orm.em.getConnection();
  const [workspace] = await connection.execute<{ id: string }[]>(`insert into workspace (id, created_at, name) values (gen_random_uuid(), now(), 'bench') returning id`);
  const teams: string[] = [];
  for (const name of ['finding', 'other']) {
    const [team] = await connection.execute<{ id: string }[]>(`insert into team (id, created_at, workspace_id, name) values (gen_random_uuid(), now(), ?, ?) returning id`, [
      workspace.id,
      name,
    ]);
    teams.push(team.id);
  }
  const started = performance.now();
  await seed(orm, teams[0], COUNT, 'a');
  await seed(orm, teams[1], OTHER_COUNT, 'b');
  await connection.execute('analyze');
  console.log(`seeded ${COUNT} + ${OTHER_COUNT} envelopes in ${((performance.now() - started) / 1000).toFixed(1)} s`);

  const cases: [string, EnvelopePageOptions][] = [
    ['none', {}],
    ['q (rare)', { q: 'İSTANBUL LEASE 4242' }],
    ['q (common)', { q: 'istanbul' }],
    ['status (two)', { status: ['sent', 'voided'] }],
    ['recipientEmail', { recipientEmail: 'PERSON-a-777@example.com' }],
    ['templateId', { templateId: '00000000-0000-4000-8000-000000000000' }],
    ['created window', { createdAfter: new Date(Date.now() - 3 * 86_400_000).toISOString(), createdBefore: new Date(Date.now() - 2 * 86_400_000).toISOString() }],
    ['completed window', { completedAfter: new Date(Date.now() - 86_400_000).toISOString(), completedBefore: new Date().toISOString() }],
    ['context', { context: { dealId: 'D-31337' } }],
    ['combined', { q: 'istanbul', status: ['draft'], context: { region: 'eu' }, createdAfter: new Date(Date.now() - 30 * 86_400_000).toISOString() }],
    // Each filter common, together matching nothing (İstanbul envelopes are all drafts here): the
    // page's index range is read to its end. Reported, not held to the budget.
    ['combined, no match', { q: 'istanbul', status: ['sent'], context: { region: 'eu' }, createdAfter: new Date(Date.now() - 30 * 86_400_000).toISOString() }],
  ];
  console.log('| filters | ms | access paths |');
  console.log('|---|---|---|');
  for (const [label, options] of cases) {
    const plans: { plan: Plan; ms: number }[] = [];
    const context = { reader: explainingReader(readerOf(orm.em.fork()), plans), caller: async () => ({ teamId: teams[0] }) } as unknown as ServiceContext;
    await readEnvelopePage(context, { ...options, limit: 20 }, { progress: true });
    const [{ plan, ms }] = plans;
    const paths = accessPaths(plan);
    console.log(`| ${label} | ${ms.toFixed(2)} | ${paths.join('; ')} |`);
    console.log(`RESULT finding_${label.replace(/[^a-z]+/gi, '_').replace(/_$/, '')}_ms ${ms.toFixed(2)}`);
    if (!quick) {
      const sequential = paths.filter((path) => /^Seq Scan (envelope|agent|recipient)$/.test(path));
      if (sequential.length > 0) {
        console.error(`${label}: sequential scan (${sequential.join(', ')})`);
        failed = true;
      }
      if (ms > BUDGET_MS && !label.endsWith('no match')) {
        console.error(`${label}: ${ms.toFixed(1)} ms, over ${BUDGET_MS} ms`);
        failed = true;
      }
    }
  }
} finally {
  await orm.close(true);
  await admin(`drop database if exists ${databaseName} with (force)`);
}
if (failed) process.exit(1);
