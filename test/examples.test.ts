/**
 * Every example under examples/ run as an integrator runs it (`node examples/<name>.ts`, the key
 * and the service's address in its environment) against a started service, its outcome checked
 * on the service itself. The examples print one JSON line per step (`report`), read here.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createHmac } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OutboxWorker } from '../src/domain/outbox/outbox-worker.ts';
import { makePdf } from './fixtures/pdfs.ts';
import { CHROMIUM_PATH } from './helpers/browser.ts';
import { eventually } from './helpers/eventually.ts';
import { restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { signAndComplete, tokenFor } from './helpers/signing.ts';
import { createReadyTemplate, type ReadyTemplate } from './helpers/templates.ts';
import { mainWorkerFor, webhookWorkerFor } from './helpers/workers.ts';

let app: TestApp;
let team: SeededTeam;
let template: ReadyTemplate;
/** The service's own background jobs for the team (bulk sends, sealing, mail), as `npm start` runs them. */
let worker: OutboxWorker;
let webhookWorker: OutboxWorker;
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'examples-'));

beforeAll(async () => {
  // The webhook receiver example listens on this machine.
  app = await startTestApp({ env: { WEBHOOK_ALLOW_PRIVATE: 'true' } });
  team = await seedTeam(app);
  template = await createReadyTemplate(app, team.apiKey, { name: 'Consulting agreement' });
  worker = mainWorkerFor(app, team.teamId);
  worker.start();
  webhookWorker = webhookWorkerFor(app, team.teamId);
  webhookWorker.start();
});

afterAll(async () => {
  await worker?.stop();
  await webhookWorker?.stop();
  fs.rmSync(scratch, { recursive: true, force: true });
  await app?.close();
});

type Report = { event: string; [key: string]: any };

/** A running example: its report lines so far, and its end. */
type RunningExample = { child: ChildProcess; reports: Report[]; stderr(): string; exited: Promise<number | null> };

function startExample(name: string, args: string[], env: Record<string, string> = {}): RunningExample {
  const child = spawn(process.execPath, [`examples/${name}`, ...args], {
    env: { PATH: process.env.PATH ?? '', ENVELOPE_URL: app.url, ENVELOPE_API_KEY: team.apiKey, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const reports: Report[] = [];
  let pending = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    pending += chunk.toString();
    const lines = pending.split('\n');
    pending = lines.pop()!;
    for (const line of lines) if (line.startsWith('{')) reports.push(JSON.parse(line) as Report);
  });
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  // 'close', not 'exit': every line the process wrote has been read by then.
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  return { child, reports, stderr: () => stderr, exited };
}

/** Runs an example to its end; fails with its stderr when it does not exit 0. */
async function runExample(name: string, args: string[], env?: Record<string, string>): Promise<Report[]> {
  const running = startExample(name, args, env);
  const code = await running.exited;
  expect(code, running.stderr()).toBe(0);
  return running.reports;
}

const last = (reports: Report[], event: string) => reports.filter((report) => report.event === event).at(-1);

// Each example is a Node process of its own (and one a browser): more than a request's time.
describe('examples', { timeout: 90_000 }, () => {
  it('create-from-template.ts checks with a dry run, then makes a draft for the signer', async () => {
    const reports = await runExample('create-from-template.ts', [template.templateId, 'Grace Hopper', 'grace@example.com']);
    expect(last(reports, 'checked')).toMatchObject({ wouldSend: true, problems: [] });
    const created = last(reports, 'created')!;
    expect(created).toMatchObject({ status: 'draft', role: 'buyer', name: 'Consulting agreement: Grace Hopper' });
    const envelope = await restClient(app, team.apiKey).get(`/envelopes/${created.envelopeId}?includeRecipients=true`);
    expect(envelope.body.payload.envelope).toMatchObject({ status: 'draft', templateId: template.templateId });
    expect(envelope.body.payload.recipients[0].agents[0].info).toMatchObject({ name: 'Grace Hopper', email: 'grace@example.com' });
  });

  it('send-and-watch.ts sends and follows the envelope by subscription until it is finalized', async () => {
    const rest = restClient(app, team.apiKey);
    const envelopeId = (
      await rest.post(`/envelopes/jumpstart/${template.templateId}`, { recipients: [{ identifier: 'buyer', agents: [{ info: { name: 'Ada Lovelace', email: 'ada@example.com' } }] }] })
    ).body.payload.envelopeId as string;
    const running = startExample('send-and-watch.ts', [envelopeId]);
    await eventually(() => last(running.reports, 'sent'), { what: 'the example sent the envelope' });
    expect(last(running.reports, 'sent')).toMatchObject({ envelopeId, status: 'sent' });
    expect((await rest.get(`/envelopes/${envelopeId}`)).body.payload.envelope.status).toBe('sent');

    // The signer signs (through the signing API, as the signing page would).
    const recipientId = (await rest.get(`/envelopes/${envelopeId}?includeRecipients=true`)).body.payload.recipients[0].id as string;
    const signed = await signAndComplete(app, await tokenFor(app, envelopeId, recipientId));
    expect(signed.errors).toBeUndefined();

    expect(await running.exited, running.stderr()).toBe(0);
    const events = running.reports.filter((report) => report.event === 'event');
    expect(events.map((event) => event.type)).toEqual(expect.arrayContaining(['envelope.created', 'envelope.sent', 'envelope.finalized']));
    // In the trail's order, nothing twice.
    expect(events.map((event) => event.sequence)).toEqual([...events.keys()].map((index) => index + 1));
    expect(last(running.reports, 'closed')).toMatchObject({ envelopeId, status: 'finalized' });
  });

  it('legacy-rest.ts runs the replaced service’s flow with plain fetch: draft, document, signer, field, send', async () => {
    const pdf = path.join(scratch, 'contract.pdf');
    fs.writeFileSync(pdf, await makePdf({ pages: 1 }));
    const sent = last(await runExample('legacy-rest.ts', [pdf, 'Ada Lovelace', 'ada@example.com']), 'sent')!;
    expect(sent).toMatchObject({ status: 'sent', emails: ['ada@example.com'] });
    const envelope = await restClient(app, team.apiKey).get(`/envelopes/${sent.envelopeId}?includeDocuments=true&includeFields=true`);
    expect(envelope.body.payload.envelope.status).toBe('sent');
    expect(envelope.body.payload.documents.map((document: any) => document.name)).toEqual(['contract.pdf']);
    expect(envelope.body.payload.fields).toEqual([expect.objectContaining({ type: 'simple_signature', recipientId: sent.recipientId })]);
  });

  it('bulk-send-csv.ts sends a CSV through the template, reports live progress to the end, and names the failed row', async () => {
    const csv = path.join(scratch, 'renewals.csv');
    fs.writeFileSync(
      csv,
      ['buyer.name,buyer.email,envelope.name', '"Lovelace, Ada",ada@example.com,Renewal Ada', 'Bad Address,not-an-address,Renewal Bad', 'Çağrı Işık,cagri@example.com,Renewal Işık', ''].join(
        '\r\n',
      ),
    );
    const reports = await runExample('bulk-send-csv.ts', [template.templateId, csv]);
    const { bulkSendId } = last(reports, 'created')!;
    const progress = reports.filter((report) => report.event === 'progress');
    expect(progress.length).toBeGreaterThan(0);
    expect(progress.at(-1)).toMatchObject({ status: 'completed', total: 3, sent: 2, failed: 1 });
    expect(last(reports, 'done')).toMatchObject({ bulkSendId, status: 'completed', sent: 2, failed: 1, failures: [{ index: 1, error: 'Request.Invalid' }] });

    const rows = (await restClient(app, team.apiKey).get(`/bulk-sends/${bulkSendId}/rows?status=sent`)).body.payload.rows;
    expect(rows).toHaveLength(2);
    const names = [];
    for (const row of rows) names.push((await restClient(app, team.apiKey).get(`/envelopes/${row.envelopeId}`)).body.payload.envelope);
    expect(names.map((envelope) => [envelope.name, envelope.status])).toEqual([
      ['Renewal Ada', 'sent'],
      ['Renewal Işık', 'sent'],
    ]);
  });

  it('webhook-receiver.ts verifies signatures, handles each delivery once however often it comes, and refuses forgeries', async () => {
    const rest = restClient(app, team.apiKey);
    // Created before the receiver listens (it needs the secret to start), pointed at it once it does.
    const created = (await rest.post('/webhooks', { url: 'http://127.0.0.1:9/hook', eventTypes: ['envelope.sent'] })).body.payload;
    const store = path.join(scratch, 'deliveries.jsonl');
    const receiver = startExample('webhook-receiver.ts', [], { WEBHOOK_SECRET: created.secret, PORT: '0', STORE: store });
    try {
      const { url } = await eventually(() => last(receiver.reports, 'listening'), { what: 'the receiver listening' });
      expect((await rest.patch(`/webhooks/${created.webhook.id}`, { url })).status).toBe(200);

      const envelopeId = (
        await rest.post(`/envelopes/jumpstart/${template.templateId}`, { recipients: [{ identifier: 'buyer', agents: [{ info: { name: 'Ada', email: 'ada@example.com' } }] }] })
      ).body.payload.envelopeId;
      expect((await rest.put(`/envelopes/${envelopeId}/send`, {})).status).toBe(200);
      const received = await eventually(() => receiver.reports.find((report) => report.event === 'received' && report.envelopeId === envelopeId), { what: 'the delivery received' });
      expect(received.type).toBe('envelope.sent');

      // The same delivery again (as a retry after a lost answer would bring it): acknowledged, not handled twice.
      const redelivered = await rest.post(`/webhooks/${created.webhook.id}/deliveries/${received.id}/redeliver`);
      expect(redelivered.status).toBe(200);
      await eventually(() => receiver.reports.find((report) => report.event === 'duplicate' && report.id === received.id), { what: 'the redelivery acknowledged' });
      const delivery = await eventually(async () => {
        const read = (await rest.get(`/webhooks/${created.webhook.id}/deliveries/${received.id}`)).body.payload.delivery;
        return read.state === 'delivered' && read.attemptCount === 2 ? read : undefined;
      });
      expect(delivery.lastStatusCode).toBe(200);
      const handled = fs
        .readFileSync(store, 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line));
      expect(handled).toEqual([{ id: received.id, type: 'envelope.sent', envelopeId, sequence: received.sequence }]);

      // A body signed with another secret, and a replay of a real one with an old timestamp, are refused.
      const body = JSON.stringify({ ...delivery.payload, id: 'forged' });
      const now = Math.floor(Date.now() / 1000);
      const forged = await fetch(url, {
        method: 'POST',
        headers: { 'x-envelope-signature': `t=${now},v1=${createHmac('sha256', 'whsec_wrong').update(`${now}.${body}`).digest('hex')}` },
        body,
      });
      expect(forged.status).toBe(401);
      const old = now - 3600;
      const replayed = await fetch(url, {
        method: 'POST',
        headers: { 'x-envelope-signature': `t=${old},v1=${createHmac('sha256', created.secret).update(`${old}.${body}`).digest('hex')}` },
        body,
      });
      expect(replayed.status).toBe(401);
      // Its report lines come through a pipe, after the answers may have.
      await eventually(() => receiver.reports.filter((report) => report.event === 'rejected').length === 2, { what: 'both refusals reported' });
      expect(fs.readFileSync(store, 'utf8').trim().split('\n')).toHaveLength(1);
    } finally {
      receiver.child.kill('SIGTERM');
      await receiver.exited;
    }
  });

  it('download-and-verify.ts downloads the sealed PDFs and the evidence package and verifies them offline; a changed byte is found', async () => {
    const rest = restClient(app, team.apiKey);
    const envelopeId = (
      await rest.post(`/envelopes/jumpstart/${template.templateId}`, { recipients: [{ identifier: 'buyer', agents: [{ info: { name: 'Ada Lovelace', email: 'ada@example.com' } }] }] })
    ).body.payload.envelopeId as string;
    expect((await rest.put(`/envelopes/${envelopeId}/send`, {})).status).toBe(200);
    const recipientId = (await rest.get(`/envelopes/${envelopeId}?includeRecipients=true`)).body.payload.recipients[0].id as string;
    expect((await signAndComplete(app, await tokenFor(app, envelopeId, recipientId))).errors).toBeUndefined();
    // The team's worker seals it and fixes the certificate of completion.
    await eventually(async () => (await rest.get(`/envelopes/${envelopeId}/audit`)).body.payload.events.some((event: any) => event.type === 'artefact.sealed'), {
      what: 'the envelope sealed',
    });

    const out = path.join(scratch, 'sealed');
    const reports = await runExample('download-and-verify.ts', [envelopeId, out]);
    expect(last(reports, 'downloaded')!.files).toEqual(['1-template.pdf', 'evidence.zip']);
    expect(last(reports, 'verified')).toEqual({ event: 'verified', envelopeId, valid: true, problems: [] });
    // What was downloaded is the sealed file the service serves.
    const documentId = (await rest.get(`/envelopes/${envelopeId}?includeDocuments=true`)).body.payload.documents[0].id as string;
    const served = await fetch(`${app.url}/api/v1/key/envelopes/${envelopeId}/documents/${documentId}/pdf`, { headers: { 'x-service-api-key': team.apiKey } });
    expect(Buffer.compare(Buffer.from(await served.arrayBuffer()), fs.readFileSync(path.join(out, '1-template.pdf')))).toBe(0);

    // Offline, later: one byte of the PDF changed is named.
    const pdf = path.join(out, '1-template.pdf');
    const bytes = fs.readFileSync(pdf);
    bytes[Math.floor(bytes.length / 2)] ^= 0xff;
    fs.writeFileSync(pdf, bytes);
    const again = startExample('download-and-verify.ts', ['--verify-only', out], { ENVELOPE_URL: 'http://127.0.0.1:9', ENVELOPE_API_KEY: '' });
    expect(await again.exited).toBe(2);
    expect(last(again.reports, 'verified')).toMatchObject({ valid: false, problems: ['1-template.pdf: differs from the sealed document in the evidence package'] });
  });

  it('embed-signing.ts shows the signing page in its own page with <envelope-signing>; the signer signs in Chromium and the host hears completed', async () => {
    const rest = restClient(app, team.apiKey);
    const envelopeId = (
      await rest.post(`/envelopes/jumpstart/${template.templateId}`, {
        recipients: [{ identifier: 'buyer', agents: [{ info: { name: 'Ada Embedded', email: 'ada@example.com', embedded: true } }] }],
      })
    ).body.payload.envelopeId as string;
    expect((await rest.put(`/envelopes/${envelopeId}/send`, {})).status).toBe(200);
    const recipientId = (await rest.get(`/envelopes/${envelopeId}?includeRecipients=true`)).body.payload.recipients[0].id as string;

    const host = startExample('embed-signing.ts', [envelopeId, recipientId], { PORT: '0' });
    // Every host but this machine unreachable, as in the other browser tests; both local names reach it.
    const browser = await chromium.launch({
      executablePath: CHROMIUM_PATH,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost',
      ],
    });
    try {
      const { url } = await eventually(() => last(host.reports, 'listening'), { what: 'the host page listening' });
      // The example allowed its own origin to frame the team's signing pages.
      expect((await rest.get('/team/settings')).body.payload.settings.embedding.frameOrigins).toEqual([new URL(url).origin]);

      const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
      await page.goto(url);
      await expect.poll(() => page.frames().some((frame) => frame.url().startsWith(`${app.url}/sign/`)), { timeout: 20_000 }).toBe(true);
      const frame = page.frames().find((candidate) => candidate.url().startsWith(`${app.url}/sign/`))!;
      await frame.waitForFunction(() => document.body.dataset.pagesDrawn === 'true', undefined, { timeout: 20_000 });
      await eventually(() => host.reports.find((report) => report.event === 'host-event' && report.name === 'ready'), { what: 'ready reached the host page' });

      await frame.click('[data-field="buyer-signature"]');
      const pad = (await frame.locator('.signature-pad').boundingBox())!;
      await page.mouse.move(pad.x + 20, pad.y + 60);
      await page.mouse.down();
      await page.mouse.move(pad.x + 120, pad.y + 30, { steps: 8 });
      await page.mouse.move(pad.x + 200, pad.y + 90, { steps: 8 });
      await page.mouse.up();
      await frame.click('#save-signature');
      await frame.locator('dialog').waitFor({ state: 'detached' });
      await frame.click('#finish');
      await frame.click('#confirm-signing');

      const completed = await eventually(() => host.reports.find((report) => report.event === 'host-event' && report.name === 'completed'), { what: 'completed reached the host page' });
      expect(completed).toMatchObject({ envelopeId, recipientId });
      const returned = await eventually(() => last(host.reports, 'returned'), { what: 'the frame back on returnUrl' });
      expect(returned).toEqual({ event: 'returned', outcome: 'signing_complete', envelopeId });
      expect((await rest.get(`/envelopes/${envelopeId}`)).body.payload.envelope.status).toBe('finalized');
    } finally {
      await browser.close();
      host.child.kill('SIGTERM');
      await host.exited;
    }
  }, 120_000);

  it('an example stops with the API’s error name when the key is wrong', async () => {
    const running = startExample('create-from-template.ts', [template.templateId, 'Grace Hopper', 'grace@example.com'], { ENVELOPE_API_KEY: 'not-a-key' });
    expect(await running.exited).not.toBe(0);
    expect(running.stderr()).toMatch(/Auth\.InvalidApiKey/);
  });
});
