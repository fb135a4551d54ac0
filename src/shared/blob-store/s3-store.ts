import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { DeleteObjectCommand, GetObjectCommand, HeadBucketCommand, HeadObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { BlobCache } from './cache.ts';
import { contentDisposition } from '../content-disposition.ts';
import { stageFile } from './staging.ts';
import { BlobMissingError, BlobStoreUnavailableError, isSha256, type BlobInfo, type BlobStore } from './types.ts';

export type S3Location = {
  bucket: string;
  /** Prepended to every key ('' or ending in '/'). */
  prefix: string;
  /** S3_ENDPOINT: an S3-compatible server (MinIO, Ceph, …); undefined is AWS. */
  endpoint: string | undefined;
  region: string;
  /** Path-style addressing (`endpoint/bucket/key`), which self-hosted servers usually need. */
  forcePathStyle: boolean;
};

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

/** Anything but "no such object" (unreachable, timed out, 5xx, refused credentials) is the store being unavailable to us. */
function storeError(sha256: string, error: unknown): Error {
  if (error instanceof BlobMissingError || error instanceof BlobStoreUnavailableError) return error;
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
  fs.mkdirSync(options.stagingDirectory, { recursive: true });
  const client = new S3Client({
    region: location.region,
    endpoint: location.endpoint,
    forcePathStyle: location.forcePathStyle,
    // A store that does not answer fails the request in seconds (Storage.Unavailable), rather
    // than holding an upload or a job for the operating system's TCP timeout.
    requestHandler: { connectionTimeout: 5_000, requestTimeout: 60_000 },
  });
  const Bucket = location.bucket;
  const keyOf = (sha256: string) => {
    if (!isSha256(sha256)) throw new BlobMissingError(sha256);
    return `${location.prefix}${sha256}`;
  };

  async function stat(sha256: string): Promise<BlobInfo | undefined> {
    try {
      const head = await client.send(new HeadObjectCommand({ Bucket, Key: keyOf(sha256) }));
      return { sha256, byteSize: Number(head.ContentLength ?? 0), lastModified: head.LastModified ?? new Date(0) };
    } catch (error) {
      const failure = storeError(sha256, error);
      if (failure instanceof BlobMissingError) return undefined;
      throw failure;
    }
  }

  async function openRead(sha256: string, range?: { start: number; end?: number }): Promise<Readable> {
    try {
      const answer = await client.send(new GetObjectCommand({ Bucket, Key: keyOf(sha256), Range: range === undefined ? undefined : `bytes=${range.start}-${range.end ?? ''}` }));
      return answer.Body as Readable;
    } catch (error) {
      throw storeError(sha256, error);
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
      try {
        await pipeline(await openRead(sha256), hashing, fs.createWriteStream(targetPath, { flags: 'wx' }));
      } catch (error) {
        throw storeError(sha256, error);
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
        try {
          await new Upload({
            client,
            params: { Bucket, Key: keyOf(sha256), Body: fs.createReadStream(stagingPath), ContentType: 'application/octet-stream' },
            partSize: PART_SIZE,
            queueSize: QUEUE_SIZE,
          }).done();
        } catch (error) {
          throw storeError(sha256, error);
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
        await client.send(new DeleteObjectCommand({ Bucket, Key: keyOf(sha256) }));
      } catch (error) {
        const failure = storeError(sha256, error);
        if (!(failure instanceof BlobMissingError)) throw failure;
      }
    },
    async *list() {
      let ContinuationToken: string | undefined;
      do {
        let page;
        try {
          page = await client.send(new ListObjectsV2Command({ Bucket, Prefix: location.prefix || undefined, ContinuationToken }));
        } catch (error) {
          throw new BlobStoreUnavailableError(error);
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
    async check() {
      try {
        await client.send(new HeadBucketCommand({ Bucket }));
        return true;
      } catch {
        return false;
      }
    },
    close: () => client.destroy(),
  };
}

