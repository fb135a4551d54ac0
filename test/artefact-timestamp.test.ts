import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as pkijs from 'pkijs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { timestampRequest } from '../src/domain/pdf/timestamp.ts';
import { restClient, seedTeam, startTestApp, type TestApp, testSealDataDir } from './helpers/harness.ts';
import { pdfsig } from './helpers/pdf-tools.ts';
import { buildEnvelope, signAndComplete, tokenFor } from './helpers/signing.ts';
import { startLocalTsa } from './helpers/tsa.ts';
import { sealWorkerFor } from './helpers/workers.ts';

/* TSA_URL: every seal carries an RFC 3161 signature timestamp (PAdES B-T); a TSA that fails is retried, never skipped. */

let tsa: Awaited<ReturnType<typeof startLocalTsa>>;
let stamped: TestApp;
let broken: TestApp;
let directory: string;
beforeAll(async () => {
  tsa = await startLocalTsa();
  stamped = await startTestApp({ env: { TSA_URL: tsa.url } });
  // Nothing listens on port 9 of the loopback: the TSA is down.
  broken = await startTestApp({ env: { TSA_URL: 'http://127.0.0.1:9/tsa' } });
  directory = fs.mkdtempSync(path.join(os.tmpdir(), 'tsa-test-'));
});
afterAll(async () => {
  await stamped.close();
  await broken.close();
  await tsa.close();
  fs.rmSync(directory, { recursive: true, force: true });
});

async function finalizedEnvelope(app: TestApp) {
  const team = await seedTeam(app);
  const built = await buildEnvelope(app, team.apiKey, { recipients: [{ identifier: 'signer' }] });
  expect((await restClient(app, team.apiKey).put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
  expect((await signAndComplete(app, await tokenFor(app, built.envelopeId, built.recipients.signer!))).errors).toBeUndefined();
  return { team, built };
}

describe('signature timestamps', () => {
  it('ask with a nonce a strict TSA can read: a positive, minimal DER INTEGER, every time', () => {
    // OpenSSL's TSA answers a nonce with a padding byte (0x00 before a byte under 0x80) with a
    // rejection (status 2): one request in 256 was refused until the nonce's first byte was fixed.
    // 4,096 requests would all pass the old nonce with a chance of about one in ten million.
    const digest = Buffer.alloc(32, 7);
    const nonces = new Set<string>();
    for (let count = 0; count < 4096; count += 1) {
      const request = pkijs.TimeStampReq.fromBER(timestampRequest(digest));
      const bytes = Buffer.from(request.nonce!.valueBlock.valueHexView);
      expect(bytes.length).toBe(8);
      // Positive (high bit clear) and minimal (no leading zero byte).
      expect(bytes[0]).toBeGreaterThan(0);
      expect(bytes[0]).toBeLessThan(0x80);
      nonces.add(bytes.toString('hex'));
    }
    // Still random: no two alike.
    expect(nonces.size).toBe(4096);
  });

  it('are embedded from the TSA: pdfsig still validates the whole file, verify checks the timestamp token against the signature', async () => {
    const { team, built } = await finalizedEnvelope(stamped);
    expect(await sealWorkerFor(stamped, team.teamId).drain()).toBe(1);
    expect(tsa.requests).toBeGreaterThanOrEqual(1);
    const response = await fetch(`${stamped.url}/api/v1/key/envelopes/${built.envelopeId}/documents/${built.documentId}/pdf`, { headers: { 'x-service-api-key': team.apiKey } });
    const file = path.join(directory, 'stamped.pdf');
    fs.writeFileSync(file, Buffer.from(await response.arrayBuffer()));
    const report = pdfsig(file);
    expect(report).toContain('Signature is Valid.');
    expect(report).toContain('Total document signed');
    const verified = JSON.parse(execFileSync(process.execPath, ['src/cli/main.ts', 'verify', file], { env: { ...process.env, DATA_DIR: testSealDataDir() }, encoding: 'utf8' }));
    expect(verified.signatures[0]).toMatchObject({ valid: true, timestamp: { valid: true } });
    // The TSA's time, within a minute of now (poppler's pdfsig does not show timestamps; verify does).
    expect(Math.abs(Date.parse(verified.signatures[0].timestamp.time) - Date.now())).toBeLessThan(60_000);
  });

  it('a TSA that fails leaves the job to retry: nothing is sealed without a timestamp, downloads say to come back', async () => {
    const { team, built } = await finalizedEnvelope(broken);
    expect(await sealWorkerFor(broken, team.teamId).drain()).toBe(1);
    const [row] = await broken.orm.em
      .fork()
      .execute<{ attempts: number; processed_at: unknown; failed_at: unknown; last_error: string }[]>(
        `select attempts, processed_at, failed_at, last_error from outbox_message where dedupe_key = ?`,
        [`artefact.seal:${built.envelopeId}`],
      );
    expect(row).toMatchObject({ attempts: 1, processed_at: null, failed_at: null });
    expect(row!.last_error).toMatch(/^timestamp_unavailable: .*timestamp authority/);
    const [document] = await broken.orm.em.fork().execute<{ sealed_sha256: string | null }[]>(`select sealed_sha256 from document where id = ?`, [built.documentId]);
    expect(document!.sealed_sha256).toBeNull();
    const download = await restClient(broken, team.apiKey).get(`/envelopes/${built.envelopeId}/documents/${built.documentId}/pdf`);
    expect(download.status).toBe(503);
    expect(download.body.error.name).toBe('Server.Busy');
  });
});
