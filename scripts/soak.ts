/**
 * Soak: a mixed workload at a steady rate against a started service, for a long time, printing
 * every interval what would show a slow leak or a slow decline: resident memory, heap, active
 * handles, open descriptors, request latency (p50/p99) and errors.
 *
 *   npm run soak -- --minutes 30                      (defaults: --interval 5, --flows 20, --reads 5)
 *   npm run soak -- --minutes 3 --interval 1          (a quick check)
 *
 * Options: --minutes (total run), --interval (minutes between reports; decimals allowed),
 * --flows (envelope lifecycles started per minute), --reads (reads per second), --subscribers
 * (at most this many subscriptions open at once), --embedded (PGlite under the service's data
 * directory instead of a private PostgreSQL cluster).
 *
 * What it starts: a private PostgreSQL cluster (test/helpers/pg-cluster.ts; needs the PostgreSQL
 * binaries, as the fault suite), an SMTP server that accepts everything, a webhook receiver, and
 * the service exactly as `npm start` runs it (its Node flags and memory settings) plus one preload,
 * scripts/soak-probe.ts, which reports heap and active handles over IPC.
 *
 * One flow is an envelope's whole life: create, upload a PDF, add a signer and a signature field,
 * send; the invitation arrives by SMTP; the signer opens the session and signs; the envelope is
 * finalized, the outbox seals it and mails the completion notice; the sealed PDF is downloaded.
 * While a flow runs, an SSE subscription follows its envelope's events; a webhook endpoint
 * receives every audit event. Reads (an envelope, the envelope list over GraphQL) run alongside.
 *
 * At the end it checks what the fault suite checks: the outbox drained with nothing failed, every
 * referenced file there, one seal per document, each mail and webhook delivery once; it exits 1 if
 * any request failed or any check did not hold.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { MikroORM } from '@mikro-orm/postgresql';
import { makePdf } from '../test/fixtures/pdfs.ts';
import { startFaultSmtpServer } from '../test/helpers/fault-smtp.ts';
import { missingBlobs, openOrm, seedTeamIn, startGatedReceiver } from '../test/helpers/faults.ts';
import { ENVELOPE_EVENTS, subscribe, type Watcher } from '../test/helpers/live.ts';
import { freePort, type PgCluster, postgresBinaries, startPgCluster } from '../test/helpers/pg-cluster.ts';
import { openFds, rssMiB, startCommand } from '../test/helpers/service.ts';

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '30' },
    interval: { type: 'string', default: '5' },
    flows: { type: 'string', default: '20' },
    reads: { type: 'string', default: '5' },
    subscribers: { type: 'string', default: '50' },
    embedded: { type: 'boolean', default: false },
  },
});
const minutes = Number(values.minutes);
const intervalMs = Number(values.interval) * 60_000;
const flowsPerMinute = Number(values.flows);
const readsPerSecond = Number(values.reads);
const maxSubscribers = Number(values.subscribers);

type ProbeReport = { heapUsedMiB: number; heapTotalMiB: number; externalMiB: number; arrayBuffersMiB: number; activeResources: number; resourceKinds: Record<string, number> };

const MAIL_TOPICS = ['signing.invitation', 'envelope.completed.notice'];

// ---------------------------------------------------------------------------------------------
// What runs: database, SMTP, webhook receiver, the service.

const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'envelope-soak-'));
const dataDir = path.join(workDir, 'data');
let cluster: PgCluster | undefined;
let databaseUrl: string | undefined;
if (!values.embedded) {
  if (!postgresBinaries()) throw new Error('no PostgreSQL binaries (set PG_BIN), or run with --embedded');
  cluster = await startPgCluster();
  databaseUrl = cluster.databaseUrl;
}
const smtp = await startFaultSmtpServer();
const receiver = await startGatedReceiver();
const port = await freePort();
const baseUrl = `http://127.0.0.1:${port}`;
const start = startCommand();
const service: ChildProcess = spawn(process.execPath, ['--import', './scripts/soak-probe.ts', ...start.args], {
  env: {
    ...process.env,
    ...start.env,
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    PORT: String(port),
    PUBLIC_URL: baseUrl,
    DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
    AUDIT_HMAC_KEY: 'soak-audit-key-0123456789abcdef0123456789',
    SMTP_URL: smtp.url,
    WEBHOOK_ALLOW_PRIVATE: 'true',
    // The soak measures the service, not the limiter refusing its one key.
    RATE_LIMIT_PER_MINUTE: '0',
  },
  stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
});
// Its log lines (warnings and errors: LOG_LEVEL=warn) go through; the first start's banner does not.
let pendingOutput = '';
service.stdout!.on('data', (chunk: Buffer) => {
  pendingOutput += chunk.toString();
  const lines = pendingOutput.split('\n');
  pendingOutput = lines.pop() ?? '';
  for (const line of lines) if (line.startsWith('{')) console.log(`service: ${line}`);
});
let latestProbe: ProbeReport | undefined;
service.on('message', (message: { soakProbe?: ProbeReport }) => {
  if (message.soakProbe) latestProbe = message.soakProbe;
});
let serviceExited = false;
service.once('exit', (code, signal) => {
  serviceExited = true;
  if (!stopping) console.error(`the service exited during the soak: code ${code}, signal ${signal}`);
});
let stopping = false;

async function waitReady(): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    if (serviceExited) throw new Error('the service exited before it was ready');
    try {
      if ((await fetch(`${baseUrl}/readyz`)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error('the service did not become ready');
}
await waitReady();

// The team (its key printed on the first start by the service; the soak makes its own).
let orm: MikroORM;
if (databaseUrl) {
  orm = await openOrm(databaseUrl);
} else {
  // Embedded: the service owns the database; the soak reads through its shared socket instead.
  const { findSharedEmbeddedPostgres } = await import('../src/db/embedded-postgres.ts');
  const shared = findSharedEmbeddedPostgres(path.join(dataDir, 'postgres'));
  if (!shared) throw new Error('the embedded database is not shared by the running service');
  orm = await openOrm(shared, 1);
}
const team = await seedTeamIn(orm);
// One endpoint for every audit event type.
const hook = await fetch(`${baseUrl}/api/v1/key/webhooks`, {
  method: 'POST',
  headers: { 'x-service-api-key': team.apiKey, 'content-type': 'application/json' },
  body: JSON.stringify({ url: receiver.url, description: 'soak' }),
});
if (!hook.ok) throw new Error(`could not add the webhook endpoint: ${hook.status} ${await hook.text()}`);

// ---------------------------------------------------------------------------------------------
// Measuring.

type Sample = { kind: string; ms: number; ok: boolean; error?: string };
let window: Sample[] = [];
const totals = { requests: 0, errors: 0, flowsStarted: 0, flowsCompleted: 0, flowsFailed: 0, subscriptionEvents: 0, subscriptionErrors: 0 };
const errorNames = new Map<string, number>();

async function timed<T>(kind: string, run: () => Promise<{ ok: boolean; error?: string; value: T }>): Promise<T> {
  const started = performance.now();
  let sample: Sample;
  try {
    const result = await run();
    sample = { kind, ms: performance.now() - started, ok: result.ok, error: result.error };
    window.push(sample);
    totals.requests += 1;
    if (!result.ok) noteError(kind, result.error ?? 'failed');
    if (!result.ok) throw new Error(`${kind}: ${result.error}`);
    return result.value;
  } catch (error) {
    if (!(error instanceof Error && error.message.startsWith(`${kind}:`))) {
      window.push({ kind, ms: performance.now() - started, ok: false, error: (error as Error).message });
      totals.requests += 1;
      noteError(kind, (error as Error).message);
    }
    throw error;
  }
}

function noteError(kind: string, error: string) {
  totals.errors += 1;
  const key = `${kind}: ${error}`.slice(0, 120);
  errorNames.set(key, (errorNames.get(key) ?? 0) + 1);
}

async function rest(kind: string, method: string, route: string, body?: unknown): Promise<any> {
  return timed(kind, async () => {
    const response = await fetch(`${baseUrl}/api/v1/key${route}`, {
      method,
      headers: { 'x-service-api-key': team.apiKey, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const parsed = (await response.json()) as any;
    return { ok: response.ok, error: response.ok ? undefined : `${response.status} ${parsed?.error?.name}`, value: parsed?.payload };
  });
}

async function graphql(kind: string, query: string, variables: Record<string, unknown>, headers: Record<string, string>): Promise<any> {
  return timed(kind, async () => {
    const response = await fetch(`${baseUrl}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ query, variables }) });
    const parsed = (await response.json()) as { data?: any; errors?: any[] };
    const error = parsed.errors?.[0]?.extensions?.code ?? parsed.errors?.[0]?.message;
    return { ok: response.ok && !parsed.errors, error: error ? String(error) : response.ok ? undefined : String(response.status), value: parsed.data };
  });
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

// ---------------------------------------------------------------------------------------------
// The workload.

const pdf = await makePdf({ pages: 3 });
const openWatchers = new Set<Watcher>();
let flowCounter = 0;

async function waitFor<T>(what: string, probe: () => T | undefined, timeoutMs = 120_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function flow(): Promise<void> {
  const number = (flowCounter += 1);
  totals.flowsStarted += 1;
  const email = `soak-${number}@example.com`;
  let watcher: Watcher | undefined;
  try {
    const envelope = await rest('create', 'POST', '/envelopes', { name: `Soak ${number}` });
    const envelopeId = envelope.envelopeId as string;
    if (openWatchers.size < maxSubscribers) {
      watcher = subscribe({ url: baseUrl }, 'sse', { apiKey: team.apiKey }, ENVELOPE_EVENTS, { envelopeId, afterSequence: 0 });
      openWatchers.add(watcher);
    }
    const form = new FormData();
    form.append('document', new Blob([pdf as Uint8Array<ArrayBuffer>], { type: 'application/pdf' }), 'soak.pdf');
    const document = await timed('upload', async () => {
      const response = await fetch(`${baseUrl}/api/v1/key/envelopes/${envelopeId}/documents`, { method: 'POST', headers: { 'x-service-api-key': team.apiKey }, body: form });
      const parsed = (await response.json()) as any;
      return { ok: response.ok, error: response.ok ? undefined : `${response.status} ${parsed?.error?.name}`, value: parsed?.payload?.document };
    });
    const recipient = await rest('recipient', 'POST', `/envelopes/${envelopeId}/recipients`, {
      recipient: { type: 'signer', identifier: 'signer', roleName: 'Signer', order: 1, required: true, agents: [{ info: { name: `Signer ${number}`, email } }] },
    });
    await rest('fields', 'POST', `/envelopes/${envelopeId}/fields`, {
      fields: [
        {
          type: 'simple_signature',
          identifier: 'sig',
          recipientId: recipient.recipient.id,
          required: true,
          views: [{ documentId: document.id, page: 0, location: { x: 40, y: 40 }, size: { width: 120, height: 30 } }],
        },
      ],
    });
    await rest('send', 'PUT', `/envelopes/${envelopeId}/send`);
    const invitation = await waitFor('the invitation', () => smtp.accepted.find((mail) => mail.rcptTo.includes(email) && /\/sign\//.test(mail.mail.text ?? '')));
    const token = /\/sign\/(sgn_[A-Za-z0-9_-]+)/.exec(invitation.mail.text ?? '')![1]!;
    const signing = { 'x-signing-token': token };
    const session = await graphql('signingSession', '{ signingSession { fields { id type readonly } } }', {}, signing);
    const values = session.signingSession.fields
      .filter((field: any) => !field.readonly && field.type === 'simple_signature')
      .map((field: any) => ({ fieldId: field.id, value: { kind: 'typed', text: `Signer ${number}`, font: 'cursive' } }));
    await graphql(
      'sign',
      'mutation($values: [SigningValueInput!], $complete: Boolean) { submitSigning(values: $values, complete: $complete) { envelope { status } } }',
      { values, complete: true },
      signing,
    );
    // The outbox seals it; the download waits for (or triggers) the seal.
    await waitFor('the completion notice', () => smtp.accepted.find((mail) => mail.rcptTo.includes(email) && mail !== invitation));
    await timed('download', async () => {
      const response = await fetch(`${baseUrl}/api/v1/key/envelopes/${envelopeId}/documents/${document.id}/pdf`, { headers: { 'x-service-api-key': team.apiKey } });
      const bytes = (await response.arrayBuffer()).byteLength;
      const sealed = response.headers.get('x-artefact-sealed') === 'true';
      return { ok: response.ok && sealed && bytes > 0, error: response.ok ? (sealed ? undefined : 'not sealed') : String(response.status), value: bytes };
    });
    totals.flowsCompleted += 1;
  } catch (error) {
    totals.flowsFailed += 1;
    noteError('flow', (error as Error).message);
  } finally {
    if (watcher) {
      await watcher.close();
      openWatchers.delete(watcher);
      for (const result of watcher.results) {
        if (result.errors) totals.subscriptionErrors += 1;
        else totals.subscriptionEvents += 1;
      }
    }
  }
}

async function read(): Promise<void> {
  try {
    if (Math.random() < 0.5) await rest('readList', 'GET', '/envelopes?limit=20');
    else await graphql('readGraphql', '{ envelopes(first: 20) { nodes { id status documents { id } } } }', {}, { 'x-service-api-key': team.apiKey });
  } catch {
    // counted
  }
}

// ---------------------------------------------------------------------------------------------
// Reporting.

const startedAt = Date.now();
let lastReportAt = startedAt;
const columns = [
  'elapsed',
  'rss MiB',
  'heap MiB',
  'ext MiB',
  'handles',
  'fds',
  'req',
  'p50 ms',
  'p99 ms',
  'errors',
  'flows ok',
  'in flight',
  'subs open',
  'sub events',
  'mails total',
  'hooks total',
];
let reportedSubscriptionEvents = 0;

function report(final = false): void {
  const now = Date.now();
  const latencies = window.map((sample) => sample.ms).sort((a, b) => a - b);
  const errors = window.filter((sample) => !sample.ok).length;
  let rss = NaN;
  let fds = NaN;
  if (service.pid !== undefined && !serviceExited) {
    rss = rssMiB(service.pid);
    fds = openFds(service.pid);
  }
  const row = [
    `${((now - startedAt) / 60_000).toFixed(1)} min`,
    rss.toFixed(0),
    latestProbe ? `${latestProbe.heapUsedMiB.toFixed(0)}/${latestProbe.heapTotalMiB.toFixed(0)}` : '-',
    latestProbe ? latestProbe.externalMiB.toFixed(0) : '-',
    latestProbe ? String(latestProbe.activeResources) : '-',
    String(fds),
    String(window.length),
    percentile(latencies, 50).toFixed(1),
    percentile(latencies, 99).toFixed(1),
    String(errors),
    String(totals.flowsCompleted),
    String(totals.flowsStarted - totals.flowsCompleted - totals.flowsFailed),
    String(openWatchers.size),
    String(totals.subscriptionEvents - reportedSubscriptionEvents),
    String(smtp.accepted.length),
    String(receiver.answered.length),
  ];
  console.log(`| ${row.join(' | ')} |`);
  if (final || process.env.SOAK_VERBOSE) {
    const byKind = new Map<string, number[]>();
    for (const sample of window) byKind.set(sample.kind, [...(byKind.get(sample.kind) ?? []), sample.ms]);
    for (const [kind, values] of [...byKind].sort()) {
      const sorted = values.sort((a, b) => a - b);
      console.log(`    ${kind.padEnd(14)} n=${String(sorted.length).padStart(6)} p50=${percentile(sorted, 50).toFixed(1)} p99=${percentile(sorted, 99).toFixed(1)} ms`);
    }
    if (latestProbe) console.log(`    handles: ${JSON.stringify(latestProbe.resourceKinds)}`);
  }
  window = [];
  reportedSubscriptionEvents = totals.subscriptionEvents;
  lastReportAt = now;
}

console.log(
  `soak: ${minutes} min, a report every ${values.interval} min; ${flowsPerMinute} envelope flows a minute, ${readsPerSecond} reads a second, up to ${maxSubscribers} subscriptions; ${cluster ? `PostgreSQL ${cluster.databaseUrl}` : 'embedded PostgreSQL'}; service pid ${service.pid} on ${baseUrl}`,
);
console.log(`| ${columns.join(' | ')} |`);
console.log(`|${columns.map(() => '---').join('|')}|`);
report();

// ---------------------------------------------------------------------------------------------
// Run.

const running = new Set<Promise<void>>();
const track = (promise: Promise<void>) => {
  running.add(promise);
  void promise.finally(() => running.delete(promise));
};
const endAt = startedAt + minutes * 60_000;
const flowEvery = 60_000 / flowsPerMinute;
const readEvery = 1000 / readsPerSecond;
let nextFlow = Date.now();
let nextRead = Date.now();
while (Date.now() < endAt && !serviceExited) {
  const now = Date.now();
  if (now >= nextFlow) {
    track(flow());
    nextFlow += flowEvery;
  }
  if (readsPerSecond > 0 && now >= nextRead) {
    track(read());
    nextRead += readEvery;
  }
  if (now - lastReportAt >= intervalMs) report();
  await new Promise((resolve) => setTimeout(resolve, Math.max(1, Math.min(nextFlow, readsPerSecond > 0 ? nextRead : Infinity, lastReportAt + intervalMs) - Date.now())));
}

// Let the flows in flight finish (at most two minutes), then the checks.
const finishBy = Date.now() + 120_000;
while (running.size > 0 && Date.now() < finishBy) await new Promise((resolve) => setTimeout(resolve, 250));
console.log('final (the flows in flight finished):');
report(true);

const problems: string[] = [];
if (serviceExited) problems.push('the service exited during the soak');
const pending = await orm.em
  .fork()
  .execute<{ topic: string; count: string }[]>(`select topic, count(*) as count from outbox_message where processed_at is null and failed_at is null group by topic`);
if (pending.length > 0) problems.push(`outbox not drained: ${JSON.stringify(pending)}`);
const failed = await orm.em.fork().execute<{ topic: string; last_error: string }[]>(`select topic, last_error from outbox_message where failed_at is not null`);
if (failed.length > 0) problems.push(`outbox rows failed: ${JSON.stringify(failed.slice(0, 5))}`);
const missing = await missingBlobs(orm, dataDir);
if (missing.length > 0) problems.push(`missing files: ${missing.slice(0, 5).join(', ')}`);
const doubleSeals = await orm.em
  .fork()
  .execute<{ document_id: string; count: string }[]>(
    `select details ->> 'documentId' as document_id, count(*) as count from audit_event where type = 'artefact.sealed' group by 1 having count(*) > 1`,
  );
if (doubleSeals.length > 0) problems.push(`documents sealed more than once: ${doubleSeals.length}`);
const mailIds = await orm.em.fork().execute<{ id: string }[]>(`select id from outbox_message where topic = any(?::text[])`, [`{${MAIL_TOPICS.join(',')}}`]);
const counts = smtp.countsByMessageId();
const host = new URL(baseUrl).hostname;
const notOnce = mailIds.filter((row) => counts.get(`<${row.id}@${host}>`) !== 1);
if (notOnce.length > 0) problems.push(`${notOnce.length} mails not accepted exactly once`);
const deliveries = receiver.answered.map((request) => String(request.headers['x-envelope-webhook-id']));
if (new Set(deliveries).size !== deliveries.length) problems.push('a webhook delivery was answered more than once');
const [{ count: webhookPending } = { count: '0' }] = await orm.em.fork().execute<{ count: string }[]>(`select count(*) as count from webhook_delivery where state <> 'delivered'`);
if (Number(webhookPending) > 0) problems.push(`${webhookPending} webhook deliveries not delivered`);
if (totals.errors > 0) problems.push(`${totals.errors} errors: ${JSON.stringify(Object.fromEntries(errorNames))}`);

console.log(
  `totals: ${totals.requests} requests, ${totals.errors} errors; flows ${totals.flowsCompleted} completed of ${totals.flowsStarted} (${totals.flowsFailed} failed); ` +
    `${smtp.accepted.length} mails, ${receiver.answered.length} webhook deliveries, ${totals.subscriptionEvents} subscription events (${totals.subscriptionErrors} subscription errors)`,
);
console.log(problems.length === 0 ? 'checks: outbox drained, nothing failed, every file there, one seal per document, each mail and webhook once' : `problems:\n- ${problems.join('\n- ')}`);

stopping = true;
for (const watcher of openWatchers) await watcher.close();
service.kill('SIGTERM');
await new Promise((resolve) => (serviceExited ? resolve(undefined) : service.once('exit', resolve)));
await orm.close(true);
await smtp.close();
await receiver.close();
await cluster?.destroy();
fs.rmSync(workDir, { recursive: true, force: true });
process.exit(problems.length === 0 ? 0 : 1);
