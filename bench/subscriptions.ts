/**
 * Live status fan-out: N SSE subscribers watch one envelope, one status change is made, and the
 * time until each subscriber has the event (p50, p99) and the server's resident memory per
 * subscriber are measured, for the service and for a bare graphql-yoga + Pothos relay
 * (bench/subscriptions-relay.ts) in the same run, with the same client.
 *
 *   npm run bench:subscriptions [-- --sizes 2000,10000]
 *
 * The service runs as `npm start` runs it, on a fresh database created on DATABASE_URL's server
 * (default: the local one; `--database embedded` for PGlite, whose heap makes resident memory
 * noisy), with rate limits off and SUBSCRIPTIONS_PER_KEY raised for the run; it publishes
 * through LISTEN/NOTIFY as with several instances.
 * `--max-old-space-size` is left out for both servers: ten thousand streams need more heap than
 * the production default of 256 MB allows a bare relay. Each size starts fresh servers.
 */
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { printResult, QUICK, QUICK_OPTION } from './report.ts';
import { createTeamWithCli, spawnService, waitForListening } from './service-process.ts';

const { values } = parseArgs({ options: { sizes: { type: 'string' }, database: { type: 'string', default: 'server' }, ...QUICK_OPTION } });
// Quick: a few dozen subscribers, enough to go through the whole path once.
const sizes = (values.sizes ?? (QUICK ? '50' : '2000,10000')).split(',').map(Number);
/** `server`: a fresh database on DATABASE_URL's server (default the local one), so the service's memory is its own, not PGlite's. */
const onServer = values.database === 'server';
const serverUrl = new URL(process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres');

async function createDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `bench_live_${Math.random().toString(36).slice(2, 10)}`;
  const admin = new pg.Client({ connectionString: serverUrl.toString() });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const dropper = new pg.Client({ connectionString: serverUrl.toString() });
      await dropper.connect();
      await dropper.query(`drop database if exists ${name} with (force)`);
      await dropper.end();
    },
  };
}

type Server = {
  name: string;
  url: string;
  pid: number;
  headers: Record<string, string>;
  query: string;
  /** Makes the envelope to watch; answers its id. */
  prepare(): Promise<string>;
  /** Makes one status change of the envelope. */
  change(envelopeId: string): Promise<void>;
  stop(): Promise<void>;
};

function stopper(child: ChildProcess, cleanup: () => void = () => {}) {
  return async () => {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    cleanup();
  };
}

async function startService(extraEnv: Record<string, string> = {}, name = 'service'): Promise<Server> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'envelope-bench-live-'));
  const database = onServer ? await createDatabase() : undefined;
  const env = { DATABASE_URL: database?.url, DATA_DIR: dataDir };
  const child = spawnService(
    { ...env, PORT: '0', LOG_LEVEL: 'info', RATE_LIMIT_PER_MINUTE: '0', RATE_LIMIT_ANONYMOUS_PER_MINUTE: '0', SUBSCRIPTIONS_PER_KEY: '1000000', ...extraEnv },
    { stdio: ['ignore', 'pipe', 'pipe'] },
    { leaveOutFlags: ['--max-old-space-size=256'] },
  );
  // The address from the `listening` log line and a key from the CLI's JSON: never the banner's text.
  const url = await waitForListening(child);
  const { apiKey } = await createTeamWithCli(env);
  const headers = { 'x-service-api-key': apiKey };
  return {
    name,
    url,
    pid: child.pid!,
    headers,
    query: 'subscription($id: ID) { envelopeStatusChanged(envelopeId: $id) { envelopeId sequence type status at } }',
    async prepare() {
      const response = await fetch(`${url}/api/v1/key/envelopes`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Watched' }) });
      return ((await response.json()) as { payload: { envelopeId: string } }).payload.envelopeId;
    },
    async change(envelopeId) {
      // Deleting the draft is a status change (envelope.deleted), one request.
      const response = await fetch(`${url}/api/v1/key/envelopes/${envelopeId}`, { method: 'DELETE', headers });
      if (response.status !== 200) throw new Error(`the change failed: ${response.status} ${await response.text()}`);
    },
    stop: async () => {
      await stopper(child, () => fs.rmSync(dataDir, { recursive: true, force: true }))();
      await database?.drop();
    },
  };
}

async function startRelay(): Promise<Server> {
  const child = spawn(path.resolve('node_modules/.bin/node'), ['bench/subscriptions-relay.ts'], { stdio: ['ignore', 'pipe', 'pipe'] });
  // The relay's one JSON line (bench/subscriptions-relay.ts).
  const url = await waitForListening(child, { isListeningLine: () => true });
  return {
    name: 'bare yoga relay',
    url,
    pid: child.pid!,
    headers: {},
    query: 'subscription($id: ID!) { envelopeStatusChanged(envelopeId: $id) { envelopeId sequence type status at } }',
    prepare: async () => '00000000-0000-4000-8000-000000000001',
    async change(envelopeId) {
      await fetch(`${url}/publish?envelopeId=${envelopeId}`, { method: 'POST' });
    },
    stop: stopper(child),
  };
}

function residentBytes(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
}

type Subscriber = { arrivedAt: number | undefined; socket: import('node:net').Socket | undefined };

const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });

/** One SSE subscriber on its own connection; resolves once the stream is open (the first keep-alive arrived). */
function openSubscriber(server: Server, envelopeId: string): Promise<Subscriber> {
  const body = JSON.stringify({ query: server.query, variables: { id: envelopeId } });
  const subscriber: Subscriber = { arrivedAt: undefined, socket: undefined };
  return new Promise((resolve, reject) => {
    const request = http.request(
      `${server.url}/graphql`,
      { method: 'POST', agent, headers: { ...server.headers, 'content-type': 'application/json', accept: 'text/event-stream', 'content-length': Buffer.byteLength(body) } },
      (response) => {
        if (response.statusCode !== 200) reject(new Error(`subscribing answered ${response.statusCode}`));
        subscriber.socket = response.socket;
        let opened = false;
        response.on('data', (chunk: Buffer) => {
          if (!opened) {
            opened = true;
            resolve(subscriber);
          }
          if (subscriber.arrivedAt === undefined && chunk.includes('event: next')) subscriber.arrivedAt = performance.now();
        });
        response.on('error', () => {});
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

type Row = { server: string; subscribers: number; delivered: number; p50: number; p99: number; growthMiB: number; kibPer: number };

async function measure(start: () => Promise<Server>, count: number): Promise<Row> {
  const server = await start();
  try {
    const envelopeId = await server.prepare();
    // Warm up the path once (compilation, caches), then take the baseline.
    const warm = await openSubscriber(server, envelopeId);
    warm.socket?.destroy();
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const before = residentBytes(server.pid);
    const subscribers: Subscriber[] = [];
    for (let opened = 0; opened < count; opened += 250) {
      subscribers.push(...(await Promise.all(Array.from({ length: Math.min(250, count - opened) }, () => openSubscriber(server, envelopeId)))));
    }
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const after = residentBytes(server.pid);
    const changedAt = performance.now();
    await server.change(envelopeId);
    const deadline = Date.now() + 120_000;
    while (subscribers.some((subscriber) => subscriber.arrivedAt === undefined) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const latencies = subscribers
      .filter((subscriber) => subscriber.arrivedAt !== undefined)
      .map((subscriber) => subscriber.arrivedAt! - changedAt)
      .sort((a, b) => a - b);
    for (const subscriber of subscribers) subscriber.socket?.destroy();
    return {
      server: server.name,
      subscribers: count,
      delivered: latencies.length,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      growthMiB: (after - before) / 2 ** 20,
      kibPer: (after - before) / 1024 / count,
    };
  } finally {
    await server.stop();
  }
}

/**
 * The service as it runs (plain live-status subscriptions opened beside yoga, src/graphql/live-lean.ts),
 * the same with every subscription through yoga (GRAPHQL_LIVE_LEAN=false: as before issue 37), and
 * the bare relay.
 */
const startThroughYoga = () => startService({ GRAPHQL_LIVE_LEAN: 'false' }, 'service, all through yoga');
const rows: Row[] = [];
for (const size of sizes) {
  for (const start of [startService, startThroughYoga, startRelay]) {
    const row = await measure(start, size);
    rows.push(row);
    console.error(`${row.server} ${row.subscribers}: delivered ${row.delivered}, p50 ${row.p50.toFixed(0)} ms, p99 ${row.p99.toFixed(0)} ms, ${row.kibPer.toFixed(1)} KiB per subscriber`);
  }
}
console.log('| server | subscribers | delivered | p50 ms | p99 ms | RSS growth MiB | KiB per subscriber |');
console.log('|---|---|---|---|---|---|---|');
for (const row of rows) {
  console.log(`| ${row.server} | ${row.subscribers} | ${row.delivered} | ${row.p50.toFixed(0)} | ${row.p99.toFixed(0)} | ${row.growthMiB.toFixed(1)} | ${row.kibPer.toFixed(1)} |`);
}
for (const size of sizes) {
  const service = rows.find((row) => row.server === 'service' && row.subscribers === size)!;
  const throughYoga = rows.find((row) => row.server === 'service, all through yoga' && row.subscribers === size)!;
  const relay = rows.find((row) => row.server === 'bare yoga relay' && row.subscribers === size)!;
  console.log(
    `\n${size}: p99 ${(service.p99 / relay.p99).toFixed(2)}× the bare relay's (through yoga ${(throughYoga.p99 / relay.p99).toFixed(2)}×); ${service.kibPer.toFixed(1)} KiB per subscriber (through yoga ${throughYoga.kibPer.toFixed(1)}, relay ${relay.kibPer.toFixed(1)})`,
  );
}
// The figure of the issue: the service's memory per subscriber at the largest size.
const largest = rows.find((row) => row.server === 'service' && row.subscribers === Math.max(...sizes))!;
if (largest.delivered !== largest.subscribers) throw new Error(`${largest.subscribers - largest.delivered} subscribers never received the event`);
printResult('p6_kib_per_subscriber', largest.kibPer);
const largestRelay = rows.find((row) => row.server === 'bare yoga relay' && row.subscribers === largest.subscribers)!;
printResult('p6_p99_vs_relay', largest.p99 / largestRelay.p99);
process.exit(0);
