import { createOutboxWorker } from '../../src/domain/outbox/outbox-worker.ts';
import { OUTBOX_TOPICS } from '../../src/domain/outbox/topics.ts';
import type { Clock } from '../../src/shared/clock.ts';
import { createLogger, type Logger } from '../../src/shared/logger.ts';
import { createMainWorker, createWebhookWorker, mainJobHandlers, type WorkerDependencies, type WorkerOverrides } from '../../src/workers.ts';
import type { TestApp } from './harness.ts';

const logger = createLogger('silent');

/**
 * The workers' dependencies as the composition root built them for the test app (src/runtime.ts:
 * its config, clock, blob store, seal, mailer to its SMTP_URL or DATA_DIR/mail, phone provider to
 * its SMS_PROVIDER_URL or DATA_DIR/sms), logging nowhere. `overrides` swaps a part (a failing mail
 * server, a shorter attachment limit).
 */
export function workerDependencies(app: TestApp, overrides: Partial<WorkerDependencies> = {}): WorkerDependencies {
  return { ...app.workerDependencies, logger, ...overrides };
}

/** The main worker production runs (workers.ts), kept to one team's rows (other test files share the database). */
export function mainWorkerFor(app: TestApp, teamId: string, options: WorkerOverrides & { dependencies?: Partial<WorkerDependencies> } = {}) {
  const { dependencies, ...overrides } = options;
  return createMainWorker(workerDependencies(app, dependencies), { payloadMatch: { teamId }, ...overrides });
}

/** The webhook worker production runs (workers.ts), kept to one team's rows. */
export function webhookWorkerFor(app: TestApp, teamId: string, options: WorkerOverrides & { dependencies?: Partial<WorkerDependencies> } = {}) {
  const { dependencies, ...overrides } = options;
  return createWebhookWorker(workerDependencies(app, dependencies), { payloadMatch: { teamId }, ...overrides });
}

/**
 * An outbox worker running only the sealing job (`artefact.seal`) of one team's rows, the handler
 * taken from the main worker's own map (workers.ts), so it is the job production runs (sealing,
 * then the certificate of completion); `clock` to move its time on (retries), `logger` to read
 * what the job and the worker log (silent by default).
 */
export function sealWorkerFor(app: TestApp, teamId: string, options: { clock?: Clock; logger?: Logger } = {}) {
  const { clock = app.dependencies.clock, logger: jobLogger = logger } = options;
  const handler = mainJobHandlers(workerDependencies(app, { clock, logger: jobLogger })).get(OUTBOX_TOPICS.sealArtefacts)!;
  return createOutboxWorker({
    em: app.orm.em,
    clock,
    logger: jobLogger,
    payloadMatch: { teamId },
    handlers: new Map([[OUTBOX_TOPICS.sealArtefacts, handler]]),
  });
}
