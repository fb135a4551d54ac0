/**
 * Several instances (issue 20): three service processes on one PostgreSQL database and one
 * S3-protocol server (s3rver, files in a temporary directory), each with its own DATA_DIR, and
 * every consecutive request of an envelope's life sent to a different instance, as a
 * round-robin load balancer would:
 * - created on A, its document uploaded on B, its recipient added on C, its field on A, sent
 *   from C, signed from the mailed link on A; a subscription on A receives every event in order;
 * - sealed exactly once (whichever instance's worker claims the job), downloads from every
 *   instance byte-identical, and no file under any instance's DATA_DIR/blobs;
 * - an instance killed (SIGKILL) while it holds a seal job: after the lease, a survivor seals the
 *   envelope, exactly once.
 * The instances share what an installation must share: AUDIT_HMAC_KEY and the seal (copied, as
 * an operator would give every instance the same SEAL_P12).
 */

import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { MikroORM } from '@mikro-orm/postgresql';
import S3rver from 's3rver';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makePdf } from '../fixtures/pdfs.ts';
import { uploadDocument } from '../helpers/envelopes.ts';
import { type FaultSmtpServer, startFaultSmtpServer } from '../helpers/fault-smtp.ts';
import { asTestApp, type FaultTeam, failedOutbox, openOrm, paddedPdf, sealEventsPerDocument, seedTeamIn, waitUntil } from '../helpers/faults.ts';
import { restClient, type TestApp } from '../helpers/harness.ts';
import { ENVELOPE_EVENTS, subscribe } from '../helpers/live.ts';
import { type PgCluster, startPgCluster } from '../helpers/pg-cluster.ts';
import { type ServiceProcess, startService } from '../helpers/service.ts';
import { signAndComplete } from '../helpers/signing.ts';
import { signingLinkIn } from '../helpers/smtp.ts';

const BUCKET = 'envelope-blobs';
const LEASE_SECONDS = 5 * 60;

let cluster: PgCluster;
let orm: MikroORM;
let team: FaultTeam;
let smtp: FaultSmtpServer;
let s3: { server: S3rver; directory: string; endpoint: string };
const instances: ServiceProcess[] = [];

function storeEnvironment(): Record<string, string> {
  return {
    BLOB_STORE_URL: `s3://${BUCKET}/installation-a`,
    S3_ENDPOINT: s3.endpoint,
    S3_REGION: 'us-east-1',
    S3_FORCE_PATH_STYLE: 'true',
    AWS_ACCESS_KEY_ID: 'S3RVER',
    AWS_SECRET_ACCESS_KEY: 'S3RVER',
    SMTP_URL: smtp.url,
    SANDBOX_CLOCK: 'true',
    RATE_LIMIT_PER_MINUTE: '0',
  };
}

/** Starts one more instance; every instance after the first gets the first one's seal. */
async function startInstance(): Promise<ServiceProcess> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'envelope-instance-'));
  if (instances.length > 0) {
    fs.mkdirSync(path.join(dataDir, 'seal'), { recursive: true });
    fs.copyFileSync(path.join(instances[0]!.dataDir, 'seal', 'seal.pem'), path.join(dataDir, 'seal', 'seal.pem'));
  }
  const instance = await startService({ databaseUrl: cluster.databaseUrl, dataDir, env: storeEnvironment() });
  instances.push(instance);
  return instance;
}

function on(instance: ServiceProcess): TestApp {
  return asTestApp(instance.url, orm);
}

/** Regular files anywhere under a directory (none when it does not exist). */
function filesUnder(directory: string): string[] {
  if (!fs.existsSync(directory)) return [];
  return (fs.readdirSync(directory, { recursive: true, withFileTypes: true }) as fs.Dirent[]).filter((entry) => entry.isFile()).map((entry) => path.join(entry.parentPath, entry.name));
}

async function download(instance: ServiceProcess, envelopeId: string, documentId: string): Promise<{ status: number; sealed: string | null; sha256: string }> {
  const response = await fetch(`${instance.url}/api/v1/key/envelopes/${envelopeId}/documents/${documentId}/pdf`, { headers: { 'x-service-api-key': team.apiKey } });
  const bytes = Buffer.from(await response.arrayBuffer());
  return { status: response.status, sealed: response.headers.get('x-artefact-sealed'), sha256: createHash('sha256').update(bytes).digest('hex') };
}

/** A sent envelope with one document and one signer, each step on the next instance of `order`. */
async function sentEnvelope(order: ServiceProcess[], options: { name: string; signer: string; pdf: Uint8Array }) {
  const at = (step: number) => on(order[step % order.length]!);
  const created = await restClient(at(0), team.apiKey).post('/envelopes', { name: options.name });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  const envelopeId = created.body.payload.envelopeId as string;
  const uploaded = await uploadDocument(at(1), team.apiKey, envelopeId, { bytes: options.pdf });
  expect(uploaded.status, JSON.stringify(uploaded.body)).toBe(200);
  const documentId = uploaded.body.payload.document.id as string;
  const recipient = await restClient(at(2), team.apiKey).post(`/envelopes/${envelopeId}/recipients`, {
    recipient: { type: 'signer', identifier: options.signer, roleName: 'Signer', order: 1, agents: [{ info: { name: 'Ada Lovelace', email: `${options.signer}@example.com` } }] },
  });
  expect(recipient.status, JSON.stringify(recipient.body)).toBe(200);
  const fields = await restClient(at(3), team.apiKey).post(`/envelopes/${envelopeId}/fields`, {
    fields: [
      {
        type: 'simple_signature',
        recipientId: recipient.body.payload.recipient.id,
        identifier: `${options.signer}-signature`,
        required: true,
        views: [{ documentId, page: 0, location: { x: 20, y: 20 }, size: { width: 120, height: 30 } }],
      },
    ],
  });
  expect(fields.status, JSON.stringify(fields.body)).toBe(200);
  return { envelopeId, documentId, send: (instance: ServiceProcess) => restClient(on(instance), team.apiKey).put(`/envelopes/${envelopeId}/send`) };
}

async function signFromMail(instance: ServiceProcess, signer: string): Promise<void> {
  const mail = await waitUntil(`the invitation to ${signer}`, () => smtp.accepted.find((entry) => entry.rcptTo.includes(`${signer}@example.com`)), 60_000);
  const link = signingLinkIn({ rcptTo: mail.rcptTo, mail: mail.mail, raw: '' });
  expect(link).not.toBeNull();
  const signed = await signAndComplete(on(instance), link!.token);
  expect(signed.errors, JSON.stringify(signed.errors)).toBeUndefined();
}

beforeAll(async () => {
  cluster = await startPgCluster();
  orm = await openOrm(cluster.databaseUrl);
  smtp = await startFaultSmtpServer();
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'envelope-s3rver-'));
  const server = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory, configureBuckets: [{ name: BUCKET }] });
  const { port } = await server.run();
  s3 = { server, directory, endpoint: `http://127.0.0.1:${port}` };
  // The first start migrates the database; the others join it.
  await startInstance();
  await Promise.all([startInstance(), startInstance()]);
  team = await seedTeamIn(orm);
}, 180_000);

afterAll(async () => {
  await Promise.all(instances.map((instance) => instance.stop()));
  await orm?.close(true);
  await smtp?.close();
  await s3?.server.close();
  await cluster?.destroy();
  if (s3) fs.rmSync(s3.directory, { recursive: true, force: true });
  for (const instance of instances) fs.rmSync(instance.dataDir, { recursive: true, force: true });
});

describe('three instances on one database and one object store', () => {
  it('run the whole life of an envelope with consecutive requests on different instances', async () => {
    const [a, b, c] = instances as [ServiceProcess, ServiceProcess, ServiceProcess];
    const envelope = await sentEnvelope([a, b, c], { name: 'Across instances', signer: 'roaming', pdf: await makePdf({ pages: 2 }) });
    // Watching on A from the first event on.
    const watcher = subscribe(on(a), 'ws', { apiKey: team.apiKey }, ENVELOPE_EVENTS, { envelopeId: envelope.envelopeId, afterSequence: 0 });
    try {
      const sent = await envelope.send(c);
      expect(sent.status, JSON.stringify(sent.body)).toBe(200);
      await signFromMail(a, 'roaming');

      await waitUntil('the envelope to be sealed', async () => (await sealEventsPerDocument(orm, [envelope.envelopeId])).get(envelope.documentId) === 1, 90_000, 250);
      // Every event of the trail, in order, reached the subscriber on A, whichever instance appended it.
      const trail = await orm.em.fork().execute<{ seq: number; type: string }[]>(`select seq, type from audit_event where stream_id = ? order by seq`, [envelope.envelopeId]);
      const received = await watcher.waitFor(trail.length, 30_000);
      expect(received.map((result) => result.data?.envelopeEvents?.sequence)).toEqual(trail.map((event) => event.seq));
      expect(received.map((result) => result.data?.envelopeEvents?.type)).toEqual(trail.map((event) => event.type));
    } finally {
      await watcher.close();
    }

    // Sealed once; every instance serves the same sealed bytes.
    expect([...(await sealEventsPerDocument(orm, [envelope.envelopeId])).values()]).toEqual([1]);
    const downloads = await Promise.all([a, b, c].map((instance) => download(instance, envelope.envelopeId, envelope.documentId)));
    expect(downloads.map((entry) => entry.status)).toEqual([200, 200, 200]);
    expect(downloads.map((entry) => entry.sealed)).toEqual(['true', 'true', 'true']);
    expect(new Set(downloads.map((entry) => entry.sha256)).size).toBe(1);
    const [document] = await orm.em
      .fork()
      .execute<{ content_sha256: string; sealed_sha256: string }[]>(`select content_sha256, sealed_sha256 from document where id = ?`, [envelope.documentId]);
    expect(downloads[0]!.sha256).toBe(document!.sealed_sha256);

    // The files live in the object store, under the installation's prefix; none on an instance's
    // disk once the envelope's jobs are done (a job still running, such as a completion notice
    // rendering on another instance, stages its file on that instance's disk until it is stored).
    await waitUntil(
      'every job of the envelope to be done',
      async () => {
        const [row] = await orm.em
          .fork()
          .execute<{ count: string }[]>(`select count(*) from outbox_message where processed_at is null and failed_at is null and payload ->> 'envelopeId' = ?`, [envelope.envelopeId]);
        return Number(row!.count) === 0;
      },
      60_000,
      250,
    );
    const stored = filesUnder(s3.directory)
      .map((file) => path.basename(path.dirname(file)) + '/' + path.basename(file))
      .join('\n');
    expect(stored).toContain(document!.content_sha256);
    expect(stored).toContain(document!.sealed_sha256);
    for (const instance of instances) expect(filesUnder(path.join(instance.dataDir, 'blobs')), instance.dataDir).toEqual([]);
    expect(await failedOutbox(orm)).toEqual([]);
    for (const instance of instances) expect(instance.unexpectedErrors(), instance.dataDir).toEqual([]);
  });

  it('an instance killed while it holds the seal job: a survivor seals the envelope after the lease, exactly once', async () => {
    const [a, b, c] = instances as [ServiceProcess, ServiceProcess, ServiceProcess];
    // A large document, so that sealing takes long enough to be caught in the act.
    const envelope = await sentEnvelope([c, a, b], { name: 'Killed while sealing', signer: 'survivor', pdf: await paddedPdf({ pages: 120, bytes: 24 * 1024 * 1024 }) });
    expect((await envelope.send(b)).status).toBe(200);
    await signFromMail(c, 'survivor');

    const holder = await waitUntil(
      'an instance to claim the seal job',
      async () => {
        const [row] = await orm.em
          .fork()
          .execute<{ claimed_by: string | null }[]>(
            `select claimed_by from outbox_message where topic = 'artefact.seal' and payload ->> 'envelopeId' = ? and processed_at is null and locked_until is not null`,
            [envelope.envelopeId],
          );
        const pid = Number(row?.claimed_by?.split('/').pop());
        return instances.find((instance) => instance.pid === pid && instance.isRunning());
      },
      60_000,
      20,
    );
    await holder.kill('SIGKILL');
    expect((await holder.exited).signal).toBe('SIGKILL');
    expect((await sealEventsPerDocument(orm, [envelope.envelopeId])).get(envelope.documentId)).toBe(0);

    // Time passes beyond the dead claim's lease (the shared sandbox clock, moved on a survivor).
    const survivors = [a, b, c].filter((instance) => instance !== holder);
    const moved = await restClient(on(survivors[0]!), team.apiKey).post('/sandbox/clock', { seconds: LEASE_SECONDS + 60 });
    expect(moved.status, JSON.stringify(moved.body)).toBe(200);

    await waitUntil('a survivor to seal the envelope', async () => (await sealEventsPerDocument(orm, [envelope.envelopeId])).get(envelope.documentId) === 1, 120_000, 250);
    // The job is acknowledged after the sealing transaction commits, so its row is read once it is.
    const job = await waitUntil(
      'the seal job to be acknowledged',
      async () => {
        const [row] = await orm.em
          .fork()
          .execute<{ claimed_by: string; processed_at: Date | null }[]>(
            `select claimed_by, processed_at from outbox_message where topic = 'artefact.seal' and payload ->> 'envelopeId' = ?`,
            [envelope.envelopeId],
          );
        return row?.processed_at ? row : undefined;
      },
      60_000,
      100,
    );
    expect(survivors.map((instance) => instance.pid)).toContain(Number(job.claimed_by.split('/').pop()));
    // Still exactly once, and the survivors serve the same sealed bytes.
    expect([...(await sealEventsPerDocument(orm, [envelope.envelopeId])).values()]).toEqual([1]);
    const downloads = await Promise.all(survivors.map((instance) => download(instance, envelope.envelopeId, envelope.documentId)));
    expect(downloads.map((entry) => entry.sealed)).toEqual(['true', 'true']);
    expect(downloads[0]!.sha256).toBe(downloads[1]!.sha256);
    expect(await failedOutbox(orm)).toEqual([]);
  });
});
