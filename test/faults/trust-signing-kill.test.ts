/**
 * Fault: the process is killed (SIGKILL) in the middle of a signer's signature at a trust service
 * (issue 35, docs/artefacts.md "Exactly once, and what can go wrong"), then started again on the
 * same database and data directory. The service runs as a real process on a private cluster, its
 * workers on; the CSC test provider runs in this process and holds back the answer the service is
 * waiting for, so the kill lands at a known step:
 *
 * - at the first callback, while the row is `preparing` (the provider's credentials/info answer held);
 * - at the second callback, while the row is `signing` (signatures/signHash done at the provider,
 *   the hash signed, its answer never received).
 *
 * Promised: nothing is completed by a killed attempt, Finish again starts over and signs through
 * both authorizations, the role completes once, the envelope is sealed once by the restarted
 * service's own workers, and the sealed file carries exactly the signer's signature and the seal:
 * the signature the provider made for the killed attempt is in no file.
 *
 * PUBLIC_URL is the service's own address (a fixed port, the same after every restart): the
 * provider sends the browser, played by fetch, back to it.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { MikroORM } from '@mikro-orm/postgresql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CscTestProvider, startCscProvider } from '../helpers/csc-provider.ts';
import { type FaultSmtpServer, startFaultSmtpServer } from '../helpers/fault-smtp.ts';
import { asTestApp, type FaultTeam, failedOutbox, missingBlobs, openOrm, pendingOutbox, sealEventsPerDocument, seedTeamIn, waitUntil } from '../helpers/faults.ts';
import { restClient, type TestApp } from '../helpers/harness.ts';
import { pdfsig } from '../helpers/pdf-tools.ts';
import { freePort, type PgCluster, startPgCluster } from '../helpers/pg-cluster.ts';
import { downloadSealed } from '../helpers/seal-jobs.ts';
import { type ServiceProcess, startService } from '../helpers/service.ts';
import { buildEnvelope, signingClient, typedSignature } from '../helpers/signing.ts';
import { signingLinkIn } from '../helpers/smtp.ts';

const LEASE_SECONDS = 5 * 60;

let cluster: PgCluster;
let orm: MikroORM;
let team: FaultTeam;
let smtp: FaultSmtpServer;
let provider: CscTestProvider;
let service: ServiceProcess;
let port: number;
let dataDir: string;
let directory: string;

function env(): Record<string, string> {
  return { PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}`, SMTP_URL: smtp.url, RATE_LIMIT_PER_MINUTE: '0', SANDBOX_CLOCK: 'true' };
}

function app(): TestApp {
  return asTestApp(service.url, orm);
}

/** SIGKILL, then a fresh process on the same port, database and data directory, its clock past the dead one's leases. */
async function killAndRestart(): Promise<void> {
  await service.kill('SIGKILL');
  expect((await service.exited).signal).toBe('SIGKILL');
  service = await startService({ databaseUrl: cluster.databaseUrl, dataDir, env: env() });
  const moved = await restClient(app(), team.apiKey).post('/sandbox/clock', { seconds: LEASE_SECONDS + 60 });
  expect(moved.status, JSON.stringify(moved.body)).toBe(200);
}

beforeAll(async () => {
  cluster = await startPgCluster();
  orm = await openOrm(cluster.databaseUrl);
  team = await seedTeamIn(orm);
  smtp = await startFaultSmtpServer();
  provider = await startCscProvider({ name: 'Test Trust Service CA (kill)' });
  port = await freePort();
  service = await startService({ databaseUrl: cluster.databaseUrl, env: env() });
  dataDir = service.dataDir;
  directory = fs.mkdtempSync(path.join(os.tmpdir(), 'trust-signing-kill-'));
});

afterAll(async () => {
  provider?.releaseAnswers();
  await service?.stop();
  await orm?.close(true);
  await smtp?.close();
  await provider?.close();
  await cluster?.destroy();
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  if (directory) fs.rmSync(directory, { recursive: true, force: true });
});

const SESSION = `recipient { completedAt } trustSignature { level status error { reason } authorizeUrl }`;
const FINISH = `mutation($values: [SigningValueInput!], $consent: String) { submitSigning(values: $values, complete: true, consent: $consent) { ${SESSION} } }`;

/** Finish: the first time with the signature's value, again as the page does it (the values are saved: none sent). */
async function finish(token: string, withValues: boolean): Promise<string> {
  const client = signingClient(app(), token);
  const fields = withValues ? (await client(`{ signingSession { fields { id } } }`)).data.signingSession.fields : [];
  const finished = await client(FINISH, { values: fields.map((field: { id: string }) => ({ fieldId: field.id, value: typedSignature })), consent: 'I agree to sign with my certificate.' });
  expect(finished.errors, JSON.stringify(finished.errors)).toBeUndefined();
  expect(finished.data.submitSigning.recipient.completedAt).toBeNull();
  return finished.data.submitSigning.trustSignature.authorizeUrl;
}

async function session(token: string) {
  const answer = await signingClient(app(), token)(`{ signingSession { ${SESSION} } }`);
  expect(answer.errors, JSON.stringify(answer.errors)).toBeUndefined();
  return answer.data.signingSession;
}

/** The provider's page as the signer's browser submits it: where the provider redirects (the service's callback). */
async function atProvider(authorizeUrl: string, form: Record<string, string>): Promise<string> {
  const params = new URL(authorizeUrl).searchParams;
  for (const [name, value] of Object.entries(form)) params.set(name, value);
  const response = await fetch(new URL('authorize', authorizeUrl), { method: 'POST', body: params, redirect: 'manual' });
  expect(response.status).toBe(302);
  return response.headers.get('location')!;
}

/** The browser at the service's callback: the 303's location. */
async function atCallback(callbackUrl: string): Promise<{ status: number; location: string | null }> {
  expect(callbackUrl.startsWith(`http://127.0.0.1:${port}/sign/trust-service/callback?`), callbackUrl).toBe(true);
  const response = await fetch(callbackUrl, { redirect: 'manual' });
  await response.arrayBuffer();
  return { status: response.status, location: response.headers.get('location') };
}

async function statusOf(recipientId: string): Promise<string | undefined> {
  const [row] = await orm.em.fork().execute<{ status: string }[]>(`select status from signer_signature where recipient_id = ?`, [recipientId]);
  return row?.status;
}

async function eventsOf(envelopeId: string, type: string) {
  return orm.em.fork().execute<{ details: any }[]>(`select details from audit_event where stream_id = ? and type = ? order by seq`, [envelopeId, type]);
}

/**
 * The browser arrives at the callback while the provider holds back `operation`'s answer: once
 * the row is at `step` and the answer is held, the service is killed and started again. The
 * browser's request dies with the process; the held answer goes to nobody.
 */
async function killedAt(callbackUrl: string, options: { operation: string; step: string; recipientId: string }): Promise<void> {
  provider.holdAnswers(options.operation);
  const browser = atCallback(callbackUrl).then(
    () => 'answered',
    () => 'cut off',
  );
  await waitUntil(`the ${options.operation} answer to be held`, () => provider.heldAnswers() === 1, 60_000, 20);
  expect(await statusOf(options.recipientId)).toBe(options.step);
  provider.holdAnswers(undefined);
  await killAndRestart();
  provider.releaseAnswers();
  expect(await browser).toBe('cut off');
  // Nobody carries the dead process's step on: the row stays where it was.
  expect(await statusOf(options.recipientId)).toBe(options.step);
}

describe('the process killed with SIGKILL during a signer’s signature at a trust service, then started again', () => {
  it('killed while preparing and while signing: nothing completes, Finish again signs once, the seal covers exactly one signer signature', async () => {
    const ada = provider.addUser({ name: 'Ada Killed', email: 'ada-kill@example.com', pin: '1357', level: 'advanced' });
    const saved = await restClient(app(), team.apiKey).patch('/team/settings', {
      trustServices: [{ id: 'tsp', name: 'Test TSP', baseUrl: provider.baseUrl, clientId: provider.clientId, clientSecret: provider.clientSecret, levels: ['advanced'] }],
    });
    expect(saved.status, JSON.stringify(saved.body)).toBe(200);
    const built = await buildEnvelope(app(), team.apiKey, {
      name: 'Killed while signing',
      recipients: [{ identifier: 'ada', signatureLevel: 'advanced', agents: [{ info: { name: 'Ada Killed', email: 'ada-kill@example.com' } }] }],
    });
    const sent = await restClient(app(), team.apiKey).put(`/envelopes/${built.envelopeId}/send`);
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    const mail = await waitUntil('the invitation', () => smtp.accepted.find((entry) => entry.rcptTo.includes('ada-kill@example.com')), 60_000);
    const token = signingLinkIn({ rcptTo: mail.rcptTo, mail: mail.mail, raw: '' })!.token;
    const recipientId = built.recipients.ada!;
    const signIn = { username: 'ada-kill@example.com', pin: '1357', consent: 'yes' };

    // 1. Killed at the first callback, the documents being prepared.
    const firstAuthorize = await finish(token, true);
    await killedAt(await atProvider(firstAuthorize, signIn), { operation: 'credentials/info', step: 'preparing', recipientId });
    expect(await session(token)).toMatchObject({ recipient: { completedAt: null }, trustSignature: { level: 'advanced', status: 'authorizing' } });
    expect(provider.signedCount(ada.credentialId)).toBe(0);

    // 2. Finish again starts over; killed at the second callback, after the provider signed.
    const secondAuthorize = await finish(token, false);
    expect(secondAuthorize).not.toBe(firstAuthorize);
    const prepared = await atCallback(await atProvider(secondAuthorize, signIn));
    expect(prepared.status).toBe(303);
    expect(prepared.location!.startsWith(`${provider.baseUrl}/oauth2/authorize?`), prepared.location!).toBe(true);
    expect(new URL(prepared.location!).searchParams.get('scope')).toBe('credential');
    await killedAt(await atProvider(prepared.location!, { pin: '1357', consent: 'yes' }), { operation: 'signatures/signHash', step: 'signing', recipientId });
    // The provider made the signature; the service never got it, and completed nothing.
    expect(provider.signedCount(ada.credentialId)).toBe(1);
    const afterKill = await session(token);
    expect(afterKill.recipient.completedAt).toBeNull();
    expect(afterKill.trustSignature.status).not.toBe('signed');
    expect(await eventsOf(built.envelopeId, 'recipient.completed')).toEqual([]);
    const [before] = await orm.em.fork().execute<{ working_sha256: string | null }[]>(`select working_sha256 from document where id = ?`, [built.documentId]);
    expect(before!.working_sha256).toBeNull();

    // 3. Finish again: both authorizations, and the signature is embedded and the role completed.
    const thirdAuthorize = await finish(token, false);
    const again = await atCallback(await atProvider(thirdAuthorize, signIn));
    expect(again.status).toBe(303);
    const signed = await atCallback(await atProvider(again.location!, { pin: '1357', consent: 'yes' }));
    expect(signed).toEqual({ status: 303, location: `/sign/${token}` });
    expect(provider.signedCount(ada.credentialId)).toBe(2);
    // The only signer: the envelope is finalized (its signing session now answers Envelope.Closed).
    expect(await statusOf(recipientId)).toBe('signed');
    const [recipient] = await orm.em.fork().execute<{ completed_at: Date | null }[]>(`select completed_at from recipient where id = ?`, [recipientId]);
    expect(recipient!.completed_at).not.toBeNull();
    const completed = await eventsOf(built.envelopeId, 'recipient.completed');
    expect(completed.map((event) => event.details.recipientId)).toEqual([recipientId]);
    expect(completed[0]!.details.signature).toMatchObject({ level: 'advanced', certificate: { subject: expect.stringContaining('Ada Killed') } });
    expect((await eventsOf(built.envelopeId, 'signature.authorization_started')).length).toBe(3);

    // 4. Finalized, and sealed once by the restarted service's own workers.
    const [envelope] = await orm.em.fork().execute<{ status: string }[]>(`select status from envelope where id = ?`, [built.envelopeId]);
    expect(envelope!.status).toBe('finalized');
    await waitUntil(
      'the envelope to be sealed',
      async () => {
        const [row] = await orm.em.fork().execute<{ sealed_sha256: string | null }[]>(`select sealed_sha256 from document where id = ?`, [built.documentId]);
        return row?.sealed_sha256 ?? undefined;
      },
      120_000,
      250,
    );
    await waitUntil('the outbox to drain', async () => Object.keys(await pendingOutbox(orm)).length === 0, 120_000, 250);
    expect(await failedOutbox(orm)).toEqual([]);
    expect([...(await sealEventsPerDocument(orm, [built.envelopeId])).values()]).toEqual([1]);
    expect(await missingBlobs(orm, dataDir)).toEqual([]);

    // 5. The sealed file: the signer's one signature and the seal, both valid; the killed attempt's is nowhere.
    const file = await downloadSealed(app(), directory, team.apiKey, built.envelopeId, built.documentId, 'sealed.pdf');
    const report = pdfsig(file);
    expect(report.match(/^Signature #\d+:/gm), report).toEqual(['Signature #1:', 'Signature #2:']);
    expect(report.match(/Signature is Valid/g), report).toHaveLength(2);
    expect(report).toContain('Ada Killed');
    expect(service.unexpectedErrors()).toEqual([]);
  }, 300_000);
});
