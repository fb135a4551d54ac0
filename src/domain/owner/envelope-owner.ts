import { auditChange } from '../change.ts';
import { ENVELOPE_CAPACITY } from '../capacity.ts';
import { envelopeRecipients } from '../recipient/envelope-recipients.ts';
import { ownerChange, type ContentOwner } from './owner.ts';
import { changeDraftEnvelope } from '../envelope/draft-edit.ts';
import { EnvelopeNotDraftError } from '../envelope/envelope.errors.ts';
import { findTeamEnvelope } from '../envelope/team-envelope.ts';

/*
 * An envelope as the owner of documents, recipients and fields (owner/owner.ts): found through
 * the envelope tenant gate, changed only while a draft under the envelope's lock (draft-edit.ts),
 * audited in the envelope's own trail.
 */

export const envelopeOwner: ContentOwner = {
  kind: 'envelope',
  capacity: { owner: 'Envelope', ...ENVELOPE_CAPACITY },
  change: (context, envelopeId, work) => changeDraftEnvelope(context, envelopeId, (draft) => work(ownerChange(draft, { envelope: draft.envelope }))),
  creations: { addDocument: 'addDocument', addRecipient: 'addRecipient', createFields: 'createFields' },
  audit: (context, change, type, details) => auditChange(context, change, { envelopeId: change.ownerId, type, details }),
  /**
   * The envelope is the caller's team's (`Envelope.NotFound`) and a draft (`Envelope.NotDraft`).
   * With an `Idempotency-Key` the draft check waits for the lock: a repeat of an upload that
   * succeeded before the envelope was sent must still get its first answer, and whether it is a
   * repeat depends on the file's hash, known only once it has arrived.
   */
  async checkUploadTarget(context, envelopeId, idempotencyKey) {
    const envelope = await findTeamEnvelope(context.em, await context.caller(), envelopeId);
    if (envelope.status !== 'draft' && idempotencyKey === undefined) throw new EnvelopeNotDraftError(envelope.id, envelope.status);
  },
  recipients: envelopeRecipients,
};
