/*
 * Correcting a sent envelope (issue 33; docs/decisions.md "Correcting a sent envelope"). The edit
 * operations of documents, recipients and fields (document/, recipient/, field/ services) run on a
 * `sent` envelope too, under the same row lock as a draft edit, for what nobody has acted on yet.
 * This module holds what those operations check and record while correcting:
 * - the rules, checked where each operation knows what it touches (`ensureRecipientsOpen`,
 *   `ensureOrderOpen`, `ensureNothingSigned`), each a no-op on a draft;
 * - the revision, moved once per correcting request by a guarded single-row update
 *   (`bumpRevision`), in the transaction that holds the envelope's row lock, so a signer's
 *   submission (which takes the same lock) either lands before it or sees the new revision;
 * - what happens afterwards to turns, links and invitations (`CorrectionWorkflow.settle`),
 *   which is the signing workflow's (signing/correction.ts): the composition root hands it in
 *   through `useCorrectionWorkflow`, since the signing folder imports this one and not the other
 *   way round.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { ChangeScope } from '../change.ts';
import type { Envelope } from '../envelope/envelope.entity.ts';
import { EnvelopeAlreadySignedError } from '../envelope/envelope.errors.ts';
import { RecipientAlreadyCompletedError } from '../recipient/recipient.errors.ts';
import type { ServiceContext } from '../service-context.ts';

/** A correction of a sent envelope in progress (one request's change). */
export type EnvelopeCorrection = {
  envelope: Envelope;
  /** The revision the envelope had when the correction took its lock. */
  from: number;
  /** The revision this correction made, once something changed (null: nothing changed yet). */
  revision: number | null;
  /** Recipients whose agents this correction replaced (their old links died). */
  agentsReplaced: Set<string>;
  /** The audit event types of what changed, in order (what `envelope.corrected` lists). */
  changes: string[];
  /** Whether the signing workflow has settled it (once per correction). */
  settled: boolean;
};

/** What the signing workflow does around a correction (signing/correction.ts). */
export type CorrectionWorkflow = {
  /** Refuses a correction of a sent envelope that is no longer open (past `expiresAt`), by its name. */
  ensureOpen(envelope: Envelope, now: Date): void;
  /**
   * After the operation changed something (once), in its transaction: snapshots new agents, moves the
   * turns (deactivating, activating, inviting, finalizing), invites the replaced agents whose turn
   * it is, and records `envelope.corrected` with the revision.
   */
  settle(context: ServiceContext, change: ChangeScope & { envelope: Envelope }, correction: EnvelopeCorrection): Promise<void>;
};

let workflow: CorrectionWorkflow | null = null;

/** Called once by the composition root (src/runtime.ts). */
export function useCorrectionWorkflow(given: CorrectionWorkflow): void {
  workflow = given;
}

export function correctionWorkflow(): CorrectionWorkflow {
  // A wiring mistake, never a caller's: the composition root always hands it in.
  if (!workflow) throw new Error('correction workflow not wired: createRuntime calls useCorrectionWorkflow');
  return workflow;
}

export function startCorrection(envelope: Envelope): EnvelopeCorrection {
  return { envelope, from: envelope.revision, revision: null, agentsReplaced: new Set(), changes: [], settled: false };
}

/** What the checks need of a change: its transaction, and the correction when the owner is a sent envelope. */
type Correcting = { em: EntityManager; now: Date; correction?: EnvelopeCorrection };

/**
 * "Acted" in SQL, for the recipient row `r`: it completed, or (an approver role) one of its agents
 * approved. Such a recipient is no longer the sender's to change.
 */
const ACTED = `(r.completed_at is not null or exists (select 1 from approval p where p.recipient_id = r.id))`;

/** The revision this correction makes, moved on the first change: `revision + 1` where it still is what the lock saw. */
export async function bumpRevision(change: Correcting, correction: EnvelopeCorrection): Promise<number> {
  if (correction.revision !== null) return correction.revision;
  const rows = await change.em.execute<{ revision: number }[]>(
    `update envelope set revision = revision + 1, updated_at = ? where id = ? and status = 'sent' and revision = ? returning revision`,
    [change.now, correction.envelope.id, correction.from],
  );
  // The row lock is held since the correction started, so nothing else can have moved it.
  if (rows.length !== 1) throw new Error(`envelope ${correction.envelope.id} changed under its own lock`);
  correction.revision = Number(rows[0].revision);
  return correction.revision;
}

/** While correcting: none of these recipients has acted (`Recipient.AlreadyCompleted` otherwise). */
export async function ensureRecipientsOpen(change: Correcting, recipientIds: readonly string[]): Promise<void> {
  const ids = [...new Set(recipientIds.filter((id) => id))];
  if (!change.correction || ids.length === 0) return;
  const acted = await change.em.execute<{ id: string }[]>(`select r.id from recipient r where r.id in (${ids.map(() => '?').join(', ')}) and ${ACTED}`, ids);
  if (acted.length > 0) throw new RecipientAlreadyCompletedError({ recipientIds: acted.map((row) => row.id) });
}

/**
 * While correcting: a recipient placed at `order` (added, or moved there) does not take a turn
 * before one that has acted (`Recipient.AlreadyCompleted`, naming those).
 */
export async function ensureOrderOpen(change: Correcting, order: number): Promise<void> {
  if (!change.correction) return;
  const later = await change.em.execute<{ id: string }[]>(`select r.id from recipient r where r.envelope_id = ? and r."order" > ? and ${ACTED}`, [change.correction.envelope.id, order]);
  if (later.length > 0) throw new RecipientAlreadyCompletedError({ recipientIds: later.map((row) => row.id), order });
}

/** While correcting: the documents change only while nobody has acted (`Envelope.AlreadySigned`). */
export async function ensureNothingSigned(change: Correcting): Promise<void> {
  if (!change.correction) return;
  const acted = await change.em.execute<{ id: string }[]>(`select r.id from recipient r where r.envelope_id = ? and ${ACTED} limit 1`, [change.correction.envelope.id]);
  if (acted.length > 0) throw new EnvelopeAlreadySignedError(change.correction.envelope.id);
}

/**
 * While correcting, before a recipient's agents are replaced: the old agents are kept, revoked
 * (the trail names them), and every link they held dies now; the new agents are snapshotted and,
 * on the recipient's turn, invited when the correction settles.
 */
export async function retireAgents(change: Correcting, recipientId: string): Promise<void> {
  if (!change.correction) return;
  await change.em.execute('update agent set revoked_at = ? where recipient_id = ? and revoked_at is null', [change.now, recipientId]);
  await change.em.execute('update signing_token set revoked_at = ? where recipient_id = ? and revoked_at is null', [change.now, recipientId]);
  change.correction.agentsReplaced.add(recipientId);
}
