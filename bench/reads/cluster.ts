/**
 * A private PostgreSQL 15 cluster for one benchmark run: initdb into a temporary directory, trust
 * authentication, 127.0.0.1 on a free port, pg_stat_statements preloaded. The shared server on
 * 5432 is never touched, so the numbers are not disturbed by (and do not disturb) anyone else's
 * tests, and the cluster's processes are ours alone to count CPU for.
 */
import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './processes.ts';

const run = promisify(execFile);

export const PG_BIN = process.env.BENCH_PG_BIN ?? '/usr/lib/postgresql/15/bin';

/**
 * PostgreSQL refuses to run as root. When the benchmark runs as root (as on the build machines),
 * the cluster's commands run as an unprivileged account instead (BENCH_PG_USER, default postgres)
 * and its directory is handed over to that account.
 */
function pgAccount(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const user = process.env.BENCH_PG_USER ?? 'postgres';
  try {
    const uid = Number(execFileSync('id', ['-u', user], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', user], { encoding: 'utf8' }).trim());
    return { uid, gid };
  } catch {
    throw new Error(`running as root, and PostgreSQL cannot: no account "${user}" to run it as (set BENCH_PG_USER)`);
  }
}

export type Cluster = {
  port: number;
  dataDir: string;
  /** The postmaster's pid: PostgreSQL's CPU is this process and its children. */
  postmasterPid: number;
  /** A superuser URL for the given database (trust authentication, no password). */
  url(database: string, user?: string): string;
  version: string;
  stop(): Promise<void>;
};

/**
 * fsync, synchronous_commit and full_page_writes are off: the cluster is thrown away after the
 * run, and seeding ~16,000 writes through the service goes several times faster. They only
 * change how writes reach the disk; the timed reads never wait for a flush.
 */
const SETTINGS = [
  'listen_addresses=127.0.0.1',
  'shared_preload_libraries=pg_stat_statements',
  'pg_stat_statements.track=top',
  'pg_stat_statements.track_utility=on',
  'fsync=off',
  'synchronous_commit=off',
  'full_page_writes=off',
  'max_connections=100',
  'shared_buffers=256MB',
  // PostGraphile switches JIT optimisation off on each new connection (jit_optimize_above_cost
  // = -1); JIT off for everyone keeps the three servers' statements on equal terms (none of them
  // is costly enough to be compiled anyway).
  'jit=off',
  // Autovacuum would wake up during a timed round after the bulk seeding; the seeding step runs
  // VACUUM ANALYZE itself instead.
  'autovacuum=off',
];

/**
 * `overrides` are settings appended after SETTINGS (the later line wins in postgresql.conf): a
 * bench whose figures include writes (WAL bytes, commit waits) asks for production's durability.
 */
export async function startCluster(baseDir: string, log: (line: string) => void, overrides: string[] = []): Promise<Cluster> {
  const account = pgAccount();
  const pgDir = path.join(baseDir, 'pg');
  const dataDir = path.join(pgDir, 'data');
  const socketDir = path.join(pgDir, 'socket');
  fs.mkdirSync(socketDir, { recursive: true });
  if (account) {
    // mkdtemp made the run directory 0700; the PostgreSQL account only needs to pass through it.
    fs.chmodSync(baseDir, 0o711);
    for (const directory of [pgDir, socketDir]) fs.chownSync(directory, account.uid, account.gid);
  }
  const asAccount = { ...account, env: { ...process.env, LC_ALL: 'C' } };
  await run(path.join(PG_BIN, 'initdb'), ['-D', dataDir, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--locale=C', '--no-sync'], asAccount);
  fs.appendFileSync(path.join(dataDir, 'postgresql.conf'), `\n# envelope-service read benchmark\n${[...SETTINGS, ...overrides].map((line) => line.replace('=', " = '") + "'").join('\n')}\n`);
  const port = await freePort();
  const logFile = path.join(pgDir, 'postgres.log');
  // -o passes the port and the socket directory on the command line, so nothing in the cluster
  // ever listens on the shared server's socket path.
  await run(path.join(PG_BIN, 'pg_ctl'), ['-D', dataDir, '-l', logFile, '-w', '-t', '60', '-o', `-p ${port} -k ${socketDir}`, 'start'], asAccount);
  const postmasterPid = Number(fs.readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  const { stdout } = await run(path.join(PG_BIN, 'postgres'), ['--version']);
  log(`PostgreSQL cluster on 127.0.0.1:${port} (postmaster ${postmasterPid}, data in ${dataDir})`);
  let stopped = false;
  return {
    port,
    dataDir,
    postmasterPid,
    version: stdout.trim().replace(/^postgres \(PostgreSQL\) /, ''),
    url: (database, user = 'postgres') => `postgres://${user}@127.0.0.1:${port}/${database}`,
    async stop() {
      if (stopped) return;
      stopped = true;
      // Immediate: nothing in this cluster is worth a checkpoint, it is deleted right after.
      await run(path.join(PG_BIN, 'pg_ctl'), ['-D', dataDir, '-m', 'immediate', '-w', 'stop'], asAccount).catch(() => {
        // Already gone (for example a Ctrl-C reached the postmaster first): nothing left to stop.
      });
    },
  };
}
