import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { DeleteObjectCommand, GetObjectCommand, HeadBucketCommand, HeadObjectCommand, ListObjectsV2Command, type ListObjectsV2CommandOutput, S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { contentDisposition } from '../content-disposition.ts';
import { BlobCache } from './cache.ts';
import { stageFile } from './staging.ts';
import { type BlobInfo, BlobMissingError, type BlobStore, BlobStoreUnavailableError, isSha256 } from './types.ts';

export type S3Location = {
  bucket: string;
  /** Prepended to every key ('' or ending in '/'). */
  prefix: string;
  /** S3_ENDPOINT: an S3-compatible server (MinIO, Ceph, …); undefined is AWS. */
  endpoint: string | undefined;
  region: string;
  /** Path-style addressing (`endpoint/bucket/key`), which self-hosted servers usually need. */
  forcePathStyle: boolean;
  /** Deadlines of every call (default DEFAULT_S3_DEADLINES). */
  deadlines?: S3Deadlines;
};

/**
 * A store that accepts connections but never answers (a stopped process, a hung disk behind it)
 * must not hold uploads, downloads or readiness for as long as it hangs, so every call has three
 * deadlines (docs/operations.md, "Object storage"):
 * - `connectMs`: to open a connection (S3_CONNECT_TIMEOUT_MS);
 * - `requestMs`: for one HTTP request to be answered, from sending it to the answer's headers,
 *   its body included (S3_REQUEST_TIMEOUT_MS); a timed-out request is retried by the SDK;
 * - `operationMs`: for the whole call, retries and every part of a multipart upload included,
 *   and, for a copy into the local cache, the whole body (S3_OPERATION_TIMEOUT_MS).
 * Past any of them the call fails with BlobStoreUnavailableError (Storage.Unavailable, 503).
 */
export type S3Deadlines = { connectMs: number; requestMs: number; operationMs: number };

export const DEFAULT_S3_DEADLINES: S3Deadlines = { connectMs: 5_000, requestMs: 60_000, operationMs: 120_000 };

/** An operation's deadline: its signal, and `clear` once the part it bounds is over. */
function deadline(milliseconds: number, outer?: AbortSignal): { signal: AbortSignal; clear(): void; passed(): boolean } {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error(`the object store did not answer within ${milliseconds} ms`)), milliseconds);
  const onOuter = () => controller.abort(outer?.reason);
  outer?.addEventListener('abort', onOuter, { once: true });
  if (outer?.aborted) onOuter();
  return {
    signal: controller.signal,
    clear() {
      clearTimeout(timer);
      outer?.removeEventListener('abort', onOuter);
    },
    passed: () => controller.signal.aborted,
  };
}

/**
 * Multipart parts are buffered in memory by lib-storage: at most `QUEUE_SIZE × PART_SIZE` bytes
 * per upload in flight (10 MiB), whatever the file's size. 5 MiB is S3's smallest part.
 */
const PART_SIZE = 5 * 1024 * 1024;
const QUEUE_SIZE = 2;

/**
 * An existing object younger than this is taken as stored (the same bytes: the key is their
 * hash) and not uploaded again; an older one is uploaded anew, which renews its age, so the
 * orphan sweep (24 hours of grace) cannot remove it between this commit and the row naming it.
 */
const REUSE_EXISTING_MS = 60 * 60_000;

function statusOf(error: unknown): number | undefined {
  return (error as { $metadata?: { httpStatusCode?: number } })?.$metadata?.httpStatusCode;
}

function isNotFound(error: unknown): boolean {
  const name = (error as Error)?.name;
  return name === 'NoSuchKey' || name === 'NotFound' || statusOf(error) === 404;
}

/**
 * A body that stops arriving while its reader is waiting for it fails (BlobStoreUnavailableError)
 * after `idleMs`: a store that hangs in the middle of a download must not hold it for ever. Time
 * spent paused because the reader is slow (backpressure: the guard's buffer is full and the body
 * is not flowing) does not count, so a slow client is never cut off.
 */
function guardStalls(body: Readable, idleMs: number): Readable {
  let lastProgress = Date.now();
  const guard = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      lastProgress = Date.now();
      callback(null, chunk);
    },
  });
  const timer = setInterval(
    () => {
      // Not flowing: paused by backpressure (or not read yet), so the store is not the one waiting.
      if (body.readableFlowing !== true) lastProgress = Date.now();
      else if (Date.now() - lastProgress > idleMs) guard.destroy(new BlobStoreUnavailableError(new Error(`the object store sent nothing for ${idleMs} ms in the middle of an object`)));
    },
    Math.max(50, Math.min(1_000, Math.floor(idleMs / 4))),
  );
  timer.unref();
  pipeline(body, guard)
    .catch(() => undefined)
    .finally(() => clearInterval(timer));
  return guard;
}

/** Anything but "no such object" (unreachable, timed out, 5xx, refused credentials) is the store being unavailable to us. */
function storeError(sha256: string, error: unknown, timedOut?: { passed(): boolean; signal: AbortSignal }): Error {
  if (error instanceof BlobMissingError || error instanceof BlobStoreUnavailableError) return error;
  // An aborted call names its deadline rather than the SDK's "Request aborted".
  if (timedOut?.passed()) return new BlobStoreUnavailableError(timedOut.signal.reason);
  return isNotFound(error) ? new BlobMissingError(sha256, error) : new BlobStoreUnavailableError(error);
}

/**
 * Objects in an S3-compatible bucket under `prefix + sha256`. Uploads are staged locally as with
 * the file store (inspection needs the file), then streamed from the staging file as a multipart
 * upload; reads stream from the bucket; random-access work gets a copy from the bounded cache
 * under `cacheDirectory`. Credentials come from the SDK's standard chain (AWS_ACCESS_KEY_ID and
 * AWS_SECRET_ACCESS_KEY, a profile, an instance role). The SDK's default request checksums stay on.
 */
export function createS3BlobStore(options: { location: S3Location; stagingDirectory: string; cacheDirectory: string; cacheBytes: number }): BlobStore {
  const { location } = options;
  const deadlines = location.deadlines ?? DEFAULT_S3_DEADLINES;
  fs.mkdirSync(options.stagingDirectory, { recursive: true });
  const client = new S3Client({
    region: location.region,
    endpoint: location.endpoint,
    forcePathStyle: location.forcePathStyle,
    // The SDK's requestTimeout only logs a warning unless throwOnRequestTimeout is set: a store
    // that accepted the connection and then stopped answering held every call for as long as it
    // hung. No socket (idle) timeout: a download paused by a slow client is idle too, and must
    // not be cut; the request and operation deadlines bound a store that stops.
    requestHandler: { connectionTimeout: deadlines.connectMs, requestTimeout: deadlines.requestMs, throwOnRequestTimeout: true },
  });
  /** One SDK call within the operation deadline (and `outer`, e.g. readiness's own). */
  async function send<T>(sha256: string, call: (options: { abortSignal: AbortSignal }) => Promise<T>, outer?: AbortSignal): Promise<T> {
    const bound = deadline(deadlines.operationMs, outer);
    try {
      return await call({ abortSignal: bound.signal });
    } catch (error) {
      throw storeError(sha256, error, bound);
    } finally {
      bound.clear();
    }
  }
  const Bucket = location.bucket;
  const keyOf = (sha256: string) => {
    if (!isSha256(sha256)) throw new BlobMissingError(sha256);
    return `${location.prefix}${sha256}`;
  };

  async function stat(sha256: string): Promise<BlobInfo | undefined> {
    try {
      const head = await send(sha256, (sending) => client.send(new HeadObjectCommand({ Bucket, Key: keyOf(sha256) }), sending));
      return { sha256, byteSize: Number(head.ContentLength ?? 0), lastModified: head.LastModified ?? new Date(0) };
    } catch (error) {
      if (error instanceof BlobMissingError) return undefined;
      throw error;
    }
  }

  /**
   * The object's body. `whole`: the deadline also bounds reading the body to its end (a copy into
   * the cache); otherwise it ends when the answer starts, since a download streams only as fast
   * as its client reads and a slow client is not the store's failure.
   */
  async function openRead(sha256: string, range?: { start: number; end?: number }, whole?: ReturnType<typeof deadline>): Promise<Readable> {
    const bound = whole ?? deadline(deadlines.operationMs);
    try {
      const answer = await client.send(new GetObjectCommand({ Bucket, Key: keyOf(sha256), Range: range === undefined ? undefined : `bytes=${range.start}-${range.end ?? ''}` }), {
        abortSignal: bound.signal,
      });
      return whole === undefined ? guardStalls(answer.Body as Readable, deadlines.requestMs) : (answer.Body as Readable);
    } catch (error) {
      throw storeError(sha256, error, bound);
    } finally {
      if (whole === undefined) bound.clear();
    }
  }

  const cache = new BlobCache({
    directory: options.cacheDirectory,
    maxBytes: options.cacheBytes,
    async download(sha256, targetPath) {
      // Hashed on the way in: a copy that is not the object's bytes is never used.
      const hash = createHash('sha256');
      const hashing = new Transform({
        transform(chunk: Buffer, _encoding, callback) {
          hash.update(chunk);
          callback(null, chunk);
        },
      });
      const bound = deadline(deadlines.operationMs);
      try {
        await pipeline(await openRead(sha256, undefined, bound), hashing, fs.createWriteStream(targetPath, { flags: 'wx' }), { signal: bound.signal });
      } catch (error) {
        throw storeError(sha256, error, bound);
      } finally {
        bound.clear();
      }
      const actual = hash.digest('hex');
      if (actual !== sha256) throw new BlobStoreUnavailableError(new Error(`object ${sha256} read back with SHA-256 ${actual}`));
    },
  });

  return {
    kind: 's3',
    stage: (source, stageOptions = {}) =>
      stageFile(options.stagingDirectory, source, stageOptions, async ({ sha256, byteSize, stagingPath }) => {
        const existing = await stat(sha256);
        if (existing !== undefined && existing.byteSize === byteSize && Date.now() - existing.lastModified.getTime() < REUSE_EXISTING_MS) return;
        // lib-storage takes an AbortController, not a signal: the deadline aborts it.
        const bound = deadline(deadlines.operationMs);
        const abortController = new AbortController();
        bound.signal.addEventListener('abort', () => abortController.abort(bound.signal.reason), { once: true });
        try {
          await new Upload({
            client,
            params: { Bucket, Key: keyOf(sha256), Body: fs.createReadStream(stagingPath), ContentType: 'application/octet-stream' },
            partSize: PART_SIZE,
            queueSize: QUEUE_SIZE,
            abortController,
          }).done();
        } catch (error) {
          throw storeError(sha256, error, bound);
        } finally {
          bound.clear();
        }
      }),
    openRead,
    localCopy: (sha256) => {
      keyOf(sha256);
      return cache.acquire(sha256);
    },
    stat,
    async delete(sha256) {
      try {
        await send(sha256, (sending) => client.send(new DeleteObjectCommand({ Bucket, Key: keyOf(sha256) }), sending));
      } catch (error) {
        if (!(error instanceof BlobMissingError)) throw error;
      }
    },
    async *list() {
      let ContinuationToken: string | undefined;
      do {
        let page: ListObjectsV2CommandOutput;
        try {
          page = await send('', (sending) => client.send(new ListObjectsV2Command({ Bucket, Prefix: location.prefix || undefined, ContinuationToken }), sending));
        } catch (error) {
          throw error instanceof BlobStoreUnavailableError ? error : new BlobStoreUnavailableError(error);
        }
        for (const object of page.Contents ?? []) {
          const name = (object.Key ?? '').slice(location.prefix.length);
          // Only our objects: whatever else shares the bucket or prefix is left alone.
          if (!isSha256(name)) continue;
          yield { sha256: name, byteSize: Number(object.Size ?? 0), lastModified: object.LastModified ?? new Date(0) };
        }
        ContinuationToken = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (ContinuationToken !== undefined);
    },
    async presignedDownloadUrl(sha256, presign) {
      const disposition = contentDisposition(presign.filename);
      try {
        return await getSignedUrl(
          client,
          new GetObjectCommand({ Bucket, Key: keyOf(sha256), ResponseContentDisposition: disposition, ResponseContentType: presign.contentType, ResponseCacheControl: 'private, no-store' }),
          { expiresIn: presign.expiresInSeconds },
        );
      } catch (error) {
        throw storeError(sha256, error);
      }
    },
    async check(checkOptions = {}) {
      try {
        await send('', (sending) => client.send(new HeadBucketCommand({ Bucket }), sending), checkOptions.signal);
        return true;
      } catch {
        return false;
      }
    },
    close: () => client.destroy(),
  };
}
