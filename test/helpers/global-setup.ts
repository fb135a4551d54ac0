import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MikroORM } from '@mikro-orm/postgresql';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { createOrmConfig } from '../../mikro-orm.config.ts';
import { type EmbeddedPostgres, startEmbeddedPostgres } from '../../src/db/embedded-postgres.ts';
import { loadSealCertificate } from '../../src/domain/artefact/seal-certificate.ts';
import { testDatabase } from './database-kind.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
    databaseKind: 'server' | 'embedded';
    /** A DATA_DIR holding the run's one seal (seal/seal.pem): every app and service process of the run seals with it. */
    sealDataDir: string;
  }
}

/**
 * Tests run against a real PostgreSQL server when one is reachable (DATABASE_URL, or the local
 * 127.0.0.1:5432 these machines have), in a database created for this run and dropped after it;
 * otherwise (or with TEST_DATABASE=embedded) against the embedded PostgreSQL. Migrations are applied once, here: that is also
 * the "migrations apply to an empty database" check every run makes.
 */
export default async function setup(project: TestProject) {
  const { kind, serverUrl } = await testDatabase();
  let databaseUrl: string;
  let teardown: () => Promise<void>;
  let embedded: EmbeddedPostgres | undefined;
  if (kind === 'server') {
    const databaseName = `envelope_test_${Date.now()}_${process.pid}`;
    const admin = new pg.Client({ connectionString: serverUrl.toString() });
    await admin.connect();
    // A run that was killed never reached its teardown; drop its database once it is an hour old.
    const stale = await admin.query<{ datname: string }>(`select datname from pg_database where datname like 'envelope\\_test\\_%'`);
    for (const { datname } of stale.rows) {
      const startedAt = Number(/^envelope_test_(\d+)_/.exec(datname)?.[1]);
      if (Number.isFinite(startedAt) && Date.now() - startedAt > 60 * 60 * 1000) {
        await admin.query(`drop database if exists "${datname}" with (force)`);
      }
    }
    await admin.query(`create database ${databaseName}`);
    await admin.end();
    const testUrl = new URL(serverUrl);
    testUrl.pathname = `/${databaseName}`;
    databaseUrl = testUrl.toString();
    project.provide('databaseKind', 'server');
    teardown = async () => {
      const cleanup = new pg.Client({ connectionString: serverUrl.toString() });
      await cleanup.connect();
      await cleanup.query(`drop database if exists ${databaseName} with (force)`);
      await cleanup.end();
    };
  } else {
    const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'envelope-test-'));
    // Each test file has its own app (and so its own connection); files run one at a time here (vitest.config.ts).
    embedded = await startEmbeddedPostgres(directory, { maxConnections: 32 });
    databaseUrl = embedded.url;
    project.provide('databaseKind', 'embedded');
    teardown = async () => {
      await embedded?.stop();
      fs.rmSync(directory, { recursive: true, force: true });
    };
  }
  const orm = await MikroORM.init(createOrmConfig({ clientUrl: databaseUrl, poolMax: 1 }));
  await orm.migrator.up();
  await orm.close(true);
  project.provide('databaseUrl', databaseUrl);
  // One seal for the whole run: the service processes tests start on the run's database are
  // instances of one installation, which must share it (src/db/shared-secrets.ts), and generating
  // an RSA key per test file would cost seconds.
  const sealDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'envelope-seal-'));
  loadSealCertificate({ sealP12Path: undefined, sealP12Password: undefined, dataDir: sealDataDir });
  project.provide('sealDataDir', sealDataDir);
  return async () => {
    await teardown();
    fs.rmSync(sealDataDir, { recursive: true, force: true });
  };
}
