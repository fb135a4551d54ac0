/**
 * The generic outbox worker: runs the handler registered for each due `outbox_message` row's
 * topic, acknowledges it, retries failures with backoff, and records the ones it gives up on.
 *
 * Claiming is one statement (`for update skip locked` inside an `update ... returning`), so
 * several instances never take the same row at once, and it works unchanged on the embedded
 * database. A claim is a lease (`locked_until`), renewed while the handler runs: a worker that
 * crashes between claim and acknowledgement leaves a lease that runs out, and the row is taken
 * again. Every claim increments `attempts`, and the acknowledgement, the retry and the failure are
 * guarded by that number: a worker whose lease was lost and retaken cannot acknowledge (or
 * reschedule) the newer claim. Handlers must therefore be idempotent (a crash after the work and
 * before the acknowledgement runs it again); the artefact handler is (artefact.service.ts). An
 * outcome the database cannot take right now (it restarts) is kept and recorded once it is back
 * (`persistently`), so an outage alone never runs a finished job twice.
 *
 * Topics without a handler are never claimed: a row waits until a build that knows its topic runs.
 */
import os from 'node:os';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { JsonObject } from '../../db/columns.ts';
import type { Clock } from '../../shared/clock.ts';
import { type FailureReason, failureDetail, failureReasonOf, ReasonedError } from '../../shared/failure-reason.ts';
import type { Logger } from '../../shared/logger.ts';
import type { Metrics } from '../../shared/metrics.ts';
import { isConnectionFailure } from '../../shared/normalize-error.ts';
import { redactSecrets } from '../../shared/redact.ts';
import { contextFromTraceparent, recordActiveFailure, SpanKind, withSpan } from '../../shared/tracing.ts';
import { markOutboxMessageDelivered } from './outbox.ts';
import type { OutboxPayloads, OutboxTopic } from './topics.ts';

export type OutboxMessageClaim = {
  id: string;
  topic: string;
  payload: JsonObject;
  /** This claim's number (1 for the first); also the fencing token of the acknowledgement. */
  attempt: number;
  /** The W3C `traceparent` recorded when the message was enqueued (outbox.ts), if any. */
  traceParent?: string | null;
};

export type OutboxHandlerContext = {
  /** A fresh entity manager for this message (not in a transaction). */
  em: EntityManager;
  now: Date;
  logger: Logger;
};

type IsAny<T> = 0 extends 1 & T ? true : false;

/**
 * The claim of a message of `Topic`, typed as its topic's payload (topics.ts `OutboxPayloads`, the
 * one map `enqueue` types its payload by too), as graphile-worker types a task's payload by its
 * name. A union of topics is a union of claims, told apart by `topic`. `string` (a test's own
 * topic) is the untyped claim; a name that is no topic (a typo) is `never`; `any` is the
 * registry's "some topic's handler".
 */
export type OutboxClaimOf<Topic extends string> =
  IsAny<Topic> extends true
    ? Omit<OutboxMessageClaim, 'topic' | 'payload'> & { topic: any; payload: any }
    : Topic extends OutboxTopic
      ? Omit<OutboxMessageClaim, 'topic' | 'payload'> & { topic: Topic; payload: OutboxPayloads[Topic] }
      : string extends Topic
        ? OutboxMessageClaim
        : never;

/**
 * Runs a message's work: `OutboxHandler<'artefact.seal'>` gets the seal payload, typed. It may
 * answer a step to run inside the acknowledgement's transaction (e.g. the `invitation.sent` audit
 * event): that step happens once per message, only with the acknowledgement that wins, even when
 * the work itself ran twice.
 */
export type OutboxHandler<Topic extends string = string> = (message: OutboxClaimOf<Topic>, context: OutboxHandlerContext) => Promise<void | OutboxAcknowledgementStep>;

/** A worker's handlers by topic, each registered by `handles` with its topic's payload type. */
export type OutboxHandlers = ReadonlyMap<string, OutboxHandler<any>>;

/**
 * One registration: the handler of `topic`, typed by it, so a handler can only be registered under
 * the topic whose payload it reads (`new Map([handles(OUTBOX_TOPICS.sealArtefacts, sealHandler)])`).
 */
export function handles<Topic extends OutboxTopic>(topic: Topic, handler: OutboxHandler<Topic>): [Topic, OutboxHandler<any>] {
  return [topic, handler];
}

/**
 * A stored claim read as its topic's typed claim, for code that takes any claim and tells the
 * topics apart (a failure hook). Every row was written by `enqueue` (typed by the same map) or by
 * `enqueueSelected` (whose SQL builds the payload its topic's type names).
 */
export function typedClaim(message: OutboxMessageClaim): OutboxClaimOf<OutboxTopic> {
  return message as OutboxClaimOf<OutboxTopic>;
}
export type OutboxAcknowledgementStep = (em: EntityManager) => Promise<void>;

/**
 * Called once when a message is given up for good (after its row records the failure), with the
 * reason its caller may see (shared/failure-reason.ts): never the error itself, which is logged.
 */
export type OutboxFailureHook = (message: OutboxMessageClaim, reason: FailureReason, context: { em: EntityManager; now: Date }) => Promise<void>;

/** Called when a failed attempt was rescheduled, in the reschedule's transaction (e.g. the webhook log's "next retry"). */
export type OutboxRetryHook = (message: OutboxMessageClaim, reason: FailureReason, context: { em: EntityManager; now: Date; retryAt: Date }) => Promise<void>;

/**
 * A handler throws this for a failure no retry can fix (e.g. the envelope is gone): recorded at
 * once. The reason is what callers see; the detail (default: the reason's description) is logged.
 * A handler throws a plain `ReasonedError` for a failure worth retrying that still has a reason
 * to show; anything else thrown is shown as `internal_error`.
 */
export class PermanentOutboxError extends ReasonedError {
  constructor(reason: FailureReason, detail?: string) {
    super(reason, detail);
    this.name = 'PermanentOutboxError';
  }
}

export type OutboxWorkerOptions = {
  em: EntityManager;
  clock: Clock;
  logger: Logger;
  handlers: OutboxHandlers;
  /** Pause between polls when nothing was due. */
  pollIntervalMs?: number;
  /** How long a claim holds before another worker may take the row (renewed while the handler runs). */
  leaseMs?: number;
  /** How often a running handler's lease is renewed (default a third of the lease). */
  renewIntervalMs?: number;
  /** Claims per message before it is recorded as failed. */
  maxAttempts?: number;
  /** Backoff after the n-th failed attempt: min(maxBackoffMs, baseBackoffMs · 2^(n-1)), then full jitter in [50 %, 100 %]. */
  baseBackoffMs?: number;
  maxBackoffMs?: number;
  /** Messages handled at once by this worker. */
  concurrency?: number;
  /**
   * At most this many messages of a topic in hand at once (within `concurrency`): the seal jobs,
   * bounded by the PDF threads that do their work, never take every slot from the mails.
   */
  topicConcurrency?: Readonly<Record<string, number>>;
  random?: () => number;
  /**
   * Only rows whose payload contains this object (`payload @> …`), or one of these objects. Tests
   * on a shared database use it to keep a worker to their own teams' rows; production workers
   * take every row.
   */
  payloadMatch?: Record<string, string> | Record<string, string>[];
  /** Makes a permanent failure visible beyond the row (an audit event for notifications). */
  onFailed?: OutboxFailureHook;
  /** Makes a rescheduled attempt visible beyond the row (the webhook delivery log's next retry). */
  onRetry?: OutboxRetryHook;
  /** Recorded on each claim (`claimed_by`), so an operator sees which instance holds a job; default this process's host/pid. */
  claimant?: string;
  /** Counts the messages given up for good (`envelope_outbox_failed_total`). */
  metrics?: Pick<Metrics, 'outboxFailed'>;
};

export const OUTBOX_WORKER_DEFAULTS = {
  pollIntervalMs: 1000,
  leaseMs: 5 * 60_000,
  maxAttempts: 10,
  baseBackoffMs: 5_000,
  maxBackoffMs: 30 * 60_000,
  concurrency: 2,
} as const;

export type OutboxWorker = {
  start(): void;
  /** Claims and handles due messages until none is left (or `limit` were handled); answers how many were handled. */
  drain(limit?: number): Promise<number>;
  /**
   * A job of `topic` was just committed (wakeups.ts): if this worker handles it, claim now rather
   * than at the next poll. Coalesced: during a drain it asks for one more round after it.
   */
  wake(topic: string): void;
  /** Stops polling and waits for the messages in hand. */
  stop(): Promise<void>;
};

/** The delay before the next attempt after `attempt` failed ones. */
export function outboxBackoffMs(attempt: number, options: { baseBackoffMs: number; maxBackoffMs: number; random: () => number }): number {
  const exponential = Math.min(options.maxBackoffMs, options.baseBackoffMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(exponential * (0.5 + 0.5 * options.random()));
}

export function createOutboxWorker(options: OutboxWorkerOptions): OutboxWorker {
  // An option given as undefined keeps its default.
  const given = Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined)) as OutboxWorkerOptions;
  const settings = { ...OUTBOX_WORKER_DEFAULTS, random: Math.random, claimant: `${os.hostname()}/${process.pid}`, ...given };
  const topics = [...settings.handlers.keys()];
  const limits = new Map(Object.entries(settings.topicConcurrency ?? {}).filter(([topic]) => settings.handlers.has(topic)));
  /** Drains waiting for a job in hand to finish, told of a wake-up (a slot may be free for it). */
  const nudges = new Set<() => void>();
  const matches = settings.payloadMatch === undefined ? [] : Array.isArray(settings.payloadMatch) ? settings.payloadMatch : [settings.payloadMatch];
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let stoppedAt = 0;
  let polling: Promise<unknown> = Promise.resolve();

  /**
   * Records a message's outcome (acknowledgement, reschedule, failure) even across a database
   * outage: the work is done (a mail left, a webhook was answered), and an outcome that is lost
   * runs the work again once the lease runs out. A statement that fails because the database is
   * unreachable (nothing else) is tried again with backoff (0.1 s doubling to 5 s)
   * while the claim's lease certainly holds (half of it), or 5 s more once the worker is stopping;
   * after that the lease decides, as after a crash.
   */
  async function persistently<T>(message: OutboxMessageClaim, what: string, record: () => Promise<T>): Promise<T> {
    const deadline = Date.now() + settings.leaseMs / 2;
    let delay = 100;
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await record();
      } catch (error) {
        const giveUpAt = stopped ? Math.min(deadline, stoppedAt + 5_000) : deadline;
        if (!isConnectionFailure(error) || Date.now() + delay > giveUpAt) throw error;
        if (attempt === 1) {
          settings.logger.warn(
            { messageId: message.id, topic: message.topic, attempt: message.attempt, err: { message: (error as Error)?.message } },
            `outbox ${what} could not be recorded; trying again`,
          );
        }
        await new Promise((resolve) => setTimeout(resolve, delay));
        delay = Math.min(delay * 2, 5_000);
      }
    }
  }

  async function claim(count: number, topics: string[]): Promise<OutboxMessageClaim[]> {
    if (topics.length === 0) return [];
    const now = settings.clock.now();
    const rows = await settings.em.fork().execute<{ id: string; topic: string; payload: JsonObject; attempts: number; trace_parent: string | null }[]>(
      `update outbox_message set attempts = attempts + 1, locked_until = ?, claimed_by = ?
         where id in (
           select id from outbox_message
            where processed_at is null and failed_at is null and available_at <= ?
              and (locked_until is null or locked_until <= ?) and topic in (${topics.map(() => '?').join(', ')})
              ${matches.length === 0 ? '' : `and (${matches.map(() => 'payload @> ?::jsonb').join(' or ')})`}
            order by available_at, id
            limit ?
            for update skip locked)
       returning id, topic, payload, attempts, trace_parent`,
      [new Date(now.getTime() + settings.leaseMs), settings.claimant, now, now, ...topics, ...matches.map((match) => JSON.stringify(match)), count],
    );
    return rows.map((row) => ({ id: row.id, topic: row.topic, payload: row.payload, attempt: row.attempts, traceParent: row.trace_parent }));
  }

  async function settle(message: OutboxMessageClaim, error: unknown): Promise<void> {
    const now = settings.clock.now();
    // Callers see the reason (through the hooks); `last_error`, read by operators only, also keeps
    // the detail; the log line keeps the error whole (its stack), under the message id.
    const reason = failureReasonOf(error);
    const record = `${reason.code}: ${redactSecrets(failureDetail(error))}`.slice(0, 2000);
    const permanent = error instanceof PermanentOutboxError || message.attempt >= settings.maxAttempts;
    const em = settings.em.fork();
    if (permanent) {
      // The row's failure and the hook's record commit together, once (the guarded update decides).
      const recorded = await persistently(message, 'failure', () =>
        em.fork().transactional(async (tx) => {
          const failed = await tx.execute<{ id: string }[]>(
            `update outbox_message set failed_at = ?, locked_until = null, last_error = ? where id = ? and attempts = ? and processed_at is null and failed_at is null returning id`,
            [now, record, message.id, message.attempt],
          );
          if (failed.length === 1 && settings.onFailed) await settings.onFailed(message, reason, { em: tx, now });
          return failed.length === 1;
        }),
      );
      // Counted once committed, by the claim whose update recorded it.
      if (recorded) settings.metrics?.outboxFailed.inc({ topic: message.topic });
      settings.logger.error({ messageId: message.id, topic: message.topic, attempt: message.attempt, reason: reason.code, err: error }, 'outbox message failed for good');
      return;
    }
    const delay = outboxBackoffMs(message.attempt, settings);
    const retryAt = new Date(now.getTime() + delay);
    const reschedule = (tx: EntityManager) =>
      tx.execute<{ id: string }[]>(`update outbox_message set available_at = ?, locked_until = null, last_error = ? where id = ? and attempts = ? and processed_at is null returning id`, [
        retryAt,
        record,
        message.id,
        message.attempt,
      ]);
    const onRetry = settings.onRetry;
    if (onRetry) {
      // The reschedule and the hook's record commit together, and only for the claim that still holds the row.
      await persistently(message, 'retry', () =>
        em.fork().transactional(async (tx) => {
          if ((await reschedule(tx)).length === 1) await onRetry(message, reason, { em: tx, now, retryAt });
        }),
      );
    } else {
      await persistently(message, 'retry', () => reschedule(em.fork()));
    }
    settings.logger.warn({ messageId: message.id, topic: message.topic, attempt: message.attempt, retryInMs: delay, reason: reason.code, err: error }, 'outbox message failed; will retry');
  }

  async function handle(message: OutboxMessageClaim): Promise<void> {
    const handler = settings.handlers.get(message.topic)!;
    // The lease is renewed while the handler runs, so a long job (a large envelope) is not taken
    // by another worker; a crashed worker stops renewing and its lease runs out.
    // The last renewal is awaited before the outcome is written: one still on its way when the
    // handler returned would otherwise land after a retry's reschedule (which clears the lease)
    // and lock the row again for a whole lease, so the retry waited minutes instead of its backoff.
    // Every renewal still on its way is awaited, not only the last: on a slow database several
    // overlap, and an earlier one landing after the outcome would lock the row again.
    const renewing = new Set<Promise<unknown>>();
    const renew = setInterval(
      () => {
        const renewal: Promise<unknown> = settings.em
          .fork()
          .execute(`update outbox_message set locked_until = ? where id = ? and attempts = ? and processed_at is null`, [
            new Date(settings.clock.now().getTime() + settings.leaseMs),
            message.id,
            message.attempt,
          ])
          .catch(() => undefined)
          .finally(() => renewing.delete(renewal));
        renewing.add(renewal);
      },
      settings.renewIntervalMs ?? Math.max(1000, Math.floor(settings.leaseMs / 3)),
    );
    renew.unref();
    const stopRenewing = async () => {
      clearInterval(renew);
      await Promise.all(renewing);
    };
    let step: void | OutboxAcknowledgementStep;
    try {
      step = await handler(message, { em: settings.em.fork(), now: settings.clock.now(), logger: settings.logger });
    } catch (error) {
      await stopRenewing();
      recordActiveFailure(error);
      await settle(message, error);
      return;
    }
    await stopRenewing();
    // The acknowledgement also drops the payload's `secret` (a signing link): nothing sent keeps it.
    const acknowledged = await persistently(message, 'acknowledgement', () =>
      settings.em.fork().transactional(async (tx) => {
        const marked = await markOutboxMessageDelivered(tx, { messageId: message.id, now: settings.clock.now(), attempt: message.attempt });
        if (marked && step) await step(tx);
        return marked;
      }),
    );
    if (!acknowledged) {
      settings.logger.warn({ messageId: message.id, topic: message.topic, attempt: message.attempt }, 'outbox claim was lost before acknowledgement (taken again after its lease ran out)');
    }
  }

  /**
   * Each claim runs in a span of its own, `outbox <topic>`, a child of the span that enqueued the
   * message (the request that finalized an envelope, for its seal job): one trace from the request
   * to the job's statements and PDF work, retries included (docs/decisions.md, "Traces").
   */
  function inJobSpan(message: OutboxMessageClaim, work: () => Promise<void>): Promise<void> {
    const attributes = { 'outbox.topic': message.topic, 'outbox.message_id': message.id, 'outbox.attempt': message.attempt };
    return withSpan(`outbox ${message.topic}`, attributes, work, { kind: SpanKind.CONSUMER, parent: contextFromTraceparent(message.traceParent) });
  }

  /**
   * Keeps up to `concurrency` messages in hand: whenever one finishes, the next due one is claimed
   * at once, so a long job (a seal) never holds back the mails behind it, as waiting for a whole
   * batch did. Ends when nothing is due and nothing is in hand (or `limit` were claimed and have
   * finished). A failure to record an outcome (the database gone for longer than a lease) ends the
   * drain once the others in hand have finished, and is thrown.
   */
  async function drain(limit = Number.POSITIVE_INFINITY): Promise<number> {
    let claimed = 0;
    const inHand = new Set<Promise<void>>();
    const inHandByTopic = new Map<string, number>();
    let failure: { error: unknown } | undefined;
    let lookAgain = true;
    while (!stopped && failure === undefined) {
      if (lookAgain && inHand.size < settings.concurrency && claimed < limit) {
        // A topic at its limit is not claimed; one claim takes no more than the smallest room left
        // under a limit it may hit, so no topic goes over its own (a row's topic is known only once claimed).
        let room = Math.min(settings.concurrency - inHand.size, limit - claimed);
        const open = topics.filter((topic) => {
          const limited = limits.get(topic);
          if (limited === undefined) return true;
          const left = limited - (inHandByTopic.get(topic) ?? 0);
          if (left > 0) room = Math.min(room, left);
          return left > 0;
        });
        const batch = await claim(room, open);
        claimed += batch.length;
        // Nothing due: wait for a job in hand to finish (it may write the next), or for a wake-up, before looking again.
        if (batch.length === 0) lookAgain = false;
        for (const message of batch) {
          inHandByTopic.set(message.topic, (inHandByTopic.get(message.topic) ?? 0) + 1);
          const running: Promise<void> = inJobSpan(message, () => handle(message))
            .catch((error: unknown) => void (failure ??= { error }))
            .finally(() => {
              inHand.delete(running);
              inHandByTopic.set(message.topic, inHandByTopic.get(message.topic)! - 1);
            });
          inHand.add(running);
        }
        continue;
      }
      if (inHand.size === 0) break;
      // A job committed meanwhile (wake) is claimed now if a slot is free, not once a long job in hand ends.
      let nudge!: () => void;
      const woken = new Promise<void>((resolve) => nudges.add((nudge = resolve)));
      await Promise.race([...inHand, woken]);
      nudges.delete(nudge);
      lookAgain = true;
    }
    await Promise.all(inHand);
    if (failure !== undefined) throw failure.error;
    return claimed;
  }

  let started = false;
  let draining = false;
  let wokenWhileDraining = false;

  /** One round: drain what is due, then either go again at once (woken meanwhile) or wait for the next poll. */
  function run(): void {
    draining = true;
    wokenWhileDraining = false;
    polling = drain()
      .catch((error: unknown) => settings.logger.warn({ err: { message: (error as Error)?.message } }, 'outbox poll failed'))
      .finally(() => {
        draining = false;
        if (wokenWhileDraining && !stopped) run();
        else schedule();
      });
  }

  function schedule(delayMs = settings.pollIntervalMs): void {
    if (stopped) return;
    clearTimeout(timer);
    timer = setTimeout(run, delayMs);
    timer.unref();
  }

  return {
    start() {
      stopped = false;
      started = true;
      schedule();
    },
    drain,
    wake(topic) {
      if (!started || stopped || !settings.handlers.has(topic)) return;
      // A drain in progress may already have looked and found nothing: it goes round once more.
      if (draining) {
        wokenWhileDraining = true;
        for (const nudge of nudges) nudge();
        nudges.clear();
      } else schedule(0);
    },
    async stop() {
      stopped = true;
      started = false;
      stoppedAt = Date.now();
      clearTimeout(timer);
      await polling;
    },
  };
}
