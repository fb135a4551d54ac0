import type { Readable } from 'node:stream';
import { isUuid } from '../../shared/ids.ts';
import { TEMPLATE_CAPACITY, ensureCapacity } from '../capacity.ts';
import { Document } from '../document/document.entity.ts';
import { DocumentNotFoundError } from '../document/document.errors.ts';
import {
  documentAddedDetails,
  parseDocumentFields,
  removeDocument,
  stageDocumentFile,
  storeDocument,
  updateDocumentInput,
  type StagedDocument,
} from '../document/document.service.ts';
import { readDocument, type DocumentData } from '../owner/owner.read.ts';
import type { ServiceContext } from '../service-context.ts';
import { parseInput } from '../validation.ts';
import type { Template } from './template.entity.ts';
import { auditTemplateChange, changeTemplate, createInTemplate, findOwnTemplate } from './template.service.ts';

/*
 * Documents of a template: the envelope's upload path (streaming to a staging file, the 48 MB
 * limit, PDF inspection in a worker, the content-addressed blob) with a template as the owner.
 */

/**
 * The check an upload must pass before any of its bytes are read: the template is visible
 * (`Template.NotFound`) and the caller's team owns it (`Template.NotOwner`). One cheap read, no
 * lock; the ownership is checked again under the lock when the document is added.
 */
export async function checkTemplateUploadTarget(context: ServiceContext, options: { templateId: string }): Promise<void> {
  const caller = await context.caller();
  await findOwnTemplate(context.em, caller, options.templateId);
}

/** Checks the template, then stages the upload as an envelope upload is staged. */
export async function stageTemplateDocumentUpload(
  context: ServiceContext,
  options: { templateId: string; stream: Readable; filename: string | undefined },
): Promise<StagedDocument> {
  await checkTemplateUploadTarget(context, options);
  return stageDocumentFile(context, options);
}

/**
 * Adds a staged upload to a template: the bytes are stored once under their SHA-256 (the same
 * blob an envelope upload of the same file, or a jumpstart copy, uses). Idempotent per
 * `Idempotency-Key`. Always consumes the staged upload.
 */
export async function addTemplateDocument(
  context: ServiceContext,
  options: { templateId: string; upload: StagedDocument; fields: unknown; idempotencyKey?: string },
): Promise<DocumentData> {
  const { upload } = options;
  try {
    const fields = parseDocumentFields(upload, options.fields);
    return await createInTemplate(
      context,
      {
        templateId: options.templateId,
        idempotencyKey: options.idempotencyKey,
        request: { operation: 'addTemplateDocument', sha256: upload.blob.sha256, fields: options.fields },
      },
      async (change) => {
        const existing = await change.em.count(Document, { template: change.template });
        ensureCapacity('Template', 'documents', TEMPLATE_CAPACITY.documents, existing, 1);
        const document = await storeDocument(change.em, { envelope: null, template: change.template }, upload, fields, existing);
        await auditTemplateChange(context, { ...change, templateId: change.template.id }, 'document.added', documentAddedDetails(document));
        return document.id;
      },
      (reading, documentId) => readDocument(reading, { owner: { kind: 'template', id: options.templateId }, documentId }),
    );
  } finally {
    await upload.blob.discard();
  }
}

async function findTemplateDocument(em: ServiceContext['em'], template: Template, documentId: string): Promise<Document> {
  if (!isUuid(documentId)) throw new DocumentNotFoundError(documentId, 'template');
  const document = await em.findOne(Document, { id: documentId, template });
  if (!document) throw new DocumentNotFoundError(documentId, 'template');
  return document;
}

/** Renames, reorders or re-describes a document of a template your team owns. */
export async function updateTemplateDocument(
  context: ServiceContext,
  options: { templateId: string; documentId: string; input: unknown },
): Promise<DocumentData> {
  const input = parseInput(updateDocumentInput, options.input);
  await changeTemplate(context, options.templateId, async (change) => {
    const document = await findTemplateDocument(change.em, change.template, options.documentId);
    if (Object.keys(input).length === 0) return;
    change.em.assign(document, input);
    await auditTemplateChange(context, { ...change, templateId: change.template.id }, 'document.updated', { documentId: document.id, changed: Object.keys(input) });
  });
  return readDocument(context, { owner: { kind: 'template', id: options.templateId }, documentId: options.documentId });
}

/** Removes a document of a template, and the template's fields left without a placement. */
export async function deleteTemplateDocument(context: ServiceContext, options: { templateId: string; documentId: string }): Promise<void> {
  await changeTemplate(context, options.templateId, async (change) => {
    const document = await findTemplateDocument(change.em, change.template, options.documentId);
    const removedFieldIds = await removeDocument(change.em, document);
    await auditTemplateChange(context, { ...change, templateId: change.template.id }, 'document.removed', {
      documentId: document.id,
      name: document.name,
      removedFieldIds,
    });
  });
}
