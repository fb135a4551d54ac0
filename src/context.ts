import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { Config } from './config.ts';
import type { SealCertificate } from './domain/artefact/seal-certificate.ts';
import type { EnvelopeEventHub } from './domain/live/envelope-event-hub.ts';
import type { LiveConnection } from './domain/live/live.service.ts';
import type { PdfWorkers } from './domain/pdf/worker-pool.ts';
import { readerOf } from './domain/read-model.ts';
import type { ServiceContext } from './domain/service-context.ts';
import type { ApiKeyCache } from './domain/team/api-key-cache.ts';
import { authenticateApiKey } from './domain/team/team.service.ts';
import type { TeamCaller } from './domain/team/team-caller.ts';
import type { RateLimiter } from './http/rate-limit.ts';
import type { BlobStore } from './shared/blob-store/index.ts';
import type { Clock } from './shared/clock.ts';
import { MissingApiKeyError } from './shared/errors.ts';
import type { Logger } from './shared/logger.ts';
import type { Metrics } from './shared/metrics.ts';
import type { RequestMetadata } from './shared/request-metadata.ts';

/** What the process shares between requests: built once in main, passed to the app. */
export type AppDependencies = {
  orm: MikroORM;
  config: Config;
  logger: Logger;
  clock: Clock;
  blobStore: BlobStore;
  /** Keys the audit hash chain (see domain/audit). */
  auditKey: Buffer;
  /** The process's PDF worker threads (created once, closed on shutdown). */
  pdfWorkers: PdfWorkers;
  /** The sealing certificate (SEAL_P12, or the self-signed one under DATA_DIR). */
  seal: SealCertificate;
  /** Verified API keys, shared by all requests. Absent: every request looks its key up (tools, benchmarks). */
  apiKeyCache?: ApiKeyCache;
  /** Request budgets (src/rate-limit.ts). Absent: createApp makes a process-local one from the config. */
  rateLimiter?: RateLimiter;
  /**
   * Live envelope events (subscriptions). Absent: createApp makes one fed by this process's own
   * commits; main (and tests) bring one fed by LISTEN/NOTIFY on a PostgreSQL server.
   */
  envelopeEvents?: EnvelopeEventHub;
  /**
   * The app's Prometheus metrics (shared/metrics.ts). Absent: createApp makes a registry of its
   * own; main brings one to share it with the workers and the blob store.
   */
  metrics?: Metrics;
};

export type { RequestMetadata };

/** The dependencies as the app serves with them: createApp has filled in what was left out. */
export type ServingDependencies = AppDependencies & { envelopeEvents: EnvelopeEventHub; metrics: Metrics };

/**
 * The one request context both faces use. `em` is a fresh fork per request, so no identity map
 * or unit of work is ever shared between requests. `caller()` authenticates lazily (GraphiQL and
 * introspection work without a key; every team operation asks for the caller first) and at most
 * once per request.
 */
export type RequestContext = AppDependencies &
  ServiceContext & {
    em: EntityManager;
    metadata: RequestMetadata;
    log: Logger;
    caller(): Promise<TeamCaller>;
    /** The `Idempotency-Key` header, for creating writes on either face. */
    idempotencyKey: string | undefined;
    envelopeEvents: EnvelopeEventHub;
    /** The WebSocket connection an operation came on (per-connection subscription limit); absent over HTTP. */
    liveConnection?: LiveConnection;
  };

/**
 * `createRequestContext` after the shared sandbox clock (if any) has read what another instance
 * recorded: how every HTTP request of either face starts.
 */
/** What the context reads of a request's headers: a `Headers`, or the REST face's view of a Node request. */
export type HeaderReader = { get(name: string): string | null };

export async function openRequestContext(
  dependencies: ServingDependencies,
  request: { headers: HeaderReader; metadata: RequestMetadata; liveConnection?: LiveConnection },
): Promise<RequestContext> {
  await dependencies.clock.shared?.refresh();
  return createRequestContext(dependencies, request);
}

/** A request context's lazily made parts, under a symbol so that the shared accessors below find them. */
const LAZY = Symbol('request context: lazy parts');
type LazyParts = { orm: MikroORM; logger: Logger; requestId: string; em?: EntityManager; log?: Logger };
type WithLazyParts = { [LAZY]: LazyParts };

/*
 * The entity manager fork and the request's logger are made on first use: a cached-key read
 * needs neither a unit of work nor a log line, and both cost more than the read's own work. They
 * are accessors, and the SAME accessor functions for every context (reading the request's parts
 * from the receiver), never getters written in a per-request object literal: V8 keeps an
 * accessor's function in the object's hidden class, so a new getter closure per request made a
 * new hidden class per request, held in old space until the next full collection, and through it
 * the closure and everything the request touched (its Node request, its answer's text) survived
 * every young-generation collection, was promoted, and made a full collection run about every
 * second under load (docs/performance.md, "What survived young collections").
 */
const lazyAccessors = {
  em: {
    get(this: WithLazyParts): EntityManager {
      const lazy = this[LAZY];
      lazy.em ??= lazy.orm.em.fork() as EntityManager;
      return lazy.em;
    },
    enumerable: true,
    configurable: true,
  },
  reader: {
    get(this: WithLazyParts) {
      return readerOf(this[LAZY].orm.em as EntityManager);
    },
    enumerable: true,
    configurable: true,
  },
  log: {
    get(this: WithLazyParts): Logger {
      const lazy = this[LAZY];
      lazy.log ??= lazy.logger.child({ requestId: lazy.requestId });
      return lazy.log;
    },
    enumerable: true,
    configurable: true,
  },
} satisfies PropertyDescriptorMap;

export function createRequestContext(
  dependencies: ServingDependencies,
  { headers, metadata, liveConnection }: { headers: HeaderReader; metadata: RequestMetadata; liveConnection?: LiveConnection },
): RequestContext {
  const apiKey = headers.get('x-service-api-key')?.trim() ?? '';
  let callerPromise: Promise<TeamCaller> | undefined;
  const { config } = dependencies;
  const context = {
    ...dependencies,
    [LAZY]: { orm: dependencies.orm, logger: dependencies.logger, requestId: metadata.requestId } as LazyParts,
    metadata,
    limits: { maxDocumentBytes: config.maxDocumentBytes, phoneMessagesPerDay: config.phoneMessagesPerDay },
    publicUrl: config.publicUrl,
    trustAnchors: config.trustAnchors,
    sandboxClock: config.sandboxClock,
    signingFrameAncestors: config.signingFrameAncestors,
    downloadRedirect: config.downloadRedirect,
    webhooks: { allowPrivate: config.webhookAllowPrivate },
    signingToken: headers.get('x-signing-token')?.trim() || undefined,
    idempotencyKey: headers.get('idempotency-key') ?? undefined,
    liveConnection,
    // A closure, not a shared method: callers may hand `caller` on detached from the context.
    caller() {
      if (!callerPromise) {
        callerPromise = apiKey === '' ? Promise.reject(new MissingApiKeyError()) : authenticateApiKey(() => context.em, apiKey, dependencies.apiKeyCache);
        // Keep an unobserved rejection from being reported as unhandled; callers still see it.
        callerPromise.catch(() => {});
      }
      return callerPromise;
    },
  } as unknown as RequestContext;
  return Object.defineProperties(context, lazyAccessors);
}
