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
