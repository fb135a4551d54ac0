import { createHmac } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { ExpressionBuilder } from 'kysely';
import type { JsonObject } from '../../db/columns.ts';
import { isUuid, newId } from '../../shared/ids.ts';
import type { RequestMetadata } from '../../shared/request-metadata.ts';
import { sortedKeysJson } from '../../shared/sorted-keys-json.ts';
import { NOTIFY_EVENT_SQL, notifyEventParameters, revisionOfEvent, stashUntilCommit, statusAfter } from '../live/envelope-event.ts';
import { isoTimestamp, type ReadDatabase, readerOf } from '../read-model.ts';
import { agentPersonSqlText } from '../recipient/agent-people.ts';
import { enqueueWebhookDeliveriesAlong } from '../webhook/webhook-fanout.ts';
import { type AuditActorType, AuditEvent } from './audit-event.entity.ts';

export const GENESIS_HASH = '0'.repeat(64);

export type AuditActor = { type: AuditActorType; id: string | null };

export type AuditEventInput = {
  teamId: string;
  /** The envelope the event belongs to; null for team-level changes (templates, contacts). */
  envelopeId: string | null;
  type: string;
  actor: AuditActor;
  request: RequestMetadata | null;
  details?: JsonObject;
  at: Date;
};

type HashedContent = Pick<AuditEvent, 'streamId' | 'envelopeId' | 'teamId' | 'seq' | 'type' | 'actorType' | 'actorId' | 'ip' | 'userAgent' | 'details' | 'prevHash'> & {
  /** A Date, or the text `toISOString()` gives for it (as the read model writes timestamps). */
  at: Date | string;
};

/** The chain link: HMAC over the previous hash and the event's canonical content. */
export function hashAuditEvent(key: Buffer, event: HashedContent): string {
  const content = sortedKeysJson({
    streamId: event.streamId,
    envelopeId: event.envelopeId,
    teamId: event.teamId,
    seq: event.seq,
    type: event.type,
    at: typeof event.at === 'string' ? event.at : event.at.toISOString(),
    actorType: event.actorType,
    actorId: event.actorId,
    ip: event.ip,
    userAgent: event.userAgent,
    details: event.details,
    prevHash: event.prevHash,
  });
  return createHmac('sha256', key).update(content).digest('hex');
}

/** A person as an event recorded them: the name and addresses they had when it was written. */
export type PersonAsAt = { name: string | null; email: string | null; phone: string | null };

/**
 * The people an event names (its acting agent, and the agent in `details.agentId`), each as the
 * agent's person stands at this moment (`details.personIndex` of a group's snapshot, else the
 * first), keyed by agent id: `details.peopleAsAt`. Read in the event's own transaction, so the
 * certificate can say where an invitation went even after the address is corrected (a later
 * resend changes the agent's snapshot, not what earlier events say).
 */
function peopleQuery(input: AuditEventInput): { sql: string; parameters: string[] } | undefined {
  const details = input.details ?? {};
  const ids = [input.actor.type === 'agent' ? input.actor.id : null, typeof details.agentId === 'string' ? details.agentId : null].filter(
    (id): id is string => typeof id === 'string' && isUuid(id),
  );
  if (ids.length === 0) return undefined;
  const index = typeof details.personIndex === 'number' && Number.isInteger(details.personIndex) && details.personIndex >= 0 ? details.personIndex : 0;
  const unique = [...new Set(ids)];
  return {
    // The index is a checked non-negative integer, written into the statement as a number.
    sql: `select a.id::text as id, coalesce(${agentPersonSqlText('a', index)}, ${agentPersonSqlText('a', 0)}) as person from agent a where a.id in (${unique.map(() => '?').join(', ')})`,
    parameters: unique,
  };
}

type PersonRow = { id: string; person: { name?: unknown; email?: unknown; phone?: unknown } | null };

function peopleOf(rows: PersonRow[]): Record<string, PersonAsAt> | undefined {
  const text = (value: unknown) => (typeof value === 'string' ? value : null);
  const people: Record<string, PersonAsAt> = {};
  for (const row of rows) if (row.person) people[row.id] = { name: text(row.person.name), email: text(row.person.email), phone: text(row.person.phone) };
  return Object.keys(people).length > 0 ? people : undefined;
}

/**
 * The head each chain was last given by this process, with the transaction that gave it. While
 * that transaction is open it holds the chain's advisory lock (taken by its first append, or the
 * chain began in it), and every append of the chain goes through here, so that head is the
 * chain's head: a later append in the same transaction needs neither the lock nor the read
 * again. A transaction is an object of its own per savepoint (MikroORM), so an append inside a
 * savepoint (which may be rolled back) never vouches for its parent's, nor the parent's for it:
 * they read the head again. Bounded: the oldest are forgotten (a forgotten head is read again).
 */
type KnownHead = { transaction: WeakRef<object>; seq: number; hash: string };
const knownHeads = new Map<string, KnownHead>();
const MAX_KNOWN_HEADS = 4_096;

function knownHead(em: EntityManager, streamId: string): { seq: number; hash: string } | undefined {
  const transaction = em.getTransactionContext() as object | undefined;
  const known = knownHeads.get(streamId);
  if (!transaction || !known || known.transaction.deref() !== transaction) return undefined;
  return known;
}

function rememberHead(em: EntityManager, streamId: string, head: { seq: number; hash: string }): void {
  const transaction = em.getTransactionContext() as object | undefined;
  if (!transaction) return;
  knownHeads.delete(streamId);
  knownHeads.set(streamId, { transaction: new WeakRef(transaction), seq: head.seq, hash: head.hash });
  if (knownHeads.size > MAX_KNOWN_HEADS) knownHeads.delete(knownHeads.keys().next().value!);
}

const AUDIT_INSERT_SQL = `appended as (
  insert into audit_event (id, team_id, stream_id, envelope_id, seq, type, at, actor_type, actor_id, ip, user_agent, details, prev_hash, hash)
  values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?::jsonb, ?, ?))`;

/**
 * Appends one event to its chain (the envelope's, or the team's). Must run inside the
 * transaction of the change it records, so an event exists exactly when its change committed.
 *
 * Invariant guarded here: `seq` has no gaps and no duplicates per chain, and each event's
 * `prevHash` is its predecessor's hash. A transaction-scoped advisory lock on the chain id
 * serialises concurrent appenders; reading the chain head happens only after taking it (in a
 * statement of its own: a statement that waited for the lock would read with a snapshot taken
 * before it got it). The transaction's later appends to the same chain know its head (knownHead).
 * `newStream`: the chain's envelope was made in this transaction, so nobody else can append to
 * it yet and it has no head: neither lock nor read.
 *
 * The event's row, its webhook deliveries (webhook-fanout.ts) and, for an envelope's event, its
 * announcement to live watchers (domain/live: the NOTIFY is sent in this transaction, so
 * PostgreSQL delivers it only if the change commits, in commit order) are one statement.
 */
export async function appendAuditEvent(em: EntityManager, auditKey: Buffer, input: AuditEventInput & { newStream?: boolean }): Promise<AuditEvent> {
  if (!em.isInTransaction()) throw new Error('appendAuditEvent must run inside the transaction of the change it records');
  const streamId = input.envelopeId ?? input.teamId;
  const revision = revisionOfEvent(input.type, input.details);
  const peopleRead = peopleQuery(input);
  let people: Record<string, PersonAsAt> | undefined;
  let head: { seq: number; hash: string } | undefined = input.newStream ? { seq: 0, hash: GENESIS_HASH } : knownHead(em, streamId);
  if (head) {
    if (peopleRead) people = peopleOf(await em.execute<PersonRow[]>(peopleRead.sql, peopleRead.parameters));
  } else {
    await em.execute('select pg_advisory_xact_lock(hashtextextended(?, 0))', [streamId], 'run');
    // The head, and the people the event names, in one read after the lock.
    const [read] = await em.execute<{ seq: number | null; hash: string | null; people: PersonRow[] | null }[]>(
      `select h.seq, h.hash, ${peopleRead ? `(select json_agg(p) from (${peopleRead.sql}) as p)` : 'null'} as people
         from (select 1) as one left join lateral (select seq, hash from audit_event where stream_id = ? order by seq desc limit 1) h on true`,
      [...(peopleRead?.parameters ?? []), streamId],
    );
    head = read?.seq != null && read.hash != null ? { seq: read.seq, hash: read.hash } : { seq: 0, hash: GENESIS_HASH };
    people = peopleOf(read?.people ?? []);
  }
  const event = em.create(
    AuditEvent,
    {
      id: newId(),
      teamId: input.teamId,
      streamId,
      envelopeId: input.envelopeId,
      seq: head.seq + 1,
      type: input.type,
      at: input.at,
      actorType: input.actor.type,
      actorId: input.actor.id,
      ip: input.request?.ip ?? null,
      userAgent: input.request?.userAgent ?? null,
      details: people ? { ...input.details, peopleAsAt: people } : (input.details ?? {}),
      prevHash: head.hash,
      hash: '',
    },
    { persist: false },
  );
  event.hash = hashAuditEvent(auditKey, event);
  const lead = {
    sql: AUDIT_INSERT_SQL,
    parameters: [
      event.id,
      event.teamId,
      event.streamId,
      event.envelopeId,
      event.seq,
      event.type,
      event.at,
      event.actorType,
      event.actorId,
      event.ip,
      event.userAgent,
      JSON.stringify(event.details),
      event.prevHash,
      event.hash,
    ],
  };
  // The team's webhooks hear of the event in the same statement: queued exactly when it commits.
  const webhookEvent = { eventId: event.id, teamId: input.teamId, envelopeId: input.envelopeId, sequence: event.seq, type: input.type, at: input.at, details: event.details };
  if (input.envelopeId === null) {
    await enqueueWebhookDeliveriesAlong(em, webhookEvent, { lead, answer: { sql: 'select 1 as appended', parameters: [] } });
  } else {
    const announced = await enqueueWebhookDeliveriesAlong<{ status: string | null }>(em, webhookEvent, {
      lead,
      answer: {
        sql: NOTIFY_EVENT_SQL,
        parameters: notifyEventParameters({ envelopeId: input.envelopeId, teamId: input.teamId, sequence: event.seq, type: input.type, at: input.at, revision }),
      },
    });
    // On the embedded database the hub publishes this once the transaction commits (no NOTIFY crosses its one backend).
    stashUntilCommit(em, {
      envelopeId: input.envelopeId,
      teamId: input.teamId,
      sequence: event.seq,
      type: input.type,
      status: statusAfter(input.type, announced.status ?? null),
      at: input.at.toISOString(),
      ...(revision === undefined ? {} : { revision }),
    });
  }
  rememberHead(em, streamId, event);
  return event;
}

export type ChainVerification = { valid: true; length: number; headHash: string } | { valid: false; brokenAtSeq: number; reason: string };

export type ChainLink = HashedContent & { hash: string };

/** Recomputes a chain from its events in `seq` order and reports the first broken link (a rewritten, removed or reordered event). */
export function checkAuditChain(auditKey: Buffer, events: ChainLink[]): ChainVerification {
  let previousHash = GENESIS_HASH;
  for (const [index, event] of events.entries()) {
    if (event.seq !== index + 1) return { valid: false, brokenAtSeq: index + 1, reason: 'missing event' };
    if (event.prevHash !== previousHash) return { valid: false, brokenAtSeq: event.seq, reason: 'previous hash does not match' };
    if (hashAuditEvent(auditKey, event) !== event.hash) return { valid: false, brokenAtSeq: event.seq, reason: 'content does not match its hash' };
    previousHash = event.hash;
  }
  return { valid: true, length: events.length, headHash: previousHash };
}

/** Every hashed column of an audit event, as plain data (timestamps as `toISOString()` text). */
/** The columns a chain check reads of an event aliased `a` (here, and for an envelope's chain read through its gate). */
export function chainColumns(eb: ExpressionBuilder<ReadDatabase & { a: ReadDatabase['audit_event'] }, 'a'>) {
  return [
    'a.stream_id as streamId',
    'a.envelope_id as envelopeId',
    'a.team_id as teamId',
    'a.seq as seq',
    'a.type as type',
    isoTimestamp(eb.ref('a.at')).as('at'),
    'a.actor_type as actorType',
    'a.actor_id as actorId',
    'a.ip as ip',
    'a.user_agent as userAgent',
    'a.details as details',
    'a.prev_hash as prevHash',
    'a.hash as hash',
  ] as const;
}

/** Verifies one chain (an envelope's or a team's) by id, for operators (the CLI): one statement, plain rows. */
export async function verifyAuditChain(em: EntityManager, auditKey: Buffer, streamId: string): Promise<ChainVerification> {
  const events = await readerOf(em)
    .selectFrom('audit_event as a')
    .select((eb) => chainColumns(eb))
    .where('a.stream_id', '=', streamId)
    .orderBy('a.seq')
    .execute();
  return checkAuditChain(auditKey, events as ChainLink[]);
}

export async function listAuditEvents(em: EntityManager, streamId: string): Promise<AuditEvent[]> {
  return em.find(AuditEvent, { streamId }, { orderBy: { seq: 'asc' } });
}
