/**
 * graphql-js against graphql-jit on the nested envelope page, side by side in one run: the same
 * service started twice (GRAPHQL_JIT=false / true) on one PostgreSQL database, autocannon rounds
 * alternating between them, CPU per request read from each server process.
 *
 *   npm run bench:jit [-- --rounds 5 --seconds 8 --connections 10]
 * Uses DATABASE_URL's server (default postgresql://postgres@127.0.0.1:5432/postgres) for a
 * scratch database (bench/scratch-service.ts).
 */
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { printResult, QUICK, QUICK_OPTION } from './report.ts';
import { cpuMs, createScratch, type RunningService, rssMiB } from './scratch-service.ts';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string' },
    seconds: { type: 'string' },
    connections: { type: 'string', default: '10' },
    ...QUICK_OPTION,
  },
});
// Quick: one round of one second each.
const rounds = Number(values.rounds ?? (QUICK ? '1' : '5'));
const seconds = Number(values.seconds ?? (QUICK ? '1' : '8'));
const connections = Number(values.connections);

const query = `query($first: Int) { envelopes(first: $first) { nodes { id name status createdAt
  documents { id name order pageCount }
  recipients { id identifier roleName type order agents { id kind info { name email } } }
  fields { id identifier type required recipientId views { documentId page location { x y } size { width height } } } } } }`;

async function round(server: RunningService, apiKey: string) {
  const before = cpuMs(server.child.pid!);
  const result = await autocannon({
    url: `${server.url}/graphql`,
    method: 'POST',
    connections,
    duration: seconds,
    headers: { 'content-type': 'application/json', 'x-service-api-key': apiKey },
    body: JSON.stringify({ query, variables: { first: 20 } }),
  });
  const cpu = cpuMs(server.child.pid!) - before;
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`${result.non2xx} non-2xx answers, ${result.errors} errors`);
  return { requestsPerSecond: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, cpuPerRequest: cpu / result.requests.total };
}

const median = (numbers: number[]) => [...numbers].sort((a, b) => a - b)[Math.floor(numbers.length / 2)];

const scratch = await createScratch('jit');
try {
  const plain = await scratch.startService('graphql-js', { GRAPHQL_JIT: 'false' });
  const jit = await scratch.startService('graphql-jit', { GRAPHQL_JIT: 'true' });
  const team = await scratch.createTeam();
  await scratch.seedEnvelopes(team.teamId, QUICK ? 20 : 40);

  // Same answer from both before anything is timed.
  const answers = await Promise.all(
    [plain, jit].map(async (server) =>
      (
        await fetch(`${server.url}/graphql`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-service-api-key': team.apiKey },
          body: JSON.stringify({ query, variables: { first: 20 } }),
        })
      ).text(),
    ),
  );
  if (answers[0] !== answers[1] || answers[0].includes('"errors"')) throw new Error('the two servers answered differently');
  console.log(`answer: ${(answers[0].length / 1024).toFixed(1)} KiB; ${rounds} rounds × ${seconds} s, ${connections} connections, alternating`);

  const results = new Map<string, Awaited<ReturnType<typeof round>>[]>([
    [plain.label, []],
    [jit.label, []],
  ]);
  for (const server of [plain, jit]) await round({ ...server }, team.apiKey).catch(() => undefined); // warm-up
  for (let index = 0; index < rounds; index += 1) {
    for (const server of index % 2 === 0 ? [plain, jit] : [jit, plain]) results.get(server.label)!.push(await round(server, team.apiKey));
  }

  const summary = [plain, jit].map((server) => {
    const runs = results.get(server.label)!;
    return {
      label: server.label,
      requestsPerSecond: median(runs.map((run) => run.requestsPerSecond)),
      p50: median(runs.map((run) => run.p50)),
      p99: median(runs.map((run) => run.p99)),
      cpu: median(runs.map((run) => run.cpuPerRequest)),
      rss: rssMiB(server.child.pid!),
    };
  });
  const baseline = summary[0].requestsPerSecond;
  console.log('| executor | req/s | p50 ms | p99 ms | ratio | CPU ms/req (service) | RSS MiB after |');
  console.log('|---|---|---|---|---|---|---|');
  for (const row of summary) {
    console.log(
      `| ${row.label} | ${row.requestsPerSecond.toFixed(0)} | ${row.p50} | ${row.p99} | ${(row.requestsPerSecond / baseline).toFixed(2)}× | ${row.cpu.toFixed(2)} | ${row.rss.toFixed(0)} |`,
    );
  }
  printResult('jit_vs_js_req_ratio', summary[1].requestsPerSecond / baseline);
} finally {
  await scratch.close();
}
