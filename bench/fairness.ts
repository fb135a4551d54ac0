/**
 * Fair sharing, side by side: how much one team's burst slows another team's reads, with the
 * per-key rate limit on (the service as `npm start` runs it, RATE_LIMIT_PER_MINUTE at its default
 * of 600) and off (RATE_LIMIT_PER_MINUTE=0: the same service without limits, which is what a
 * service without a limiter gives).
 *
 * Three services, in one run (see SERVICES below): with READS_IN_FLIGHT_PER_KEY at its default
 * and uncapped, and without limits.
 *
 * For each service: each of four steady teams reads its own full envelope (documents, recipients,
 * fields) at a paced 8 requests per second (480 a minute, inside its budget) for `--seconds`, their
 * latencies pooled (STEADY_TEAMS), alone; then again
 * while the bursting team's integration, in another process (autocannon, 8 connections), asks for
 * its 100-envelope page, first as fast as it is answered, then at a paced 100 requests per second;
 * with the limit on, a last phase floods again from a key whose budget is already spent (only
 * refusals). Prints the steady teams' p50 and p99 in each phase, and the ratio of p99 during a
 * burst to p99 alone.
 *
 *   npm run bench:fairness [-- --seconds 45]
 * Uses DATABASE_URL's server (default 127.0.0.1:5432) for a scratch database.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { printResult, QUICK, QUICK_OPTION } from './report.ts';
import { createScratch, type RunningService } from './scratch-service.ts';

const { values } = parseArgs({ options: { seconds: { type: 'string' }, 'without-off': { type: 'boolean' }, ...QUICK_OPTION } });
// Quick: two seconds a phase, too few samples for a p99 worth reading.
const seconds = Number(values.seconds ?? (QUICK ? '2' : '45'));
const WARM_UP_MS = QUICK ? 1000 : 3000;
const STEADY_INTERVAL_MS = 125;

function percentile(sorted: number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)];
}

/** Reads at a fixed pace (a request every STEADY_INTERVAL_MS, whether or not the last one is back) and records each latency. */
async function steadyReads(url: string, apiKey: string, durationMs: number, offsetMs = 0): Promise<{ latencies: number[]; failures: number }> {
  const latencies: number[] = [];
  let failures = 0;
  const inFlight: Promise<void>[] = [];
  const endAt = performance.now() + durationMs;
  await new Promise((resolve) => setTimeout(resolve, offsetMs));
  while (performance.now() < endAt) {
    const started = performance.now();
    inFlight.push(
      fetch(url, { headers: { 'x-service-api-key': apiKey } }).then(async (response) => {
        await response.arrayBuffer();
        if (response.status === 200) latencies.push(performance.now() - started);
        else failures += 1;
      }),
    );
    await new Promise((resolve) => setTimeout(resolve, STEADY_INTERVAL_MS));
  }
  await Promise.all(inFlight);
  return { latencies: latencies.sort((a, b) => a - b), failures };
}

/** autocannon in a child process, so the burst's client work does not share the steady reader's event loop. */
function startBurst(url: string, apiKey: string, durationSeconds: number, requestsPerSecond?: number): Promise<{ served: number; refused: number }> {
  const pace = requestsPerSecond === undefined ? [] : ['-R', String(requestsPerSecond)];
  const child = spawn(
    path.resolve('node_modules/.bin/node'),
    [path.resolve('node_modules/autocannon/autocannon.js'), '--json', '-c', '8', ...pace, '-d', String(durationSeconds), '-H', `x-service-api-key=${apiKey}`, url],
    { stdio: ['ignore', 'pipe', 'ignore'] },
  );
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', () => {
      const result = JSON.parse(output) as { '2xx': number; non2xx: number };
      resolve({ served: result['2xx'], refused: result.non2xx });
    });
  });
}

/**
 * The other teams' reads: STEADY_TEAMS teams, each reading its own envelope at the steady pace,
 * their starts spread over one interval; their latencies pooled. One team's 8 reads a second give
 * 240 samples in 30 s, whose p99 is the third slowest: a single collection pause moved it 2× from
 * run to run (docs/performance.md, "Issue 37, fourth round"); four teams give the p99 ten samples.
 */
const STEADY_TEAMS = QUICK ? 1 : 4;
type SteadyTeam = { apiKey: string; envelopeId: string };
const steadyUrl = (service: RunningService, team: SteadyTeam) => `${service.url}/api/v1/key/envelopes/${team.envelopeId}?includeDocuments=true&includeRecipients=true&includeFields=true`;

async function steadyTeamsRead(service: RunningService, teams: SteadyTeam[], durationMs: number): Promise<{ latencies: number[]; failures: number }> {
  const readings = await Promise.all(teams.map((team, index) => steadyReads(steadyUrl(service, team), team.apiKey, durationMs, (index * STEADY_INTERVAL_MS) / teams.length)));
  return {
    latencies: readings.flatMap((reading) => reading.latencies).sort((a, b) => a - b),
    failures: readings.reduce((sum, reading) => sum + reading.failures, 0),
  };
}

type Phase = { label: string; p50: number; p99: number; samples: number; failures: number; burst?: { served: number; refused: number } };

/** Two bursts: an integration retrying in a loop with no pause (8 connections), and one at a paced 100 requests/s (ten times a 600/min budget). */
const BURSTS: [string, number | undefined][] = [
  ['during a flood (no pause)', undefined],
  ['during a paced burst (100/s)', 100],
];

/**
 * Spends the whole budget of a fresh key (8 connections of the cheapest read until the first
 * 429), so that a flood after it meets only refusals: its window starts with the first request.
 */
async function spendBudget(url: string, apiKey: string): Promise<void> {
  const ask = async () => {
    const answer = await fetch(`${url}/api/v1/key/envelopes?limit=1`, { headers: { 'x-service-api-key': apiKey } });
    await answer.arrayBuffer();
    return answer;
  };
  let spent = false;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (!spent) if ((await ask()).status === 429) spent = true;
    }),
  );
}

/**
 * Each burst phase floods with a key of its own (the bursting team's, its envelopes), so each
 * starts with a whole budget, whatever the phases before it spent: the rate counters are in the
 * scratch database, shared by the services one after another.
 */
async function measure(service: RunningService, steady: SteadyTeam[], freshBurstingKey: () => Promise<string>, refusalPhase: boolean) {
  // Warm-up: key caches, compiled statements, JIT.
  await steadyTeamsRead(service, steady, WARM_UP_MS);
  const phase = (label: string, reading: { latencies: number[]; failures: number }, burst?: { served: number; refused: number }): Phase => ({
    label,
    p50: percentile(reading.latencies, 0.5),
    p99: percentile(reading.latencies, 0.99),
    samples: reading.latencies.length,
    failures: reading.failures,
    burst,
  });
  const phases = [phase('alone', await steadyTeamsRead(service, steady, seconds * 1000))];
  for (const [label, requestsPerSecond] of BURSTS) {
    const apiKey = await freshBurstingKey();
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const [during, burst] = await Promise.all([
      steadyTeamsRead(service, steady, seconds * 1000),
      startBurst(`${service.url}/api/v1/key/envelopes?limit=100`, apiKey, seconds, requestsPerSecond),
    ]);
    phases.push(phase(label, during, burst));
  }
  if (refusalPhase) {
    // The same flood from a key whose budget is already spent: only refusals, so this phase shows
    // what refusing costs the other team, apart from the budget's own 600 requests served at full
    // speed in the flood above. It stays inside the one-minute window it starts.
    const apiKey = await freshBurstingKey();
    await spendBudget(service.url, apiKey);
    const phaseSeconds = Math.min(seconds, 45);
    const [during, burst] = await Promise.all([steadyTeamsRead(service, steady, phaseSeconds * 1000), startBurst(`${service.url}/api/v1/key/envelopes?limit=100`, apiKey, phaseSeconds)]);
    phases.push(phase('during a flood, its budget spent (only refusals)', during, burst));
  }
  return phases;
}

const scratch = await createScratch('fairness');
/**
 * The services side by side, each fresh on the same data: the service as `npm start` runs it (the
 * limit on, READS_IN_FLIGHT_PER_KEY at its default of 2), the same with reads in flight uncapped
 * (as before issue 37: the flooding key's budget served on all its 8 connections at once), and
 * without any limit. `--without-off` (and quick mode) leaves the last out; quick mode the second too.
 */
const SERVICES: { label: string; env: Record<string, string>; refusalPhase: boolean; result?: string }[] = [
  { label: 'rate limit on, 2 reads in flight per key', env: { RATE_LIMIT_PER_MINUTE: '600' }, refusalPhase: true, result: 'p10' },
  // Quick mode (CI) runs the first only: whether the bench still runs, not its comparison.
  ...(QUICK ? [] : [{ label: 'rate limit on, reads in flight uncapped', env: { RATE_LIMIT_PER_MINUTE: '600', READS_IN_FLIGHT_PER_KEY: '0' }, refusalPhase: true, result: 'p10_uncapped' }]),
  ...(values['without-off'] || QUICK ? [] : [{ label: 'rate limit off', env: { RATE_LIMIT_PER_MINUTE: '0', READS_IN_FLIGHT_PER_KEY: '0' }, refusalPhase: false }]),
];
try {
  const rows: string[] = [];
  const results: [string, number][] = [];
  let teams: { steady: SteadyTeam[]; burstingTeamId: string } | undefined;
  for (const { label, env, refusalPhase, result } of SERVICES) {
    const service = await scratch.startService(label.replace(/\W+/g, '-'), env);
    if (!teams) {
      // The first service has applied the migrations; all read the same data.
      const steady: SteadyTeam[] = [];
      for (let index = 0; index < STEADY_TEAMS; index += 1) {
        const steadyTeam = await scratch.createTeam();
        await scratch.seedEnvelopes(steadyTeam.teamId, 1);
        const page = await (await fetch(`${service.url}/api/v1/key/envelopes?limit=1`, { headers: { 'x-service-api-key': steadyTeam.apiKey } })).json();
        steady.push({ apiKey: steadyTeam.apiKey, envelopeId: page.payload.envelopes[0].id });
      }
      const burstingTeam = await scratch.createTeam();
      await scratch.seedEnvelopes(burstingTeam.teamId, 100);
      teams = { steady, burstingTeamId: burstingTeam.teamId };
      // Vacuumed and analysed now, so that autovacuum's pass over the fresh rows does not land in
      // the first service's quiet phase (in a run without this, its quiet p99 was twice the next
      // service's: 14.0 against 6.6 ms).
      const client = new pg.Client({ connectionString: scratch.databaseUrl });
      await client.connect();
      await client.query('vacuum analyze');
      await client.end();
    }
    const { burstingTeamId } = teams;
    const [alone, ...bursts] = await measure(service, teams.steady, () => scratch.createApiKey(burstingTeamId), refusalPhase);
    if (result) {
      results.push([`${result}_flood_p99_ratio`, bursts[0].p99 / alone.p99]);
      if (refusalPhase) results.push([`${result}_refused_flood_p99_ratio`, bursts[2].p99 / alone.p99]);
    }
    service.child.removeAllListeners('exit');
    service.child.kill('SIGTERM');
    await new Promise((resolve) => setTimeout(resolve, 1000));
    for (const phase of [alone, ...bursts]) {
      console.error(`${label} | ${phase.label}: p50 ${phase.p50.toFixed(1)} ms, p99 ${phase.p99.toFixed(1)} ms`);
      rows.push(
        `| ${label} | ${phase.label} | ${phase.samples} | ${phase.failures} | ${phase.p50.toFixed(1)} | ${phase.p99.toFixed(1)} | ${phase.burst ? (phase.p99 / alone.p99).toFixed(2) : ''} | ${phase.burst ? `${phase.burst.served} / ${phase.burst.refused}` : ''} |`,
      );
    }
  }
  console.log(
    `Steady teams: ${STEADY_TEAMS} × 8 reads/s, each of its own full envelope, for ${seconds} s per phase, latencies pooled. Bursts: another team's 100-envelope page over 8 connections.`,
  );
  console.log('| service | steady teams’ reads | samples | failed | p50 ms | p99 ms | p99 ratio (burst / alone) | burst served / refused |');
  console.log('|---|---|---:|---:|---:|---:|---:|---:|');
  for (const row of rows) console.log(row);
  // The issue's figure (p10_flood_p99_ratio): the steady teams' pooled p99 during a flood over their p99
  // alone, on the service as it runs by default; p10_refused_…: the part refusals cause (the same
  // flood once the key's budget is spent); p10_uncapped_…: the same without the in-flight cap.
  for (const [name, value] of results) printResult(name, value);
} finally {
  await scratch.close();
}
