/**
 * The composition root: the one place the service's parts are built and joined. main.ts calls
 * it for the process, and the test harness (test/helpers/harness.ts) for each test app, so what
 * the tests serve and what their workers run is what production serves and runs. What a test
 * needs to differ (its clock, its blob store, a shorter PDF time limit, rate counters of its own)
 * is passed as an explicit override, never wired again beside this file.
 *
 * It builds the app (GraphQL, REST, the signing page) with its shared parts (API key cache and
 * its revocation listener, rate limiter, live envelope events, PDF worker pool, metrics, blob
 * store) and the two outbox workers with their mailer and phone provider (built, not started).
 * Process-level duties stay with main.ts: configuration and seal loading, opening the database
 * (migrations, the start-up lock), listening, sweeps and housekeeping, signals.
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import { type App, createApp } from './app.ts';
import type { Config } from './config.ts';
import type { AppDependencies } from './context.ts';
import { readDirectlyOnPool } from './db/database.ts';
import type { SealCertificate } from './domain/artefact/seal-certificate.ts';
import { type LiveLimits, startEnvelopeEvents } from './domain/live/envelope-event-hub.ts';
import { createMailer, type Mailer } from './domain/notification/mailer.ts';
import { createPhoneProvider, type PhoneProvider } from './domain/notification/sms.ts';
import type { OutboxWorker } from './domain/outbox/outbox-worker.ts';
import { startOutboxWakeups } from './domain/outbox/wakeups.ts';
import { useCorrectionWorkflow } from './domain/owner/correction.ts';
import { createPdfWorkerPool, type PdfWorkerPoolOptions } from './domain/pdf/worker-pool.ts';
import { signingCorrectionWorkflow } from './domain/signing/correction.ts';
import { ApiKeyCache, listenForApiKeyRevocations } from './domain/team/api-key-cache.ts';
import { createRateLimiter, type RateLimitStore, rateBudgetSpender } from './http/rate-limit.ts';
import { type BlobStore, createBlobStore } from './shared/blob-store/index.ts';
import { type Clock, createClock } from './shared/clock.ts';
import type { Logger } from './shared/logger.ts';
import { createMetrics, type Metrics } from './shared/metrics.ts';
import { createMainWorker, createWebhookWorker, type WorkerDependencies } from './workers.ts';

export type RuntimeOptions = {
  config: Config;
  /** The opened database (main.ts: openDatabase, migrations applied). Not closed by the runtime. */
  orm: MikroORM;
  logger: Logger;
  auditKey: Buffer;
  seal: SealCertificate;
};

/** What a caller may choose instead of the production default (tests, tools). */
export type RuntimeOverrides = {
  /** Default: the system clock. */
  clock?: Clock;
  /**
   * The PostgreSQL server other instances share (LISTEN/NOTIFY for live events and key
   * revocations, shared rate counters). Default: DATABASE_URL; undefined is the embedded
   * database, which this process has alone.
   */
  sharedDatabaseUrl?: string;
  /** Default: the store the configuration names (files under DATA_DIR, or BLOB_STORE_URL's bucket). */
  blobStore?: BlobStore;
  /** Default: the pool's own settings. */
  pdfWorkers?: PdfWorkerPoolOptions;
  /** Default: on, for API_KEY_CACHE_TTL_MS, listening for revocations on a shared server. */
  apiKeyCache?: false | { ttlMs?: number; listen?: boolean };
  /** Default: shared through PostgreSQL on a shared server, else counted in memory. */
  rateLimitStore?: RateLimitStore;
  /** Default: SUBSCRIPTIONS_PER_KEY and the hub's limits. */
  liveLimits?: Partial<LiveLimits>;
  /** Default: a registry of the runtime's own. */
  metrics?: Metrics;
  mailer?: Mailer;
  phone?: PhoneProvider;
};

export type Runtime = {
  app: App;
  dependencies: AppDependencies & Required<Pick<AppDependencies, 'rateLimiter' | 'envelopeEvents' | 'metrics'>>;
  workerDependencies: WorkerDependencies;
  mainWorker: OutboxWorker;
  webhookWorker: OutboxWorker;
  /** Ends open subscriptions (Subscription.Interrupted): first, before the server stops listening. */
  closeLiveEvents(): Promise<void>;
  /** Stops the workers (jobs in hand finish) and closes every part built here, the app last-but-one, the blob store last. Not the database. */
  close(): Promise<void>;
};

export async function createRuntime(options: RuntimeOptions, overrides: RuntimeOverrides = {}): Promise<Runtime> {
  const { config, orm, logger, auditKey, seal } = options;
  const sharedDatabaseUrl = 'sharedDatabaseUrl' in overrides ? overrides.sharedDatabaseUrl : config.databaseUrl;
  const clock = overrides.clock ?? createClock();
  const metrics = overrides.metrics ?? createMetrics();
  // Corrections of sent envelopes settle turns and links through the signing workflow (owner/correction.ts).
  useCorrectionWorkflow(signingCorrectionWorkflow);

  // Verified keys are remembered for a few seconds. Other instances' revocations arrive by
  // LISTEN/NOTIFY on a PostgreSQL server; the embedded database belongs to this process alone
  // (and has one backend, whose LISTEN every connection would share), so there in-process eviction is all.
  const cacheOptions = overrides.apiKeyCache ?? {};
  const apiKeyCache = cacheOptions ? new ApiKeyCache({ ttlMs: cacheOptions.ttlMs ?? config.apiKeyCacheTtlMs, now: () => clock.now().getTime() }) : undefined;
  const listenUrl = cacheOptions && (cacheOptions.listen ?? true) ? sharedDatabaseUrl : undefined;
  const revocationListener = apiKeyCache && listenUrl !== undefined ? await listenForApiKeyRevocations({ connectionString: listenUrl, cache: apiKeyCache, logger }) : undefined;

  // Live envelope events for subscriptions: every instance hears every instance's commits by
  // LISTEN/NOTIFY on a PostgreSQL server; on the embedded database, this process's own commits.
  const envelopeEvents = await startEnvelopeEvents({ orm, connectionString: sharedDatabaseUrl, logger, limits: { perApiKey: config.subscriptionsPerKey, ...overrides.liveLimits } });

  // Request budgets are shared through PostgreSQL by every instance on one server; the embedded
  // database serves this process alone, so there they are counted in memory.
  const rateLimiter = createRateLimiter({
    limits: config.rateLimits,
    store:
      overrides.rateLimitStore ??
      (sharedDatabaseUrl === undefined ? { kind: 'memory' } : { kind: 'postgres', connectionString: sharedDatabaseUrl, preparedStatements: config.databasePreparedStatements }),
    logger,
  });
  // PDF inspection runs in these threads, never on the event loop (one pool for the process).
  const pdfWorkers = createPdfWorkerPool(overrides.pdfWorkers);
  // Files under DATA_DIR/blobs, or an S3-compatible bucket (BLOB_STORE_URL; docs/operations.md).
  const blobStore =
    overrides.blobStore ??
    createBlobStore({ dataDir: config.dataDir, location: config.blobStore, cacheBytes: config.blobCacheBytes, onError: (operation) => metrics.blobStoreErrors.inc({ operation }) });

  // The read model's statements outside transactions go straight to the pool (db/direct-reads.ts).
  await readDirectlyOnPool(orm);
  const dependencies = { orm, config, logger, clock, blobStore, auditKey, pdfWorkers, seal, apiKeyCache, rateLimiter, envelopeEvents: envelopeEvents.hub, metrics };
  const app = createApp(dependencies);

  // Mail goes to SMTP_URL, else to .eml files under DATA_DIR/mail (and a log line); SMS and
  // WhatsApp to SMS_PROVIDER_URL, else to files under DATA_DIR/sms.
  const mailer = overrides.mailer ?? createMailer({ smtpUrl: config.smtpUrl, from: config.mailFrom, dataDir: config.dataDir, logger });
  const phone = overrides.phone ?? createPhoneProvider({ provider: config.smsProvider, dataDir: config.dataDir, logger });
  // Durable jobs written by the domain (outbox_message), workers.ts. A bulk send's rows spend the
  // creating key's rate budget, like its requests (bulk-send.job.ts).
  const workerDependencies: WorkerDependencies = {
    em: orm.em,
    clock,
    logger,
    config,
    auditKey,
    blobStore,
    pdfWorkers,
    seal,
    mailer,
    phone,
    metrics,
    spendRateBudget: rateBudgetSpender(rateLimiter),
  };
  const mainWorker = createMainWorker(workerDependencies);
  const webhookWorker = createWebhookWorker(workerDependencies);
  // A committed job wakes the worker that handles it (every instance's, by LISTEN on a server),
  // rather than waiting for its next poll: outbox/wakeups.ts.
  const outboxWakeups = await startOutboxWakeups({
    orm,
    connectionString: sharedDatabaseUrl,
    logger,
    wake(topic) {
      mainWorker.wake(topic);
      webhookWorker.wake(topic);
    },
  });

  return {
    app,
    dependencies,
    workerDependencies,
    mainWorker,
    webhookWorker,
    closeLiveEvents: () => envelopeEvents.close(),
    async close() {
      await app.dispose();
      // Jobs in hand finish (or their lease runs out and another instance retakes them).
      await outboxWakeups.close();
      await mainWorker.stop();
      await webhookWorker.stop();
      mailer.close();
      // After the server has finished its requests: no upload is waiting for a worker any more.
      await pdfWorkers.close();
      await revocationListener?.close();
      apiKeyCache?.close();
      await rateLimiter.close();
      blobStore.close();
    },
  };
}
