/**
 * Fault: several instances start at the same moment on an empty database (a fresh deployment
 * whose replicas all come up at once). Before issue 31 one of them died on a duplicate-key error:
 * both ran the migrations (and both tried to create the migrations table) at once.
 *
 * Promised (docs/operations.md, "… several instances start at once"): start-up's writes
 * (migrations, the shared-secret fingerprints, the default team) run under one PostgreSQL
 * advisory lock, so the others wait for the first and then find nothing left to do: every
 * instance comes up and is ready, every migration is recorded once, and there is exactly one
 * default team whose key exactly one instance printed.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runInstanceEnvironment } from '../helpers/harness.ts';
import { type PgCluster, startPgCluster } from '../helpers/pg-cluster.ts';
import { type ServiceProcess, startService } from '../helpers/service.ts';

const INSTANCES = 3;

let cluster: PgCluster;
const instances: ServiceProcess[] = [];

beforeAll(async () => {
  cluster = await startPgCluster();
});
afterAll(async () => {
  await Promise.all(instances.map((instance) => instance.stop()));
  await cluster?.destroy();
});

async function query<T>(databaseUrl: string, sql: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return (await client.query(sql)).rows as T[];
  } finally {
    await client.end();
  }
}

describe('instances starting at once on an empty database', () => {
  it('all come up: migrations and the default team happen once, under one lock, and the others wait', async () => {
    // Not the cluster's own (already migrated) database: a new, empty one.
    await query(cluster.url('postgres'), 'create database fresh');
    const databaseUrl = cluster.url('fresh');
    const starts = Array.from({ length: INSTANCES }, () => {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'envelope-simultaneous-'));
      // One installation: the same seal and audit key everywhere, as an operator would give them.
      return startService({ databaseUrl, dataDir, env: runInstanceEnvironment(dataDir) });
    });
    const started = await Promise.allSettled(starts);
    for (const outcome of started) if (outcome.status === 'fulfilled') instances.push(outcome.value);
    const failures = started.flatMap((outcome) => (outcome.status === 'rejected' ? [String((outcome.reason as Error).message).slice(0, 2000)] : []));
    expect(failures).toEqual([]);

    for (const instance of instances) {
      const ready = await fetch(`${instance.url}/readyz`);
      expect(ready.status).toBe(200);
      expect(instance.unexpectedErrors()).toEqual([]);
    }
    const migrations = await query<{ name: string; count: string }>(databaseUrl, 'select name, count(*) from mikro_orm_migrations group by name');
    expect(migrations.length).toBeGreaterThan(0);
    expect(migrations.filter((row) => Number(row.count) !== 1)).toEqual([]);
    const teams = await query<{ name: string }>(databaseUrl, 'select name from team');
    expect(teams).toEqual([{ name: 'Default team' }]);
    // Its key is shown once, by the instance that created it.
    expect(instances.filter((instance) => instance.output().includes('Created the default team'))).toHaveLength(1);
  }, 240_000);
});
