/**
 * A draft edit: a change to a draft envelope's settings, documents, recipients or fields, under
 * the envelope's row lock (envelope-lock.ts) and only while the envelope is a draft.
 */
import type { ChangeScope } from '../change.ts';
import type { ServiceContext } from '../service-context.ts';
import type { Envelope } from './envelope.entity.ts';
import { EnvelopeNotDraftError } from './envelope.errors.ts';
import { inEnvelopeTransaction } from './envelope-lock.ts';
import { findTeamEnvelope } from './team-envelope.ts';

export type DraftChange = ChangeScope & { envelope: Envelope };

/**
 * Runs a change to a draft envelope in one transaction that holds the envelope's row lock.
 * Sending takes the same lock (its guarded `status` update), so a change and a send never
 * interleave: the change either lands before the send or is refused with `Envelope.NotDraft` and
 * changes nothing. A change that cannot get its turn or the lock in time is `Envelope.Busy` and
 * changes nothing.
 */
export async function changeDraftEnvelope<T>(context: ServiceContext, envelopeId: string, change: (draft: DraftChange) => Promise<T>): Promise<T> {
  const caller = await context.caller();
  return inEnvelopeTransaction(context, caller.teamId, envelopeId, async (em) => {
    const envelope = await findTeamEnvelope(em, caller, envelopeId, { lock: true });
    if (envelope.status !== 'draft') throw new EnvelopeNotDraftError(envelope.id, envelope.status);
    return change({ em, envelope, caller, now: context.clock.now() });
  });
}
