/**
 * Not-found errors of an owner's content (an envelope's or a template's documents and fields):
 * raised by the reads both owners share (owner.read.ts), so they live with them and
 * document.errors.ts and field.errors.ts re-export them. This keeps owner/ from importing the
 * document and field folders back (docs/architecture.md, "Folder pairs").
 */
import { DomainError } from '../../shared/errors.ts';

/** `Document.NotFound`: no document with this id in this envelope (or template). */
export class DocumentNotFoundError extends DomainError {
  constructor(documentId: string, owner: 'envelope' | 'template' = 'envelope') {
    super('Document.NotFound', `No document with this id exists in this ${owner}.`, { documentId });
  }
}

/** `Field.NotFound`: no field with this id in this envelope (or template). */
export class FieldNotFoundError extends DomainError {
  constructor(fieldId: string, owner: 'envelope' | 'template' = 'envelope') {
    super('Field.NotFound', `No field with this id exists in this ${owner}.`, { fieldId });
  }
}
