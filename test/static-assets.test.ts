import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installedPackage } from '../src/http/static-assets.ts';
import { SIGNING_ASSET_PATH } from '../src/signing-page/plugin.ts';
import { eventually } from './helpers/eventually.ts';
import { startTestApp, type TestApp } from './helpers/harness.ts';

/*
 * The service's static files (the signing page's pdf.js, GraphiQL's, the API reference's) in the
 * coding the browser accepts: Brotli before gzip, gzip before none, `q=0` honoured; the bytes
 * always decode to the file itself. Read with node:http, which (unlike fetch) hands the encoded
 * bytes over as they came.
 */

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

const WORKER_PATH = `${SIGNING_ASSET_PATH}pdf.worker.mjs`;
const workerFile = fs.readFileSync(path.join(installedPackage('pdfjs-dist').directory, 'build/pdf.worker.min.mjs'));

function get(acceptEncoding: string | undefined): Promise<{ status: number; encoding: string | undefined; vary: string | undefined; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const request = http.get(`${app.url}${WORKER_PATH}`, { headers: acceptEncoding === undefined ? {} : { 'accept-encoding': acceptEncoding } }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, encoding: response.headers['content-encoding'], vary: response.headers.vary, body: Buffer.concat(chunks) }));
      response.on('error', reject);
    });
    request.on('error', reject);
  });
}

describe('static files', () => {
  it('answers Brotli to a browser that accepts it, once made, and gzip meanwhile: nobody waits for the slow coding', async () => {
    // The first ask starts the Brotli copy (about two seconds for this file) and is answered gzipped at once.
    const first = await get('gzip, deflate, br');
    expect(first.status).toBe(200);
    expect(first.encoding).toBe('gzip');
    expect(gunzipSync(first.body).equals(workerFile)).toBe(true);
    const brotli = await eventually(
      async () => {
        const answer = await get('gzip, deflate, br');
        return answer.encoding === 'br' ? answer : null;
      },
      { timeoutMs: 60_000, intervalMs: 250, what: 'the Brotli copy' },
    );
    expect(brotli.vary).toBe('accept-encoding');
    expect(brotliDecompressSync(brotli.body).equals(workerFile)).toBe(true);
    // What a phone on a slow line gains: the worker a sixth smaller than gzipped.
    expect(brotli.body.byteLength).toBeLessThan(first.body.byteLength * 0.9);
  });

  it('honours q=0 and answers the file itself to a client that accepts no coding', async () => {
    const refused = await get('br;q=0, gzip');
    expect(refused.encoding).toBe('gzip');
    expect(gunzipSync(refused.body).equals(workerFile)).toBe(true);
    const identity = await get(undefined);
    expect(identity.encoding).toBeUndefined();
    expect(identity.body.equals(workerFile)).toBe(true);
    const neither = await get('br;q=0, gzip;q=0');
    expect(neither.encoding).toBeUndefined();
    expect(neither.body.equals(workerFile)).toBe(true);
  });
});
