/**
 * The background workers, wired once: which handler runs each outbox topic, with which retry
 * policy and failure hooks. main.ts starts what this builds; the tests build their workers from
 * the same functions (kept to their own team's rows with `payloadMatch`), so what they exercise
 * is what production runs.
 *
 * Two workers share the one queue (`outbox_message`): the main one (sealing, mails, SMS and
 * WhatsApp, one-time codes, notices) with the generic policy, and one for webhook deliveries,
 * whose policy keeps trying for at least 24 hours (webhook-delivery.ts).
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Config } from './config.ts';
import { artefactCertificateHandler } from './domain/artefact/certificate.service.ts';
import { artefactSealHandler } from './domain/artefact/seal.job.ts';
import type { SealCertificate } from './domain/artefact/seal-certificate.ts';
import { bulkSendStepHandler } from './domain/bulk-send/bulk-send.job.ts';
import { mailHandlers, notificationFailureHook } from './domain/notification/mail.handlers.ts';
import type { Mailer } from './domain/notification/mailer.ts';
import { signingOtpHandler } from './domain/notification/otp.handler.ts';
import { publicLinkCodeHandler } from './domain/notification/public-link-code.handler.ts';
import type { PhoneProvider } from './domain/notification/sms.ts';
import { createOutboxWorker, handles, type OutboxHandler, type OutboxWorker, type OutboxWorkerOptions } from './domain/outbox/outbox-worker.ts';
import { OUTBOX_TOPICS } from './domain/outbox/topics.ts';
import type { PdfWorkers } from './domain/pdf/worker-pool.ts';
import { scheduledSendHandler } from './domain/signing/scheduled-send.ts';
import { WEBHOOK_RETRY_POLICY, webhookDeliveryHandler, webhookDisabledNoticeHandler, webhookFailureHook, webhookRetryHook } from './domain/webhook/webhook-delivery.ts';
import type { BlobStore } from './shared/blob-store/index.ts';
import type { Clock } from './shared/clock.ts';
import type { Logger } from './shared/logger.ts';
import type { Metrics } from './shared/metrics.ts';

export type WorkerDependencies = {
  em: EntityManager;
  clock: Clock;
  logger: Logger;
  config: Pick<Config, 'publicUrl' | 'mailAttachmentLimitBytes' | 'phoneMessagesPerDay' | 'webhookAllowPrivate' | 'webhookTimeoutMs' | 'bulkSendRowsInFlight' | 'bulkSendRowsPerMinute'>;
  auditKey: Buffer;
  blobStore: BlobStore;
  pdfWorkers: PdfWorkers;
  seal: SealCertificate;
  mailer: Mailer;
  phone: PhoneProvider;
  /**
   * Spends one request of an API key's rate budget for a bulk send's row (the HTTP rate limiter,
   * wired by main.ts); answers the milliseconds to wait when it is spent, else 0. Absent: not counted.
   */
  spendRateBudget?: (apiKeyId: string) => Promise<number>;
  /** The app's metrics (failed jobs, seal durations); absent: not counted (tools, most tests). */
  metrics?: Metrics;
};

/** Every topic the main worker runs, and its handler. */
export function mainJobHandlers(dependencies: WorkerDependencies): Map<string, OutboxHandler<any>> {
  const { config, auditKey, mailer, phone } = dependencies;
  const publicUrl = config.publicUrl;
  const artefacts = { blobStore: dependencies.blobStore, pdfWorkers: dependencies.pdfWorkers, seal: dependencies.seal, auditKey, clock: dependencies.clock, publicUrl };
  return new Map([
    handles(OUTBOX_TOPICS.sealArtefacts, artefactSealHandler(artefacts, dependencies.metrics)),
    handles(OUTBOX_TOPICS.fixCertificate, artefactCertificateHandler(artefacts)),
    ...mailHandlers({
      mailer,
      phone,
      publicUrl,
      auditKey,
      blobStore: dependencies.blobStore,
      attachmentLimitBytes: config.mailAttachmentLimitBytes,
      phoneMessagesPerDay: config.phoneMessagesPerDay,
    }),
    handles(OUTBOX_TOPICS.signingOtp, signingOtpHandler({ phone, publicUrl, auditKey })),
    handles(OUTBOX_TOPICS.webhookDisabledNotice, webhookDisabledNoticeHandler({ mailer, publicUrl })),
    handles(OUTBOX_TOPICS.publicLinkCode, publicLinkCodeHandler({ mailer, publicUrl })),
    handles(OUTBOX_TOPICS.scheduledSend, scheduledSendHandler({ auditKey, publicUrl, clock: dependencies.clock })),
    handles(
      OUTBOX_TOPICS.bulkSendStep,
      bulkSendStepHandler({
        rowsPerStep: config.bulkSendRowsInFlight,
        rowsPerMinute: config.bulkSendRowsPerMinute,
        auditKey,
        publicUrl,
        clock: dependencies.clock,
        blobStore: dependencies.blobStore,
        pdfWorkers: dependencies.pdfWorkers,
        spendRateBudget: dependencies.spendRateBudget,
      }),
    ),
  ]);
}

/** The webhook worker's one topic and its handler. */
export function webhookJobHandlers(dependencies: Pick<WorkerDependencies, 'auditKey' | 'config'>): Map<string, OutboxHandler<any>> {
  return new Map([
    handles(
      OUTBOX_TOPICS.webhookDelivery,
      webhookDeliveryHandler({ auditKey: dependencies.auditKey, allowPrivate: dependencies.config.webhookAllowPrivate, timeoutMs: dependencies.config.webhookTimeoutMs }),
    ),
  ]);
}

/** Options a caller may change (tests: shorter leases and backoff, their own clock, one team's rows, wrapped handlers). */
export type WorkerOverrides = Partial<Omit<OutboxWorkerOptions, 'em' | 'logger' | 'onFailed' | 'onRetry'>>;

/**
 * Seal jobs in hand at once per PDF thread. A seal job is mostly waiting (its statements, the blob
 * store, its turn in the PDF queue): on the bench's envelopes the thread works ~0.2 s of a job's
 * ~1.1 s, so one job at a time per thread leaves it idle while ten envelopes that closed together
 * queue for the worker. Four keep it busy; more would only lengthen the PDF queue each job waits in.
 */
export const SEAL_JOBS_PER_PDF_THREAD = 4;

/**
 * The main worker's slots: mails, one-time codes and notices are network waits, and seal jobs take
 * at most `SEAL_JOBS_PER_PDF_THREAD` per PDF thread of them, so the final-copy mails of envelopes
 * sealed a moment ago are not held behind the seals still running. Bulk-send steps keep the two at
 * a time they had (each is a batch of rows' statements). Seal and certificate jobs together leave at
 * least three slots to the rest.
 */
export function mainWorkerConcurrency(pdfThreads: number): Pick<OutboxWorkerOptions, 'concurrency' | 'topicConcurrency'> {
  const seals = SEAL_JOBS_PER_PDF_THREAD * Math.max(1, pdfThreads);
  return {
    concurrency: seals + 4,
    // A certificate job (a voided or expired envelope's) is rare: one per PDF thread.
    topicConcurrency: { [OUTBOX_TOPICS.sealArtefacts]: seals, [OUTBOX_TOPICS.fixCertificate]: Math.max(1, pdfThreads), [OUTBOX_TOPICS.bulkSendStep]: 2 },
  };
}

export function createMainWorker(dependencies: WorkerDependencies, overrides: WorkerOverrides = {}): OutboxWorker {
  return createOutboxWorker({
    em: dependencies.em,
    clock: dependencies.clock,
    logger: dependencies.logger,
    handlers: mainJobHandlers(dependencies),
    onFailed: notificationFailureHook(dependencies.auditKey),
    metrics: dependencies.metrics,
    ...mainWorkerConcurrency(dependencies.pdfWorkers.maxThreads),
    ...overrides,
  });
}

export function createWebhookWorker(dependencies: WorkerDependencies, overrides: WorkerOverrides = {}): OutboxWorker {
  return createOutboxWorker({
    em: dependencies.em,
    clock: dependencies.clock,
    logger: dependencies.logger,
    handlers: webhookJobHandlers(dependencies),
    ...WEBHOOK_RETRY_POLICY,
    onFailed: webhookFailureHook(dependencies.auditKey),
    onRetry: webhookRetryHook,
    metrics: dependencies.metrics,
    ...overrides,
  });
}
