import { ConfigError, loadConfig } from './config.ts';
import { type Database, openDatabase } from './db/database.ts';
import { EmbeddedDatabaseLockedError } from './db/embedded-postgres.ts';
import { shareSandboxClock } from './db/shared-sandbox-clock.ts';
import { checkSharedSecrets, SharedSecretMismatchError, sharedSecretsOf } from './db/shared-secrets.ts';
import { openSeal, type SealCertificate, SealCertificateError } from './domain/artefact/seal-certificate.ts';
import { removeOrphanBlobs } from './domain/document/orphan-blobs.ts';
import { pruneDeliveryHistory } from './domain/notification/delivery-history.ts';
import { startHousekeeping } from './domain/outbox/housekeeping.ts';
import { startExpirySweeper } from './domain/signing/closing.service.ts';
import { ensureDefaultTeam } from './domain/team/team.service.ts';
import { startIdleMemoryTrim } from './http/memory-trim.ts';
import { listenForMetrics } from './http/metrics.ts';
import { createRuntime } from './runtime.ts';
import { listen } from './server.ts';
import { blobDirectory, startStagingSweep } from './shared/blob-store/index.ts';
import { createLogger } from './shared/logger.ts';
import { loadAuditKey } from './shared/secret-file.ts';
import { startTracing, stopTracing } from './shared/tracing.ts';
import { startupBanner } from './startup-banner.ts';

// Start: configuration → database → app → listen. Nothing else happens here.
let config;
try {
  config = loadConfig();
} catch (error) {
  if (error instanceof ConfigError) {
    console.error(error.message);
    process.exit(1);
  }
  throw error;
}

// A broken, mismatched or expired sealing certificate, or a key that cannot sign the probe (a
// wrong PIN, no such token or key), stops start-up with one line, before anything else starts
// (like invalid configuration).
let seal: SealCertificate;
try {
  seal = { ...(await openSeal(config)), tsaUrl: config.tsaUrl };
} catch (error) {
  if (error instanceof SealCertificateError) {
    console.error(error.message);
    process.exit(1);
  }
  throw error;
}

// Traces when an OTLP endpoint is named (shared/tracing.ts): started before the database opens
// its first connection, so that every statement is seen.
if (config.tracing) startTracing({ serviceName: config.tracing.serviceName });

const logger = createLogger(config.logLevel);
// Instances sharing a database must share its secrets: the first start records their
// fingerprints, a later start with different ones stops here with one line naming the variable.
const auditKey = loadAuditKey(config);
let defaultTeam: Awaited<ReturnType<typeof ensureDefaultTeam>> = null;
let database: Database;
try {
  database = await openDatabase(config, {
    // Under the start-up lock with the migrations: instances starting at once take turns.
    async startUp(orm) {
      await checkSharedSecrets(orm, sharedSecretsOf({ auditKey, sealFingerprintSha256: seal.fingerprintSha256 }));
      defaultTeam = await ensureDefaultTeam(orm.em.fork());
    },
    onWaitForStartup: () => logger.info('waiting for another instance to finish starting'),
  });
} catch (error) {
  if (error instanceof EmbeddedDatabaseLockedError || error instanceof SharedSecretMismatchError) {
    console.error(error.message);
    process.exit(1);
  }
  logger.fatal({ err: error }, 'could not open the database');
  process.exit(1);
}
logger.info({ embedded: database.isEmbedded, dataDir: config.dataDir }, 'database ready, migrations applied');

// The app, its shared parts and the workers, built by the composition root (runtime.ts) that the
// tests build theirs with.
const runtime = await createRuntime({ config, orm: database.orm, logger, auditKey, seal });
const { app, mainWorker: outboxWorker, webhookWorker } = runtime;
const { clock, blobStore, metrics } = runtime.dependencies;
// The sandbox clock is one clock for every instance on the database (and survives restarts).
const sandboxClock = config.sandboxClock ? await shareSandboxClock({ orm: database.orm, clock, connectionString: config.databaseUrl, logger }) : undefined;
// Staging files a killed process left behind (an upload cut off by SIGKILL) are removed at start
// and hourly once they are an hour old (blob-store.ts); every instance sweeps, as any may have crashed.
const stagingSweep = startStagingSweep({
  rootDirectory: blobDirectory(config.dataDir),
  intervalMs: 60 * 60_000,
  onSwept: (result) => {
    if ('error' in result) logger.warn({ err: { message: (result.error as Error)?.message } }, 'staging file sweep failed');
    else if (result.removed > 0) logger.info({ removed: result.removed }, 'removed stale staging files');
  },
});
const running = await listen(app, { port: config.port, host: config.host, maxUploadBytes: config.maxDocumentBytes });
// METRICS_PORT: GET /metrics on a port of its own, bound like the main one (docs/operations.md#metrics).
const metricsServer = config.metricsPort === undefined ? undefined : await listenForMetrics({ port: config.metricsPort, host: config.host, metrics, logger });
if (metricsServer) logger.info({ address: metricsServer.url }, `metrics at ${metricsServer.url}/metrics`);
logger.info(
  { address: running.url, publicUrl: config.publicUrl },
  `listening on ${running.url}: GraphQL and GraphiQL at ${config.publicUrl}/graphql, REST at ${config.publicUrl}/api/v1/key, its reference at ${config.publicUrl}/api/v1/key/docs`,
);

// The default team's key is printed once, on the first start with an empty database: the only
// time it is shown. Later starts show the addresses to a person at a terminal.
if (defaultTeam || process.stdout.isTTY) console.log(startupBanner({ publicUrl: config.publicUrl, defaultTeam: defaultTeam ?? undefined }));

// After a burst of large answers, give the heap's pages back once the server is idle (memory-trim.ts).
const memoryTrim = startIdleMemoryTrim({ server: running.server, logger });
// Envelopes past expiresAt are closed by this sweep (safe with several instances sweeping); a
// submission after expiresAt is refused even before it runs.
const expirySweeper = startExpirySweeper({ em: database.orm.em, auditKey, publicUrl: config.publicUrl, clock, logger, intervalMs: 30_000 });

// Settled delivery history (queue rows, webhook deliveries) older than the retention is pruned
// hourly, and so are blob-store objects no row names that are older than a day (orphan-blobs.ts).
const housekeeping = config.outboxWorker
  ? startHousekeeping({
      clock,
      logger,
      intervalMs: 60 * 60_000,
      prune: async (now) => ({
        ...(await pruneDeliveryHistory({ em: database.orm.em, now, retentionDays: config.deliveryHistoryRetentionDays })),
        ...(await removeOrphanBlobs({ em: database.orm.em, blobStore, now })),
      }),
    })
  : undefined;
// Durable jobs written by the domain (outbox_message): each topic's handler runs on every
// instance (claims never overlap): sealing, mails, SMS/WhatsApp, one-time codes, notices; webhook
// deliveries on a worker of their own with a 24-hour retry policy (workers.ts).
// OUTBOX_WORKER=false keeps an instance to serving requests (other instances run the jobs).
if (config.outboxWorker) {
  outboxWorker.start();
  webhookWorker.start();
}

let shuttingDown = false;
async function shutdown(signal: string) {
  if (shuttingDown) return;
  shuttingDown = true;
  logger.info({ signal }, 'shutting down: no new connections, finishing in-flight requests');
  memoryTrim.stop();
  // Open subscriptions end first (Subscription.Interrupted, reason shutting_down), so their
  // streams finish like any other request; clients resume elsewhere by sequence.
  await runtime.closeLiveEvents();
  await running.close();
  await metricsServer?.close();
  await expirySweeper.stop();
  await housekeeping?.stop();
  await stagingSweep.stop();
  // The app, the workers (jobs in hand finish), the mailer, the PDF threads, the key cache, the
  // rate limiter and the blob store (runtime.ts).
  await runtime.close();
  // The token's sessions (SEAL_SIGNER=pkcs11), once no seal can be in hand.
  await seal.signer.close();
  await sandboxClock?.close();
  await database.close();
  // Last: the spans of everything above are exported before the process ends.
  await stopTracing();
  logger.info('stopped');
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));
