/**
 * graphql-js against graphql-jit on the nested envelope page, side by side in one run: the same
 * service started twice (GRAPHQL_JIT=false / true) on one PostgreSQL database, autocannon rounds
 * alternating between them, CPU per request read from each server process.
 *
 *   npm run bench:jit [-- --rounds 5 --seconds 8 --connections 10]
 * Uses DATABASE_URL's server (default postgresql://postgres@127.0.0.1:5432/postgres) to create and
 * drop a scratch database.
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import pg from 'pg';
import { MikroORM } from '@mikro-orm/postgresql';
import { createOrmConfig } from '../mikro-orm.config.ts';
import { Document } from '../src/domain/document/document.entity.ts';
import { Envelope } from '../src/domain/envelope/envelope.entity.ts';
import { FieldView } from '../src/domain/field/field-view.entity.ts';
import { Field } from '../src/domain/field/field.entity.ts';
import { Agent } from '../src/domain/recipient/agent.entity.ts';
import { Recipient } from '../src/domain/recipient/recipient.entity.ts';
import { Team } from '../src/domain/team/team.entity.ts';
import { createTeam } from '../src/domain/team/team.service.ts';
import { spawnService } from './service-process.ts';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    seconds: { type: 'string', default: '8' },
    connections: { type: 'string', default: '10' },
  },
});
const rounds = Number(values.rounds);
const seconds = Number(values.seconds);
const connections = Number(values.connections);

const adminUrl = new URL(process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres');
const databaseName = `envelope_bench_jit_${Date.now()}`;
const databaseUrl = new URL(adminUrl);
databaseUrl.pathname = `/${databaseName}`;
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'envelope-bench-jit-'));
const children: ChildProcess[] = [];

const query = `query($first: Int) { envelopes(first: $first) { nodes { id name status createdAt
  documents { id name order pageCount }
  recipients { id identifier roleName type order agents { id kind info { name email } } }
  fields { id identifier type required recipientId views { documentId page location { x y } size { width height } } } } } }`;

async function admin(sql: string) {
  const client = new pg.Client({ connectionString: adminUrl.toString() });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** Starts the service as its own process and waits until it answers. */
async function startServer(label: string, env: Record<string, string>): Promise<{ label: string; url: string; child: ChildProcess }> {
  const port = 4600 + children.length;
  const child = spawnService(
    { DATABASE_URL: databaseUrl.toString(), PORT: String(port), DATA_DIR: path.join(scratch, label), LOG_LEVEL: 'warn', AUDIT_HMAC_KEY: 'b'.repeat(40), ...env },
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  children.push(child);
  const url = `http://127.0.0.1:${port}`;
  for (let attempt = 0; attempt < 100; attempt += 1) {
    try {
      if ((await fetch(`${url}/readyz`)).ok) return { label, url, child };
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`${label} did not start`);
}

/** utime + stime of a process, in milliseconds. */
function cpuMs(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

function rssMiB(pid: number): number {
  const line = fs.readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((entry) => entry.startsWith('VmRSS:'));
  return Number(line?.split(/\s+/)[1] ?? 0) / 1024;
}

/** The data set shape, for one team: 3 documents, 3 recipients × 2 agents, 6 fields × 1 view each. */
async function seed(teamId: string, count: number) {
  const orm = await MikroORM.init(createOrmConfig({ clientUrl: databaseUrl.toString(), poolMax: 1 }));
  const em = orm.em.fork();
  for (let index = 0; index < count; index += 1) {
    const envelope = em.create(Envelope, { team: em.getReference(Team, teamId), name: `Envelope ${index}`, expirationPeriodDays: 30 });
    const documents = [0, 1, 2].map((order) =>
      em.create(Document, { envelope, name: `part-${order}.pdf`, order, pageCount: 2, pages: [0, 1].map(() => ({ width: 595, height: 842, rotation: 0 })), contentSha256: 'c'.repeat(64), byteSize: 50_000 }),
    );
    ['buyer', 'seller', 'witness'].forEach((identifier, order) => {
      const recipient = em.create(Recipient, { envelope, identifier, roleName: identifier, type: 'signer', order, color: '#2563EB' });
      for (const position of [0, 1]) em.create(Agent, { recipient, position, kind: 'info', info: { name: `${identifier} ${index}.${position}`, email: `${identifier}${index}.${position}@example.com` } });
      for (const kind of ['signature', 'date']) {
        const field = em.create(Field, { envelope, recipient, identifier: `${identifier}-${kind}`, type: kind === 'signature' ? 'simple_signature' : 'text', required: true, config: {} });
        em.create(FieldView, { field, document: documents[order], page: 0, position: 0, x: 40, y: 700, width: 120, height: 30 });
      }
    });
  }
  await em.flush();
  await orm.close(true);
}

async function round(server: { url: string; child: ChildProcess }, apiKey: string) {
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

try {
  await admin(`create database ${databaseName}`);
  const plain = await startServer('graphql-js', { GRAPHQL_JIT: 'false' });
  const jit = await startServer('graphql-jit', { GRAPHQL_JIT: 'true' });
  const orm = await MikroORM.init(createOrmConfig({ clientUrl: databaseUrl.toString(), poolMax: 1 }));
  const team = await createTeam(orm.em.fork(), { name: 'Benchmark team' });
  await orm.close(true);
  await seed(team.teamId, 40);

  // Same answer from both before anything is timed.
  const answers = await Promise.all(
    [plain, jit].map(async (server) =>
      (await fetch(`${server.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-service-api-key': team.apiKey }, body: JSON.stringify({ query, variables: { first: 20 } }) })).text(),
    ),
  );
  if (answers[0] !== answers[1] || answers[0].includes('"errors"')) throw new Error('the two servers answered differently');
  console.log(`answer: ${(answers[0].length / 1024).toFixed(1)} KiB; ${rounds} rounds × ${seconds} s, ${connections} connections, alternating`);

  const results = new Map<string, Awaited<ReturnType<typeof round>>[]>([[plain.label, []], [jit.label, []]]);
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
    console.log(`| ${row.label} | ${row.requestsPerSecond.toFixed(0)} | ${row.p50} | ${row.p99} | ${(row.requestsPerSecond / baseline).toFixed(2)}× | ${row.cpu.toFixed(2)} | ${row.rss.toFixed(0)} |`);
  }
} finally {
  for (const child of children) child.kill('SIGKILL');
  await new Promise((resolve) => setTimeout(resolve, 300));
  await admin(`drop database if exists ${databaseName} with (force)`).catch(() => {});
  fs.rmSync(scratch, { recursive: true, force: true });
}
