import { DomainError } from '../../shared/errors.ts';

/** `Field.NotFound`: no field with this id in this envelope (or template). */
export class FieldNotFoundError extends DomainError {
  constructor(fieldId: string, owner: 'envelope' | 'template' = 'envelope') {
    super('Field.NotFound', `No field with this id exists in this ${owner}.`, { fieldId });
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
