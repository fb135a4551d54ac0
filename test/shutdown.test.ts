import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { makePdf } from './fixtures/pdfs.ts';
import { restClient, runInstanceEnvironment, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';

let seeder: TestApp;
beforeAll(async () => {
  seeder = await startTestApp();
});
afterAll(async () => {
  await seeder.close();
});

/** Starts `node src/main.ts` as a real process on a free port and waits for its listening line. */
async function startService() {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'envelope-shutdown-'));
  const child = spawn(process.execPath, ['src/main.ts'], {
    // No outbox worker: on the shared test database it would take other files' jobs.
    env: { ...process.env, DATABASE_URL: inject('databaseUrl'), PORT: '0', DATA_DIR: dataDir, LOG_LEVEL: 'info', OUTBOX_WORKER: 'false', ...runInstanceEnvironment(dataDir) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no listening line:\n${output}`)), 30_000);
    child.stdout.on('data', () => {
      const match = /"address":"(http:\/\/[^"]+)"/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, url, exited, output: () => output, cleanup: () => fs.rmSync(dataDir, { recursive: true, force: true }) };
}

describe('graceful shutdown', () => {
  it('on SIGTERM finishes an upload already in flight, refuses new connections, and exits cleanly', async () => {
    const team = await seedTeam(seeder);
    const envelopeId = (await restClient(seeder, team.apiKey).post('/envelopes', { name: 'Shutdown' })).body.payload.envelopeId;
    const service = await startService();
    try {
      const pdf = Buffer.from(await makePdf({ pages: 2 }));
      const boundary = 'shutdown-boundary';
      const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="document"; filename="late.pdf"\r\nContent-Type: application/pdf\r\n\r\n`);
      const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
      const target = new URL(`${service.url}/api/v1/key/envelopes/${envelopeId}/documents`);
      const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
        const request = http.request(
          {
            host: target.hostname,
            port: target.port,
            path: target.pathname,
            method: 'POST',
            headers: {
              'x-service-api-key': team.apiKey,
              'content-type': `multipart/form-data; boundary=${boundary}`,
              'content-length': head.length + pdf.length + tail.length,
            },
          },
          (response) => {
            let body = '';
            response.on('data', (chunk) => (body += chunk));
            response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
          },
        );
        request.on('error', reject);
        // Half the upload, then the signal, then the rest: the request is in flight when SIGTERM lands.
        request.write(head);
        request.write(pdf.subarray(0, pdf.length >> 1));
        setTimeout(() => {
          service.child.kill('SIGTERM');
          setTimeout(() => {
            request.write(pdf.subarray(pdf.length >> 1));
            request.end(tail);
          }, 500);
        }, 300);
      });
      const result = await answer;
      expect(result.status).toBe(200);
      expect(JSON.parse(result.body).payload.document).toMatchObject({ name: 'late.pdf', pageCount: 2 });
      expect(await service.exited).toBe(0);
      expect(service.output()).toContain('"msg":"stopped"');
      await expect(fetch(`${service.url}/healthz`)).rejects.toThrow();
    } finally {
      service.child.kill('SIGKILL');
      service.cleanup();
    }
  });
});
