import { DomainError } from '../../shared/errors.ts';

// Raised by the reads both owners share (owner/owner.read.ts), so it lives there; named here too.
export { FieldNotFoundError } from '../owner/owner.errors.ts';

/**
 * `Field.NotAllowedForRecipient` (422): the recipient's type holds no fields (an approver
 * approves or rejects the documents as they are); also refused when a recipient holding fields
 * would become one.
 */
export class FieldNotAllowedForRecipientError extends DomainError {
  constructor(options: { recipientId: string; type: string; fieldIds?: string[]; path?: string }) {
    super('Field.NotAllowedForRecipient', `A recipient of type ${options.type} holds no fields.`, {
      recipientId: options.recipientId,
      type: options.type,
      ...(options.fieldIds ? { fieldIds: options.fieldIds } : {}),
      ...(options.path ? { path: options.path } : {}),
    });
  }
}

/** `Field.DuplicateIdentifier` (409): field identifiers are unique within an envelope (or template). */
export class FieldDuplicateIdentifierError extends DomainError {
  constructor(identifiers: string[]) {
    super('Field.DuplicateIdentifier', `Fields with these identifiers already exist: ${identifiers.join(', ')}.`, { identifiers });
  }
}

/**
 * `Field.InUse` (409): removing a field that other fields' formulas or conditions name (issue 32); removing it
 * would leave them naming nothing. `context.identifier`, `context.namedBy` (the identifiers of the
 * fields that name it). Change or remove those first.
 */
export class FieldInUseError extends DomainError {
  constructor(identifier: string, namedBy: string[], owner: 'envelope' | 'template' = 'envelope') {
    super('Field.InUse', `Other fields of this ${owner} name this field in their formula or conditions: ${namedBy.join(', ')}. Change or remove them first.`, { identifier, namedBy });
  }
}
