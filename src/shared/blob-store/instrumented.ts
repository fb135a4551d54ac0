import type { Readable } from 'node:stream';
import { withSpan } from '../tracing.ts';
import { BlobSourceError, BlobTooLargeError } from './staging.ts';
import type { BlobStore, StagedBlob } from './types.ts';

/** What a store call was doing: the `operation` label of `envelope_blob_store_errors_total` and of its span. */
export type BlobStoreOperation = 'stage' | 'commit' | 'read' | 'local_copy' | 'stat' | 'delete' | 'check';

/** Told of each failure on the service's side, for metrics. */
export type BlobStoreErrorHook = (operation: BlobStoreOperation) => void;

/**
 * The store with each call traced (a `blob <operation>` span with the store kind; hashes are
 * content addresses, not secrets, but are left out all the same: they identify documents) and
 * each failure on the service's side reported to `onError`: a disk that cannot be written, an
 * object store that cannot be reached or has lost an object. A sender's upload that was cut off or
 * too large is the sender's failure, not the store's, and is not reported.
 */
export function instrumentBlobStore(store: BlobStore, onError: BlobStoreErrorHook = () => {}): BlobStore {
  function call<T>(operation: BlobStoreOperation, work: () => Promise<T>): Promise<T> {
    return withSpan(`blob ${operation}`, { 'blob.store': store.kind, 'blob.operation': operation }, async () => {
      try {
        return await work();
      } catch (error) {
        if (!(error instanceof BlobSourceError || error instanceof BlobTooLargeError)) onError(operation);
        throw error;
      }
    });
  }
  const instrumentedStaged = (staged: StagedBlob): StagedBlob => ({
    ...staged,
    commit: () => call('commit', () => staged.commit()),
    discard: () => staged.discard(),
  });
  return {
    kind: store.kind,
    stage: (source: Readable, options) => call('stage', async () => instrumentedStaged(await store.stage(source, options))),
    openRead: (sha256, range) => call('read', () => store.openRead(sha256, range)),
    localCopy: (sha256) => call('local_copy', () => store.localCopy(sha256)),
    stat: (sha256) => call('stat', () => store.stat(sha256)),
    delete: (sha256) => call('delete', () => store.delete(sha256)),
    list: () => store.list(),
    ...(store.presignedDownloadUrl ? { presignedDownloadUrl: store.presignedDownloadUrl.bind(store) } : {}),
    check: (options) =>
      call('check', async () => {
        const answers = await store.check(options);
        if (!answers) onError('check');
        return answers;
      }),
    close: () => store.close(),
  };
}
