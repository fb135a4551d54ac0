/**
 * What the single-service benchmarks share: a scratch database on DATABASE_URL's server (default
 * postgresql://postgres@127.0.0.1:5432/postgres), the service started on it as `npm start` starts
 * it, /proc readings of its process, and seeding of nested envelopes straight through the ORM.
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MikroORM } from '@mikro-orm/postgresql';
import pg from 'pg';
import { createOrmConfig } from '../mikro-orm.config.ts';
import { Document } from '../src/domain/document/document.entity.ts';
import { Envelope } from '../src/domain/envelope/envelope.entity.ts';
import { Field } from '../src/domain/field/field.entity.ts';
import { FieldView } from '../src/domain/field/field-view.entity.ts';
import { Agent } from '../src/domain/recipient/agent.entity.ts';
import { Recipient } from '../src/domain/recipient/recipient.entity.ts';
import { Team } from '../src/domain/team/team.entity.ts';
import { createApiKey, createTeam } from '../src/domain/team/team.service.ts';
import { freePort } from './reads/processes.ts';
import { spawnService } from './service-process.ts';

export type RunningService = { label: string; url: string; child: ChildProcess };

export type Scratch = {
  databaseUrl: string;
  startService(label: string, env?: Record<string, string>, options?: { leaveOutFlags?: string[] }): Promise<RunningService>;
  createTeam(): Promise<{ teamId: string; apiKey: string }>;
  /** Another key of `teamId`, with a rate budget of its own. */
  createApiKey(teamId: string): Promise<string>;
  /** Envelopes shaped like `npm run bench`'s (3 documents, 3 recipients × 2 agents), with `fieldsPerRecipient` fields of `viewsPerField` views. */
  seedEnvelopes(teamId: string, count: number, shape?: { fieldsPerRecipient?: number; viewsPerField?: number }): Promise<void>;
  close(): Promise<void>;
};

export async function createScratch(name: string): Promise<Scratch> {
  const adminUrl = new URL(process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres');
  const databaseName = `envelope_bench_${name}_${Date.now()}`;
  const databaseUrl = new URL(adminUrl);
  databaseUrl.pathname = `/${databaseName}`;
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), `envelope-bench-${name}-`));
  const children: ChildProcess[] = [];
  // A service that exits before close() is a finding (a crash, an out-of-memory abort): say so.
  let closing = false;
  const admin = async (sql: string) => {
    const client = new pg.Client({ connectionString: adminUrl.toString() });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await admin(`create database ${databaseName}`);
  const withOrm = async <T>(work: (orm: MikroORM) => Promise<T>): Promise<T> => {
    const orm = await MikroORM.init(createOrmConfig({ clientUrl: databaseUrl.toString(), poolMax: 1 }));
    try {
      return await work(orm);
    } finally {
      await orm.close(true);
    }
  };

  return {
    databaseUrl: databaseUrl.toString(),
    async startService(label, env = {}, options = {}) {
      // A port the kernel says is free (at warn level the service logs no `listening` line to read).
      const port = await freePort();
      const child = spawnService(
        // The limiter on (its counting is part of a request's cost), with the highest budget it accepts.
        // One DATA_DIR for all: its self-signed seal certificate must be the same for every
        // instance of one database, or the second refuses to start.
        {
          DATABASE_URL: databaseUrl.toString(),
          PORT: String(port),
          DATA_DIR: path.join(directory, 'data'),
          LOG_LEVEL: 'warn',
          AUDIT_HMAC_KEY: 'b'.repeat(40),
          RATE_LIMIT_PER_MINUTE: '1000000',
          ...env,
        },
        { stdio: ['ignore', 'pipe', 'inherit'] },
        options,
      );
      children.push(child);
      // Kept for the error message of a service that stops before answering; drained all along.
      let output = '';
      child.stdout!.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4000)));
      child.once('exit', (code, signal) => {
        if (!closing) console.error(`${label} exited: code ${code}, signal ${signal}\n${output}`);
      });
      const url = `http://127.0.0.1:${port}`;
      // Up to two minutes: a fresh database is migrated first, and the benches share busy machines.
      for (let attempt = 0; attempt < 600; attempt += 1) {
        if (child.exitCode !== null || child.signalCode !== null) break;
        try {
          if ((await fetch(`${url}/readyz`)).ok) return { label, url, child };
        } catch {
          // not listening yet
        }
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      throw new Error(`${label} did not start:\n${output}`);
    },
    createTeam: () => withOrm(async (orm) => createTeam(orm.em.fork(), { name: 'Benchmark team' })),
    createApiKey: (teamId) => withOrm(async (orm) => (await createApiKey(orm.em.fork(), { teamId })).apiKey),
    seedEnvelopes: (teamId, count, shape = {}) =>
      withOrm(async (orm) => {
        const fieldsPerRecipient = shape.fieldsPerRecipient ?? 2;
        const viewsPerField = shape.viewsPerField ?? 1;
        const em = orm.em.fork();
        for (let index = 0; index < count; index += 1) {
          const envelope = em.create(Envelope, { team: em.getReference(Team, teamId), name: `Envelope ${index}`, expirationPeriodDays: 30 });
          const documents = [0, 1, 2].map((order) =>
            em.create(Document, {
              envelope,
              name: `part-${order}.pdf`,
              order,
              pageCount: 2,
              pages: [0, 1].map(() => ({ width: 595, height: 842, rotation: 0 })),
              contentSha256: 'c'.repeat(64),
              byteSize: 50_000,
            }),
          );
          ['buyer', 'seller', 'witness'].forEach((identifier, order) => {
            const recipient = em.create(Recipient, { envelope, identifier, roleName: identifier, type: 'signer', order, color: '#2563EB' });
            for (const position of [0, 1])
              em.create(Agent, { recipient, position, kind: 'info', info: { name: `${identifier} ${index}.${position}`, email: `${identifier}${index}.${position}@example.com` } });
            for (let fieldIndex = 0; fieldIndex < fieldsPerRecipient; fieldIndex += 1) {
              const field = em.create(Field, {
                envelope,
                recipient,
                identifier: `${identifier}-${fieldIndex}`,
                type: fieldIndex === 0 ? 'simple_signature' : 'text',
                required: true,
                config: {},
              });
              for (let position = 0; position < viewsPerField; position += 1)
                em.create(FieldView, { field, document: documents[order], page: position % 2, position, x: 40, y: 700, width: 120, height: 30 });
            }
          });
          if (index % 50 === 49) await em.flush();
        }
        await em.flush();
      }),
    async close() {
      closing = true;
      for (const child of children) child.kill('SIGKILL');
      await new Promise((resolve) => setTimeout(resolve, 300));
      await admin(`drop database if exists ${databaseName} with (force)`).catch(() => {});
      fs.rmSync(directory, { recursive: true, force: true });
    },
  };
}

/** utime + stime of a process, in milliseconds. */
/**
 * A REST caller for a scratch service's team: `call(method, path, body?, form?)` answers the
 * payload, and throws with the status and body on anything but 2xx (a bench must not measure refusals).
 */
export function restCaller(api: string, apiKey: string) {
  return async (method: string, path: string, body?: unknown, form?: FormData): Promise<any> => {
    const response = await fetch(`${api}${path}`, {
      method,
      headers: { 'x-service-api-key': apiKey, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: form ?? (body === undefined ? undefined : JSON.stringify(body)),
    });
    const answer = (await response.json()) as any;
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(answer)}`);
    return answer.payload;
  };
}

export function cpuMs(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

/** Resident memory of a process, in MiB. */
export function rssMiB(pid: number): number {
  if (!fs.existsSync(`/proc/${pid}/status`)) throw new Error(`process ${pid} is gone`);
  const line = fs
    .readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((entry) => entry.startsWith('VmRSS:'));
  return Number(line?.split(/\s+/)[1] ?? 0) / 1024;
}
