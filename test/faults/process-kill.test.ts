/**
 * Fault: the process is killed (SIGKILL: no shutdown, no cleanup) in the middle of an upload, of
 * sealing, of mail delivery and of a webhook delivery, then started again on the same data
 * directory and database. The service runs as a real process on a private cluster, its workers on.
 *
 * A killed worker's claims hold until their lease (5 minutes) runs out. The test does not wait
 * 5 minutes: the restarted service runs with SANDBOX_CLOCK=true and the test moves its clock
 * forward past the lease (POST /sandbox/clock), exactly as time would.
 *
 * Promised (docs/operations.md, "What happens when the process is killed"):
 * - no row names a file that is missing (every document's original and sealed file exists);
 * - an upload cut off by the kill leaves no row, at most one staging file under
 *   DATA_DIR/blobs/tmp, which the restarted service removes once it is an hour old (at start, and
 *   hourly); a recent staging file is left alone (it may be another instance's upload);
 * - nothing is sealed twice: one `artefact.sealed` event and one sealed file per document;
 * - every delivery completes: each mail is accepted once under its Message-ID (a mail the SMTP
 *   server had not accepted before the kill is sent again), each webhook delivery answered once.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { MikroORM } from '@mikro-orm/postgresql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uploadDocument } from '../helpers/envelopes.ts';
import { type FaultSmtpServer, startFaultSmtpServer } from '../helpers/fault-smtp.ts';
import {
  asTestApp,
  type FaultTeam,
  failedOutbox,
  type GatedReceiver,
  missingBlobs,
  openOrm,
  paddedPdf,
  pendingOutbox,
  sealEventsPerDocument,
  seedTeamIn,
  stagingFiles,
  startGatedReceiver,
  startRawUpload,
  waitUntil,
} from '../helpers/faults.ts';
import { firstErrorName, restClient, type TestApp } from '../helpers/harness.ts';
import { type PgCluster, startPgCluster } from '../helpers/pg-cluster.ts';
import { type ServiceProcess, startService } from '../helpers/service.ts';
import { type BuiltEnvelope, buildEnvelope, signAndComplete, signingClient } from '../helpers/signing.ts';
import { signingLinkIn } from '../helpers/smtp.ts';

const LEASE_SECONDS = 5 * 60;

let cluster: PgCluster;
let orm: MikroORM;
let team: FaultTeam;
let smtp: FaultSmtpServer;
let receiver: GatedReceiver;
let service: ServiceProcess;
let dataDir: string;

function env(): Record<string, string> {
  return { SMTP_URL: smtp.url, WEBHOOK_ALLOW_PRIVATE: 'true', RATE_LIMIT_PER_MINUTE: '0', SANDBOX_CLOCK: 'true' };
}

function app(): TestApp {
  return asTestApp(service.url, orm);
}

/** SIGKILL, then a fresh process on the same data directory, its clock moved past the dead one's leases. */
async function killAndRestart(): Promise<void> {
  await service.kill('SIGKILL');
  expect((await service.exited).signal).toBe('SIGKILL');
  service = await startService({ databaseUrl: cluster.databaseUrl, dataDir, env: env() });
  await moveClockPastLeases();
}

/**
 * The dead process claimed on the sandbox clock, which the new one shares (it lives in the
 * database), so one lease and a minute more puts every lease it held in the past.
 */
async function moveClockPastLeases(): Promise<void> {
  const moved = await restClient(app(), team.apiKey).post('/sandbox/clock', { seconds: LEASE_SECONDS + 60 });
  expect(moved.status, JSON.stringify(moved.body)).toBe(200);
}

async function signFromMail(to: string): Promise<void> {
  const mail = await waitUntil(`the invitation to ${to}`, () => smtp.accepted.find((entry) => entry.rcptTo.includes(to)), 60_000);
  const signed = await signAndComplete(app(), signingLinkIn({ rcptTo: mail.rcptTo, mail: mail.mail, raw: '' })!.token);
  expect(signed.errors, JSON.stringify(signed.errors)).toBeUndefined();
}

async function drained(timeoutMs = 120_000): Promise<void> {
  await waitUntil('the outbox to drain', async () => Object.keys(await pendingOutbox(orm)).length === 0, timeoutMs, 250);
  expect(await failedOutbox(orm)).toEqual([]);
}

beforeAll(async () => {
  cluster = await startPgCluster();
  orm = await openOrm(cluster.databaseUrl);
  team = await seedTeamIn(orm);
  smtp = await startFaultSmtpServer();
  receiver = await startGatedReceiver();
  service = await startService({ databaseUrl: cluster.databaseUrl, env: env() });
  dataDir = service.dataDir;
});

afterAll(async () => {
  smtp?.releaseHeld();
  receiver?.release();
  await service?.stop();
  await orm?.close(true);
  await smtp?.close();
  await receiver?.close();
  await cluster?.destroy();
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

describe('the process killed with SIGKILL, then started again', () => {
  it('during an upload: no row, one staging file, removed by the restarted service once stale; uploads work again', async () => {
    const created = await restClient(app(), team.apiKey).post('/envelopes', { name: 'Cut off' });
    const envelopeId = created.body.payload.envelopeId as string;
    const pdf = await paddedPdf({ pages: 2, bytes: 4 * 1024 * 1024 });
    const upload = await startRawUpload(service.url, team.apiKey, envelopeId, pdf, 0);
    // Half the file, in pieces, until the staging file holds some of it.
    for (let sent = 0; sent < pdf.length / 2; sent += 256 * 1024) upload.writeMore(256 * 1024);
    await waitUntil('the staging file to fill', () => {
      const [file] = stagingFiles(dataDir);
      return file !== undefined && fs.statSync(path.join(dataDir, 'blobs', 'tmp', file)).size > 0;
    });
    await killAndRestartWithStaleStaging();
    await upload.response;

    const rows = await orm.em.fork().execute(`select id from document where envelope_id = ?`, [envelopeId]);
    expect(rows).toEqual([]);
    expect(await missingBlobs(orm, dataDir)).toEqual([]);
    const again = await uploadDocument(app(), team.apiKey, envelopeId, { bytes: pdf });
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(await missingBlobs(orm, dataDir)).toEqual([]);
    expect(stagingFiles(dataDir)).toEqual(['recent.part']);
    fs.rmSync(path.join(dataDir, 'blobs', 'tmp', 'recent.part'));
  });

  it('during sealing: every document sealed once, every file there, the completion mails sent once', async () => {
    const built: BuiltEnvelope[] = [];
    const padded = await paddedPdf({ pages: 6, bytes: 1024 * 1024 });
    for (let index = 0; index < 4; index += 1) {
      const envelope = await buildEnvelope(app(), team.apiKey, { name: `Seal ${index}`, recipients: [{ identifier: `sealer${index}` }] });
      for (const name of ['annex-a.pdf', 'annex-b.pdf']) {
        const added = await uploadDocument(app(), team.apiKey, envelope.envelopeId, { bytes: padded, filename: name });
        expect(added.status, JSON.stringify(added.body)).toBe(200);
      }
      expect((await restClient(app(), team.apiKey).put(`/envelopes/${envelope.envelopeId}/send`)).status).toBe(200);
      built.push(envelope);
    }
    const ids = built.map((envelope) => envelope.envelopeId);
    const sealedCount = async () =>
      Number(
        (
          await orm.em.fork().execute<{ count: string }[]>(`select count(*) as count from document where envelope_id = any(?::uuid[]) and sealed_sha256 is not null`, [`{${ids.join(',')}}`])
        )[0]!.count,
      );
    for (let index = 0; index < built.length; index += 1) await signFromMail(`sealer${index}@example.com`);
    // Killed while the artefact jobs are part-way: some documents sealed, not all twelve.
    const sealedAtKill = await waitUntil(
      'sealing to be under way',
      async () => {
        const count = await sealedCount();
        return count >= 1 ? count : undefined;
      },
      60_000,
      10,
    );
    await killAndRestart();
    expect(sealedAtKill).toBeLessThan(12);

    await drained();
    expect(await sealedCount()).toBe(12);
    const seals = await sealEventsPerDocument(orm, ids);
    expect(seals.size).toBe(12);
    expect(
      [...seals.values()].every((count) => count === 1),
      JSON.stringify([...seals]),
    ).toBe(true);
    expect(await missingBlobs(orm, dataDir)).toEqual([]);
    // One completion notice per envelope, queued with the job's acknowledgement, accepted once.
    const notices = await orm.em
      .fork()
      .execute<{ id: string }[]>(`select id from outbox_message where topic = 'envelope.completed.notice' and payload ->> 'envelopeId' = any(?::text[])`, [`{${ids.join(',')}}`]);
    expect(notices.length).toBe(4);
    const counts = smtp.countsByMessageId();
    for (const notice of notices) expect(counts.get(`<${notice.id}@localhost>`)).toBe(1);
    // A sealed download is the stored file.
    const download = await fetch(`${service.url}/api/v1/key/envelopes/${ids[0]}/documents/${built[0]!.documentId}/pdf`, { headers: { 'x-service-api-key': team.apiKey } });
    expect(download.status).toBe(200);
    expect(download.headers.get('x-artefact-sealed')).toBe('true');
    await download.arrayBuffer();
  });

  it('during mail delivery: the mail the server had not accepted is sent again, each mail accepted once', async () => {
    smtp.hold(() => true);
    const built: BuiltEnvelope[] = [];
    for (let index = 0; index < 3; index += 1) {
      const envelope = await buildEnvelope(app(), team.apiKey, { name: `Mail ${index}`, recipients: [{ identifier: `mailer${index}` }] });
      expect((await restClient(app(), team.apiKey).put(`/envelopes/${envelope.envelopeId}/send`)).status).toBe(200);
      built.push(envelope);
    }
    await waitUntil('a mail to be in the middle of DATA', () => smtp.held() >= 1);
    smtp.hold(undefined);
    await killAndRestart();
    // The held mail's sender is gone: the server never accepted it.
    smtp.releaseHeld();
    await drained();
    const invitations = await orm.em
      .fork()
      .execute<{ id: string }[]>(`select id from outbox_message where topic = 'signing.invitation' and payload ->> 'envelopeId' = any(?::text[])`, [
        `{${built.map((envelope) => envelope.envelopeId).join(',')}}`,
      ]);
    expect(invitations.length).toBe(3);
    const counts = smtp.countsByMessageId();
    for (const invitation of invitations) expect(counts.get(`<${invitation.id}@localhost>`), invitation.id).toBe(1);
  });

  it('between two approvals of a quorum: the first counts once after the restart, the second completes the role and starts the next turn once', async () => {
    const stamp = Date.now().toString(36);
    const board = Array.from({ length: 3 }, (_, index) => ({ info: { name: `Board ${index}`, email: `board${index}-${stamp}@example.com` } }));
    const built = await buildEnvelope(app(), team.apiKey, {
      recipients: [
        { identifier: 'board', type: 'approver', order: 1, quorum: 2, agents: board },
        { identifier: 'ceo', order: 2, agents: [{ info: { name: 'CEO', email: `ceo-${stamp}@example.com` } }] },
      ],
    });
    expect((await restClient(app(), team.apiKey).put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
    const linkOf = async (to: string) => {
      const mail = await waitUntil(`the invitation to ${to}`, () => smtp.accepted.find((entry) => entry.rcptTo.includes(to)), 60_000);
      return signingLinkIn({ rcptTo: mail.rcptTo, mail: mail.mail, raw: '' })!.token;
    };
    const approve = (token: string) => signingClient(app(), token)('mutation { approveSigning { recipient { completedAt } } }');
    const first = await linkOf(`board0-${stamp}@example.com`);
    const second = await linkOf(`board1-${stamp}@example.com`);
    const one = await approve(first);
    expect(one.errors, JSON.stringify(one.errors)).toBeUndefined();
    expect(one.data.approveSigning.recipient.completedAt).toBeNull();

    await killAndRestart();
    expect(firstErrorName(await approve(first))).toBe('Signing.AlreadyApproved');
    const two = await approve(second);
    expect(two.errors, JSON.stringify(two.errors)).toBeUndefined();
    expect(two.data.approveSigning.recipient.completedAt).not.toBeNull();
    await linkOf(`ceo-${stamp}@example.com`);
    const count = async (sql: string) => Number((await orm.em.fork().execute<{ count: string }[]>(sql, [built.envelopeId]))[0]!.count);
    expect(await count(`select count(*) from audit_event where stream_id = ? and type = 'recipient.approved'`)).toBe(2);
    expect(await count(`select count(*) from audit_event where stream_id = ? and type = 'recipient.completed'`)).toBe(1);
    expect(
      await count(`select count(*) from outbox_message where topic = 'signing.invitation' and payload ->> 'envelopeId' = ? and payload ->> 'recipientId' = '${built.recipients.ceo}'`),
    ).toBe(1);
    await drained();
  }, 240_000);

  it('during a webhook delivery: the delivery is made again after the lease and recorded delivered once', async () => {
    const webhook = await restClient(app(), team.apiKey).post('/webhooks', { url: receiver.url, eventTypes: ['envelope.created'] });
    expect(webhook.status, JSON.stringify(webhook.body)).toBe(200);
    receiver.hold();
    const created = await restClient(app(), team.apiKey).post('/envelopes', { name: 'Hooked' });
    expect(created.status).toBe(200);
    await waitUntil('the webhook POST to be in flight', () => receiver.waiting() >= 1);
    await killAndRestart();
    // The receiver's held answer goes to a socket that is gone: that attempt never completed.
    receiver.release();
    await drained();
    const deliveries = await orm.em
      .fork()
      .execute<{ id: string; state: string; attempt_count: number }[]>(`select id, state, attempt_count from webhook_delivery where endpoint_id = ?`, [webhook.body.payload.webhook.id]);
    expect(deliveries.length).toBe(1);
    expect(deliveries[0]).toMatchObject({ state: 'delivered', attempt_count: 1 });
    expect(receiver.answered.filter((request) => request.headers['x-envelope-webhook-id'] === deliveries[0]!.id).length).toBe(1);
    await restClient(app(), team.apiKey).delete(`/webhooks/${webhook.body.payload.webhook.id}`);
  });
});

/**
 * The kill for the upload case: before the restart, the staging file it left is made two hours
 * old (as if the service had stayed down that long) and a recent one is put beside it.
 */
async function killAndRestartWithStaleStaging(): Promise<void> {
  await service.kill('SIGKILL');
  const left = stagingFiles(dataDir);
  expect(left.length).toBe(1);
  const stale = path.join(dataDir, 'blobs', 'tmp', left[0]!);
  const twoHoursAgo = new Date(Date.now() - 2 * 60 * 60_000);
  fs.utimesSync(stale, twoHoursAgo, twoHoursAgo);
  fs.writeFileSync(path.join(dataDir, 'blobs', 'tmp', 'recent.part'), 'an upload in progress elsewhere');
  service = await startService({ databaseUrl: cluster.databaseUrl, dataDir, env: env() });
  await service.waitForLog((line) => line.msg === 'removed stale staging files' && line.removed === 1);
  expect(stagingFiles(dataDir)).toEqual(['recent.part']);
}
