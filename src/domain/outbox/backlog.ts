/**
 * The queue's backlog as metrics read it at scrape time: how many messages wait, and how long the
 * oldest due one has waited, per topic. One statement over the pending rows (the partial index on
 * `available_at where processed_at is null` serves it); nothing is kept between scrapes, so every
 * instance reports the same whole-queue values (aggregate with max, not sum).
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Clock } from '../../shared/clock.ts';
import type { Logger } from '../../shared/logger.ts';
import type { Metrics } from '../../shared/metrics.ts';

export type OutboxBacklog = { topic: string; pending: number; oldestAgeSeconds: number }[];

/**
 * Pending: neither delivered nor failed, scheduled ones included. Oldest age: since the oldest
 * due message became available (a retry's backoff restarts it; a message scheduled for later is
 * not late), 0 when none is due. Ages run on the service clock, as the worker's claims do.
 */
export async function readOutboxBacklog(em: EntityManager, now: Date): Promise<OutboxBacklog> {
  const rows = await em.fork().execute<{ topic: string; pending: string | number; oldest_age_seconds: string | number | null }[]>(
    `select topic, count(*) as pending,
            extract(epoch from (?::timestamptz - min(available_at) filter (where available_at <= ?::timestamptz)))::float8 as oldest_age_seconds
       from outbox_message
      where processed_at is null and failed_at is null
      group by topic`,
    [now, now],
  );
  return rows.map((row) => ({ topic: row.topic, pending: Number(row.pending), oldestAgeSeconds: Math.max(0, Number(row.oldest_age_seconds ?? 0)) }));
}

/**
 * Refreshes the backlog gauges before each scrape. A topic whose rows are all settled drops out
 * of the gauges (reset first); so do all of them when the database cannot be read, which a
 * logged warning explains, rather than showing the last values as if they were current.
 */
export function watchOutboxBacklog(metrics: Pick<Metrics, 'onScrape' | 'outboxPending' | 'outboxOldestAge'>, dependencies: { em: EntityManager; clock: Clock; logger: Logger }): () => void {
  return metrics.onScrape(async () => {
    let backlog: OutboxBacklog = [];
    try {
      backlog = await readOutboxBacklog(dependencies.em, dependencies.clock.now());
    } catch (error) {
      dependencies.logger.warn({ err: { message: (error as Error)?.message } }, 'metrics: could not read the outbox backlog');
    }
    metrics.outboxPending.reset();
    metrics.outboxOldestAge.reset();
    for (const row of backlog) {
      metrics.outboxPending.set({ topic: row.topic }, row.pending);
      metrics.outboxOldestAge.set({ topic: row.topic }, row.oldestAgeSeconds);
    }
  });
}
