import { DomainError } from '../../shared/errors.ts';
import type { EnvelopeStatus } from './envelope.entity.ts';

/** `Envelope.NotFound`: no envelope with this id for the caller's team (unknown, malformed and foreign ids alike). */
export class EnvelopeNotFoundError extends DomainError {
  constructor(envelopeId: string) {
    super('Envelope.NotFound', 'No envelope with this id exists for your team.', { envelopeId });
  }
}

/** `Envelope.NotDraft`: documents, recipients, fields and settings change only while the envelope is a draft. */
export class EnvelopeNotDraftError extends DomainError {
  constructor(envelopeId: string, status: EnvelopeStatus) {
    super('Envelope.NotDraft', `The envelope is ${status}; it can be changed only while it is a draft.`, { envelopeId, status });
  }
}

/** `Envelope.NotDeletable`: only drafts can be deleted; a sent envelope is voided instead. */
export class EnvelopeNotDeletableError extends DomainError {
  constructor(envelopeId: string, status: EnvelopeStatus) {
    super('Envelope.NotDeletable', `The envelope is ${status}; only drafts can be deleted (void a sent envelope instead).`, {
      envelopeId,
      status,
    });
  }
}

/**
 * `Envelope.Busy`: other changes to this envelope (or a burst of the team's changes) are queued
 * ahead of this one, or another request holds the envelope's lock, for longer than a change may
 * wait. Nothing changed; retry after `context.retryAfterSeconds` (also the `Retry-After` header).
 */
export class EnvelopeBusyError extends DomainError {
  constructor(envelopeId: string, retryAfterSeconds: number) {
    super('Envelope.Busy', 'Other changes to this envelope are in progress; nothing changed. Retry after context.retryAfterSeconds seconds.', {
      envelopeId,
      retryAfterSeconds,
    });
  }
}

/**
 * `Envelope.NotFinalized` (409): the audit-log PDF exists only for finalized, voided or expired
 * envelopes; a recipient's final copy only for finalized ones.
 */
export class EnvelopeNotFinalizedError extends DomainError {
  constructor(envelopeId: string, status: EnvelopeStatus, wanted: 'auditLog' | 'finalCopy' = 'auditLog') {
    super(
      'Envelope.NotFinalized',
      wanted === 'auditLog'
        ? `The envelope is ${status}; its audit log is available once it is finalized, voided or expired.`
        : `The envelope is ${status}; its signed copy exists only once everyone has signed and it is finalized.`,
      { envelopeId, status },
    );
  }
}

/** `Envelope.AuditNotFound` (404): the audit log could not be produced (the envelope has no audit trail). */
export class EnvelopeAuditNotFoundError extends DomainError {
  constructor(envelopeId: string) {
    super('Envelope.AuditNotFound', 'The audit log of this envelope could not be produced.', { envelopeId });
  }
}

/**
 * `Envelope.AlreadySigned` (409): the documents of a sent envelope can be added, replaced or
 * removed only while nobody has completed anything (no recipient completed, no approval given).
 * Nothing changed.
 */
export class EnvelopeAlreadySignedError extends DomainError {
  constructor(envelopeId: string) {
    super('Envelope.AlreadySigned', 'Someone has already signed or approved this envelope; its documents can no longer be changed.', { envelopeId });
  }
}
