/**
 * Fault: the disk under DATA_DIR is full. DATA_DIR is a small tmpfs (8 MB) the test mounts (it
 * needs root, or CAP_SYS_ADMIN; without it the test is skipped and says why), filled with a
 * filler file; the service runs as a real process on it, its database on a private cluster.
 *
 * Promised (docs/operations.md, "What happens when the disk is full"):
 * - an upload fails with `Storage.Full` (507) on REST, and by name on GraphQL; nothing half-written
 *   is kept or referenced: no row, no staging file, no blob;
 * - the service keeps answering (/healthz, /readyz, reads), and a sealing job that meets the full
 *   disk is retried, not lost and not failed;
 * - once space returns, uploads work and the envelope is sealed, with nothing else to do.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { MikroORM } from '@mikro-orm/postgresql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uploadDocument, uploadDocumentThroughGraphql } from '../helpers/envelopes.ts';
import { type FaultSmtpServer, startFaultSmtpServer } from '../helpers/fault-smtp.ts';
import { asTestApp, blobPath, type FaultTeam, missingBlobs, openOrm, paddedPdf, seedTeamIn, stagingFiles, waitUntil } from '../helpers/faults.ts';
import { restClient } from '../helpers/harness.ts';
import { type PgCluster, startPgCluster } from '../helpers/pg-cluster.ts';
import { type ServiceProcess, startService } from '../helpers/service.ts';
import { buildEnvelope, signAndComplete } from '../helpers/signing.ts';
import { signingLinkIn } from '../helpers/smtp.ts';

let base: string;
let dataDir: string;
let mounted = false;
let mountProblem = '';
let cluster: PgCluster;
let orm: MikroORM;
let team: FaultTeam;
let smtp: FaultSmtpServer;
let service: ServiceProcess | undefined;

beforeAll(async () => {
  base = fs.mkdtempSync(path.join(os.tmpdir(), 'envelope-faults-disk-'));
  dataDir = path.join(base, 'data');
  fs.mkdirSync(dataDir);
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=8m', 'tmpfs', dataDir], { stdio: 'pipe' });
    mounted = true;
  } catch (error) {
    mountProblem = String((error as { stderr?: Buffer }).stderr ?? (error as Error).message).trim();
    return;
  }
  cluster = await startPgCluster();
  orm = await openOrm(cluster.databaseUrl);
  team = await seedTeamIn(orm);
  smtp = await startFaultSmtpServer();
  service = await startService({ databaseUrl: cluster.databaseUrl, dataDir, env: { SMTP_URL: smtp.url, SANDBOX_CLOCK: 'true', RATE_LIMIT_PER_MINUTE: '0' } });
});

afterAll(async () => {
  await service?.stop();
  await orm?.close(true);
  await smtp?.close();
  await cluster?.destroy();
  if (mounted) execFileSync('umount', [dataDir]);
  fs.rmSync(base, { recursive: true, force: true });
});

/** Fills the file system with one file until a write fails, then frees `leaveBytes` of it. */
function fillDisk(leaveBytes: number): string {
  const filler = path.join(dataDir, 'filler');
  const descriptor = fs.openSync(filler, 'w');
  const chunk = Buffer.alloc(64 * 1024, 1);
  try {
    for (;;) fs.writeSync(descriptor, chunk);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
  }
  // Byte-wise to the very end, so the last partial block is used too.
  try {
    for (;;) fs.writeSync(descriptor, chunk.subarray(0, 512));
  } catch {
    // full
  }
  fs.closeSync(descriptor);
  if (leaveBytes > 0) fs.truncateSync(filler, Math.max(0, fs.statSync(filler).size - leaveBytes));
  return filler;
}

describe('the disk under DATA_DIR is full', () => {
  it('refuses uploads with Storage.Full and keeps nothing of them, keeps serving, retries sealing, and recovers when space returns', async (context) => {
    if (!mounted) {
      console.warn(`disk-full fault test skipped: cannot mount a tmpfs here (needs root or CAP_SYS_ADMIN): ${mountProblem}`);
      context.skip();
      return;
    }
    const app = asTestApp(service!.url, orm);
    const rest = restClient(app, team.apiKey);
    // Made while there is space: one envelope to sign once the disk is full, one to upload to.
    const signed = await buildEnvelope(app, team.apiKey, { name: 'Sealed on a full disk', recipients: [{ identifier: 'filler' }] });
    expect((await rest.put(`/envelopes/${signed.envelopeId}/send`)).status).toBe(200);
    const invitation = await waitUntil('the invitation', () => smtp.accepted.find((mail) => mail.rcptTo.includes('filler@example.com')));
    const target = (await rest.post('/envelopes', { name: 'Upload target' })).body.payload.envelopeId as string;
    const pdf = await paddedPdf({ pages: 3, bytes: 1024 * 1024 });
    const sha256 = createHash('sha256').update(pdf).digest('hex');

    const filler = fillDisk(4096);

    // REST: a named 507, nothing stored.
    const refused = await uploadDocument(app, team.apiKey, target, { bytes: pdf });
    expect(refused.status, JSON.stringify(refused.body)).toBe(507);
    expect(refused.body.error.name).toBe('Storage.Full');
    expect(refused.body.error.description).toMatch(/no storage space/);
    // GraphQL: the same name.
    const refusedGraphql = await uploadDocumentThroughGraphql(app, team.apiKey, target, { bytes: pdf });
    expect(refusedGraphql.body.errors?.[0]?.extensions?.code, JSON.stringify(refusedGraphql.body)).toBe('Storage.Full');
    expect(await orm.em.fork().execute(`select id from document where envelope_id = ?`, [target])).toEqual([]);
    expect(stagingFiles(dataDir)).toEqual([]);
    expect(fs.existsSync(blobPath(dataDir, sha256))).toBe(false);

    // Still serving: health, readiness (the database is fine), reads.
    expect((await fetch(`${service!.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${service!.url}/readyz`)).status).toBe(200);
    expect((await rest.get(`/envelopes/${target}`)).status).toBe(200);

    // Finalized while the disk is full: the sealing job fails for now and waits for its retry.
    const signing = await signAndComplete(app, signingLinkIn({ rcptTo: invitation.rcptTo, mail: invitation.mail, raw: '' })!.token);
    expect(signing.errors, JSON.stringify(signing.errors)).toBeUndefined();
    const job = await waitUntil('the sealing job to meet the full disk', async () => {
      const [row] = await orm.em
        .fork()
        .execute<{ attempts: number; last_error: string | null; failed_at: Date | null; processed_at: Date | null }[]>(
          `select attempts, last_error, failed_at, processed_at from outbox_message where topic = 'artefact.seal' and payload ->> 'envelopeId' = ?`,
          [signed.envelopeId],
        );
      return row && row.attempts >= 1 && row.last_error ? row : undefined;
    });
    expect(job).toMatchObject({ failed_at: null, processed_at: null });
    expect(job.last_error).toMatch(/ENOSPC|no space/i);
    expect(stagingFiles(dataDir)).toEqual([]);

    // Space returns.
    fs.rmSync(filler);
    const accepted = await uploadDocument(app, team.apiKey, target, { bytes: pdf });
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
    expect(fs.existsSync(blobPath(dataDir, sha256))).toBe(true);
    // The sealing job's retry is due within its backoff (at most 5 s after the first attempt).
    expect((await rest.post('/sandbox/clock', { seconds: 60 })).status).toBe(200);
    await waitUntil(
      'the envelope to be sealed',
      async () => {
        const [row] = await orm.em
          .fork()
          .execute<{ processed_at: Date | null }[]>(`select processed_at from outbox_message where topic = 'artefact.seal' and payload ->> 'envelopeId' = ?`, [signed.envelopeId]);
        return row?.processed_at ? true : undefined;
      },
      60_000,
      200,
    );
    const download = await fetch(`${service!.url}/api/v1/key/envelopes/${signed.envelopeId}/documents/${signed.documentId}/pdf`, { headers: { 'x-service-api-key': team.apiKey } });
    expect(download.status).toBe(200);
    expect(download.headers.get('x-artefact-sealed')).toBe('true');
    await download.arrayBuffer();

    expect(await missingBlobs(orm, dataDir)).toEqual([]);
    expect(stagingFiles(dataDir)).toEqual([]);
    expect(service!.unexpectedErrors()).toEqual([]);
    expect(service!.isRunning()).toBe(true);
  });
});
