import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { newId } from '../ids.ts';
import type { StagedBlob, StoredBlob } from './types.ts';

/** The source stream failed before it ended: the sender's upload was cut off or malformed. */
export class BlobSourceError extends Error {
  constructor(cause: unknown) {
    super(`the upload ended before the whole file arrived: ${(cause as Error)?.message ?? cause}`, { cause });
  }
}

export class BlobTooLargeError extends Error {
  readonly limitBytes: number;
  constructor(limitBytes: number) {
    super(`blob exceeds ${limitBytes} bytes`);
    this.limitBytes = limitBytes;
  }
}

/**
 * Receives `source` into a staging file under `temporaryDirectory` (always local, whatever the
 * store: the upload inspector reads it at random, and the store gets it only once it passed),
 * hashing as it goes. `store` is the store's own commit: it gets the staged file and must leave
 * the object in place (it may move the file or copy it and let the staging file be removed).
 */
export async function stageFile(
  temporaryDirectory: string,
  source: Readable,
  options: { limitBytes?: number },
  store: (staged: { sha256: string; byteSize: number; stagingPath: string }) => Promise<void>,
): Promise<StagedBlob> {
  const stagingPath = path.join(temporaryDirectory, `${newId()}.part`);
  const hash = createHash('sha256');
  let byteSize = 0;
  let overflowed = false;
  const meter = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      byteSize += chunk.length;
      const limit = options.limitBytes;
      if (limit !== undefined && byteSize > limit) {
        // Past the limit the rest is read and dropped rather than failing at once, so the
        // caller's request body is consumed and a clean answer can follow. Far past it, give up
        // reading (a body many times the limit is not a mistake worth draining).
        overflowed = true;
        callback(byteSize > limit * 2 ? new BlobTooLargeError(limit) : null);
        return;
      }
      hash.update(chunk);
      callback(null, chunk);
    },
    flush(callback) {
      callback(overflowed ? new BlobTooLargeError(options.limitBytes ?? 0) : null);
    },
  });
  // A source that already broke (the upload was cut off while the caller did its checks).
  if (source.errored || source.destroyed) throw new BlobSourceError(source.errored ?? new Error('the upload stream was closed'));
  const target = fs.createWriteStream(stagingPath, { flags: 'wx' });
  // pipeline destroys every stream with the first error, so only the first one to fail tells
  // whether the upload broke on the way in (the sender's problem) or on the way to disk (ours).
  let firstFailure: 'source' | 'target' | undefined;
  source.once('error', () => (firstFailure ??= 'source'));
  target.once('error', () => (firstFailure ??= 'target'));
  try {
    await pipeline(source, meter, target);
  } catch (error) {
    await fs.promises.rm(stagingPath, { force: true });
    if (error instanceof BlobTooLargeError || firstFailure === 'target') throw error;
    throw new BlobSourceError(error);
  }
  const sha256 = hash.digest('hex');
  return {
    sha256,
    byteSize,
    stagingPath,
    async commit(): Promise<StoredBlob> {
      await store({ sha256, byteSize, stagingPath });
      await fs.promises.rm(stagingPath, { force: true });
      return { sha256, byteSize };
    },
    async discard() {
      await fs.promises.rm(stagingPath, { force: true });
    },
  };
}

/**
 * A staging file older than this belongs to no upload any more: an upload's body may take at
 * most 15 minutes (BODY_TIMEOUTS.totalMs) and a refused or failed one deletes its own file, so
 * what is left is the file of a process that died mid-upload (SIGKILL, out of memory, a power
 * cut). Younger files are left alone: they may be uploads in progress on another instance
 * sharing the directory.
 */
export const STALE_STAGING_MS = 60 * 60_000;

/** Deletes staging files (`<root>/tmp/*`) last written more than `olderThanMs` ago; answers how many. */
export async function removeStaleStagingFiles(rootDirectory: string, options: { olderThanMs?: number; now?: number } = {}): Promise<number> {
  const directory = path.join(rootDirectory, 'tmp');
  const cutoff = (options.now ?? Date.now()) - (options.olderThanMs ?? STALE_STAGING_MS);
  let names: string[];
  try {
    names = await fs.promises.readdir(directory);
  } catch {
    return 0;
  }
  let removed = 0;
  for (const name of names) {
    const file = path.join(directory, name);
    try {
      const stat = await fs.promises.lstat(file);
      if (stat.mtimeMs >= cutoff) continue;
      await fs.promises.rm(file, { recursive: true, force: true });
      removed += 1;
    } catch {
      // Gone already (its upload finished, or another instance swept it).
    }
  }
  return removed;
}

/** Removes stale staging files now and then every `intervalMs` (an hour in main.ts) until stopped. */
export function startStagingSweep(options: { rootDirectory: string; intervalMs: number; olderThanMs?: number; onSwept: (result: { removed: number } | { error: unknown }) => void }): {
  stop(): Promise<void>;
} {
  let running: Promise<unknown> = Promise.resolve();
  const run = () => {
    running = running.then(() =>
      removeStaleStagingFiles(options.rootDirectory, { olderThanMs: options.olderThanMs }).then(
        (removed) => options.onSwept({ removed }),
        (error: unknown) => options.onSwept({ error }),
      ),
    );
  };
  run();
  const timer = setInterval(run, options.intervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
