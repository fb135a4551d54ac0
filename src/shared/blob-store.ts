import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Readable } from 'node:stream';
import { Transform } from 'node:stream';
import { newId } from './ids.ts';

export type StoredBlob = { sha256: string; byteSize: number; path: string };

/**
 * Content-addressed file storage (docs/reference/contract.md §2): every file lives under the SHA-256 of its bytes,
 * so storing the same document twice keeps one copy. Files are written to a temporary name and
 * renamed into place, so a reader never sees a partial file and a crash leaves only a temp file.
 */
export type BlobStore = {
  /** Writes to a staging file first (hashing as it goes), so the caller can examine it before storing it. */
  stage(source: Readable, options?: { limitBytes?: number }): Promise<StagedBlob>;
  /** Where the blob with this hash lives once committed. */
  pathFor(sha256: string): string;
};

/** A fully received upload that is not stored yet; `commit` moves it into place, `discard` drops it. */
export type StagedBlob = {
  sha256: string;
  byteSize: number;
  stagingPath: string;
  commit(): Promise<StoredBlob>;
  discard(): Promise<void>;
};

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

/** Told of each failure on the service's side (a disk error; never the sender's cut-off or oversize upload), for metrics. */
export type BlobStoreErrorHook = (operation: 'stage' | 'commit') => void;

export function createFileBlobStore(rootDirectory: string, onError: BlobStoreErrorHook = () => {}): BlobStore {
  const temporaryDirectory = path.join(rootDirectory, 'tmp');
  fs.mkdirSync(temporaryDirectory, { recursive: true });

  const pathFor = (sha256: string) => path.join(rootDirectory, sha256.slice(0, 2), sha256);

  async function stage(source: Readable, options: { limitBytes?: number } = {}): Promise<StagedBlob> {
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
      if (error instanceof BlobTooLargeError) throw error;
      if (firstFailure === 'target') {
        onError('stage');
        throw error;
      }
      throw new BlobSourceError(error);
    }
    const sha256 = hash.digest('hex');
    return {
      sha256,
      byteSize,
      stagingPath,
      async commit() {
        const finalPath = pathFor(sha256);
        await fs.promises.mkdir(path.dirname(finalPath), { recursive: true });
        // rename is atomic within one file system; an identical blob already there is the same bytes.
        await fs.promises.rename(stagingPath, finalPath).catch((error: unknown) => {
          onError('commit');
          throw error;
        });
        return { sha256, byteSize, path: finalPath };
      },
      async discard() {
        await fs.promises.rm(stagingPath, { force: true });
      },
    };
  }

  return { stage, pathFor };
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
export function startStagingSweep(options: {
  rootDirectory: string;
  intervalMs: number;
  olderThanMs?: number;
  onSwept: (result: { removed: number } | { error: unknown }) => void;
}): { stop(): Promise<void> } {
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
