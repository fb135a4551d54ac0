/**
 * Keeps the delivery history from growing without end: settled queue rows (delivered, or given up)
 * and settled webhook deliveries (with their attempts) older than the retention are deleted, in
 * batches, by a sweep every instance with a worker runs (several at once only share the work:
 * `skip locked` keeps them off each other's rows). What is still pending is never touched, and
 * the audit trail (the record of what was sent) is not part of this: it is kept for good.
 *
 * Safe because nothing reads a settled row again: reminder windows are decided from the audit
 * trail (`reminder.queued`), the final copy is queued once by its seal job, and a webhook
 * redelivery needs its delivery row, which is kept as long as its log is shown.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Clock } from '../../shared/clock.ts';
import type { Logger } from '../../shared/logger.ts';

const DAY_MS = 24 * 60 * 60 * 1000;
const BATCH = 1000;

export type PruneOptions = {
  em: EntityManager;
  now: Date;
  retentionDays: number;
  /** Only this team's rows: tests on a shared database keep a sweep to their own. */
  teamId?: string;
};

/** Deletes settled history older than the retention; answers how many rows of each kind went. */
export async function pruneDeliveryHistory(options: PruneOptions): Promise<{ outboxMessages: number; webhookDeliveries: number }> {
  const cutoff = new Date(options.now.getTime() - options.retentionDays * DAY_MS);
  const em = options.em.fork();
  const outboxTeam = options.teamId === undefined ? '' : `and payload ->> 'teamId' = ?`;
  const deliveryTeam = options.teamId === undefined ? '' : 'and team_id = ?';
  const team = options.teamId === undefined ? [] : [options.teamId];
  let outboxMessages = 0;
  let webhookDeliveries = 0;
  for (;;) {
    const rows = await em.execute<{ id: string }[]>(
      `delete from outbox_message
        where id in (select id from outbox_message where processed_at < ? ${outboxTeam} limit ${BATCH} for update skip locked)
           or id in (select id from outbox_message where failed_at < ? ${outboxTeam} limit ${BATCH} for update skip locked)
       returning id`,
      [cutoff, ...team, cutoff, ...team],
    );
    outboxMessages += rows.length;
    if (rows.length === 0) break;
  }
  for (;;) {
    // Attempts go with their delivery (on delete cascade).
    const rows = await em.execute<{ id: string }[]>(
      `delete from webhook_delivery where id in (
         select id from webhook_delivery
          where state in ('delivered', 'failed') and created_at < ? ${deliveryTeam}
          limit ${BATCH} for update skip locked)
       returning id`,
      [cutoff, ...team],
    );
    webhookDeliveries += rows.length;
    if (rows.length < BATCH) break;
  }
  return { outboxMessages, webhookDeliveries };
}

/** Runs the prune every `intervalMs` (and once shortly after start) until stopped; a failure is logged and retried next time. */
export function startHousekeeping(options: { em: EntityManager; clock: Clock; logger: Logger; retentionDays: number; intervalMs: number }): { stop(): Promise<void> } {
  let running: Promise<unknown> = Promise.resolve();
  const run = () => {
    running = running.then(() =>
      pruneDeliveryHistory({ em: options.em, now: options.clock.now(), retentionDays: options.retentionDays }).then(
        (pruned) => {
          if (pruned.outboxMessages > 0 || pruned.webhookDeliveries > 0) options.logger.info(pruned, 'pruned settled delivery history');
        },
        (error: unknown) => options.logger.warn({ err: { message: (error as Error)?.message } }, 'delivery history prune failed'),
      ),
    );
  };
  const first = setTimeout(run, 60_000);
  first.unref();
  const timer = setInterval(run, options.intervalMs);
  timer.unref();
  return {
    async stop() {
      clearTimeout(first);
      clearInterval(timer);
      await running;
    },
  };
}
