import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { listenForNotifications } from '../../db/notification-listener.ts';
import type { Logger } from '../../shared/logger.ts';

/**
 * Waking the outbox workers when a job is written, instead of leaving it to their next poll
 * (a second away by default): the seal job after the last signature, the next signer's
 * invitation, a webhook. `enqueue` sends `pg_notify(OUTBOX_WAKE_CHANNEL, topic)` in the statement
 * that writes the row, so on a PostgreSQL server every instance hears, on commit and only then,
 * that a job of that topic is due; on the embedded database (one backend, this process alone)
 * the same news comes from this process's own commits. Polling stays, for jobs that come due
 * later (`runAt`, retries) and for a listener that is down: a wake-up is an optimisation, never
 * the only way a job runs.
 */
export const OUTBOX_WAKE_CHANNEL = 'outbox_message';

export type OutboxWakeListener = (topic: string) => void;

/** Topics written inside a transaction that has not committed yet (weak: an abandoned transaction's set goes with it). */
const pendingByTransaction = new WeakMap<object, Set<string>>();
/** Listeners of this process's commits, on the embedded database (see `startOutboxWakeups`). */
const localListeners = new Set<OutboxWakeListener>();

/** Called by `enqueue` for each row written: the wake-up goes out once the row is visible to the workers. */
export function noteEnqueued(em: EntityManager, topic: string): void {
  if (localListeners.size === 0) return;
  const transaction = em.getTransactionContext() as object | undefined;
  if (!transaction) {
    // Written outside a transaction: committed already.
    for (const listener of localListeners) listener(topic);
    return;
  }
  const pending = pendingByTransaction.get(transaction);
  if (pending) pending.add(topic);
  else pendingByTransaction.set(transaction, new Set([topic]));
}

const subscribed = new WeakSet<MikroORM>();

/** On the embedded database: wakes the local listeners with the topics each transaction wrote, once it commits (a savepoint's wait for the outer commit). */
function wakeOnLocalCommits(orm: MikroORM): void {
  if (subscribed.has(orm)) return;
  subscribed.add(orm);
  let fromSavepoints = new Set<string>();
  const take = (transaction: object) => {
    const topics = pendingByTransaction.get(transaction);
    pendingByTransaction.delete(transaction);
    return topics ?? new Set<string>();
  };
  orm.em.getEventManager().registerSubscriber({
    afterTransactionCommit({ transaction }) {
      if (!transaction) return;
      const topics = take(transaction);
      if ('savepointName' in transaction && transaction.savepointName) {
        for (const topic of topics) fromSavepoints.add(topic);
        return;
      }
      const all = new Set([...fromSavepoints, ...topics]);
      fromSavepoints = new Set();
      for (const topic of all) for (const listener of localListeners) listener(topic);
    },
    afterTransactionRollback({ transaction }) {
      if (!transaction) return;
      take(transaction);
      if (!('savepointName' in transaction && transaction.savepointName)) fromSavepoints = new Set();
    },
  });
}

/**
 * Calls `wake(topic)` whenever a job of `topic` is written and committed: by LISTEN on a
 * PostgreSQL server (`connectionString`: every instance's jobs), by this process's commits on the
 * embedded database. Answers its end.
 */
export async function startOutboxWakeups(options: { orm: MikroORM; connectionString: string | undefined; logger: Logger; wake: OutboxWakeListener }): Promise<{ close(): Promise<void> }> {
  if (options.connectionString === undefined) {
    wakeOnLocalCommits(options.orm);
    localListeners.add(options.wake);
    return { close: async () => void localListeners.delete(options.wake) };
  }
  const listener = await listenForNotifications({
    connectionString: options.connectionString,
    channels: [OUTBOX_WAKE_CHANNEL],
    name: 'outbox-wakeups',
    messages: { up: 'listening for new outbox jobs', down: 'outbox wake-up listener disconnected: jobs are taken at the next poll until it is back' },
    logger: options.logger,
    onNotification: (_channel, topic) => options.wake(topic),
    // While down, the workers' polls take every job (a second later than a wake-up would).
    onUp: () => {},
    onDown: () => {},
  });
  return listener;
}
