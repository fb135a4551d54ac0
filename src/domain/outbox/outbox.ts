/**
 * The one door into the durable queue (`outbox_message`). Every message and job is written here,
 * in the transaction of the change that causes it (pass that transaction's entity manager), so
 * nothing is sent for a change that rolled back and nothing is lost for one that committed. No
 * other module inserts into the table (`npm run check:architecture` fails if one does); the
 * worker (outbox-worker.ts) claims, runs and acknowledges the rows.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../../shared/ids.ts';
import { activeTraceparent } from '../../shared/tracing.ts';
import type { OutboxPayloads, OutboxTopic } from './topics.ts';
import { noteEnqueued, OUTBOX_WAKE_CHANNEL } from './wakeups.ts';

export type EnqueueOptions = {
  /** The service clock's now: the row's creation time, and when it is due unless `runAt` says later. */
  now: Date;
  runAt?: Date;
  /**
   * At most one row ever holds a given key (a unique index). A second enqueue with the same key
   * fails (rolling its transaction back) unless `skipDuplicate` is set, when it writes nothing.
   */
  dedupeKey?: string | null;
  skipDuplicate?: boolean;
  /** The row's id, when the caller must name it before the row exists (a ledger row pointing at it). */
  id?: string;
};

/** Writes one message; answers its id, or undefined when `skipDuplicate` found its key taken. */
export async function enqueue<Topic extends OutboxTopic>(em: EntityManager, topic: Topic, payload: OutboxPayloads[Topic], options: EnqueueOptions): Promise<string | undefined> {
  // The same statement tells the workers (on commit) that a job of this topic is due: wakeups.ts.
  const rows = await em.execute<{ id: string }[]>(
    `with inserted as (
       insert into outbox_message (id, created_at, topic, payload, dedupe_key, available_at, attempts, trace_parent)
       values (?, ?, ?, ?::jsonb, ?, ?, 0, ?)${options.skipDuplicate ? ' on conflict (dedupe_key) do nothing' : ''} returning id)
     select id, pg_notify('${OUTBOX_WAKE_CHANNEL}', ?) from inserted`,
    // The enqueuing span's context (a request's, a job's): the worker runs the job in that trace.
    [options.id ?? newId(), options.now, topic, JSON.stringify(payload), options.dedupeKey ?? null, options.runAt ?? options.now, activeTraceparent(), topic],
  );
  if (rows.length > 0) noteEnqueued(em, topic);
  return rows[0]?.id;
}

/**
 * Writes one message per row a query yields, in ONE statement: for work that fans out in SQL
 * (an audit event to every matching webhook endpoint), where a round trip per row would cost.
 *
 * `query` is a `with` clause (its parameters first) that defines a relation `source`; each of
 * its rows gives a message whose id is `source.<idColumn>` (null: a fresh one) and whose payload
 * is the jsonb expression `payload` over `source`'s columns (its parameters after the query's).
 * Answers the ids written.
 */
export async function enqueueSelected(
  em: EntityManager,
  topic: OutboxTopic,
  options: { now: Date; query: string; parameters: unknown[]; idColumn?: string; payload: string; payloadParameters?: unknown[] },
): Promise<string[]> {
  const id = options.idColumn === undefined ? 'gen_random_uuid()' : `source.${options.idColumn}`;
  const rows = await em.execute<{ id: string }[]>(
    `${options.query}, inserted as (
       insert into outbox_message (id, created_at, topic, payload, available_at, attempts, trace_parent)
       select ${id}, ?, ?, ${options.payload}, ?, 0, ? from source
       returning id)
     select id, pg_notify('${OUTBOX_WAKE_CHANNEL}', ?) from inserted`,
    [...options.parameters, options.now, topic, ...(options.payloadParameters ?? []), options.now, activeTraceparent(), topic],
  );
  if (rows.length > 0) noteEnqueued(em, topic);
  return rows.map((row) => row.id);
}

/** A piece of SQL with its `?` parameters, in order. */
export type SqlPart = { sql: string; parameters: unknown[] };

/**
 * enqueueSelected as part of a larger statement, so the change that fans out and its messages
 * cost one round trip (the audit append: the event's row, its webhook deliveries and its live
 * announcement). `query` may open with the caller's own data-modifying clauses; `answer` is a
 * select of exactly one row, read after the messages are written (its columns are answered,
 * with `queued`, the number of messages written).
 */
export async function enqueueSelectedAlong<Answer extends object>(
  em: EntityManager,
  topic: OutboxTopic,
  options: { now: Date; query: string; parameters: unknown[]; idColumn?: string; payload: string; payloadParameters?: unknown[]; answer: SqlPart },
): Promise<Answer & { queued: number }> {
  const id = options.idColumn === undefined ? 'gen_random_uuid()' : `source.${options.idColumn}`;
  const [row] = await em.execute<(Answer & { queued: number })[]>(
    `${options.query}, inserted as (
       insert into outbox_message (id, created_at, topic, payload, available_at, attempts, trace_parent)
       select ${id}, ?, ?, ${options.payload}, ?, 0, ? from source
       returning id),
     woken as materialized (select pg_notify('${OUTBOX_WAKE_CHANNEL}', ?)::text as woken from inserted)
     select (select count(*) from woken)::int as queued, answer.* from (${options.answer.sql}) as answer`,
    [...options.parameters, options.now, topic, ...(options.payloadParameters ?? []), options.now, activeTraceparent(), topic, ...options.answer.parameters],
  );
  if (!row) throw new Error('enqueueSelectedAlong: the answer must be one row');
  if (row.queued > 0) noteEnqueued(em, topic);
  return row;
}

/**
 * Marks an outbox message delivered, dropping its `secret` part (an invitation's signing link)
 * in the same statement: once a message is sent, no raw signing token stays in the database.
 * For the worker; answers false when the message was already
 * delivered (another worker got there first), so nothing is marked twice.
 */
export async function markOutboxMessageDelivered(em: EntityManager, options: { messageId: string; now: Date; attempt?: number }): Promise<boolean> {
  // With `attempt`, the worker's fencing token: a claim whose lease was lost and retaken cannot
  // acknowledge the newer claim.
  const fence = options.attempt === undefined ? '' : ' and attempts = ?';
  const rows = await em.execute<{ id: string }[]>(
    `update outbox_message set processed_at = ?, locked_until = null, last_error = null, payload = payload - 'secret' where id = ? and processed_at is null${fence} returning id`,
    [options.now, options.messageId, ...(options.attempt === undefined ? [] : [options.attempt])],
  );
  return rows.length === 1;
}
