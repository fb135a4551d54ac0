/**
 * Start settings side by side: the reads of `npm run bench` (the GraphQL page, the REST envelope
 * with and without its documents) against several instances of our service on one seeded
 * database, each started as `npm start` starts it but for the environment and Node flags its
 * variant changes, and the bare handler beside them. The rounds alternate the instances, each round starting with
 * the next one, so a machine's drift falls on all of them alike. It decides settings such as
 * glibc's mmap threshold (docs/performance.md, "The mmap threshold"), where the question is ours
 * against ours, not ours against a peer.
 *
 *   npm run bench:start-settings [-- --variant 'mmap64k:MALLOC_MMAP_THRESHOLD_=65536' --rounds 3]
 *
 * A variant is `label:` (as npm start) or `label:` followed by settings separated by commas:
 * `NAME=value` sets an environment variable and `NAME=` leaves it unset; `--flag` or
 * `--flag=value` adds a Node flag in place of npm start's flag of that name; `~--flag` leaves npm
 * start's flag of that name out. Without any variant, `npm start` as it is against the previous
 * 64 KiB threshold.
 *
 *   npm run bench:start-settings -- --variant start: --variant 'semi8:--max-semi-space-size=8' --variant 'nosemi:~--max-semi-space-size'
 *
 * `--instances N` (default 2) starts every variant, and the bare handler, N times: one process's
 * speed is not its code's on these machines, so each figure pools several.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { cleanupsOnExit } from './cleanups.ts';
import { checkIdenticalBytes, fetchText } from './reads/checks.ts';
import { type LoadResult, type Request, runLoad } from './reads/load.ts';
import { type Child, clusterCpuMs, freePort, peakRssBytes, processCpuMs, settle, startChild, waitForHttp } from './reads/processes.ts';
import { GRAPHQL_PAGE_QUERY, PAGE_SIZE, restEnvelopePath } from './reads/queries.ts';
import { READS_DATABASE, seedReadsDatabase } from './reads/seeded.ts';
import { median, printResult, QUICK, QUICK_OPTION } from './report.ts';
import { serviceStartCommand } from './service-process.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const { values } = parseArgs({
  options: {
    variant: { type: 'string', multiple: true },
    rounds: { type: 'string' },
    duration: { type: 'string' },
    envelopes: { type: 'string' },
    connections: { type: 'string' },
    instances: { type: 'string' },
    ...QUICK_OPTION,
  },
});
const rounds = Number(values.rounds ?? (QUICK ? 1 : 3));
const duration = Number(values.duration ?? (QUICK ? 1 : 10));
const envelopes = Number(values.envelopes ?? (QUICK ? 30 : 2000));
const connections = Number(values.connections ?? (QUICK ? 4 : 10));
// Processes of one build differ by up to a third for their whole life on these virtual machines
// (docs/performance.md, "One process is not the code"): each variant runs this many, pooled.
const instances = Number(values.instances ?? (QUICK ? 1 : 2));
for (const [name, value] of Object.entries({ rounds, duration, envelopes, connections, instances })) {
  if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name} must be a positive number`);
}

type Variant = { label: string; env: Record<string, string | undefined>; args: string[]; changes: string[] };
const START = serviceStartCommand();
const flagName = (flag: string) => flag.split('=')[0];
function parseVariant(text: string): Variant {
  const colon = text.indexOf(':');
  const label = colon < 0 ? text : text.slice(0, colon);
  if (!/^[a-z0-9_-]+$/i.test(label)) throw new Error(`a variant's label is letters, digits, - and _: ${text}`);
  const settings =
    colon < 0
      ? []
      : text
          .slice(colon + 1)
          .split(',')
          .filter(Boolean);
  const env: Record<string, string | undefined> = {};
  // npm start's Node flags (everything before the entry file), then the entry file and its arguments.
  const entryAt = START.args.findIndex((arg) => !arg.startsWith('-'));
  let flags = START.args.slice(0, entryAt);
  for (const setting of settings) {
    if (setting.startsWith('--') || setting.startsWith('~--')) {
      const leaveOut = setting.startsWith('~');
      const flag = leaveOut ? setting.slice(1) : setting;
      const known = flags.some((candidate) => flagName(candidate) === flagName(flag));
      if (leaveOut && !known) throw new Error(`npm start has no flag ${flagName(flag)} to leave out (its flags: ${flags.join(' ')})`);
      flags = flags.filter((candidate) => flagName(candidate) !== flagName(flag));
      if (!leaveOut) flags.push(flag);
      continue;
    }
    const equals = setting.indexOf('=');
    if (equals <= 0) throw new Error(`a variant's setting is NAME=value, --flag[=value] or ~--flag: ${setting}`);
    const value = setting.slice(equals + 1);
    env[setting.slice(0, equals)] = value === '' ? undefined : value;
  }
  return { label, env, args: [...flags, ...START.args.slice(entryAt)], changes: settings };
}
const variants = (values.variant ?? ['start:', 'mmap64k:MALLOC_MMAP_THRESHOLD_=65536']).map(parseVariant);
if (new Set([...variants.map((variant) => variant.label), 'bare']).size !== variants.length + 1) throw new Error("two variants share a label, or one is called 'bare' (the bare handler's)");

const log = (line: string) => console.error(line);
const cleanups = cleanupsOnExit(log, 'stopping the servers and the cluster, deleting the temporary directory');

try {
  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'envelope-bench-settings-'));
  cleanups.add('temporary directory', () => fs.rmSync(workDir, { recursive: true, force: true }));
  const { cluster, teams, startService } = await seedReadsDatabase({
    workDir,
    serviceRole: 'bench_service',
    otherRoles: ['bench_bare'],
    envelopes,
    teams: QUICK ? 2 : 10,
    seedConcurrency: 8,
    // As in `npm run bench`: the limiter and the cap count every read at budgets that never bind.
    readsInFlightPerKey: 1000,
    root: ROOT,
    log,
    track: cleanups.track,
    onCleanup: cleanups.add,
  });

  const servers: { label: string; instance: number; child: Child; url: string }[] = [];
  for (let instance = 1; instance <= instances; instance += 1) {
    for (const variant of variants) {
      servers.push({ label: variant.label, instance, ...(await startService(`${variant.label} #${instance}`, { env: variant.env, args: variant.args })) });
    }
    const barePort = await freePort();
    const bareChild = cleanups.track(
      startChild(`bare handler #${instance}`, ['bench/reads/bare-server.ts'], { DATABASE_URL: cluster.url(READS_DATABASE, 'bench_bare'), PORT: String(barePort) }, { cwd: ROOT }),
    );
    await waitForHttp(bareChild, `http://127.0.0.1:${barePort}/healthz`);
    servers.push({ label: 'bare', instance, child: bareChild, url: `http://127.0.0.1:${barePort}` });
  }
  const labels = [...variants.map((variant) => variant.label), 'bare'];
  const nameOf = (server: (typeof servers)[number]) => `${server.label}${instances > 1 ? ` #${server.instance}` : ''}`;

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
    for (const server of servers.slice(1).filter((candidate) => candidate.label !== 'bare')) {
      checkIdenticalBytes(`${read.name}, ${nameOf(server)} vs ${nameOf(servers[0])}`, await fetchText(read.request(server.url)), expected);
    }
  }

  type Pass = LoadResult & { round: number; instance: number; serverCpuMs: number; postgresCpuMs: number };
  const results = new Map<string, Pass[]>();
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
        const entry: Pass = {
          ...result,
          round,
          instance: server.instance,
          serverCpuMs: processCpuMs(server.child.pid) - serverBefore,
          postgresCpuMs: clusterCpuMs(cluster.postmasterPid) - postgresBefore,
        };
        const key = `${read.name}/${server.label}`;
        results.set(key, [...(results.get(key) ?? []), entry]);
        await settle(server.child.pid, cluster.postmasterPid);
        log(
          `  round ${round}/${rounds} ${read.name}, ${nameOf(server)}: ${result.requestsPerSecond.toFixed(1)} req/s, ${(entry.serverCpuMs / result.requests).toFixed(3)} ms CPU/req server`,
        );
      }
    }
  }

  console.log(
    `machine: ${os.availableParallelism()} cores (${os.cpus()[0]?.model.trim() ?? 'unknown CPU'}), load ${os.loadavg()[0].toFixed(2)} at the end, PostgreSQL ${cluster.version}, Node ${process.version}`,
  );
  console.log(
    `npm start: ${Object.entries(START.env)
      .map(([name, value]) => `${name}=${value} `)
      .join('')}node ${START.args.join(' ')}`,
  );
  console.log(`variants: ${variants.map((variant) => `${variant.label} (${variant.changes.join(', ') || 'npm start as is'})`).join('; ')}`);
  console.log(
    `${envelopes} envelopes, ${connections} connections, ${rounds} rounds of ${duration} s, ${instances} process(es) per variant; ` +
      `req/s and CPU are medians over rounds and processes; ratio = the variant's mean req/s over its processes / the first variant's, in the same round, median over rounds\n`,
  );
  console.log('| read | server | req/s | ratio | CPU ms/req server | CPU ms/req server, per process | CPU ms/req PostgreSQL | peak RSS MiB |');
  console.log('|---|---|---:|---:|---:|---:|---:|---:|');
  const meanRateInRound = (passes: Pass[], round: number) => {
    const inRound = passes.filter((pass) => pass.round === round);
    return inRound.reduce((sum, pass) => sum + pass.requestsPerSecond, 0) / inRound.length;
  };
  for (const read of reads) {
    const baseline = results.get(`${read.name}/${labels[0]}`)!;
    for (const label of labels) {
      const passes = results.get(`${read.name}/${label}`)!;
      const ratio = median(Array.from({ length: rounds }, (_, index) => meanRateInRound(passes, index + 1) / meanRateInRound(baseline, index + 1)));
      const perProcess = Array.from({ length: instances }, (_, index) => median(passes.filter((pass) => pass.instance === index + 1).map((pass) => pass.serverCpuMs / pass.requests)));
      const peakRss = Math.max(...servers.filter((server) => server.label === label).map((server) => peakRssBytes(server.child.pid)));
      console.log(
        `| ${read.name} | ${label} | ${median(passes.map((pass) => pass.requestsPerSecond)).toFixed(1)} | ${ratio.toFixed(2)} | ` +
          `${median(passes.map((pass) => pass.serverCpuMs / pass.requests)).toFixed(3)} | ${perProcess.map((cpu) => cpu.toFixed(3)).join(' / ')} | ` +
          `${median(passes.map((pass) => pass.postgresCpuMs / pass.requests)).toFixed(3)} | ${(peakRss / 1024 / 1024).toFixed(0)} |`,
      );
    }
  }
  console.log('');
  for (const read of reads) {
    for (const label of labels) {
      printResult(`settings_${read.name}_${label.replaceAll('-', '_').toLowerCase()}_per_s`, median(results.get(`${read.name}/${label}`)!.map((pass) => pass.requestsPerSecond)));
    }
  }
} catch (error) {
  if (!cleanups.interrupted) console.error(`\nbenchmark failed: ${(error as Error).stack ?? error}`);
  process.exitCode = 1;
} finally {
  await cleanups.run();
}
