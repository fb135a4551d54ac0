/**
 * Side-by-side read benchmark: our service against PostGraphile 5 and a bare node:http + pg
 * handler, on one PostgreSQL database that the service itself populated.
 *
 *   npm run bench [-- --envelopes 2000 --instances 2 --rounds 3 --duration 10 --connections 10]
 *   quick look:  npm run bench -- --envelopes 100 --instances 1 --rounds 2 --duration 3 --warmup 1
 *
 * Every knob also reads an environment variable (BENCH_ENVELOPES, BENCH_ROUNDS, ...; see
 * `knobs` below). Steps: a private PostgreSQL 15 cluster in a temporary directory; the service
 * applies its migrations and is seeded through its CLI and REST API; fresh service processes,
 * PostGraphile and the bare handler start (`--instances` of each, every one its own process, each
 * server its own database role); their answers are checked against each other; each gets a
 * warm-up and a counted pass (SQL statements per request); then timed autocannon rounds
 * alternate the servers and their processes. One
 * Markdown table goes to stdout. Everything started is stopped and deleted at the end, also on
 * failure and on Ctrl-C.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { cleanupsOnExit } from './cleanups.ts';
import { checkDeepEqual, checkIdenticalBytes, checkSameContent, countObjects, fetchText, sendExactly } from './reads/checks.ts';
import { type LoadResult, type Request, runLoad } from './reads/load.ts';
import { type Child, clusterCpuMs, freePorts, peakRssBytes, processCpuMs, settle, startChild, waitForHttp } from './reads/processes.ts';
import { GRAPHQL_PAGE_QUERY, PAGE_SIZE, POSTGRAPHILE_PAGE_QUERY, restEnvelopePath } from './reads/queries.ts';
import { READS_DATABASE as DATABASE, seedReadsDatabase } from './reads/seeded.ts';
import { openStatementCounter } from './reads/stats.ts';
import { median, printResult, QUICK } from './report.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
/** One database role per server, so pg_stat_statements can tell their statements apart. */
const ROLES = { ours: 'bench_service', postgraphile: 'bench_postgraphile', bare: 'bench_bare' } as const;

const knobs = {
  envelopes: { env: 'BENCH_ENVELOPES', default: 2000, help: 'envelopes to seed' },
  teams: { env: 'BENCH_TEAMS', default: 10, help: 'teams the envelopes are spread over' },
  rounds: { env: 'BENCH_ROUNDS', default: 3, help: 'timed rounds per server' },
  instances: { env: 'BENCH_INSTANCES', default: 2, help: 'processes of each server, pooled (one process is not its code: docs/performance.md)' },
  duration: { env: 'BENCH_DURATION', default: 10, help: 'seconds per timed round' },
  connections: { env: 'BENCH_CONNECTIONS', default: 10, help: 'concurrent connections of the load generator' },
  warmup: { env: 'BENCH_WARMUP', default: 3, help: 'seconds of untimed load per server before counting' },
  'count-requests': { env: 'BENCH_COUNT_REQUESTS', default: 200, help: 'requests of the counted pass (SQL statements)' },
  'seed-concurrency': { env: 'BENCH_SEED_CONCURRENCY', default: 8, help: 'envelopes seeded at a time' },
  'reads-in-flight-per-key': { env: 'BENCH_READS_IN_FLIGHT_PER_KEY', default: 1000, help: "the service's READS_IN_FLIGHT_PER_KEY (its default is 2)" },
} as const;
type Knob = keyof typeof knobs;

/** `--quick` (BENCH_QUICK=1): every step once, in seconds; its figures are not worth reading. */
const QUICK_DEFAULTS: Record<Knob, number> = {
  envelopes: 30,
  teams: 2,
  rounds: 1,
  instances: 1,
  duration: 1,
  connections: 4,
  warmup: 0.5,
  'count-requests': 20,
  'seed-concurrency': 8,
  'reads-in-flight-per-key': 1000,
};

function readKnobs(): Record<Knob, number> {
  const { values } = parseArgs({
    options: { ...Object.fromEntries(Object.keys(knobs).map((name) => [name, { type: 'string' as const }])), help: { type: 'boolean' as const }, quick: { type: 'boolean' as const } },
  });
  if (values.help) {
    console.log('npm run bench [-- options]\n');
    for (const [name, knob] of Object.entries(knobs)) console.log(`  --${name.padEnd(18)} ${knob.env.padEnd(24)} ${knob.help} (default ${knob.default})`);
    process.exit(0);
  }
  const result = {} as Record<Knob, number>;
  for (const [name, knob] of Object.entries(knobs) as [Knob, (typeof knobs)[Knob]][]) {
    const raw = (values as Record<string, string | undefined>)[name] ?? process.env[knob.env];
    const value = raw === undefined ? (QUICK ? QUICK_DEFAULTS[name] : knob.default) : Number(raw);
    if (!Number.isFinite(value) || value <= 0 || (name !== 'duration' && name !== 'warmup' && !Number.isInteger(value))) {
      throw new Error(`--${name} (${knob.env}) must be a positive number, got ${raw}`);
    }
    result[name] = value;
  }
  return result;
}

const log = (line: string) => console.error(line);
const cleanups = cleanupsOnExit(log, 'stopping the servers and the cluster, deleting the temporary directory');

type Pass = LoadResult & { round: number; serverCpuMs: number; postgresCpuMs: number };
/** One read of one server process. */
type Target = {
  read: string;
  server: 'ours' | 'PostGraphile 5' | 'bare';
  /** Which process of its server (1 to --instances). */
  instance: number;
  child: Child;
  role: string;
  request: Request;
  /** Whether this one's ratio compares ours against it (a peer); not for ours. */
  isPeer: boolean;
  rounds: Pass[];
  statementsPerRequest?: number;
};

async function main() {
  const settings = readKnobs();
  const started = Date.now();
  // Whatever else runs on the machine shares its cores with every server here: say how busy it was.
  const loadAtStart = os.loadavg()[0];
  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'envelope-bench-reads-'));
  cleanups.add('temporary directory', () => fs.rmSync(workDir, { recursive: true, force: true }));
  log(`work directory ${workDir}`);

  const { cluster, teams, counts, startService } = await seedReadsDatabase({
    workDir,
    serviceRole: ROLES.ours,
    otherRoles: [ROLES.postgraphile, ROLES.bare],
    envelopes: settings.envelopes,
    teams: settings.teams,
    seedConcurrency: settings['seed-concurrency'],
    readsInFlightPerKey: settings['reads-in-flight-per-key'],
    root: ROOT,
    log,
    track: cleanups.track,
    onCleanup: cleanups.add,
  });
  const counter = await openStatementCounter(cluster.url('postgres'), DATABASE);
  cleanups.add('statement counter', () => counter.close());

  // ---- The three servers under test, each its own processes and role. ----
  const startServers = async (instance: number) => {
    const ports = await freePorts(3);
    const [ours, postgraphile, bare] = await Promise.all([
      startService(`our service #${instance}`, { port: ports[0] }),
      (async () => {
        const port = ports[1];
        const child = cleanups.track(
          startChild(
            `PostGraphile #${instance}`,
            ['bench/reads/postgraphile-server.ts'],
            { DATABASE_URL: cluster.url(DATABASE, ROLES.postgraphile), PORT: String(port), GRAPHILE_ENV: 'production' },
            { cwd: ROOT },
          ),
        );
        await waitForHttp(child, `http://127.0.0.1:${port}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"query":"{__typename}"}' });
        return { child, url: `http://127.0.0.1:${port}` };
      })(),
      (async () => {
        const port = ports[2];
        const child = cleanups.track(
          startChild(`bare handler #${instance}`, ['bench/reads/bare-server.ts'], { DATABASE_URL: cluster.url(DATABASE, ROLES.bare), PORT: String(port) }, { cwd: ROOT }),
        );
        await waitForHttp(child, `http://127.0.0.1:${port}/healthz`);
        return { child, url: `http://127.0.0.1:${port}` };
      })(),
    ]);
    log(`servers #${instance}: ours ${ours.url} (pid ${ours.child.pid}), PostGraphile ${postgraphile.url} (pid ${postgraphile.child.pid}), bare ${bare.url} (pid ${bare.child.pid})`);
    return { ours, postgraphile, bare };
  };
  const instances: Awaited<ReturnType<typeof startServers>>[] = [];
  for (let instance = 1; instance <= settings.instances; instance += 1) instances.push(await startServers(instance));
  const { ours } = instances[0];

  // ---- The requests: the first seeded team's newest page, and its newest envelope. ----
  const team = teams[0];
  const auth = { 'x-service-api-key': team.apiKey };
  const graphqlBody = JSON.stringify({ query: GRAPHQL_PAGE_QUERY, variables: { first: PAGE_SIZE } });
  const graphql = (base: string, body: string, headers: Record<string, string>): Request => ({
    method: 'POST',
    url: `${base}/graphql`,
    headers: { ...headers, 'content-type': 'application/json', accept: 'application/json' },
    body,
  });
  const oursPage = await fetchText(graphql(ours.url, graphqlBody, auth));
  const newest = (JSON.parse(oursPage) as { data: { envelopes: { nodes: { id: string }[] } } }).data.envelopes.nodes[0].id;
  const rest = (base: string, light = false): Request => ({ method: 'GET', url: `${base}${restEnvelopePath(newest, { light })}`, headers: auth });

  const targetsOf = ({ ours, postgraphile, bare }: (typeof instances)[number], instance: number): Target[] => [
    { read: 'GraphQL page', server: 'ours', instance, child: ours.child, role: ROLES.ours, request: graphql(ours.url, graphqlBody, auth), isPeer: false, rounds: [] },
    {
      read: 'GraphQL page',
      server: 'PostGraphile 5',
      instance,
      child: postgraphile.child,
      role: ROLES.postgraphile,
      request: graphql(postgraphile.url, JSON.stringify({ query: POSTGRAPHILE_PAGE_QUERY, variables: { teamId: team.teamId, first: PAGE_SIZE } }), {}),
      isPeer: true,
      rounds: [],
    },
    { read: 'GraphQL page', server: 'bare', instance, child: bare.child, role: ROLES.bare, request: graphql(bare.url, graphqlBody, auth), isPeer: true, rounds: [] },
    { read: 'REST envelope', server: 'ours', instance, child: ours.child, role: ROLES.ours, request: rest(ours.url), isPeer: false, rounds: [] },
    { read: 'REST envelope', server: 'bare', instance, child: bare.child, role: ROLES.bare, request: rest(bare.url), isPeer: true, rounds: [] },
    { read: 'REST envelope alone', server: 'ours', instance, child: ours.child, role: ROLES.ours, request: rest(ours.url, true), isPeer: false, rounds: [] },
    { read: 'REST envelope alone', server: 'bare', instance, child: bare.child, role: ROLES.bare, request: rest(bare.url, true), isPeer: true, rounds: [] },
  ];
  const targets: Target[] = instances.flatMap((servers, index) => targetsOf(servers, index + 1));

  // ---- Same answers before anything is timed. ----
  const [postgraphilePage, barePage, oursEnvelope, bareEnvelope, oursEnvelopeAlone, bareEnvelopeAlone] = await Promise.all([
    fetchText(targets[1].request),
    fetchText(targets[2].request),
    fetchText(targets[3].request),
    fetchText(targets[4].request),
    fetchText(targets[5].request),
    fetchText(targets[6].request),
  ]);
  const { identicalBytes } = checkDeepEqual('GraphQL page, ours vs bare', oursPage, barePage);
  checkSameContent('GraphQL page, ours vs PostGraphile', oursPage, postgraphilePage);
  checkIdenticalBytes('REST envelope, ours vs bare', oursEnvelope, bareEnvelope);
  checkIdenticalBytes('REST envelope alone, ours vs bare', oursEnvelopeAlone, bareEnvelopeAlone);
  const kib = (text: string) => `${(Buffer.byteLength(text) / 1024).toFixed(1)} KiB`;
  log(
    `answers checked: GraphQL page of ${PAGE_SIZE} envelopes (${countObjects(oursPage)} objects): ours ${kib(oursPage)} = bare ` +
      `(${identicalBytes ? 'identical bytes' : 'deep-equal'}), PostGraphile ${kib(postgraphilePage)} same envelopes in order and same children; ` +
      `REST envelope ${newest}: ours ${kib(oursEnvelope)} = bare, identical bytes; alone ${kib(oursEnvelopeAlone)} = bare, identical bytes`,
  );

  // ---- Warm-up and the counted pass (SQL statements per request), not timed. ----
  const groupOf = (target: Target) => `${target.read}/${target.server}`;
  const counted = new Map<string, number>();
  for (const target of targets) {
    await runLoad(target.request, { connections: settings.connections, seconds: settings.warmup });
    await settle(target.child.pid, cluster.postmasterPid);
    // Counted once per server and read: every process of a server sends the same statements.
    const known = counted.get(groupOf(target));
    if (known !== undefined) {
      target.statementsPerRequest = known;
      continue;
    }
    await counter.reset();
    await sendExactly(target.request, settings['count-requests'], settings.connections);
    target.statementsPerRequest = (await counter.calls(target.role)) / settings['count-requests'];
    if (process.env.BENCH_SHOW_STATEMENTS === '1') {
      for (const statement of await counter.statements(target.role)) {
        log(`    ${String(statement.calls).padStart(6)}  ${statement.query.replace(/\s+/g, ' ').slice(0, 160)}`);
      }
    }
    counted.set(groupOf(target), target.statementsPerRequest);
    log(`  ${target.read}, ${target.server}: warmed up; ${target.statementsPerRequest.toFixed(2)} SQL statements per request over ${settings['count-requests']} requests`);
  }

  // ---- Timed rounds, alternating the servers and their processes: A1 … G1 A2 … G2, then again. ----
  for (let round = 1; round <= settings.rounds; round += 1) {
    for (const target of targets) {
      const serverBefore = processCpuMs(target.child.pid);
      const postgresBefore = clusterCpuMs(cluster.postmasterPid);
      const result = await runLoad(target.request, { connections: settings.connections, seconds: settings.duration });
      const serverCpuMs = processCpuMs(target.child.pid) - serverBefore;
      const postgresCpuMs = clusterCpuMs(cluster.postmasterPid) - postgresBefore;
      target.rounds.push({ ...result, round, serverCpuMs, postgresCpuMs });
      // The requests still in flight at the deadline finish before the next server starts.
      await settle(target.child.pid, cluster.postmasterPid);
      log(
        `  round ${round}/${settings.rounds} ${target.read}, ${target.server} #${target.instance}: ${result.requestsPerSecond.toFixed(1)} req/s, ` +
          `p50 ${result.p50.toFixed(1)} ms, p99 ${result.p99.toFixed(1)} ms, CPU ${(serverCpuMs / result.requests).toFixed(2)} ms/req server, ` +
          `${(postgresCpuMs / result.requests).toFixed(2)} ms/req PostgreSQL (${result.requests} requests)`,
      );
    }
  }

  // ---- The table, a row per server and read: medians over rounds and processes; a ratio is, per
  // round, ours' mean req/s over its processes against the peer's, then the median over rounds. ----
  const fixed = (value: number, digits: number) => value.toFixed(digits);
  // Two significant digits: ours / bare can be 0.03, where two decimals would say little.
  const ratioText = (value: number) => (value >= 10 ? value.toFixed(1) : value.toPrecision(2));
  const groups = [...new Set(targets.map(groupOf))].map((group) => targets.filter((target) => groupOf(target) === group));
  const meanRate = (group: Target[], round: number) => {
    const passes = group.flatMap((target) => target.rounds.filter((pass) => pass.round === round));
    return passes.reduce((sum, pass) => sum + pass.requestsPerSecond, 0) / passes.length;
  };
  const oursGroupOf = (group: Target[]) => groups.find((candidate) => candidate[0].read === group[0].read && !candidate[0].isPeer)!;
  const ratioOf = (group: Target[]) => median(Array.from({ length: settings.rounds }, (_, index) => meanRate(oursGroupOf(group), index + 1) / meanRate(group, index + 1)));
  const rows = groups.map((group) => {
    const passes = group.flatMap((target) => target.rounds);
    const perRequest = (key: 'serverCpuMs' | 'postgresCpuMs') => median(passes.map((pass) => pass[key] / pass.requests));
    const perProcess = group.map((target) => fixed(median(target.rounds.map((pass) => pass.serverCpuMs / pass.requests)), 2)).join(' / ');
    return [
      group[0].read,
      group[0].server,
      fixed(median(passes.map((pass) => pass.requestsPerSecond)), 1),
      fixed(median(passes.map((pass) => pass.p50)), 1),
      fixed(median(passes.map((pass) => pass.p99)), 1),
      group[0].isPeer ? ratioText(ratioOf(group)) : '',
      fixed(perRequest('serverCpuMs'), 2),
      perProcess,
      fixed(perRequest('postgresCpuMs'), 2),
      fixed(group[0].statementsPerRequest!, 2),
      fixed(Math.max(...group.map((target) => peakRssBytes(target.child.pid))) / 1024 / 1024, 0),
    ];
  });
  const header = ['read', 'server', 'req/s', 'p50 ms', 'p99 ms', 'ratio (ours / peer)', 'CPU ms/req server', 'per process', 'CPU ms/req PostgreSQL', 'SQL statements/req', 'RSS MiB'];
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column].length)));
  const line = (cells: string[]) => `| ${cells.map((cell, column) => (column < 2 ? cell.padEnd(widths[column]) : cell.padStart(widths[column]))).join(' | ')} |`;
  const separator = `|${widths.map((width, column) => (column < 2 ? '-'.repeat(width + 2) : `${'-'.repeat(width + 1)}:`)).join('|')}|`;

  const memoryGiB = (os.totalmem() / 1024 ** 3).toFixed(0);
  const argv = process.argv.slice(2);
  console.log(`date: ${new Date().toISOString().slice(0, 10)}`);
  console.log(
    `machine: ${os.availableParallelism()} cores (${os.cpus()[0]?.model.trim() ?? 'unknown CPU'}), ${memoryGiB} GiB, ${os.type()} ${os.release()}, ` +
      `PostgreSQL ${cluster.version}, Node ${process.version}`,
  );
  console.log(`other load: 1-minute load average ${loadAtStart.toFixed(2)} when the run started (${os.availableParallelism()} cores)`);
  console.log(`command: npm run bench${argv.length > 0 ? ` -- ${argv.join(' ')}` : ''}`);
  console.log(
    `data: ${counts.envelopes} envelopes over ${settings.teams} teams, page of ${PAGE_SIZE} (${kib(oursPage)}), ` +
      `${settings.connections} connections, ${settings.rounds} rounds of ${settings.duration} s per server, ${settings.instances} process(es) of each server, medians over rounds and processes`,
  );
  console.log('');
  console.log(line(header));
  console.log(separator);
  for (const row of rows) console.log(line(row));
  // The issue's figures, each as the table's ratio.
  const peer = (read: string, server: Target['server']) => groups.find((group) => group[0].read === read && group[0].server === server)!;
  console.log('');
  const [restHeavy, restLight] = [ratioOf(peer('REST envelope', 'bare')), ratioOf(peer('REST envelope alone', 'bare'))];
  printResult('p1_rest_vs_bare', Math.min(restHeavy, restLight));
  printResult('p1_rest_heavy_vs_bare', restHeavy);
  printResult('p1_rest_light_vs_bare', restLight);
  printResult('p2_graphql_vs_postgraphile', ratioOf(peer('GraphQL page', 'PostGraphile 5')));
  printResult('p2_graphql_vs_bare', ratioOf(peer('GraphQL page', 'bare')));
  log(`\ndone in ${((Date.now() - started) / 1000).toFixed(0)} s`);
}

try {
  await main();
} catch (error) {
  // After a Ctrl-C the failures are only the consequence of stopping everything underneath.
  if (!cleanups.interrupted) console.error(`\nbenchmark failed: ${(error as Error).stack ?? error}`);
  process.exitCode = 1;
} finally {
  await cleanups.run();
}
