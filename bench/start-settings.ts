/**
 * Start settings side by side: the reads of `npm run bench` (the GraphQL page, the REST envelope
 * with and without its documents) against several instances of our service on one seeded
 * database, each started as `npm start` starts it but for the environment its variant changes,
 * and the bare handler beside them. The rounds alternate the instances, each round starting with
 * the next one, so a machine's drift falls on all of them alike. It decides settings such as
 * glibc's mmap threshold (docs/performance.md, "The mmap threshold"), where the question is ours
 * against ours, not ours against a peer.
 *
 *   npm run bench:start-settings [-- --variant 'mmap64k:MALLOC_MMAP_THRESHOLD_=65536' --rounds 3]
 *
 * A variant is `label:` (as npm start) or `label:NAME=value,NAME=value`; `NAME=` with no value
 * leaves NAME unset. Without any, `npm start` as it is against the previous 64 KiB threshold.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { checkIdenticalBytes, fetchText } from './reads/checks.ts';
import { startCluster } from './reads/cluster.ts';
import { type LoadResult, type Request, runLoad } from './reads/load.ts';
import { type Child, clusterCpuMs, freePort, peakRssBytes, processCpuMs, settle, startChild, waitForHttp } from './reads/processes.ts';
import { GRAPHQL_PAGE_QUERY, PAGE_SIZE, restEnvelopePath } from './reads/queries.ts';
import { createTeams, seedEnvelopes } from './reads/seed.ts';
import { printResult, QUICK, QUICK_OPTION } from './report.ts';
import { serviceStartCommand } from './service-process.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const { values } = parseArgs({
  options: {
    variant: { type: 'string', multiple: true },
    rounds: { type: 'string' },
    duration: { type: 'string' },
    envelopes: { type: 'string' },
    connections: { type: 'string' },
    ...QUICK_OPTION,
  },
});
const rounds = Number(values.rounds ?? (QUICK ? 1 : 3));
const duration = Number(values.duration ?? (QUICK ? 1 : 10));
const envelopes = Number(values.envelopes ?? (QUICK ? 30 : 2000));
const connections = Number(values.connections ?? (QUICK ? 4 : 10));
for (const [name, value] of Object.entries({ rounds, duration, envelopes, connections })) {
  if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name} must be a positive number`);
}

type Variant = { label: string; env: Record<string, string | undefined> };
function parseVariant(text: string): Variant {
  const colon = text.indexOf(':');
  const label = colon < 0 ? text : text.slice(0, colon);
  if (!/^[a-z0-9_-]+$/i.test(label)) throw new Error(`a variant's label is letters, digits, - and _: ${text}`);
  const env: Record<string, string | undefined> = {};
  for (const assignment of colon < 0
    ? []
    : text
        .slice(colon + 1)
        .split(',')
        .filter(Boolean)) {
    const equals = assignment.indexOf('=');
    if (equals <= 0) throw new Error(`a variant's setting is NAME=value: ${assignment}`);
    const value = assignment.slice(equals + 1);
    env[assignment.slice(0, equals)] = value === '' ? undefined : value;
  }
  return { label, env };
}
const variants = (values.variant ?? ['start:', 'mmap64k:MALLOC_MMAP_THRESHOLD_=65536']).map(parseVariant);
if (new Set([...variants.map((variant) => variant.label), 'bare']).size !== variants.length + 1) throw new Error("two variants share a label, or one is called 'bare' (the bare handler's)");

const log = (line: string) => console.error(line);
const median = (numbers: number[]) => {
  const sorted = [...numbers].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};

const children: Child[] = [];
const track = (child: Child) => (children.push(child), child);
const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'envelope-bench-settings-'));
const cluster = await startCluster(workDir, log);
let cleaning: Promise<void> | undefined;
// The servers run in their own process groups (startChild): a Ctrl-C reaches only this process,
// which stops them, the cluster and the directory exactly once.
const cleanUp = () =>
  (cleaning ??= (async () => {
    for (const child of children.reverse()) await child.stop();
    await cluster.stop();
    fs.rmSync(workDir, { recursive: true, force: true });
  })());
for (const [signal, code] of [
  ['SIGINT', 130],
  ['SIGTERM', 143],
] as const) {
  process.on(signal, () => void cleanUp().then(() => process.exit(code)));
}
try {
  const admin = new pg.Client({ connectionString: cluster.url('postgres') });
  await admin.connect();
  for (const role of ['bench_service', 'bench_bare']) await admin.query(`create role ${role} login superuser`);
  await admin.query('create database bench owner bench_service');
  await admin.end();

  const start = serviceStartCommand();
  const dataDir = path.join(workDir, 'service-data');
  const serviceEnv = (variant: Variant | undefined, port: number) => {
    const env: Record<string, string | undefined> = {
      ...start.env,
      ...variant?.env,
      DATABASE_URL: cluster.url('bench', 'bench_service'),
      PORT: String(port),
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      // As in `npm run bench`: the limiter and the cap count every read at budgets that never bind.
      RATE_LIMIT_PER_MINUTE: '1000000',
      READS_IN_FLIGHT_PER_KEY: '1000',
    };
    // An unset name stays undefined over this process's environment (startChild spreads it first),
    // and spawn leaves undefined names out of the child's.
    return env;
  };
  const startService = async (name: string, variant: Variant | undefined) => {
    const port = await freePort();
    const child = track(startChild(name, start.args, serviceEnv(variant, port), { cwd: ROOT }));
    await waitForHttp(child, `http://127.0.0.1:${port}/readyz`);
    return { child, url: `http://127.0.0.1:${port}` };
  };

  const teamCount = QUICK ? 2 : 10;
  log(`seeding ${envelopes} envelopes over ${teamCount} teams through the service`);
  const seeder = await startService('service (seeding)', undefined);
  const teams = await createTeams(teamCount, { DATABASE_URL: cluster.url('bench', 'bench_service'), DATA_DIR: dataDir, LOG_LEVEL: 'warn' }, ROOT, track);
  await seedEnvelopes({ baseUrl: seeder.url, teams, count: envelopes, concurrency: 8, log });
  await seeder.child.stop();
  const database = new pg.Client({ connectionString: cluster.url('bench') });
  await database.connect();
  await database.query('vacuum analyze');
  await database.end();

  const servers: { label: string; child: Child; url: string }[] = [];
  for (const variant of variants) servers.push({ label: variant.label, ...(await startService(variant.label, variant)) });
  const barePort = await freePort();
  const bareChild = track(startChild('bare handler', ['bench/reads/bare-server.ts'], { DATABASE_URL: cluster.url('bench', 'bench_bare'), PORT: String(barePort) }, { cwd: ROOT }));
  await waitForHttp(bareChild, `http://127.0.0.1:${barePort}/healthz`);
  servers.push({ label: 'bare', child: bareChild, url: `http://127.0.0.1:${barePort}` });

  const auth = { 'x-service-api-key': teams[0].apiKey };
  const pageBody = JSON.stringify({ query: GRAPHQL_PAGE_QUERY, variables: { first: PAGE_SIZE } });
  const firstPage = JSON.parse(await fetchText({ method: 'POST', url: `${servers[0].url}/graphql`, headers: { ...auth, 'content-type': 'application/json' }, body: pageBody })) as {
    data: { envelopes: { nodes: { id: string }[] } };
  };
  const newest = firstPage.data.envelopes.nodes[0].id;
  const reads: { name: string; request: (base: string) => Request }[] = [
    { name: 'page', request: (base) => ({ method: 'POST', url: `${base}/graphql`, headers: { ...auth, 'content-type': 'application/json', accept: 'application/json' }, body: pageBody }) },
    { name: 'rest_heavy', request: (base) => ({ method: 'GET', url: `${base}${restEnvelopePath(newest)}`, headers: auth }) },
    { name: 'rest_light', request: (base) => ({ method: 'GET', url: `${base}${restEnvelopePath(newest, { light: true })}`, headers: auth }) },
  ];
  // Every instance answers every read with the same bytes as the first (the bare page is checked by `npm run bench`).
  for (const read of reads) {
    const expected = await fetchText(read.request(servers[0].url));
    for (const server of servers.slice(1, variants.length)) checkIdenticalBytes(`${read.name}, ${server.label} vs ${servers[0].label}`, await fetchText(read.request(server.url)), expected);
  }

  const results = new Map<string, (LoadResult & { serverCpuMs: number; postgresCpuMs: number })[]>();
  for (const read of reads) {
    for (const server of servers) {
      await runLoad(read.request(server.url), { connections, seconds: QUICK ? 0.5 : 3 });
      await settle(server.child.pid, cluster.postmasterPid);
    }
  }
  for (let round = 1; round <= rounds; round += 1) {
    // Each round starts with the next instance: on a noisy machine the one run second in a round
    // tended to win, whichever it was.
    const order = servers.map((_, index) => servers[(index + round - 1) % servers.length]);
    for (const read of reads) {
      for (const server of order) {
        const serverBefore = processCpuMs(server.child.pid);
        const postgresBefore = clusterCpuMs(cluster.postmasterPid);
        const result = await runLoad(read.request(server.url), { connections, seconds: duration });
        const entry = { ...result, serverCpuMs: processCpuMs(server.child.pid) - serverBefore, postgresCpuMs: clusterCpuMs(cluster.postmasterPid) - postgresBefore };
        const key = `${read.name}/${server.label}`;
        results.set(key, [...(results.get(key) ?? []), entry]);
        await settle(server.child.pid, cluster.postmasterPid);
        log(`  round ${round}/${rounds} ${read.name}, ${server.label}: ${result.requestsPerSecond.toFixed(1)} req/s, ${(entry.serverCpuMs / result.requests).toFixed(3)} ms CPU/req server`);
      }
    }
  }

  console.log(
    `machine: ${os.availableParallelism()} cores (${os.cpus()[0]?.model.trim() ?? 'unknown CPU'}), load ${os.loadavg()[0].toFixed(2)} at the end, PostgreSQL ${cluster.version}, Node ${process.version}`,
  );
  console.log(
    `variants: ${variants
      .map(
        (variant) =>
          `${variant.label} (${
            Object.entries(variant.env)
              .map(([name, value]) => `${name}=${value ?? '(unset)'}`)
              .join(', ') || 'npm start as is'
          })`,
      )
      .join('; ')}`,
  );
  console.log(`${envelopes} envelopes, ${connections} connections, ${rounds} rounds of ${duration} s, medians over rounds; ratio = req/s over the first variant's in the same round\n`);
  console.log('| read | server | req/s | ratio | CPU ms/req server | CPU ms/req PostgreSQL | peak RSS MiB |');
  console.log('|---|---|---:|---:|---:|---:|---:|');
  for (const read of reads) {
    const baseline = results.get(`${read.name}/${servers[0].label}`)!;
    for (const server of servers) {
      const passes = results.get(`${read.name}/${server.label}`)!;
      const ratio = median(passes.map((pass, index) => pass.requestsPerSecond / baseline[index].requestsPerSecond));
      console.log(
        `| ${read.name} | ${server.label} | ${median(passes.map((pass) => pass.requestsPerSecond)).toFixed(1)} | ${ratio.toFixed(2)} | ` +
          `${median(passes.map((pass) => pass.serverCpuMs / pass.requests)).toFixed(3)} | ${median(passes.map((pass) => pass.postgresCpuMs / pass.requests)).toFixed(3)} | ` +
          `${(peakRssBytes(server.child.pid) / 1024 / 1024).toFixed(0)} |`,
      );
    }
  }
  console.log('');
  for (const read of reads) {
    for (const server of servers) {
      printResult(
        `settings_${read.name}_${server.label.replaceAll('-', '_').toLowerCase()}_per_s`,
        median(results.get(`${read.name}/${server.label}`)!.map((pass) => pass.requestsPerSecond)),
      );
    }
  }
} finally {
  await cleanUp();
}
