import { createMailer } from '../../src/domain/notification/mailer.ts';
import { createPhoneProvider } from '../../src/domain/notification/sms.ts';
import { createOutboxWorker } from '../../src/domain/outbox/outbox-worker.ts';
import { OUTBOX_TOPICS } from '../../src/domain/outbox/topics.ts';
import type { Clock } from '../../src/shared/clock.ts';
import { rateBudgetSpender } from '../../src/http/rate-limit.ts';
import { createLogger } from '../../src/shared/logger.ts';
import { createMainWorker, createWebhookWorker, mainJobHandlers, type WorkerDependencies, type WorkerOverrides } from '../../src/workers.ts';
import type { TestApp } from './harness.ts';

const logger = createLogger('silent');

/**
 * The workers' dependencies as main.ts builds them, from the test app's own (its config, clock,
 * blob store, seal): mail to its SMTP_URL or DATA_DIR/mail, phone messages to its
 * SMS_PROVIDER_URL or DATA_DIR/sms. `overrides` swaps a part (a failing mail server, a shorter
 * attachment limit).
 */
export function workerDependencies(app: TestApp, overrides: Partial<WorkerDependencies> = {}): WorkerDependencies {
  const { config, clock, auditKey, blobStore, pdfWorkers, seal } = app.dependencies;
  return {
    em: app.orm.em,
    clock,
    logger,
    config,
    auditKey,
    blobStore,
    pdfWorkers,
    seal,
    mailer: createMailer({ smtpUrl: config.smtpUrl, from: config.mailFrom, dataDir: app.dataDir, logger }),
    phone: createPhoneProvider({ provider: config.smsProvider, dataDir: app.dataDir, logger }),
    spendRateBudget: app.dependencies.rateLimiter && rateBudgetSpender(app.dependencies.rateLimiter),
    ...overrides,
  };
}

/** The main worker as main.ts runs it, kept to one team's rows (other test files share the database). */
export function mainWorkerFor(app: TestApp, teamId: string, options: WorkerOverrides & { dependencies?: Partial<WorkerDependencies> } = {}) {
  const { dependencies, ...overrides } = options;
  return createMainWorker(workerDependencies(app, dependencies), { payloadMatch: { teamId }, ...overrides });
}

/** The webhook worker as main.ts runs it, kept to one team's rows. */
export function webhookWorkerFor(app: TestApp, teamId: string, options: WorkerOverrides & { dependencies?: Partial<WorkerDependencies> } = {}) {
  const { dependencies, ...overrides } = options;
  return createWebhookWorker(workerDependencies(app, dependencies), { payloadMatch: { teamId }, ...overrides });
}

/**
 * An outbox worker running only the sealing job (`artefact.seal`) of one team's rows, the handler
 * taken from the main worker's own map (workers.ts), so it is the job production runs (sealing,
 * then the certificate of completion); `clock` to move its time on (retries).
 */
export function sealWorkerFor(app: TestApp, teamId: string, clock: Clock = app.dependencies.clock) {
  const handler = mainJobHandlers(workerDependencies(app, { clock })).get(OUTBOX_TOPICS.sealArtefacts)!;
  return createOutboxWorker({
    em: app.orm.em,
    clock,
    logger,
    payloadMatch: { teamId },
    handlers: new Map([[OUTBOX_TOPICS.sealArtefacts, handler]]),
  });
}
