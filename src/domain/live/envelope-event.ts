import type { EntityManager } from '@mikro-orm/postgresql';
import type { EnvelopeStatus } from '../envelope/envelope.entity.ts';

/**
 * One appended audit event of an envelope, as live watchers see it (docs/reference/contract.md §9). `sequence` is
 * the event's `seq` in the envelope's audit chain (grows by one, no gaps), so a watcher that
 * reconnects with the last sequence it saw can be given exactly what it missed from the table.
 * `status` is the envelope's status after the event; null after `envelope.deleted` (a draft's
 * deletion: there is no envelope any more).
 */
export type EnvelopeEvent = {
  envelopeId: string;
  teamId: string;
  sequence: number;
  type: string;
  status: EnvelopeStatus | null;
  /** ISO 8601, as the read model writes timestamps. */
  at: string;
  /** The revision an `envelope.corrected` event made (its `details.revision`); absent for any other event. */
  revision?: number;
};

/** The revision an event carries to live watchers: an `envelope.corrected` event's `details.revision`. */
export function revisionOfEvent(type: string, details: Record<string, unknown> | null | undefined): number | undefined {
  const revision = details?.revision;
  return type === 'envelope.corrected' && typeof revision === 'number' && Number.isInteger(revision) ? revision : undefined;
}

/** The PostgreSQL channel every envelope event is announced on (small JSON, see `toNotifyPayload`). */
export const ENVELOPE_EVENT_CHANNEL = 'envelope_event';

/**
 * The events that set the status, and the status each sets. Every status change records one of
 * these in the transaction of the change, right after its guarded update, so the status after any
 * event is the one set by the last of these at or before it: the replay derives it so, and the
 * live path reads the envelope row (which the test comparing replay with live holds to the same).
 */
export const STATUS_SET_BY_EVENT: Readonly<Record<string, EnvelopeStatus | null>> = {
  'envelope.created': 'draft',
  'envelope.scheduled': 'scheduled',
  'envelope.schedule_cancelled': 'draft',
  'envelope.send_failed': 'draft',
  'envelope.sent': 'sent',
  'envelope.finalized': 'finalized',
  'envelope.voided': 'voided',
  'envelope.expired': 'expired',
  'envelope.deleted': null,
};

/**
 * The status each status-setting event leaves, as the state machine allows it: every change is a
 * guarded update from exactly this status (`where status = 'draft'` to send or delete, `where
 * status = 'sent'` to finalize, void or expire), so the event alone names the transition. `none`:
 * the envelope did not exist. Kept beside STATUS_SET_BY_EVENT so a new status event names both.
 */
export const STATUS_BEFORE_EVENT: Readonly<Record<string, EnvelopeStatus | 'none'>> = {
  'envelope.created': 'none',
  'envelope.scheduled': 'draft',
  'envelope.schedule_cancelled': 'scheduled',
  'envelope.send_failed': 'scheduled',
  // From `scheduled` too, when a scheduled send goes out (the metric counts it from draft).
  'envelope.sent': 'draft',
  'envelope.finalized': 'sent',
  'envelope.voided': 'sent',
  'envelope.expired': 'sent',
  'envelope.deleted': 'draft',
};

export function setsStatus(type: string): boolean {
  return Object.hasOwn(STATUS_SET_BY_EVENT, type);
}

/** NOTIFY payloads are limited to 8000 bytes; these are about 250 (ids, a short type, a timestamp). */
type NotifyPayload = { e: string; t: string; s: number; y: string; st: EnvelopeStatus | null; at: string; r?: number | null };

/** Reads a notification's payload; anything malformed is dropped (null), never thrown at the listener. */
export function fromNotifyPayload(text: string): EnvelopeEvent | null {
  try {
    const raw = JSON.parse(text) as Partial<NotifyPayload>;
    if (typeof raw.e !== 'string' || typeof raw.t !== 'string' || typeof raw.s !== 'number' || typeof raw.y !== 'string' || typeof raw.at !== 'string') return null;
    const revision = typeof raw.r === 'number' ? raw.r : undefined;
    return { envelopeId: raw.e, teamId: raw.t, sequence: raw.s, type: raw.y, status: (raw.st ?? null) as EnvelopeStatus | null, at: raw.at, ...(revision === undefined ? {} : { revision }) };
  } catch {
    return null;
  }
}

/**
 * Events appended inside a transaction that has not committed yet, by transaction. Only read on
 * the embedded database, where the hub publishes them once the transaction commits (see
 * `EnvelopeEventHub.publishOnCommit`); on a server the NOTIFY sent in the transaction is the
 * publication and PostgreSQL itself delivers it only on commit. Weak: an abandoned transaction's
 * list goes with it.
 */
const pendingByTransaction = new WeakMap<object, EnvelopeEvent[]>();

export function stashUntilCommit(em: EntityManager, event: EnvelopeEvent): void {
  const transaction = em.getTransactionContext() as object | undefined;
  if (!transaction) return;
  const pending = pendingByTransaction.get(transaction);
  if (pending) pending.push(event);
  else pendingByTransaction.set(transaction, [event]);
}

export function takePending(transaction: object): EnvelopeEvent[] {
  const pending = pendingByTransaction.get(transaction) ?? [];
  pendingByTransaction.delete(transaction);
  return pending;
}

/**
 * The announcement of an appended event, as a one-row select for the statement that writes the
 * event (the audit append's): the event's sequence is known, and the envelope's status is read
 * after the change's own guarded update (its transaction sees it). Answers `status`, the
 * envelope row's status.
 */
export const NOTIFY_EVENT_SQL = `select e.status::text as status,
  pg_notify(?, json_build_object('e', ?::text, 't', ?::text, 's', ?::int, 'y', ?::text,
    'st', case when ?::boolean then ?::text else e.status::text end, 'at', ?::text, 'r', ?::int)::text)::text as notified
  from (select 1) as one
  left join envelope e on e.id = ?`;

export function notifyEventParameters(input: { envelopeId: string; teamId: string; sequence: number; type: string; at: Date; revision?: number }): unknown[] {
  const fixed = setsStatus(input.type);
  return [
    ENVELOPE_EVENT_CHANNEL,
    input.envelopeId,
    input.teamId,
    input.sequence,
    input.type,
    fixed,
    fixed ? STATUS_SET_BY_EVENT[input.type] : null,
    input.at.toISOString(),
    input.revision ?? null,
    input.envelopeId,
  ];
}

export function statusAfter(type: string, current: string | null): EnvelopeStatus | null {
  return setsStatus(type) ? STATUS_SET_BY_EVENT[type] : ((current ?? null) as EnvelopeStatus | null);
}
