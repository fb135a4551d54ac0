import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'vitest';
import { createLogger } from '../../src/shared/logger.ts';
import { restClient, seedTeam, type TestApp } from './harness.ts';
import { buildEnvelope, signAndComplete, tokenFor } from './signing.ts';
import { sealWorkerFor } from './workers.ts';

/*
 * The sealing job seen from outside, for the tests of the seal's signers (seal-pkcs11, seal-csc):
 * an envelope signed to completion, the job run as production runs it, its outbox row read back,
 * the sealed PDF downloaded, the server started with a signer's environment.
 */

const run = promisify(execFile);

/** A fresh team's envelope with one signer, sent and signed to completion: its sealing job is waiting. */
export async function finalizedEnvelope(app: TestApp) {
  const team = await seedTeam(app);
  const built = await buildEnvelope(app, team.apiKey, { recipients: [{ identifier: 'signer' }] });
  expect((await restClient(app, team.apiKey).put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
  expect((await signAndComplete(app, await tokenFor(app, built.envelopeId, built.recipients.signer!))).errors).toBeUndefined();
  return { team, built };
}

/** The artefact job of one team, as production runs it, logging into `lines`. */
export function sealWorker(app: TestApp, teamId: string, lines: Record<string, any>[]) {
  const logger = createLogger('info', { write: (line: string) => void lines.push(JSON.parse(line)) });
  return sealWorkerFor(app, teamId, { logger });
}

/** The outbox row of an envelope's sealing job. */
export async function sealJob(app: TestApp, envelopeId: string) {
  const [row] = await app.orm.em
    .fork()
    .execute<{ attempts: number; processed_at: Date | null; failed_at: Date | null; last_error: string | null }[]>(
      `select attempts, processed_at, failed_at, last_error from outbox_message where dedupe_key = ?`,
      [`artefact.seal:${envelopeId}`],
    );
  return row!;
}

/**
 * Makes a failed sealing job due now, rather than after its retry delay: now by the service's
 * clock, which the worker's claim compares with. PostgreSQL's now() has microseconds; a claim in
 * the same millisecond read the clock's whole milliseconds as earlier and found nothing due.
 */
export async function retryNow(app: TestApp, envelopeId: string): Promise<void> {
  await app.orm.em.fork().execute(`update outbox_message set available_at = ? where dedupe_key = ?`, [app.dependencies.clock.now(), `artefact.seal:${envelopeId}`]);
}

/** Downloads a document's PDF, which must be sealed, into `directory/name`; answers the file's path. */
export async function downloadSealed(app: TestApp, directory: string, apiKey: string, envelopeId: string, documentId: string, name: string): Promise<string> {
  const response = await fetch(`${app.url}/api/v1/key/envelopes/${envelopeId}/documents/${documentId}/pdf`, { headers: { 'x-service-api-key': apiKey } });
  expect(response.status).toBe(200);
  expect(response.headers.get('x-artefact-sealed')).toBe('true');
  const file = path.join(directory, name);
  fs.writeFileSync(file, Buffer.from(await response.arrayBuffer()));
  return file;
}

/** Starts the server (src/main.ts) with `env`, its data under `directory/server`; answers its exit code and what it wrote to stderr. */
export async function startServer(directory: string, env: Record<string, string>): Promise<{ code: number | undefined; stderr: string }> {
  return run(process.execPath, ['src/main.ts'], {
    env: { ...process.env, DATA_DIR: path.join(directory, 'server'), PORT: '0', LOG_LEVEL: 'silent', ...env },
    timeout: 60_000,
  }).then(
    ({ stderr }) => ({ code: 0, stderr }),
    (error: { code: number; stderr: string }) => ({ code: error.code, stderr: error.stderr }),
  );
}
