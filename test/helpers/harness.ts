import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MikroORM } from '@mikro-orm/postgresql';
import { inject } from 'vitest';
import { createOrmConfig } from '../../mikro-orm.config.ts';
import type { App } from '../../src/app.ts';
import { type Config, loadConfig } from '../../src/config.ts';
import type { AppDependencies } from '../../src/context.ts';
import { loadSealCertificate, type SealCertificate } from '../../src/domain/artefact/seal-certificate.ts';
import type { LiveLimits } from '../../src/domain/live/envelope-event-hub.ts';
import type { PdfWorkerPoolOptions } from '../../src/domain/pdf/worker-pool.ts';
import { createTeam } from '../../src/domain/team/team.service.ts';
import type { BodyTimeouts } from '../../src/http/body-guard.ts';
import { createRuntime } from '../../src/runtime.ts';
import { listen, type RunningServer } from '../../src/server.ts';
import type { BlobStore } from '../../src/shared/blob-store/index.ts';
import { createLogger } from '../../src/shared/logger.ts';
import type { Metrics } from '../../src/shared/metrics.ts';
import type { WorkerDependencies } from '../../src/workers.ts';

/** One self-signed seal for the test run's apps (generating an RSA key per app would cost seconds). */
let sealCertificate: SealCertificate | undefined;
let sealDataDir: string | undefined;
export function testSealCertificate(): SealCertificate {
  // The run's seal (global-setup.ts); a config without that setup (the fault suite) makes its own.
  sealDataDir ??= inject('sealDataDir') ?? fs.mkdtempSync(path.join(os.tmpdir(), 'envelope-seal-'));
  sealCertificate ??= loadSealCertificate({ sealP12Path: undefined, sealP12Password: undefined, dataDir: sealDataDir });
  return sealCertificate;
}

/** The DATA_DIR holding the test apps' seal (seal/seal.pem), for the command line's `verify`. */
export function testSealDataDir(): string {
  testSealCertificate();
  return sealDataDir!;
}

/** The audit key of every test app and of every service process on the run's database. */
export const TEST_AUDIT_KEY = 'test-audit-key-0123456789abcdef0123456789';

/**
 * The secrets a service process on the run's database must hold to start there as another
 * instance of the test apps' installation (src/db/shared-secrets.ts): the run's seal, copied into
 * its DATA_DIR, and the audit key, returned as environment.
 */
export function runInstanceEnvironment(dataDir: string): { AUDIT_HMAC_KEY: string } {
  fs.mkdirSync(path.join(dataDir, 'seal'), { recursive: true });
  fs.copyFileSync(path.join(testSealDataDir(), 'seal', 'seal.pem'), path.join(dataDir, 'seal', 'seal.pem'));
  return { AUDIT_HMAC_KEY: TEST_AUDIT_KEY };
}

export type TestApp = {
  url: string;
  /** The app as listen() serves it (a few tests look at what answered a request). */
  app: App;
  orm: MikroORM;
  dependencies: AppDependencies;
  /** The workers' dependencies as the composition root built them (test/helpers/workers.ts starts workers from them). */
  workerDependencies: WorkerDependencies;
  dataDir: string;
  /** Every line the app's logger wrote, as written (only with `captureLog`). */
  logLines: string[];
  /** SQL statements seen since the last `resetStatements()` (only with `countStatements`). */
  statements: string[];
  resetStatements(): void;
  /** Fails when anything reached the server as an unexpected error (a would-be 500). */
  close(): Promise<void>;
};

export type TestAppOptions = {
  env?: Record<string, string>;
  /**
   * Count rate limits in this app's memory only. On a server the counters are otherwise shared
   * through PostgreSQL by the apps of this file (as by instances), not by other files.
   */
  rateLimitsOwnCounters?: boolean;
  countStatements?: boolean;
  /**
   * The API key cache (runtime.ts): on, listening for other processes' revocations, on a
   * PostgreSQL server. Off by default with `countStatements` and on the embedded database (see startTestApp).
   */
  apiKeyCache?: false | { ttlMs?: number; listen?: boolean };
  /** The PDF worker pool's settings (defaults: main.ts's), e.g. a short time limit. */
  pdfWorkers?: PdfWorkerPoolOptions;
  /** Subscription limits (defaults: LIVE_LIMITS). */
  liveLimits?: Partial<LiveLimits>;
  /** How long a WebSocket connection may run no operation before it is closed (default WEBSOCKET_IDLE_MS). */
  webSocketIdleMs?: number;
  /**
   * Keep every line the app's logger writes, from level debug up, in `logLines` (else only errors
   * are looked at). Give the app's logger (`dependencies.logger`) to workers too, to keep theirs.
   */
  captureLog?: boolean;
  /** The app's metrics registry (default: createApp makes its own), to read it or share it with workers. */
  metrics?: Metrics;
  /** The seal certificate (default: the run's self-signed one); `env`'s TSA_URL is added to it. */
  seal?: SealCertificate;
  /** The blob store (default: the one the config names, files under the app's DATA_DIR unless `env` says BLOB_STORE_URL). */
  blobStore?: (dataDir: string, config: Config) => BlobStore;
};

/**
 * Starts the real app on a free port against the run's test database (see global-setup). Each
 * test file gets its own app and data directory; tests seed their own teams.
 */
export async function startTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'envelope-app-'));
  const config: Config = loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent', PORT: '0', ...options.env });
  const statements: string[] = [];
  const logLines: string[] = [];
  const unexpectedErrors: string[] = [];
  const orm = await MikroORM.init(
    createOrmConfig({
      clientUrl: inject('databaseUrl'),
      poolMax: inject('databaseKind') === 'embedded' ? 1 : 10,
      prepareStatements: inject('databaseKind') === 'server',
      onQuery: options.countStatements
        ? (sql) => {
            statements.push(sql);
          }
        : undefined,
    }),
  );
  // The app as production builds it (src/runtime.ts); what differs here is an explicit override.
  const runtime = await createRuntime(
    {
      config,
      orm,
      // Errors are recorded: an unexpected one anywhere in a test file fails that file on close,
      // whether or not the test that caused it looked at the status code.
      logger: createLogger(options.captureLog ? 'debug' : 'error', {
        write(line: string) {
          if (options.captureLog) logLines.push(line);
          const entry = JSON.parse(line) as { msg?: string; err?: { message?: string } };
          if (entry.msg === 'unexpected error') unexpectedErrors.push(entry.err?.message ?? line);
        },
      }),
      auditKey: Buffer.from(TEST_AUDIT_KEY),
      seal: { ...(options.seal ?? testSealCertificate()), tsaUrl: config.tsaUrl },
    },
    {
      // The run's database is shared with other instances only when it is a server.
      sharedDatabaseUrl: inject('databaseKind') === 'server' ? inject('databaseUrl') : undefined,
      // Off by default with `countStatements` (those tests count the key lookup as part of a
      // request) and on the embedded database (here, unlike in production, the CLI shares it with
      // the app while it runs, and no notification crosses its single backend).
      apiKeyCache: options.apiKeyCache ?? (options.countStatements || inject('databaseKind') === 'embedded' ? false : {}),
      // Counters shared through PostgreSQL by this file's apps (as by instances), not with the files running beside it.
      rateLimitStore:
        inject('databaseKind') === 'server' && !options.rateLimitsOwnCounters
          ? { kind: 'postgres', connectionString: inject('databaseUrl'), preparedStatements: true, namespace: `test-${process.pid}` }
          : { kind: 'memory' },
      liveLimits: options.liveLimits,
      pdfWorkers: options.pdfWorkers,
      metrics: options.metrics,
      blobStore: options.blobStore?.(dataDir, config),
    },
  );
  const { app, dependencies } = runtime;
  // PORT given (a test that needs PUBLIC_URL to be this app's own address, for a browser sent back to it): that port.
  const running = await listen(app, {
    port: options.env?.PORT ? Number(options.env.PORT) : 0,
    host: '127.0.0.1',
    maxUploadBytes: config.maxDocumentBytes,
    webSocketIdleMs: options.webSocketIdleMs,
  });
  return {
    url: running.url,
    app,
    orm,
    dependencies,
    workerDependencies: runtime.workerDependencies,
    dataDir,
    logLines,
    statements,
    resetStatements: () => statements.splice(0, statements.length),
    async close() {
      await runtime.closeLiveEvents();
      await running.close(1000);
      await runtime.close();
      await orm.close(true);
      fs.rmSync(dataDir, { recursive: true, force: true });
      if (unexpectedErrors.length > 0) {
        throw new Error(`the server hit ${unexpectedErrors.length} unexpected error(s) (answered as Server.Internal): ${unexpectedErrors.join(' | ')}`);
      }
    },
  };
}

export type SeededTeam = { teamId: string; workspaceId: string; apiKey: string; keyId: string };

/** A fresh team with its own key: tests never share data. */
export async function seedTeam(app: TestApp, options: { workspaceId?: string } = {}): Promise<SeededTeam> {
  const created = await createTeam(app.orm.em.fork(), { name: `Team ${Math.random().toString(36).slice(2, 8)}`, workspaceId: options.workspaceId });
  return { teamId: created.teamId, workspaceId: created.workspaceId, apiKey: created.apiKey, keyId: created.keyId };
}

export type RestResult = { status: number; headers: Headers; body: any };

/** A REST caller for one key, speaking the contract's JSON body. */
export function restClient(app: Pick<TestApp, 'url'>, apiKey: string | undefined) {
  async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<RestResult> {
    const response = await fetch(`${app.url}/api/v1/key${path}`, {
      method,
      headers: {
        ...(apiKey === undefined ? {} : { 'x-service-api-key': apiKey }),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // binary or plain bodies stay as text
    }
    return { status: response.status, headers: response.headers, body: parsed };
  }
  return {
    call,
    get: (path: string, headers?: Record<string, string>) => call('GET', path, undefined, headers),
    post: (path: string, body?: unknown, headers?: Record<string, string>) => call('POST', path, body, headers),
    put: (path: string, body?: unknown, headers?: Record<string, string>) => call('PUT', path, body, headers),
    patch: (path: string, body?: unknown, headers?: Record<string, string>) => call('PATCH', path, body, headers),
    delete: (path: string, headers?: Record<string, string>) => call('DELETE', path, undefined, headers),
  };
}

export type GraphQLResult = { status: number; data: any; errors: any[] | undefined };

/** A GraphQL caller for one key, over HTTP POST. */
export function graphqlClient(app: TestApp, apiKey: string | undefined, extraHeaders: Record<string, string> = {}) {
  return async function query(document: string, variables: Record<string, unknown> = {}): Promise<GraphQLResult> {
    const response = await fetch(`${app.url}/graphql`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/graphql-response+json, application/json',
        ...(apiKey === undefined ? {} : { 'x-service-api-key': apiKey }),
        ...extraHeaders,
      },
      body: JSON.stringify({ query: document, variables }),
    });
    const json = (await response.json()) as { data?: unknown; errors?: any[] };
    return { status: response.status, data: json.data, errors: json.errors };
  };
}

/** The name of the first GraphQL error (`extensions.code`), as REST would report it. */
export function firstErrorName(result: GraphQLResult): string | undefined {
  return result.errors?.[0]?.extensions?.code;
}

/**
 * A second server for a test app (the same app: one database, registry and log) whose body clocks
 * are shortened, so that a stalled or trickled body is refused in a second or two rather than the
 * production values' ten (BODY_TIMEOUTS). Closed by the caller.
 */
export function listenWithBodyTimeouts(app: TestApp, bodyTimeouts: Partial<BodyTimeouts>): Promise<RunningServer> {
  return listen(app.app, { port: 0, host: '127.0.0.1', maxUploadBytes: app.dependencies.config.maxDocumentBytes, bodyTimeouts });
}
