/**
 * Every benchmark once in its quickest mode (BENCH_QUICK=1: seconds, tiny counts), so that a
 * change that breaks one is seen in CI rather than on the day someone wants its figures. Fails
 * when a bench exits non-zero, takes longer than its allowance, or prints no `RESULT` line (and
 * when one of the issue's figures is missing). The figures themselves are not judged: quick runs
 * on shared cores say nothing about performance.
 *
 *   npm run bench:quick                   (BENCH_QUICK_JOBS=2: benches run two at a time)
 *
 * The benches are package.json's `bench` and `bench:*` scripts, so a new one is included by
 * being added there. Each runs as a child in its own process group; on a timeout the whole
 * group (the bench and the servers it started) is stopped.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '..');
const JOBS = Number(process.env.BENCH_QUICK_JOBS ?? 2);
const TIMEOUT_MS = Number(process.env.BENCH_QUICK_TIMEOUT_S ?? 240) * 1000;
/** The figures the performance issue asks for, by the script that must print each. */
const REQUIRED: Record<string, string[]> = {
  bench: ['p1_rest_vs_bare', 'p2_graphql_vs_postgraphile', 'p2_graphql_vs_bare'],
  'bench:artefacts': ['p5_finalize_vs_raw'],
  'bench:verify': ['verify_six_signatures_ms'],
  'bench:subscriptions': ['p6_kib_per_subscriber'],
  'bench:fairness': ['p10_flood_p99_ratio'],
  'bench:signing': ['p9_vs_raw', 'p9_seal_latency_p50_ms', 'p9_seal_latency_p99_ms'],
  'bench:signing-page': ['p11_first_field_ms', 'p11_first_load_kb'],
  'bench:bulk': ['bulk_statements_per_row'],
};

const { scripts } = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
const benches = Object.entries(scripts)
  .filter(([name]) => (name === 'bench' || name.startsWith('bench:')) && name !== 'bench:quick')
  .map(([name, command]) => {
    const words = command.split(/\s+/);
    if (words[0] !== 'node' || words.length !== 2) throw new Error(`${name}: expected "node <file>", got "${command}"`);
    return { name, file: words[1]! };
  });

type Outcome = { name: string; ok: boolean; seconds: number; results: string[]; problem?: string; output: string };

function runOne(bench: { name: string; file: string }): Promise<Outcome> {
  const started = Date.now();
  const child = spawn(process.execPath, [bench.file, '--quick'], { cwd: ROOT, env: { ...process.env, BENCH_QUICK: '1' }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  }, TIMEOUT_MS);
  return new Promise((resolve) => {
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      const seconds = (Date.now() - started) / 1000;
      const results = output.split('\n').filter((line) => /^RESULT [a-z0-9_]+ \S+$/.test(line));
      const names = new Set(results.map((line) => line.split(' ')[1]));
      const missing = (REQUIRED[bench.name] ?? []).filter((name) => !names.has(name));
      const problem = timedOut
        ? `took longer than ${TIMEOUT_MS / 1000} s`
        : code !== 0
          ? `exited with ${code ?? signal}`
          : results.length === 0
            ? 'printed no RESULT line'
            : missing.length > 0
              ? `printed no RESULT for ${missing.join(', ')}`
              : undefined;
      resolve({ name: bench.name, ok: problem === undefined, seconds, results, problem, output });
    });
  });
}

const started = Date.now();
const queue = [...benches];
const outcomes: Outcome[] = [];
await Promise.all(
  Array.from({ length: Math.max(1, JOBS) }, async () => {
    for (let bench = queue.shift(); bench; bench = queue.shift()) {
      const outcome = await runOne(bench);
      outcomes.push(outcome);
      console.log(`${outcome.ok ? 'ok  ' : 'FAIL'} ${outcome.name.padEnd(22)} ${outcome.seconds.toFixed(0).padStart(4)} s${outcome.problem ? `  ${outcome.problem}` : ''}`);
      for (const line of outcome.results) console.log(`       ${line}`);
      if (!outcome.ok)
        console.log(
          outcome.output
            .split('\n')
            .slice(-40)
            .map((line) => `       | ${line}`)
            .join('\n'),
        );
    }
  }),
);
const failed = outcomes.filter((outcome) => !outcome.ok);
console.log(
  `\n${outcomes.length - failed.length}/${outcomes.length} benches ran in their quick mode in ${((Date.now() - started) / 1000).toFixed(0)} s${failed.length ? `; failed: ${failed.map((outcome) => outcome.name).join(', ')}` : ''}`,
);
process.exit(failed.length > 0 ? 1 : 0);
