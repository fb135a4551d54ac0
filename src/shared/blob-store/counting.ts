import type { Readable } from 'node:stream';
import { BlobSourceError, BlobTooLargeError } from './staging.ts';
import type { BlobStore, StagedBlob } from './types.ts';

/** What a store failure was doing (the `operation` label of `envelope_blob_store_errors_total`). */
export type BlobStoreOperation = 'stage' | 'commit' | 'read' | 'local_copy' | 'stat' | 'delete' | 'list' | 'check';

/** Told of each failure on the service's side, for metrics. */
export type BlobStoreErrorHook = (operation: BlobStoreOperation) => void;

/**
 * The store with every failure on the service's side reported to `onError`: a disk that cannot be
 * written, an object store that cannot be reached or has lost an object. A sender's upload that
 * was cut off or too large is the sender's failure, not the store's, and is not reported.
 */
export function countingFailures(store: BlobStore, onError: BlobStoreErrorHook): BlobStore {
  async function counted<T>(operation: BlobStoreOperation, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      if (!(error instanceof BlobSourceError || error instanceof BlobTooLargeError)) onError(operation);
      throw error;
    }
  }
  const countedStaged = (staged: StagedBlob): StagedBlob => ({
    ...staged,
    commit: () => counted('commit', () => staged.commit()),
    discard: () => staged.discard(),
  });
  return {
    ...store,
    kind: store.kind,
    stage: (source: Readable, options) => counted('stage', async () => countedStaged(await store.stage(source, options))),
    openRead: (sha256, range) => counted('read', () => store.openRead(sha256, range)),
    localCopy: (sha256) => counted('local_copy', () => store.localCopy(sha256)),
    stat: (sha256) => counted('stat', () => store.stat(sha256)),
    delete: (sha256) => counted('delete', () => store.delete(sha256)),
    list: () => store.list(),
    ...(store.presignedDownloadUrl ? { presignedDownloadUrl: store.presignedDownloadUrl.bind(store) } : {}),
    async check() {
      const answers = await store.check();
      if (!answers) onError('check');
      return answers;
    },
    close: () => store.close(),
  };
}
