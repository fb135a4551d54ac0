/**
 * A private PostgreSQL cluster for one fault test (or the soak run): initdb into a temporary
 * directory, trust authentication, 127.0.0.1 on a free port, its own socket directory. It can be
 * stopped and started again on the same port and data, which the shared server on 5432 must never
 * be. About a second to create, a few hundred milliseconds to restart.
 *
 * PostgreSQL refuses to run as root: as root, its commands run as the `postgres` account
 * (FAULTS_PG_USER) and its directory is handed over to it. PG_BIN (default the newest
 * /usr/lib/postgresql/<n>/bin) names the binaries.
 */
import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { MikroORM } from '@mikro-orm/postgresql';
import { createOrmConfig } from '../../mikro-orm.config.ts';

const run = promisify(execFile);

export function postgresBinaries(): string | undefined {
  if (process.env.PG_BIN) return process.env.PG_BIN;
  const root = '/usr/lib/postgresql';
  if (!fs.existsSync(root)) return undefined;
  const versions = fs.readdirSync(root).filter((name) => fs.existsSync(path.join(root, name, 'bin', 'initdb')));
  versions.sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : path.join(root, versions[0], 'bin');
}

function pgAccount(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const user = process.env.FAULTS_PG_USER ?? 'postgres';
  const uid = Number(execFileSync('id', ['-u', user], { encoding: 'utf8' }).trim());
  const gid = Number(execFileSync('id', ['-g', user], { encoding: 'utf8' }).trim());
  return { uid, gid };
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as net.AddressInfo).port;
      server.close(() => resolve(port));
    });
  });
}

export type PgCluster = {
  port: number;
  /** The service's database (`envelope`, migrated). */
  databaseUrl: string;
  url(database: string): string;
  running(): boolean;
  /** `fast` (the default) disconnects every session and shuts down cleanly; `immediate` is a crash. */
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
  start(): Promise<void>;
  /** Stops (immediately) and deletes everything. */
  destroy(): Promise<void>;
};

export async function startPgCluster(options: { settings?: string[] } = {}): Promise<PgCluster> {
  const bin = postgresBinaries();
  if (!bin) throw new Error('no PostgreSQL binaries (initdb, pg_ctl): set PG_BIN');
  const account = pgAccount();
  const baseDir = fs.mkdtempSync(path.join(os.tmpdir(), 'envelope-faults-pg-'));
  const dataDir = path.join(baseDir, 'data');
  const socketDir = path.join(baseDir, 'socket');
  fs.mkdirSync(socketDir);
  if (account) {
    fs.chmodSync(baseDir, 0o711);
    fs.chownSync(baseDir, account.uid, account.gid);
    fs.chownSync(socketDir, account.uid, account.gid);
  }
  const asAccount = { ...account, env: { ...process.env, LC_ALL: 'C' } };
  await run(path.join(bin, 'initdb'), ['-D', dataDir, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--locale=C', '--no-sync'], asAccount);
  // fsync off: only an operating-system crash would need it. synchronous_commit stays on: a crash
  // of PostgreSQL itself (stop -m immediate) must not lose a transaction the service saw commit.
  const settings = ['listen_addresses=127.0.0.1', 'fsync=off', 'full_page_writes=off', 'max_connections=200', ...(options.settings ?? [])];
  fs.appendFileSync(path.join(dataDir, 'postgresql.conf'), `\n${settings.map((line) => line.replace('=', " = '") + "'").join('\n')}\n`);
  const port = await freePort();
  const logFile = path.join(baseDir, 'postgres.log');
  let isRunning = false;
  const start = async () => {
    await run(path.join(bin, 'pg_ctl'), ['-D', dataDir, '-l', logFile, '-w', '-t', '60', '-o', `-p ${port} -k ${socketDir}`, 'start'], asAccount);
    isRunning = true;
  };
  const stop = async (mode: 'fast' | 'immediate' = 'fast') => {
    isRunning = false;
    await run(path.join(bin, 'pg_ctl'), ['-D', dataDir, '-m', mode, '-w', '-t', '60', 'stop'], asAccount).catch(() => undefined);
  };
  await start();
  const url = (database: string) => `postgresql://postgres@127.0.0.1:${port}/${database}`;
  const admin = await import('pg');
  const client = new admin.default.Client({ connectionString: url('postgres') });
  await client.connect();
  await client.query('create database envelope');
  await client.end();
  const orm = await MikroORM.init(createOrmConfig({ clientUrl: url('envelope'), poolMax: 1 }));
  await orm.migrator.up();
  await orm.close(true);
  return {
    port,
    databaseUrl: url('envelope'),
    url,
    running: () => isRunning,
    stop,
    start,
    async destroy() {
      await stop('immediate');
      fs.rmSync(baseDir, { recursive: true, force: true });
    },
  };
}
