import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

/**
 * The service's Prometheus metrics: every definition in one place, on a registry of its own per
 * app instance (never prom-client's global one), so tests that build several apps in one process
 * never see each other's counts or collide on a name. The domain and the faces both import this
 * (it lives in shared/, below both); what each metric means and what to alert on is in
 * docs/operations.md#metrics.
 *
 * Labels never carry ids, names, emails or tokens: routes are templates, GraphQL operation names
 * are bounded (`operationNameLabel`), everything else is a fixed set of values.
 */

/** Seconds: from a fast read (a few ms) up to a slow upload or seal (a minute). */
const REQUEST_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** Sealing an envelope runs PDF work in worker threads: tenths of a second to minutes. */
const SEAL_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/** At most this many distinct GraphQL operation names per process; later new names count as `other`. */
export const MAX_OPERATION_NAMES = 100;
const OPERATION_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

/** Work a scrape runs before the registry is read (gauges that are read, not kept: the outbox backlog, the pool). */
export type ScrapeRefresher = () => void | Promise<void>;

export type Metrics = ReturnType<typeof createMetrics>;

export function createMetrics(options: { defaultMetrics?: boolean } = {}) {
  const registry = new Registry();
  const registers = [registry];
  // Process metrics (CPU, memory, heap, GC, handles) and event-loop lag (nodejs_eventloop_lag_seconds).
  if (options.defaultMetrics !== false) collectDefaultMetrics({ register: registry });

  const refreshers = new Set<ScrapeRefresher>();
  const operationNames = new Set<string>();

  return {
    registry,
    httpRequestDuration: new Histogram({
      name: 'http_server_request_duration_seconds',
      help: 'HTTP requests served, by route template, method and status: time until the response head (streams end later).',
      labelNames: ['route', 'method', 'status'] as const,
      buckets: REQUEST_BUCKETS,
      registers,
    }),
    graphqlOperationDuration: new Histogram({
      name: 'graphql_operation_duration_seconds',
      help: 'GraphQL operations executed (after parsing and validation), by operation name and type; a subscription until its stream is set up.',
      labelNames: ['operation_name', 'operation_type', 'result'] as const,
      buckets: REQUEST_BUCKETS,
      registers,
    }),
    outboxPending: new Gauge({
      name: 'envelope_outbox_pending',
      help: 'Outbox messages neither delivered nor failed (scheduled ones included), by topic; the whole queue, read at scrape time.',
      labelNames: ['topic'] as const,
      registers,
    }),
    outboxOldestAge: new Gauge({
      name: 'envelope_outbox_oldest_age_seconds',
      help: 'How long the oldest due outbox message has waited for a worker (since it became available), by topic; 0 when none is due.',
      labelNames: ['topic'] as const,
      registers,
    }),
    outboxFailed: new Counter({
      name: 'envelope_outbox_failed_total',
      help: 'Outbox messages this instance gave up on for good (attempts exhausted or a permanent error), by topic.',
      labelNames: ['topic'] as const,
      registers,
    }),
    sealDuration: new Histogram({
      name: 'envelope_seal_duration_seconds',
      help: 'Sealing a finalized envelope (render, seal and store every document), by outcome.',
      labelNames: ['outcome'] as const,
      buckets: SEAL_BUCKETS,
      registers,
    }),
    statusTransitions: new Counter({
      name: 'envelope_status_transitions_total',
      help: 'Envelope status changes committed by this instance, by previous and new status (none → draft: created; → deleted: a draft deleted).',
      labelNames: ['from', 'to'] as const,
      registers,
    }),
    subscriptionsOpen: new Gauge({
      name: 'envelope_subscriptions_open',
      help: 'Live subscriptions open on this instance.',
      registers,
    }),
    rateLimited: new Counter({
      name: 'envelope_rate_limited_total',
      help: 'Requests refused with Request.RateLimited, by budget (apiKey, client, signingToken).',
      labelNames: ['scope'] as const,
      registers,
    }),
    zipDownloads: new Counter({
      name: 'envelope_zip_downloads_total',
      help: "Streamed ZIPs of an envelope's documents, by how they ended: completed, client_gone (the client went away; no document after it was opened), failed.",
      labelNames: ['outcome'] as const,
      registers,
    }),
    blobStoreErrors: new Counter({
      name: 'envelope_blob_store_errors_total',
      help: "Blob store failures on the service's side (not the sender's), by operation.",
      labelNames: ['operation'] as const,
      registers,
    }),
    dbPoolTotal: new Gauge({ name: 'envelope_db_pool_connections', help: 'Connections open in the database pool (busy and idle).', registers }),
    dbPoolIdle: new Gauge({ name: 'envelope_db_pool_idle_connections', help: 'Idle connections in the database pool.', registers }),
    dbPoolWaiting: new Gauge({ name: 'envelope_db_pool_waiting_requests', help: 'Queries waiting for a free connection from the database pool.', registers }),

    /**
     * The `operation_name` label of a caller-chosen name: the name itself when it looks like a
     * name and is one of the first MAX_OPERATION_NAMES seen, `other` after that or for anything
     * else, `anonymous` without one. A client inventing names cannot grow the series without bound.
     */
    operationNameLabel(name: string | null | undefined): string {
      if (!name) return 'anonymous';
      if (!OPERATION_NAME.test(name)) return 'other';
      if (operationNames.has(name)) return name;
      if (operationNames.size >= MAX_OPERATION_NAMES) return 'other';
      operationNames.add(name);
      return name;
    },

    /** Runs `refresh` before every scrape; answers its removal. */
    onScrape(refresh: ScrapeRefresher): () => void {
      refreshers.add(refresh);
      return () => refreshers.delete(refresh);
    },

    /**
     * The text exposition, after every refresher ran, one after the other in the order they were
     * registered (the pool's first, so it never sees the scrape's own query waiting). A failing
     * refresher (the database is away) reports itself; the rest of the scrape still answers.
     */
    async scrape(): Promise<string> {
      for (const refresh of refreshers) {
        try {
          await refresh();
        } catch {
          // The refresher's own business (watchOutboxBacklog logs and clears its gauges).
        }
      }
      return registry.metrics();
    },
  };
}
