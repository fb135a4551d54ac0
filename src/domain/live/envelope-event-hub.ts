import type { MikroORM } from '@mikro-orm/postgresql';
import { listenForNotifications, type NotificationListener } from '../../db/notification-listener.ts';
import type { Logger } from '../../shared/logger.ts';
import type { Metrics } from '../../shared/metrics.ts';
import { API_KEY_REVOKED_CHANNEL, onApiKeyRevokedInProcess } from '../team/api-key-cache.ts';
import { ENVELOPE_EVENT_CHANNEL, type EnvelopeEvent, fromNotifyPayload, STATUS_BEFORE_EVENT, setsStatus, takePending } from './envelope-event.ts';
import { SubscriptionLimitError } from './live.errors.ts';

export type LiveLimits = {
  /** Open subscriptions one API key may hold on one instance. */
  perApiKey: number;
  /** Open subscriptions on one WebSocket connection. */
  perConnection: number;
  /** Events queued for one subscriber that is not reading; past it the subscriber is dropped (it resumes by sequence). */
  maxQueuedEvents: number;
};

export const LIVE_LIMITS: LiveLimits = { perApiKey: 1_000, perConnection: 100, maxQueuedEvents: 1_000 };

type Listener = (event: EnvelopeEvent) => void;

function add<K, V>(map: Map<K, Set<V>>, key: K, value: V): () => void {
  let set = map.get(key);
  if (!set) map.set(key, (set = new Set()));
  set.add(value);
  return () => {
    set.delete(value);
    if (set.size === 0 && map.get(key) === set) map.delete(key);
  };
}

/**
 * The process's switchboard for live envelope events: whoever watches an envelope (or a team) is
 * called with each event published for it, in publication order. It holds no events itself;
 * catching up is the subscription's business (from the audit table, by sequence).
 *
 * Events come in after their transaction committed, never before: on a PostgreSQL server from
 * the NOTIFY each append sends in its transaction (`listenForEnvelopeEvents`, one connection per
 * instance, so every instance hears every instance's events in commit order); on the embedded
 * database from the ORM's after-commit hook (`publishOnCommit`).
 */
export class EnvelopeEventHub {
  readonly limits: LiveLimits;
  readonly #byEnvelope = new Map<string, Set<Listener>>();
  readonly #byTeam = new Map<string, Set<Listener>>();
  readonly #byRevokedKey = new Map<string, Set<() => void>>();
  readonly #onInterrupted = new Set<(reason: 'connection_lost' | 'shutting_down') => void>();
  readonly #openByKey = new Map<string, number>();
  #available = true;
  readonly #stopWatchingRevocations: () => void;

  constructor(limits: Partial<LiveLimits> = {}) {
    this.limits = { ...LIVE_LIMITS, ...limits };
    this.#stopWatchingRevocations = onApiKeyRevokedInProcess((apiKeyId) => this.keyRevoked(apiKeyId));
  }

  publish(event: EnvelopeEvent): void {
    for (const listener of this.#byEnvelope.get(event.envelopeId) ?? []) listener(event);
    for (const listener of this.#byTeam.get(event.teamId) ?? []) listener(event);
  }

  watchEnvelope(envelopeId: string, listener: Listener): () => void {
    return add(this.#byEnvelope, envelopeId, listener);
  }

  watchTeam(teamId: string, listener: Listener): () => void {
    return add(this.#byTeam, teamId, listener);
  }

  /** Calls `ended` once the key is revoked (in this process or, on a server, any other). */
  watchRevocation(apiKeyId: string, ended: () => void): () => void {
    return add(this.#byRevokedKey, apiKeyId, ended);
  }

  keyRevoked(apiKeyId: string): void {
    for (const ended of [...(this.#byRevokedKey.get(apiKeyId) ?? [])]) ended();
  }

  /** Calls `ended` when events stop arriving (the event connection dropped, or shutdown). */
  watchInterruption(ended: (reason: 'connection_lost' | 'shutting_down') => void): () => void {
    this.#onInterrupted.add(ended);
    return () => this.#onInterrupted.delete(ended);
  }

  interrupt(reason: 'connection_lost' | 'shutting_down'): void {
    for (const ended of [...this.#onInterrupted]) ended(reason);
  }

  /** False while this instance hears no events (its listener is reconnecting): subscribing is refused then. */
  get available(): boolean {
    return this.#available;
  }

  setAvailable(available: boolean): void {
    this.#available = available;
  }

  /** Counts an open subscription of the key; refused by name past the limit. Answers its release (idempotent). */
  open(apiKeyId: string, scope: 'apiKey' | 'signingLink' = 'apiKey'): () => void {
    const open = this.#openByKey.get(apiKeyId) ?? 0;
    if (open >= this.limits.perApiKey) throw new SubscriptionLimitError(scope, this.limits.perApiKey);
    this.#openByKey.set(apiKeyId, open + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const now = (this.#openByKey.get(apiKeyId) ?? 1) - 1;
      if (now <= 0) this.#openByKey.delete(apiKeyId);
      else this.#openByKey.set(apiKeyId, now);
    };
  }

  /** Subscriptions open on this instance (every key's), for metrics. */
  get openCount(): number {
    let count = 0;
    for (const open of this.#openByKey.values()) count += open;
    return count;
  }

  /** Watchers registered now (envelopes and teams), for tests and metrics. */
  get watcherCount(): number {
    let count = 0;
    for (const set of this.#byEnvelope.values()) count += set.size;
    for (const set of this.#byTeam.values()) count += set.size;
    return count;
  }

  close(): void {
    this.interrupt('shutting_down');
    this.#stopWatchingRevocations();
  }
}

/** Called with the envelope events of each committed transaction, in sequence order. */
export type CommittedEventsListener = (events: EnvelopeEvent[]) => void;

/** One after-commit subscriber per ORM, shared by every listener (the pending events are taken once). */
const committedListeners = new WeakMap<MikroORM, Set<CommittedEventsListener>>();

/**
 * Calls `listener` with the envelope events each transaction of this ORM appended, once it
 * commits (never those of one that rolls back); answers its removal. A savepoint's events wait
 * for the next outer commit: on the embedded database (a pool of one, one transaction at a time)
 * that is its own transaction's; on a server, where only metrics listen here, a concurrent
 * transaction may carry them, which changes when they are counted, not whether.
 */
export function onEnvelopeEventsCommitted(orm: MikroORM, listener: CommittedEventsListener): () => void {
  let listeners = committedListeners.get(orm);
  if (!listeners) {
    const registered = new Set<CommittedEventsListener>();
    listeners = registered;
    committedListeners.set(orm, registered);
    let fromSavepoints: EnvelopeEvent[] = [];
    orm.em.getEventManager().registerSubscriber({
      afterTransactionCommit({ transaction }) {
        if (!transaction) return;
        const events = takePending(transaction);
        if ('savepointName' in transaction && transaction.savepointName) {
          fromSavepoints.push(...events);
          return;
        }
        const all = [...fromSavepoints, ...events].sort((a, b) => a.sequence - b.sequence);
        fromSavepoints = [];
        if (all.length === 0) return;
        for (const each of registered) each(all);
      },
      afterTransactionRollback({ transaction }) {
        if (!transaction) return;
        takePending(transaction);
        if (!('savepointName' in transaction && transaction.savepointName)) fromSavepoints = [];
      },
    });
  }
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/**
 * Publishes, on the embedded database, the events each transaction appended once it commits
 * (never those of one that rolls back). The embedded database serves one transaction at a time
 * (a pool of one), so a savepoint's events wait for the one outer transaction's commit.
 */
export function publishOnCommit(orm: MikroORM, hub: EnvelopeEventHub): void {
  onEnvelopeEventsCommitted(orm, (events) => {
    for (const event of events) hub.publish(event);
  });
}

/**
 * Counts every status change this instance commits (`envelope_status_transitions_total`): the
 * status events are the one door every change goes through (each guarded update records one in
 * its transaction), and counting after commit leaves out changes that rolled back. Other
 * instances' changes are theirs to count (they arrive here by NOTIFY, not through this hook).
 * Answers the counting's end.
 */
export function countStatusTransitions(orm: MikroORM, metrics: Pick<Metrics, 'statusTransitions'>): () => void {
  return onEnvelopeEventsCommitted(orm, (events) => {
    for (const event of events) {
      if (!setsStatus(event.type)) continue;
      metrics.statusTransitions.inc({ from: STATUS_BEFORE_EVENT[event.type], to: event.status ?? 'deleted' });
    }
  });
}

/**
 * Feeds the hub from a PostgreSQL server: envelope events and key revocations from every
 * instance sharing it, this one included, in commit order. While the connection is down the hub
 * is unavailable (new subscriptions are refused by name) and open subscriptions end with
 * `Subscription.Interrupted` (they resume by sequence), since events may be missed meanwhile.
 */
export function listenForEnvelopeEvents(options: { connectionString: string; hub: EnvelopeEventHub; logger: Logger }): Promise<NotificationListener> {
  const { hub } = options;
  return listenForNotifications({
    connectionString: options.connectionString,
    channels: [ENVELOPE_EVENT_CHANNEL, API_KEY_REVOKED_CHANNEL],
    name: 'live-events',
    messages: { up: 'listening for envelope events', down: 'envelope event listener disconnected: live subscriptions ended, new ones refused until it is back' },
    logger: options.logger,
    onNotification(channel, payload) {
      if (channel === API_KEY_REVOKED_CHANNEL) {
        hub.keyRevoked(payload);
        return;
      }
      const event = fromNotifyPayload(payload);
      if (event) hub.publish(event);
    },
    onUp: () => hub.setAvailable(true),
    onDown() {
      // Called at the start as well: nothing was open yet, so nothing is interrupted then.
      hub.setAvailable(false);
      hub.interrupt('connection_lost');
    },
  });
}

/**
 * The hub as the composition root (runtime.ts) builds it: on a PostgreSQL server (`connectionString`) fed by LISTEN, so
 * every instance hears every instance's events; on the embedded database (it belongs to this
 * process alone, and no notification crosses its single backend) by this process's commits.
 */
export async function startEnvelopeEvents(options: {
  orm: MikroORM;
  connectionString: string | undefined;
  logger: Logger;
  limits?: Partial<LiveLimits>;
}): Promise<{ hub: EnvelopeEventHub; close(): Promise<void> }> {
  const hub = new EnvelopeEventHub(options.limits);
  if (options.connectionString === undefined) {
    publishOnCommit(options.orm, hub);
    return { hub, close: async () => hub.close() };
  }
  const listener = await listenForEnvelopeEvents({ connectionString: options.connectionString, hub, logger: options.logger });
  return {
    hub,
    async close() {
      hub.close();
      await listener.close();
    },
  };
}
