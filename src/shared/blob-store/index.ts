/**
 * The blob store: where document files live (docs/operations.md, "Object storage"). Callers
 * import this module; `createBlobStore` picks the implementation from the configuration.
 */
import path from 'node:path';
import { createFileBlobStore } from './file-store.ts';
import { type BlobStoreErrorHook, instrumentBlobStore } from './instrumented.ts';
import { createS3BlobStore, type S3Location } from './s3-store.ts';
import type { BlobStore } from './types.ts';

export { BlobCache } from './cache.ts';
export { createFileBlobStore } from './file-store.ts';
export { type BlobStoreErrorHook, type BlobStoreOperation, instrumentBlobStore } from './instrumented.ts';
export { createS3BlobStore, type S3Location } from './s3-store.ts';
export { BlobSourceError, BlobTooLargeError, removeStaleStagingFiles, STALE_STAGING_MS, startStagingSweep } from './staging.ts';
export * from './types.ts';

/** BLOB_STORE_URL as config.ts reads it: files under DATA_DIR/blobs, or a bucket. */
export type BlobStoreLocation = { kind: 'file' } | ({ kind: 's3' } & S3Location);

/** The directory of staging files (and of the file store's objects): DATA_DIR/blobs. */
export function blobDirectory(dataDir: string): string {
  return path.join(dataDir, 'blobs');
}

/**
 * The configured store. Staging files are local in both cases, under DATA_DIR/blobs/tmp (swept by
 * `startStagingSweep`); an S3 store's local copies live under DATA_DIR/blob-cache, at most
 * `cacheBytes` of them not in use.
 */
export function createBlobStore(options: { dataDir: string; location: BlobStoreLocation; cacheBytes: number; onError?: BlobStoreErrorHook }): BlobStore {
  const root = blobDirectory(options.dataDir);
  const store =
    options.location.kind === 'file'
      ? createFileBlobStore(root)
      : createS3BlobStore({
          location: options.location,
          stagingDirectory: path.join(root, 'tmp'),
          cacheDirectory: path.join(options.dataDir, 'blob-cache'),
          cacheBytes: options.cacheBytes,
        });
  return instrumentBlobStore(store, options.onError);
}
export { type MigrationSummary, migrateBlobs } from './migrate.ts';
