/**
 * Fault: slow clients. N downloads that stop reading their answer after its first bytes and N
 * uploads that dribble their body, all open at once, on raw loopback sockets, against the service
 * as a real process started as `npm start` starts it (its memory flags included).
 *
 * N is FAULTS_SLOW_CLIENTS (default 1000: the issue's full scale; .ci/run uses 250; the bounds
 * scale with it). The downloads ask for sealed 8 MiB documents: a paused loopback socket takes
 * about 3.75 MiB into kernel buffers, so the rest must wait on disk; a server that buffered
 * answers instead of following the socket's backpressure would hold ~4 MiB per download. Clients
 * open in batches (downloads 25 at a time, each batch once its answers have begun; uploads 50
 * every 250 ms), as clients arrive, not as one SYN flood that only measures the kernel's accept
 * queue. Of the uploads, three in four send 2 KiB a second (above the body guard's 1 KiB/s floor:
 * they stay), one in four 200 bytes a second (below it: answered 408 Request.Timeout and closed).
 *
 * Promised (docs/operations.md, "What happens when clients are slow"):
 * - resident memory grows by a bounded amount (asserted: at most 128 MiB + 300 KiB per connection,
 *   ~710 MiB for 2 × 1000, ~270 MiB for 2 × 250; measured in docs/performance.md); buffering the
 *   unsent rest of each download would take ~4 MiB per download instead;
 * - open file descriptors stay within a constant per connection (a socket and a file each: at
 *   most 2.5 per connection + 100) and come back to where they were once the clients are gone,
 *   with every staging file removed;
 * - /healthz keeps answering, probed every 100 ms on a fresh connection from a process of its own:
 *   every probe answered 200, probes answered throughout while all clients are open. How fast is
 *   the benchmark's to say (the probes' latencies are printed here and recorded in
 *   docs/performance.md): a latency bound failed this test on a machine loaded by two other suites
 *   (issue 34), and a test that fails on a busy machine is a defect;
 * - an unread download, once read, is the whole sealed file.
 *
 * For investigating: FAULTS_SLOW_STORM_MS (how long all clients stay open, default 20 s),
 * FAULTS_DUMP=<file> (the service's log, the memory and descriptor samples and every probe),
 * FAULTS_SERVICE_NODE_FLAGS (Node flags for the service, e.g. "--cpu-prof --cpu-prof-dir=/tmp/p").
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import type { MikroORM } from '@mikro-orm/postgresql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uploadDocument } from '../helpers/envelopes.ts';
import { type FaultSmtpServer, startFaultSmtpServer } from '../helpers/fault-smtp.ts';
import { asTestApp, type FaultTeam, openOrm, paddedPdf, pendingOutbox, seedTeamIn, sleep, stagingFiles, waitUntil } from '../helpers/faults.ts';
import { restClient } from '../helpers/harness.ts';
import { type PgCluster, startPgCluster } from '../helpers/pg-cluster.ts';
import { openFds, rssMiB, type ServiceProcess, startService } from '../helpers/service.ts';
import { signAndComplete } from '../helpers/signing.ts';
import { signingLinkIn } from '../helpers/smtp.ts';

const N = Number(process.env.FAULTS_SLOW_CLIENTS ?? 1000);
const STORM_MS = Number(process.env.FAULTS_SLOW_STORM_MS ?? 20_000);
const DOWNLOAD_ENVELOPES = 5;
const FILE_BYTES = 8 * 1024 * 1024;

let cluster: PgCluster;
let orm: MikroORM;
let team: FaultTeam;
let smtp: FaultSmtpServer;
let service: ServiceProcess;

beforeAll(async () => {
  cluster = await startPgCluster();
  orm = await openOrm(cluster.databaseUrl);
  team = await seedTeamIn(orm);
  smtp = await startFaultSmtpServer();
  service = await startService({
    databaseUrl: cluster.databaseUrl,
    env: { SMTP_URL: smtp.url, RATE_LIMIT_PER_MINUTE: '0', RATE_LIMIT_ANONYMOUS_PER_MINUTE: '0' },
    nodeFlags: process.env.FAULTS_SERVICE_NODE_FLAGS?.split(' ').filter(Boolean),
  });
});

afterAll(async () => {
  await service?.stop();
  await orm?.close(true);
  await smtp?.close();
  await cluster?.destroy();
});

/** A finalized envelope whose one document is a 4 MiB PDF, sealed. */
async function sealedEnvelope(index: number, pdf: Uint8Array): Promise<{ envelopeId: string; documentId: string; byteSize: number }> {
  const app = asTestApp(service.url, orm);
  const rest = restClient(app, team.apiKey);
  const envelopeId = (await rest.post('/envelopes', { name: `Big ${index}` })).body.payload.envelopeId as string;
  const document = await uploadDocument(app, team.apiKey, envelopeId, { bytes: pdf, filename: 'big.pdf' });
  expect(document.status, JSON.stringify(document.body)).toBe(200);
  const documentId = document.body.payload.document.id as string;
  const recipient = await rest.post(`/envelopes/${envelopeId}/recipients`, {
    recipient: { type: 'signer', identifier: 'reader', roleName: 'reader', order: 1, required: true, agents: [{ info: { name: 'Reader', email: `reader${index}@example.com` } }] },
  });
  const fields = await rest.post(`/envelopes/${envelopeId}/fields`, {
    fields: [
      {
        type: 'simple_signature',
        identifier: 'sig',
        recipientId: recipient.body.payload.recipient.id,
        required: true,
        views: [{ documentId, page: 0, location: { x: 20, y: 20 }, size: { width: 120, height: 30 } }],
      },
    ],
  });
  expect(fields.status, JSON.stringify(fields.body)).toBe(200);
  expect((await rest.put(`/envelopes/${envelopeId}/send`)).status).toBe(200);
  const mail = await waitUntil('the invitation', () => smtp.accepted.find((entry) => entry.rcptTo.includes(`reader${index}@example.com`)));
  const signed = await signAndComplete(app, signingLinkIn({ rcptTo: mail.rcptTo, mail: mail.mail, raw: '' })!.token);
  expect(signed.errors, JSON.stringify(signed.errors)).toBeUndefined();
  return { envelopeId, documentId, byteSize: 0 };
}

function connect(url: string): Promise<net.Socket> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: target.hostname, port: Number(target.port) });
    socket.once('connect', () => resolve(socket));
    socket.once('error', reject);
  });
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
}

type DownloadClient = { socket: net.Socket; firstByte: Promise<void> };
type UploadClient = { socket: net.Socket; steady: boolean; answer: string; sent: number; timer?: NodeJS.Timeout };

/** Opens `count` clients, `batch` at a time, each batch once `ready` says its clients are in. */
async function openInBatches<T>(count: number, batch: number, open: (index: number) => Promise<T>, ready: (clients: T[]) => Promise<unknown>): Promise<T[]> {
  const clients: T[] = [];
  for (let first = 0; first < count; first += batch) {
    const opened = await Promise.all(Array.from({ length: Math.min(batch, count - first) }, (_, offset) => open(first + offset)));
    clients.push(...opened);
    await ready(opened);
  }
  return clients;
}

describe('slow clients', () => {
  it(`${N} unread downloads and ${N} dribbling uploads leave memory and descriptors bounded and /healthz answered`, async () => {
    const timings: Record<string, number> = {};
    const endedAt: Record<string, number> = {};
    let mark = Date.now();
    const lap = (name: string) => {
      timings[name] = Date.now() - mark;
      mark = endedAt[name] = Date.now();
    };
    const pdf = await paddedPdf({ pages: 2, bytes: FILE_BYTES });
    const downloads: Awaited<ReturnType<typeof sealedEnvelope>>[] = [];
    for (let index = 0; index < DOWNLOAD_ENVELOPES; index += 1) downloads.push(await sealedEnvelope(index, pdf));
    await waitUntil('the sealing jobs', async () => Object.keys(await pendingOutbox(orm)).length === 0, 120_000, 250);
    const app = asTestApp(service.url, orm);
    const uploadTarget = (await restClient(app, team.apiKey).post('/envelopes', { name: 'Slow uploads' })).body.payload.envelopeId as string;
    // Warm: one full download of each, so the baseline includes what a first request loads.
    for (const download of downloads) {
      const response = await fetch(`${service.url}/api/v1/key/envelopes/${download.envelopeId}/documents/${download.documentId}/pdf`, { headers: { 'x-service-api-key': team.apiKey } });
      download.byteSize = (await response.arrayBuffer()).byteLength;
      expect(download.byteSize).toBeGreaterThan(FILE_BYTES);
    }
    await sleep(3_000);
    lap('prepare');
    const baseline = { rss: rssMiB(service.pid), fds: openFds(service.pid) };

    // /healthz every 100 ms throughout, from a process of its own, a fresh connection each time
    // (as an orchestrator's probe).
    const prober = spawn(process.execPath, ['test/helpers/healthz-prober.ts', service.url, '100'], { stdio: ['ignore', 'pipe', 'inherit'] });
    let proberOutput = '';
    prober.stdout.on('data', (chunk: Buffer) => (proberOutput += chunk.toString()));
    const probes = () =>
      proberOutput
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as { at: number; ms: number; status: number });
    const samples: { at: number; rss: number; fds: number }[] = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling && service.isRunning()) {
        try {
          samples.push({ at: Date.now(), rss: rssMiB(service.pid), fds: openFds(service.pid) });
        } catch {
          // the process is gone: the assertions say so
        }
        await sleep(250);
      }
    })();

    let downloadClients: DownloadClient[] = [];
    let uploadClients: UploadClient[] = [];
    try {
      // N downloads, opened 25 at a time (each batch once its answers have begun): the request,
      // then nothing read after the first bytes.
      downloadClients = await openInBatches(
        N,
        25,
        async (index) => {
          const socket = await connect(service.url);
          socket.on('error', () => undefined);
          const download = downloads[index % downloads.length]!;
          const firstByte = new Promise<void>((resolve) => {
            socket.once('data', () => {
              socket.pause();
              resolve();
            });
            socket.once('close', () => resolve());
          });
          socket.write(`GET /api/v1/key/envelopes/${download.envelopeId}/documents/${download.documentId}/pdf HTTP/1.1\r\nHost: x\r\nX-Service-Api-Key: ${team.apiKey}\r\n\r\n`);
          return { socket, firstByte };
        },
        (batch) => Promise.race([Promise.all(batch.map((client) => client.firstByte)), sleep(10_000)]),
      );
      lap('openDownloads');
      // N uploads, 50 every 250 ms: the head and the start of the file, then a dribble every
      // second, from the moment each is open: 2 KiB a second (three in four), or 200 bytes.
      const boundary = 'slow-boundary';
      const partHead = `--${boundary}\r\nContent-Disposition: form-data; name="document"; filename="slow.pdf"\r\nContent-Type: application/pdf\r\n\r\n`;
      uploadClients = await openInBatches(
        N,
        50,
        async (index) => {
          const socket = await connect(service.url);
          const upload: UploadClient = { socket, steady: index % 4 !== 3, answer: '', sent: 0 };
          socket.on('error', () => undefined);
          socket.on('data', (chunk: Buffer) => (upload.answer += chunk.toString('latin1')));
          socket.on('close', () => clearInterval(upload.timer));
          socket.write(
            `POST /api/v1/key/envelopes/${uploadTarget}/documents HTTP/1.1\r\nHost: x\r\nX-Service-Api-Key: ${team.apiKey}\r\n` +
              `Content-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: ${partHead.length + pdf.length + 64}\r\n\r\n${partHead}`,
          );
          socket.write(pdf.subarray(0, 1024));
          upload.sent = 1024;
          upload.timer = setInterval(() => {
            if (socket.destroyed) return;
            const step = upload.steady ? 2048 : 200;
            socket.write(pdf.subarray(upload.sent, upload.sent + step));
            upload.sent += step;
          }, 1_000);
          return upload;
        },
        () => sleep(250),
      );
      lap('openUploads');
      await sleep(STORM_MS);
      lap('storm');
    } finally {
      prober.kill();
    }
    const storm = samples.filter((sample) => sample.at >= endedAt.prepare!);
    const peak = { rss: Math.max(...storm.map((sample) => sample.rss)), fds: Math.max(...storm.map((sample) => sample.fds)) };
    const allProbes = probes();
    const latencies = allProbes.map((entry) => entry.ms);
    const rampLatencies = allProbes.filter((entry) => entry.at < endedAt.openUploads!).map((entry) => entry.ms);
    const heldLatencies = allProbes.filter((entry) => entry.at >= endedAt.openUploads!).map((entry) => entry.ms);

    try {
      // A few unread downloads, read at last: each is the whole sealed file.
      await Promise.all(
        downloadClients.slice(0, 10).map(
          ({ socket }, index) =>
            new Promise<void>((resolve, reject) => {
              const expected = downloads[index % downloads.length]!.byteSize;
              // The first chunk (the head and the start of the body) was read before the pause.
              let bytes = socket.bytesRead;
              socket.on('data', (chunk: Buffer) => {
                bytes += chunk.length;
                if (bytes >= expected) resolve();
              });
              socket.once('close', () => (bytes >= expected ? resolve() : reject(new Error(`a download closed after ${bytes} of ${expected} bytes`))));
              socket.resume();
            }),
        ),
      );
      // The trickling quarter was cut off by the body guard, by name; the steady ones are still
      // being received (nothing answered yet).
      const trickling = uploadClients.filter((upload) => !upload.steady);
      const timedOut = trickling.filter((upload) => /^HTTP\/1\.1 408/.test(upload.answer) && upload.answer.includes('Request.Timeout'));
      expect(timedOut.length, `trickling uploads answered 408: ${timedOut.length} of ${trickling.length}`).toBe(trickling.length);
      const steady = uploadClients.filter((upload) => upload.steady);
      expect(steady.filter((upload) => upload.answer !== '').map((upload) => upload.answer.slice(0, 200))).toEqual([]);
    } finally {
      // Everyone goes away.
      for (const upload of uploadClients) clearInterval(upload.timer);
      for (const { socket } of [...downloadClients, ...uploadClients]) socket.destroy();
    }
    const fdsAfter = await waitUntil(
      'descriptors to come back',
      () => {
        const fds = openFds(service.pid);
        return fds <= baseline.fds + 64 ? fds : undefined;
      },
      60_000,
      250,
    );
    await waitUntil('the staging files to be removed', () => stagingFiles(service.dataDir).length === 0, 30_000);
    sampling = false;
    await sampler;
    lap('settle');

    const summary = (values: number[]) => ({ probes: values.length, p50: Math.round(percentile(values, 50)), p99: Math.round(percentile(values, 99)), max: Math.round(Math.max(...values)) });
    const report = {
      clients: { downloads: N, uploads: N, fileMiB: FILE_BYTES / 1024 / 1024 },
      timings,
      baseline: { rssMiB: Math.round(baseline.rss), fds: baseline.fds },
      peak: { rssMiB: Math.round(peak.rss), fds: peak.fds },
      rssGrowthMiB: Math.round(peak.rss - baseline.rss),
      fdsAfter,
      healthz: { all: summary(latencies), whileOpening: summary(rampLatencies), allOpen: summary(heldLatencies) },
    };
    console.log(`slow clients: ${JSON.stringify(report)}`);
    if (process.env.FAULTS_DUMP)
      fs.writeFileSync(process.env.FAULTS_DUMP, `${service.output()}\nSAMPLES ${JSON.stringify(samples)}\nHEALTH ${JSON.stringify(allProbes)}\nPHASES ${JSON.stringify(endedAt)}\n`);

    expect(service.isRunning()).toBe(true);
    expect(allProbes.filter((entry) => entry.status !== 200)).toEqual([]);
    expect(heldLatencies.length).toBeGreaterThan(10);
    expect(peak.rss - baseline.rss).toBeLessThan(128 + (2 * N * 300) / 1024);
    expect(peak.fds).toBeLessThan(baseline.fds + 2.5 * 2 * N + 100);
    expect(service.unexpectedErrors()).toEqual([]);
  });
});
