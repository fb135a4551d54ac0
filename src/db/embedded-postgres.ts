import fs from 'node:fs';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';

export type EmbeddedPostgres = {
  /** A postgresql:// URL the ordinary `pg` driver connects to. */
  url: string;
  stop(): Promise<void>;
};

export class EmbeddedDatabaseLockedError extends Error {
  constructor(dataDirectory: string, pid: number) {
    super(`The embedded database in ${dataDirectory} is in use by process ${pid}. Stop that process, or set DATABASE_URL to use a PostgreSQL server.`);
    this.name = 'EmbeddedDatabaseLockedError';
  }
}

function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

const LOCK_FILE = 'embedded.pid';
/** Where the owning process writes the address it serves the database on, for other local tools. */
const ADDRESS_FILE = 'embedded.url';

/**
 * PGlite keeps no lock of its own and two processes writing one data directory corrupt it, so a
 * pid file guards the directory. A stale file (its process is gone, e.g. after kill -9) is taken over.
 */
function lockDataDirectory(dataDirectory: string): () => void {
  const lockPath = path.join(dataDirectory, LOCK_FILE);
  for (;;) {
    try {
      fs.writeFileSync(lockPath, String(process.pid), { flag: 'wx' });
      return () => fs.rmSync(lockPath, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const owner = Number.parseInt(fs.readFileSync(lockPath, 'utf8'), 10);
      if (Number.isInteger(owner) && owner !== process.pid && isProcessAlive(owner)) {
        throw new EmbeddedDatabaseLockedError(dataDirectory, owner);
      }
      fs.rmSync(lockPath, { force: true });
    }
  }
}

/**
 * Starts PostgreSQL (PGlite, real PostgreSQL compiled to WebAssembly) in this process, persisted
 * under `dataDirectory`, and serves it on a loopback port through the wire protocol so the
 * ordinary PostgreSQL driver and the same migrations work unchanged.
 *
 * Its limit: one backend. Transactions from different connections are serialised, so a
 * transaction that waits for a query on another connection would wait forever. The ORM is
 * therefore given exactly one pooled connection with an acquire timeout: such code fails with a
 * timeout error instead of hanging, and ordinary concurrent requests simply queue.
 */
export async function startEmbeddedPostgres(dataDirectory: string, options: { maxConnections?: number } = {}): Promise<EmbeddedPostgres> {
  fs.mkdirSync(dataDirectory, { recursive: true });
  const unlock = lockDataDirectory(dataDirectory);
  try {
    // pg_trgm: the envelope name search's index (Migration20261126150000_envelope_finding).
    const database = await PGlite.create(path.join(dataDirectory, 'pgdata'), { extensions: { pg_trgm } });
    const server = new PGLiteSocketServer({ db: database, host: '127.0.0.1', port: 0, maxConnections: options.maxConnections ?? 4 });
    await server.start();
    const url = `postgresql://postgres@${server.getServerConn()}/postgres`;
    // Published so the command line can work beside the running server (findSharedEmbeddedPostgres).
    const addressPath = path.join(dataDirectory, ADDRESS_FILE);
    fs.writeFileSync(`${addressPath}.tmp`, url);
    fs.renameSync(`${addressPath}.tmp`, addressPath);
    return {
      url,
      async stop() {
        fs.rmSync(addressPath, { force: true });
        await server.stop();
        await database.close();
        unlock();
      },
    };
  } catch (error) {
    unlock();
    throw error;
  }
}

/**
 * The address of the embedded PostgreSQL that another live process (the running server) serves
 * from this data directory, or undefined when none does. Its socket server takes several
 * connections and keeps each transaction to the connection that began it (it only runs queries of
 * that connection until the transaction ends), so a short-lived tool such as the command line can
 * share the database with the server instead of being refused.
 */
export function findSharedEmbeddedPostgres(dataDirectory: string): string | undefined {
  try {
    const owner = Number.parseInt(fs.readFileSync(path.join(dataDirectory, LOCK_FILE), 'utf8'), 10);
    if (!Number.isInteger(owner) || owner === process.pid || !isProcessAlive(owner)) return undefined;
    const url = fs.readFileSync(path.join(dataDirectory, ADDRESS_FILE), 'utf8').trim();
    return url.startsWith('postgresql://') ? url : undefined;
  } catch {
    return undefined;
  }
}
