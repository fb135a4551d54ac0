/**
 * The blob-store contract, run against both stores (files under DATA_DIR/blobs and an
 * S3-compatible bucket served by s3rver), and the bounded local cache.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { BlobCache, BlobMissingError, type BlobStore, BlobStoreUnavailableError, createBlobStore } from '../src/shared/blob-store/index.ts';
import { startTestS3, type TestS3 } from './helpers/s3.ts';

let s3: TestS3;
const directories: string[] = [];
beforeAll(async () => {
  s3 = await startTestS3();
});
afterAll(async () => {
  await s3.close();
  for (const directory of directories) fs.rmSync(directory, { recursive: true, force: true });
});

function dataDir(): string {
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'blob-store-'));
  directories.push(directory);
  return directory;
}

function storeOf(kind: 'file' | 's3', env: Record<string, string> = {}): BlobStore {
  const directory = dataDir();
  // Each S3 store under a prefix of its own: the tests share the bucket.
  const s3Env = kind === 's3' ? { ...s3.env, BLOB_STORE_URL: `${s3.env.BLOB_STORE_URL}/${path.basename(directory)}` } : {};
  const config = loadConfig({ DATA_DIR: directory, ...s3Env, ...env });
  return createBlobStore({ dataDir: directory, location: config.blobStore, cacheBytes: config.blobCacheBytes });
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

async function put(store: BlobStore, bytes: Buffer): Promise<string> {
  const staged = await store.stage(Readable.from([bytes]));
  expect(fs.readFileSync(staged.stagingPath).equals(bytes)).toBe(true);
  return (await staged.commit()).sha256;
}

describe.each(['file', 's3'] as const)('the %s store', (kind) => {
  it('stages while hashing, commits, and serves the bytes whole, by range and as a local copy', async () => {
    const store = storeOf(kind);
    const bytes = Buffer.from(`hello blob ${kind} ${Math.random()}`);
    const staged = await store.stage(Readable.from([bytes]), { limitBytes: 1000 });
    expect(staged.sha256).toBe(sha256(bytes));
    expect(staged.byteSize).toBe(bytes.length);
    expect(await store.stat(staged.sha256)).toBeUndefined();
    await staged.commit();
    expect(fs.existsSync(staged.stagingPath)).toBe(false);
    expect(await store.stat(staged.sha256)).toMatchObject({ sha256: staged.sha256, byteSize: bytes.length });
    expect((await readAll(await store.openRead(staged.sha256))).equals(bytes)).toBe(true);
    expect((await readAll(await store.openRead(staged.sha256, { start: 6, end: 9 }))).toString()).toBe('blob');
    const copy = await store.localCopy(staged.sha256);
    expect(fs.readFileSync(copy.path).equals(bytes)).toBe(true);
    copy.release();
    expect(await store.check()).toBe(true);
    store.close();
  });

  it('commits the same bytes twice as one object, lists it, and deletes it', async () => {
    const store = storeOf(kind);
    const bytes = Buffer.from(`twice ${Math.random()}`);
    const first = await put(store, bytes);
    expect(await put(store, bytes)).toBe(first);
    const listed = [];
    for await (const object of store.list()) listed.push(object);
    expect(listed.map((object) => object.sha256)).toEqual([first]);
    await store.delete(first);
    expect(await store.stat(first)).toBeUndefined();
    await store.delete(first);
    store.close();
  });

  it('names a missing object: BlobMissingError from openRead and localCopy, never a raw ENOENT or NoSuchKey', async () => {
    const store = storeOf(kind);
    const missing = sha256(Buffer.from(`never stored ${Math.random()}`));
    await expect(store.openRead(missing)).rejects.toBeInstanceOf(BlobMissingError);
    await expect(store.localCopy(missing)).rejects.toBeInstanceOf(BlobMissingError);
    await expect(store.openRead('../../etc/passwd')).rejects.toBeInstanceOf(BlobMissingError);
    store.close();
  });

  it('refuses a source over the limit and a source that broke', async () => {
    const store = storeOf(kind);
    await expect(store.stage(Readable.from([Buffer.alloc(3000)]), { limitBytes: 1000 })).rejects.toThrow(/exceeds 1000 bytes/);
    const broken = new Readable({ read() {} });
    broken.on('error', () => undefined);
    broken.destroy(new Error('cut off'));
    await expect(store.stage(broken)).rejects.toThrow(/before the whole file arrived/);
    store.close();
  });
});

describe('the S3 store when the server is down', () => {
  it('fails by name (BlobStoreUnavailableError), check() says so, and works again once the server is back', async () => {
    const store = storeOf('s3');
    const bytes = Buffer.from(`outage ${Math.random()}`);
    const stored = await put(store, bytes);
    await s3.stop();
    try {
      expect(await store.check()).toBe(false);
      await expect(store.openRead(stored)).rejects.toBeInstanceOf(BlobStoreUnavailableError);
      const staged = await store.stage(Readable.from([Buffer.from('during the outage')]));
      await expect(staged.commit()).rejects.toBeInstanceOf(BlobStoreUnavailableError);
      await staged.discard();
    } finally {
      await s3.start();
    }
    expect(await store.check()).toBe(true);
    expect((await readAll(await store.openRead(stored))).equals(bytes)).toBe(true);
    store.close();
  });

  it('presigns a URL that serves the bytes with the file name and type asked for', async () => {
    const store = storeOf('s3');
    const bytes = Buffer.from(`presigned ${Math.random()}`);
    const stored = await put(store, bytes);
    const url = await store.presignedDownloadUrl!(stored, { expiresInSeconds: 60, filename: "Sözleşme (O'Brien).pdf", contentType: 'application/pdf' });
    const response = await fetch(url);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/pdf');
    expect(response.headers.get('content-disposition')).toContain("filename*=UTF-8''S%C3%B6zle%C5%9Fme%20%28O%27Brien%29.pdf");
    expect(Buffer.from(await response.arrayBuffer()).equals(bytes)).toBe(true);
    store.close();
  });
});

describe('the local cache', () => {
  function cacheWith(maxBytes: number) {
    const directory = path.join(dataDir(), 'blob-cache');
    const downloads: string[] = [];
    const cache = new BlobCache({
      directory,
      maxBytes,
      async download(key, target) {
        downloads.push(key);
        await new Promise((resolve) => setTimeout(resolve, 20));
        fs.writeFileSync(target, Buffer.alloc(100, key.slice(0, 1)));
      },
    });
    return { cache, downloads, directory };
  }
  const key = (letter: string) => letter.repeat(64);

  it('shares one download between concurrent requests for the same object', async () => {
    const { cache, downloads } = cacheWith(1000);
    const copies = await Promise.all([cache.acquire(key('a')), cache.acquire(key('a')), cache.acquire(key('a'))]);
    expect(downloads).toEqual([key('a')]);
    expect(new Set(copies.map((copy) => copy.path)).size).toBe(1);
    for (const copy of copies) copy.release();
  });

  it('evicts the least recently used copies past its bound, never one in use', async () => {
    const { cache, downloads } = cacheWith(250);
    const a = await cache.acquire(key('a'));
    (await cache.acquire(key('b'))).release();
    (await cache.acquire(key('c'))).release();
    // a (held) and c stay; b, the least recently used idle copy, went.
    expect(fs.existsSync(a.path)).toBe(true);
    expect(cache.totalBytes).toBe(200);
    (await cache.acquire(key('c'))).release();
    (await cache.acquire(key('b'))).release();
    expect(downloads).toEqual([key('a'), key('b'), key('c'), key('b')]);
    // Everything held: over the bound until released, never deleting a file in use.
    const held = await Promise.all([cache.acquire(key('d')), cache.acquire(key('e'))]);
    expect(held.every((copy) => fs.existsSync(copy.path))).toBe(true);
    expect(fs.existsSync(a.path)).toBe(true);
    a.release();
    for (const copy of held) copy.release();
    expect(cache.totalBytes).toBeLessThanOrEqual(250);
  });

  it('adopts the copies of an earlier run and drops unfinished downloads', async () => {
    const { cache, directory } = cacheWith(1000);
    (await cache.acquire(key('f'))).release();
    fs.writeFileSync(path.join(directory, 'x.part'), 'cut off');
    const again = new BlobCache({ directory, maxBytes: 1000, download: () => Promise.reject(new Error('must not download')) });
    const copy = await again.acquire(key('f'));
    expect(fs.readFileSync(copy.path).length).toBe(100);
    copy.release();
    expect(fs.existsSync(path.join(directory, 'x.part'))).toBe(false);
  });
});
