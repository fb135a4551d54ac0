/**
 * The queue's own housekeeping: settled rows (delivered, or given up) older than the retention
 * are deleted in batches under `skip locked`, so several instances sweeping at once only share
 * the work; pending rows are never touched. Features prune their own delivery ledgers beside it
 * (notification/delivery-history.ts composes the sweep); the scheduler here runs whatever prune
 * it is given.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Clock } from '../../shared/clock.ts';
import type { Logger } from '../../shared/logger.ts';

const DAY_MS = 24 * 60 * 60 * 1000;
const BATCH = 1000;

export function retentionCutoff(now: Date, retentionDays: number): Date {
  return new Date(now.getTime() - retentionDays * DAY_MS);
}

/** Deletes settled queue rows older than `cutoff` (with `teamId`, only that team's: tests share a database). */
export async function pruneSettledOutboxMessages(options: { em: EntityManager; cutoff: Date; teamId?: string }): Promise<number> {
  const team = options.teamId === undefined ? '' : `and payload ->> 'teamId' = ?`;
  const teamParameter = options.teamId === undefined ? [] : [options.teamId];
  let deleted = 0;
  for (;;) {
    const rows = await options.em.execute<{ id: string }[]>(
      `delete from outbox_message
        where id in (select id from outbox_message where processed_at < ? ${team} limit ${BATCH} for update skip locked)
           or id in (select id from outbox_message where failed_at < ? ${team} limit ${BATCH} for update skip locked)
       returning id`,
      [options.cutoff, ...teamParameter, options.cutoff, ...teamParameter],
    );
    deleted += rows.length;
    if (rows.length === 0) return deleted;
  }
}

/** Deletes the rows `select` (a query of ids) finds in `table`, a batch at a time, skipping rows others hold. */
export async function deleteInBatches(em: EntityManager, select: string, table: string, parameters: unknown[]): Promise<number> {
  let deleted = 0;
  for (;;) {
    const rows = await em.execute<{ id: string }[]>(`delete from ${table} where id in (${select} limit ${BATCH} for update skip locked) returning id`, parameters);
    deleted += rows.length;
    if (rows.length < BATCH) return deleted;
  }
}

/** Runs `prune` every `intervalMs` (and once a minute after start) until stopped; a failure is logged and retried next time. */
export function startHousekeeping(options: { clock: Clock; logger: Logger; intervalMs: number; prune: (now: Date) => Promise<Record<string, number>> }): { stop(): Promise<void> } {
  let running: Promise<unknown> = Promise.resolve();
  const run = () => {
    running = running.then(() =>
      options.prune(options.clock.now()).then(
        (pruned) => {
          if (Object.values(pruned).some((count) => count > 0)) options.logger.info(pruned, 'housekeeping pruned settled history and orphaned objects');
        },
        (error: unknown) => options.logger.warn({ err: { message: (error as Error)?.message } }, 'housekeeping prune failed'),
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
