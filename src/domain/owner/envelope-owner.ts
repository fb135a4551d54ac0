import { ENVELOPE_CAPACITY } from '../capacity.ts';
import { auditChange, type ChangeScope } from '../change.ts';
import { EnvelopeNotDraftError } from '../envelope/envelope.errors.ts';
import { inEnvelopeTransaction } from '../envelope/envelope-lock.ts';
import { findTeamEnvelope } from '../envelope/team-envelope.ts';
import { envelopeRecipients } from '../recipient/envelope-recipients.ts';
import type { ServiceContext } from '../service-context.ts';
import { bumpRevision, correctionWorkflow, startCorrection } from './correction.ts';
import { type ContentOwner, type OwnerChange, ownerChange } from './owner.ts';

/*
 * An envelope as the owner of documents, recipients and fields (owner/owner.ts): found through
 * the envelope tenant gate, changed under the envelope's lock while a draft, or corrected while
 * sent (owner/correction.ts), audited in the envelope's own trail.
 */

/**
 * Runs a change to an envelope's content in one transaction that holds the envelope's row lock
 * (the lock sending, signers' actions and voiding take too, so none of them interleaves with it).
 * A draft changes freely (draft-edit.ts's rules). A sent envelope, open and not past `expiresAt`,
 * is corrected: the operation checks what it touches against what signers did, and its audit
 * (below) moves the revision and has the signing workflow settle the turns and links.
 * Any other status is `Envelope.NotDraft`, as before; nothing changes.
 */
async function changeEnvelopeContent<T>(context: ServiceContext, envelopeId: string, work: (change: OwnerChange) => Promise<T>): Promise<T> {
  const caller = await context.caller();
  return inEnvelopeTransaction(context, caller.teamId, envelopeId, async (em) => {
    const envelope = await findTeamEnvelope(em, caller, envelopeId, { lock: true });
    const scope: ChangeScope = { em, caller, now: context.clock.now() };
    if (envelope.status === 'draft') return work(ownerChange(scope, { envelope }));
    if (envelope.status !== 'sent') throw new EnvelopeNotDraftError(envelope.id, envelope.status);
    correctionWorkflow().ensureOpen(envelope, scope.now);
    return work(ownerChange(scope, { envelope }, startCorrection(envelope)));
  });
}

export const envelopeOwner: ContentOwner = {
  kind: 'envelope',
  capacity: { owner: 'Envelope', ...ENVELOPE_CAPACITY },
  change: changeEnvelopeContent,
  creations: { addDocument: 'addDocument', addRecipient: 'addRecipient', createFields: 'createFields' },
  /**
   * A correction's change carries the revision it made. Every operation audits once, when its
   * change is written and before it reads its answer, so that is where the correction settles:
   * the answer (and an idempotent repeat of it) shows the turns as they now are.
   */
  async audit(context, change, type, details) {
    const { correction } = change;
    if (!correction) return auditChange(context, change, { envelopeId: change.ownerId, type, details });
    const revision = await bumpRevision(change, correction);
    correction.changes.push(type);
    const appended = await auditChange(context, change, { envelopeId: change.ownerId, type, details: { ...details, revision } });
    await correctionWorkflow().settle(context, { em: change.em, caller: change.caller, now: change.now, envelope: correction.envelope }, correction);
    return appended;
  },
  /**
   * The envelope is the caller's team's (`Envelope.NotFound`) and a draft or sent
   * (`Envelope.NotDraft`; whether a sent one's documents may still change is decided under the
   * lock). With an `Idempotency-Key` the check waits for the lock: a repeat of an upload that
   * succeeded before the envelope changed status must still get its first answer, and whether it
   * is a repeat depends on the file's hash, known only once it has arrived.
   */
  async checkUploadTarget(context, envelopeId, idempotencyKey) {
    const envelope = await findTeamEnvelope(context.em, await context.caller(), envelopeId);
    if (envelope.status !== 'draft' && envelope.status !== 'sent' && idempotencyKey === undefined) throw new EnvelopeNotDraftError(envelope.id, envelope.status);
  },
  recipients: envelopeRecipients,
};
