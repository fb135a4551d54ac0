/**
 * The reads benches' data set, made once per run: a private PostgreSQL cluster, one superuser
 * role per server under test, the `bench` database populated through the service itself (CLI for
 * teams, REST for envelopes) and vacuumed; and how to start our service on it as `npm start`
 * starts it. Shared by `npm run bench` (bench/reads.ts) and `npm run bench:start-settings`, so
 * both read the same rows through the same settings.
 */
import path from 'node:path';
import pg from 'pg';
import { serviceStartCommand } from '../service-process.ts';
import { type Cluster, startCluster } from './cluster.ts';
import { type Child, freePort, startChild, waitForHttp } from './processes.ts';
import { createTeams, type SeededTeam, seedEnvelopes } from './seed.ts';

export const READS_DATABASE = 'bench';

/** Registers a clean-up step; the caller runs them in reverse order, also on failure and Ctrl-C. */
export type RegisterCleanup = (label: string, run: () => Promise<void> | void) => void;

export type ReadsData = {
  cluster: Cluster;
  teams: SeededTeam[];
  /** Rows per table after seeding, for the report. */
  counts: Record<string, string>;
  seedSeconds: number;
  /**
   * Starts our service on the data as `npm start` does, on a free port unless one is given.
   * `env` goes over npm start's environment (a variant's settings; a name set to undefined is left
   * unset) and under the bench's own (database, port, budgets that never bind). `args`, when
   * given, replaces npm start's Node flags and entry file.
   */
  startService(name: string, options?: { port?: number; env?: Record<string, string | undefined>; args?: string[] }): Promise<{ child: Child; url: string }>;
};

export async function seedReadsDatabase(options: {
  workDir: string;
  /** Our service's role, which owns the database; then the peers', which read it. */
  serviceRole: string;
  otherRoles: string[];
  envelopes: number;
  teams: number;
  seedConcurrency: number;
  readsInFlightPerKey: number;
  root: string;
  log: (line: string) => void;
  track: (child: Child) => Child;
  onCleanup: RegisterCleanup;
}): Promise<ReadsData> {
  const { workDir, serviceRole, log, track, root } = options;
  const cluster = await startCluster(workDir, log);
  options.onCleanup('PostgreSQL cluster', () => cluster.stop());
  const admin = new pg.Client({ connectionString: cluster.url('postgres') });
  await admin.connect();
  // Superusers: the service creates the tables (as its role) and the peers read them; trust
  // authentication on 127.0.0.1 of a throw-away cluster, so no passwords.
  for (const role of [serviceRole, ...options.otherRoles]) await admin.query(`create role ${role} login superuser`);
  await admin.query(`create database ${READS_DATABASE} owner ${serviceRole}`);
  await admin.end();

  const dataDir = path.join(workDir, 'service-data');
  const databaseUrl = cluster.url(READS_DATABASE, serviceRole);
  const start = serviceStartCommand();
  const startService: ReadsData['startService'] = async (name, { port, env = {}, args = start.args } = {}) => {
    const listenOn = port ?? (await freePort());
    const child = track(
      startChild(
        name,
        args,
        {
          ...start.env,
          ...env,
          DATABASE_URL: databaseUrl,
          PORT: String(listenOn),
          DATA_DIR: dataDir,
          LOG_LEVEL: 'warn',
          // The benches run far past the default per-key budget; the limiter stays on (its counting
          // is part of every request's cost) with the highest budget it accepts.
          RATE_LIMIT_PER_MINUTE: '1000000',
          // Likewise the reads one key may have in flight (docs/decisions.md, "Reads in flight per
          // key"): the benches read with one key on all their connections, which the default of 2
          // serialises by design, as the minute's budget would refuse it; the cap's bookkeeping
          // still runs per read.
          READS_IN_FLIGHT_PER_KEY: String(options.readsInFlightPerKey),
        },
        { cwd: root },
      ),
    );
    // /readyz answers 200 once the migrations are applied.
    await waitForHttp(child, `http://127.0.0.1:${listenOn}/readyz`);
    return { child, url: `http://127.0.0.1:${listenOn}` };
  };

  log(`seeding ${options.envelopes} envelopes over ${options.teams} teams through the service (fsync off in this cluster)`);
  const seedStarted = Date.now();
  const seeder = await startService('service (seeding)');
  const teams = await createTeams(options.teams, { DATABASE_URL: databaseUrl, DATA_DIR: dataDir, LOG_LEVEL: 'warn' }, root, track);
  log(`  ${teams.length} teams created with the CLI`);
  await seedEnvelopes({ baseUrl: seeder.url, teams, count: options.envelopes, concurrency: options.seedConcurrency, log });
  // A fresh process serves the timed reads: no heap, caches or peak memory left from seeding.
  await seeder.child.stop();
  const database = new pg.Client({ connectionString: cluster.url(READS_DATABASE) });
  await database.connect();
  await database.query('vacuum analyze');
  const counts = (
    await database.query(`select (select count(*) from envelope) as envelopes, (select count(*) from document) as documents,
      (select count(*) from recipient) as recipients, (select count(*) from agent) as agents,
      (select count(*) from field) as fields, (select count(*) from field_view) as views`)
  ).rows[0] as Record<string, string>;
  await database.end();
  const seedSeconds = (Date.now() - seedStarted) / 1000;
  log(
    `  seeded in ${seedSeconds.toFixed(1)} s: ${Object.entries(counts)
      .map(([table, count]) => `${count} ${table}`)
      .join(', ')}`,
  );
  return { cluster, teams, counts, seedSeconds, startService };
}
