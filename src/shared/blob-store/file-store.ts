import fs from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { stageFile } from './staging.ts';
import { type BlobInfo, BlobMissingError, type BlobStore, BlobStoreUnavailableError, isSha256 } from './types.ts';

/** ENOENT means "no such object"; any other failure to reach the file is the store's trouble. */
function storeError(sha256: string, error: unknown): Error {
  if (error instanceof BlobMissingError) return error;
  const code = (error as NodeJS.ErrnoException)?.code;
  if (code === 'ENOENT') return new BlobMissingError(sha256, error);
  // A full disk keeps its own name (Storage.Full, normalize-error.ts).
  if (code === 'ENOSPC' || code === 'EDQUOT') return error as Error;
  return new BlobStoreUnavailableError(error);
}

/**
 * Files under `rootDirectory/<first two hex digits>/<sha256>` (the layout since the start, so an
 * existing DATA_DIR keeps working). A staged file is renamed into place: atomic within one file
 * system, so a reader never sees a partial file and a crash leaves only a staging file.
 */
export function createFileBlobStore(rootDirectory: string): BlobStore {
  const temporaryDirectory = path.join(rootDirectory, 'tmp');
  fs.mkdirSync(temporaryDirectory, { recursive: true });
  const pathFor = (sha256: string) => {
    // The hash is part of a path: anything else (a `..`) must never reach the file system.
    if (!isSha256(sha256)) throw new BlobMissingError(sha256);
    return path.join(rootDirectory, sha256.slice(0, 2), sha256);
  };

  async function stat(sha256: string): Promise<BlobInfo | undefined> {
    try {
      const info = await fs.promises.stat(pathFor(sha256));
      return { sha256, byteSize: info.size, lastModified: info.mtime };
    } catch (error) {
      const failure = storeError(sha256, error);
      if (failure instanceof BlobMissingError) return undefined;
      throw failure;
    }
  }

  return {
    kind: 'file',
    stage: (source, options = {}) =>
      stageFile(temporaryDirectory, source, options, async ({ sha256, stagingPath }) => {
        const finalPath = pathFor(sha256);
        await fs.promises.mkdir(path.dirname(finalPath), { recursive: true });
        // An identical blob already there is the same bytes; replacing it also renews its
        // modification time, so the orphan sweep's grace period starts again for it.
        await fs.promises.rename(stagingPath, finalPath);
      }),
    async openRead(sha256, range) {
      // Opened before the stream is handed out: a missing file fails here, by name, and never
      // as an 'error' event on a stream nobody listens to yet.
      let handle: fs.promises.FileHandle;
      try {
        handle = await fs.promises.open(pathFor(sha256), 'r');
      } catch (error) {
        throw storeError(sha256, error);
      }
      return handle.createReadStream({ start: range?.start, end: range?.end }) as Readable;
    },
    async localCopy(sha256) {
      if ((await stat(sha256)) === undefined) throw new BlobMissingError(sha256);
      return { path: pathFor(sha256), release: () => undefined };
    },
    stat,
    async delete(sha256) {
      await fs.promises.rm(pathFor(sha256), { force: true });
    },
    async *list() {
      let prefixes: string[];
      try {
        prefixes = await fs.promises.readdir(rootDirectory);
      } catch (error) {
        throw new BlobStoreUnavailableError(error);
      }
      for (const prefix of prefixes.filter((name) => /^[0-9a-f]{2}$/.test(name)).sort()) {
        const names = await fs.promises.readdir(path.join(rootDirectory, prefix)).catch(() => [] as string[]);
        for (const name of names.sort()) {
          if (!isSha256(name) || !name.startsWith(prefix)) continue;
          const info = await stat(name);
          if (info) yield info;
        }
      }
    },
    async check() {
      try {
        await fs.promises.access(temporaryDirectory, fs.constants.W_OK);
        return true;
      } catch {
        return false;
      }
    },
    close: () => undefined,
  };
}
