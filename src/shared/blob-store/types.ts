import type { Readable } from 'node:stream';
import { ReasonedError } from '../failure-reason.ts';

/** A blob once it is in the store: its address (the SHA-256 of its bytes) and its size. */
export type StoredBlob = { sha256: string; byteSize: number };

/** What the store says about one object (for housekeeping and migration). */
export type BlobInfo = { sha256: string; byteSize: number; lastModified: Date };

/**
 * A blob as a file on this machine, for work that needs random access (rendering, sealing,
 * attaching). The file stays while the copy is held; `release` says it may be evicted again.
 */
export type LocalBlob = { path: string; release(): void };

/** A fully received upload that is not stored yet; `commit` stores it, `discard` drops it. */
export type StagedBlob = {
  sha256: string;
  byteSize: number;
  /** The local staging file: readable (inspection, verification) until `commit` or `discard`. */
  stagingPath: string;
  /** Writes the object to the store (an identical object already there counts as written). */
  commit(): Promise<StoredBlob>;
  discard(): Promise<void>;
};

/**
 * Content-addressed storage (docs/reference/contract.md §2): every file lives under the SHA-256
 * of its bytes, so storing the same document twice keeps one copy. Two implementations: files
 * under DATA_DIR/blobs (file-store.ts) and an S3-compatible bucket (s3-store.ts). No caller sees
 * where an object lives; a path is handed out only through `localCopy`, which is bounded.
 *
 * Failures are named: `BlobMissingError` (no such object) and `BlobStoreUnavailableError` (the
 * store cannot be reached or refused us), never a raw ENOENT or SDK error.
 */
export type BlobStore = {
  readonly kind: 'file' | 's3';
  /** Writes to a local staging file first (hashing as it goes), so the caller can examine it before storing it. */
  stage(source: Readable, options?: { limitBytes?: number }): Promise<StagedBlob>;
  /** The object's bytes (from `start` to `end`, both inclusive, when given). Fails before the stream starts when it is missing. */
  openRead(sha256: string, range?: { start: number; end?: number }): Promise<Readable>;
  /** A local file with the object's bytes, held until released (the file store's own file; else the bounded cache's). */
  localCopy(sha256: string): Promise<LocalBlob>;
  /** The object's size and age, or undefined when there is none. */
  stat(sha256: string): Promise<BlobInfo | undefined>;
  delete(sha256: string): Promise<void>;
  /** Every object in the store (housekeeping, migration). */
  list(): AsyncIterable<BlobInfo>;
  /**
   * A short-lived URL at which the store itself serves the object with this file name and type
   * (S3 only: DOWNLOAD_REDIRECT); absent when the store cannot.
   */
  presignedDownloadUrl?(sha256: string, options: { expiresInSeconds: number; filename: string; contentType: string }): Promise<string>;
  /** Whether the store answers right now (/readyz); false once `signal` aborts (readiness answers within its own deadline). */
  check(options?: { signal?: AbortSignal }): Promise<boolean>;
  close(): void;
};

export const STORAGE_FAILURES = {
  unavailable: { code: 'storage_unavailable', description: 'the file storage could not be reached; the job is retried' },
  objectMissing: { code: 'storage_object_missing', description: 'a stored file the job needs is missing from the file storage; the job is retried' },
} as const;

/**
 * The store could not be reached, timed out or refused the request. A `ReasonedError`, so an
 * outbox job that meets it records a stable code and is retried; the faces answer it as
 * `Storage.Unavailable` (503, normalize-error.ts).
 */
export class BlobStoreUnavailableError extends ReasonedError {
  constructor(cause: unknown) {
    super(STORAGE_FAILURES.unavailable, `blob store unavailable: ${(cause as Error)?.message ?? String(cause)}`, { cause });
    this.name = 'BlobStoreUnavailableError';
  }
}

/** No object under this hash (NoSuchKey, ENOENT): the faces answer `Storage.ObjectMissing`, jobs retry. */
export class BlobMissingError extends ReasonedError {
  readonly sha256: string;
  constructor(sha256: string, cause?: unknown) {
    super(STORAGE_FAILURES.objectMissing, `blob ${sha256} is not in the store`, { cause });
    this.name = 'BlobMissingError';
    this.sha256 = sha256;
  }
}

export function isSha256(value: string): boolean {
  return /^[0-9a-f]{64}$/.test(value);
}
