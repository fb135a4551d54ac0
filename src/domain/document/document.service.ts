import fs from 'node:fs';
import type { Readable } from 'node:stream';
import { z } from 'zod';
import { BlobSourceError, BlobTooLargeError, type StagedBlob, type StoredBlob } from '../../shared/blob-store/index.ts';
import { InvalidRequestError, ServerBusyError } from '../../shared/errors.ts';
import { isUuid } from '../../shared/ids.ts';
import { ensureCapacity } from '../capacity.ts';
import { Field } from '../field/field.entity.ts';
import { ensureFieldsNotNamed } from '../field/field.service.ts';
import { FieldView } from '../field/field-view.entity.ts';
import { ensureNothingSigned } from '../owner/correction.ts';
import { type DocumentData, readDocument } from '../owner/owner.read.ts';
import { createInOwner, type OwnerChange, ownerColumns } from '../owner/owner.ts';
import type { OwnerRef } from '../owner/owner-ref.ts';
import { contentOwner } from '../owner/owners.ts';
import { decryptWithoutPassword } from '../pdf/decrypt.ts';
import { type PdfInspection, PdfInspectionError } from '../pdf/inspect/inspect.ts';
import { PdfWorkersBusyError, PdfWorkLimitError } from '../pdf/worker-pool.ts';
import type { ServiceContext } from '../service-context.ts';
import { boundedInteger, characterCount, jsonObject, parseInput, readableName, unreadableNameProblem } from '../validation.ts';
import { Document } from './document.entity.ts';
import {
  DocumentEncryptedError,
  DocumentInspectionLimitExceededError,
  DocumentInvalidPdfError,
  DocumentNotFoundError,
  DocumentNotPdfError,
  DocumentTooComplexError,
  DocumentTooLargeError,
  DocumentUploadIncompleteError,
} from './document.errors.ts';

export const MAX_DOCUMENT_NAME_LENGTH = 140;

/** An upload that arrived completely, is a readable unencrypted PDF, and is not stored yet. */
export type StagedDocument = {
  blob: StagedBlob;
  filename: string | undefined;
  inspection: PdfInspection;
};

/*
 * Documents of an envelope or a template (owner/owner.ts), one set of rules for both: the upload
 * (streamed to a staging file, the size limit, PDF inspection in a worker, the content-addressed
 * blob), the owner's capacity, renaming and removal with the fields left without a placement.
 */

/**
 * The checks an upload must pass before any of its bytes are read: the caller is authenticated
 * and may change the owner (an envelope of theirs that is a draft: `Envelope.NotFound`,
 * `Envelope.NotDraft`; a template their team owns: `Template.NotFound`, `Template.NotOwner`).
 * One cheap read, no lock; the rules are checked again under the lock when the document is added.
 */
export async function checkUploadTarget(context: ServiceContext, options: { owner: OwnerRef; idempotencyKey?: string }): Promise<void> {
  await contentOwner(options.owner.kind).checkUploadTarget(context, options.owner.id, options.idempotencyKey);
}

/**
 * Receives an upload for an owner: checks the owner first (so a wrong id, or an envelope that is
 * no longer a draft, costs no upload), then stages the file (`stageDocumentFile`).
 */
export async function stageDocumentUpload(
  context: ServiceContext,
  options: { owner: OwnerRef; stream: Readable; filename: string | undefined; idempotencyKey?: string },
): Promise<StagedDocument> {
  await checkUploadTarget(context, options);
  return stageDocumentFile(context, options);
}

/**
 * Streams the bytes to a staging file while hashing and counting (never holding the file in
 * memory), then checks by content, in a PDF worker thread, that it is a complete, unencrypted PDF and reads its page
 * geometry. Anything refused is deleted at once: no partial file stays behind. This is all done
 * before `addDocument` takes the owner's lock, so a slow upload never holds the lock (or a
 * database connection). The caller has run `checkUploadTarget` first.
 */
export function stageDocumentFile(context: ServiceContext, options: { stream: Readable; filename: string | undefined }): Promise<StagedDocument> {
  return stagePdf(context, options);
}

/**
 * Inspects an upload; an encrypted one that opens without a password (owner password only) is
 * inspected through its decrypted copy (pdf/decrypt.ts), the rest stay `encrypted`.
 */
async function inspectDecryptingOwnerOnly(context: ServiceContext, filePath: string) {
  // Uploads are a team's: the fair queue serves each team's in turn (pdf/worker-pool.ts).
  const team = (await context.caller()).teamId;
  try {
    return await context.pdfWorkers.inspect(filePath, { team });
  } catch (error) {
    if (!(error instanceof PdfInspectionError) || error.reason !== 'encrypted') throw error;
    const decryptedPath = `${filePath}.decrypted`;
    if (!(await decryptWithoutPassword(filePath, decryptedPath))) throw error;
    try {
      return await context.pdfWorkers.inspect(decryptedPath, { team });
    } finally {
      await fs.promises.rm(decryptedPath, { force: true });
    }
  }
}

/** Receives an uploaded file into the blob store's staging area; too large or cut off are refused by name. */
export async function stageUploadedFile(context: ServiceContext, stream: Readable): Promise<StagedBlob> {
  const limit = context.limits.maxDocumentBytes;
  try {
    return await context.blobStore.stage(stream, { limitBytes: limit });
  } catch (error) {
    if (error instanceof BlobTooLargeError) throw new DocumentTooLargeError(limit);
    if (error instanceof BlobSourceError) throw new DocumentUploadIncompleteError();
    throw error;
  }
}

async function stagePdf(context: ServiceContext, options: { stream: Readable; filename: string | undefined }): Promise<StagedDocument> {
  const blob = await stageUploadedFile(context, options.stream);
  try {
    // In a worker thread, with a time and a memory limit: a PDF's structure can cost seconds
    // to read, and the event loop serves every other request meanwhile.
    const inspection = await inspectDecryptingOwnerOnly(context, blob.stagingPath);
    return { blob, filename: options.filename, inspection };
  } catch (error) {
    await blob.discard();
    if (error instanceof PdfInspectionError) {
      if (error.reason === 'not_pdf') throw new DocumentNotPdfError();
      if (error.reason === 'encrypted') throw new DocumentEncryptedError();
      if (error.reason === 'too_complex') throw DocumentTooComplexError.from(error);
      throw new DocumentInvalidPdfError(error.detail);
    }
    if (error instanceof PdfWorkLimitError) throw new DocumentInspectionLimitExceededError(error.limit, error.value);
    if (error instanceof PdfWorkersBusyError) {
      throw new ServerBusyError('The service is checking too many documents right now; nothing was stored. Retry in a few seconds.', { reason: error.reason });
    }
    throw error;
  }
}

export const addDocumentInput = z.strictObject({
  name: readableName(1, MAX_DOCUMENT_NAME_LENGTH).optional(),
  order: boundedInteger(0, 10_000).optional(),
  context: jsonObject.default({}),
});

function defaultNameFor(filename: string | undefined): string {
  // A file name is whatever the client's machine allowed: keep it storable. Only a lone surrogate
  // (broken UTF-16) becomes U+FFFD; a pair is one character (an emoji, a CJK extension) and stays.
  const cleaned = (filename ?? '').replace(/[\u0000-\u001f\u007f]/g, '').replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd');
  const base = cleaned.split(/[\\/]/).pop()?.trim() || 'document.pdf';
  // The file name becomes a name the signer reads, so it meets the same rule as a given name.
  const problem = unreadableNameProblem(base);
  if (problem !== undefined) {
    throw new InvalidRequestError([{ path: 'name', message: `no name was given and the file name cannot serve as one: it ${problem}; send a name` }]);
  }
  return characterCount(base) <= MAX_DOCUMENT_NAME_LENGTH ? base : [...base].slice(0, MAX_DOCUMENT_NAME_LENGTH).join('');
}

/** An upload's form fields (name, order, context), checked; the name defaults to the file name. */
export function parseDocumentFields(upload: StagedDocument, fields: unknown): { name: string; order: number | undefined; context: Record<string, unknown> } {
  const input = parseInput(addDocumentInput, fields);
  return { name: input.name ?? defaultNameFor(upload.filename), order: input.order, context: input.context };
}

/**
 * Writes the document row of an upload already in the blob store (`stored`) for its owner, an
 * envelope or a template. `existing` is how many documents the owner has: the default order puts
 * the new one after them.
 */
/** The document's row for an inspected, stored upload; `existing` documents of the owner place it last unless `fields.order` says. */
async function storeDocument(
  change: OwnerChange,
  upload: StagedDocument,
  stored: StoredBlob,
  given: { fields: ReturnType<typeof parseDocumentFields>; existing: number },
): Promise<Document> {
  const { fields, existing } = given;
  const { em } = change;
  const document = em.create(Document, {
    ...ownerColumns(change.scope),
    name: fields.name,
    order: fields.order ?? existing,
    context: fields.context,
    status: null,
    pageCount: upload.inspection.pageCount,
    pages: upload.inspection.pages,
    contentSha256: stored.sha256,
    byteSize: stored.byteSize,
  });
  em.persist(document);
  await em.flush();
  return document;
}

/**
 * Adds a staged upload to an owner: stores the original once under its SHA-256, records page count
 * and page sizes, and audits. `order` defaults to after the last document; `name` to the file
 * name. Idempotent per `Idempotency-Key`. Always consumes the staged upload: stored on success,
 * deleted on any refusal.
 */
export async function addDocument(context: ServiceContext, options: { owner: OwnerRef; upload: StagedDocument; fields: unknown; idempotencyKey?: string }): Promise<DocumentData> {
  const { upload } = options;
  const owner = contentOwner(options.owner.kind);
  try {
    const fields = parseDocumentFields(upload, options.fields);
    // The object is written before the transaction that adds its row, and outside it: metadata
    // never names a missing object, and no row lock waits on the store (a 48 MB upload to S3). A
    // refusal inside (capacity, a lost race) leaves the object unreferenced; the orphan sweep
    // removes it after its grace period (document/orphan-blobs.ts).
    const stored = await upload.blob.commit();
    return await createInOwner(
      owner,
      context,
      {
        ownerId: options.owner.id,
        idempotencyKey: options.idempotencyKey,
        creation: 'addDocument',
        request: { sha256: upload.blob.sha256, fields: options.fields },
      },
      async (change) => {
        // Correcting a sent envelope: its documents change only while nobody has acted.
        await ensureNothingSigned(change);
        const existing = await change.em.count(Document, change.scope);
        ensureCapacity(owner.capacity.owner, { what: 'documents', limit: owner.capacity.documents, current: existing, adding: 1 });
        const document = await storeDocument(change, upload, stored, { fields, existing });
        await owner.audit(context, change, 'document.added', {
          documentId: document.id,
          name: document.name,
          sha256: document.contentSha256,
          pageCount: document.pageCount,
          byteSize: document.byteSize,
        });
        return document.id;
      },
      (reading, documentId) => readDocument(reading, { owner: options.owner, documentId }),
    );
  } finally {
    // A no-op after a successful commit (the staging file was renamed away).
    await upload.blob.discard();
  }
}

async function findDocument(change: OwnerChange, owner: OwnerRef, documentId: string): Promise<Document> {
  if (!isUuid(documentId)) throw new DocumentNotFoundError(documentId, owner.kind);
  const document = await change.em.findOne(Document, { id: documentId, ...change.scope });
  if (!document) throw new DocumentNotFoundError(documentId, owner.kind);
  return document;
}

export const updateDocumentInput = z.strictObject({
  name: readableName(1, MAX_DOCUMENT_NAME_LENGTH).optional(),
  order: boundedInteger(0, 10_000).optional(),
  context: jsonObject.optional(),
});

/** Renames, reorders or re-describes a document of an owner. */
export async function updateDocument(context: ServiceContext, options: { owner: OwnerRef; documentId: string; input: unknown }): Promise<DocumentData> {
  const input = parseInput(updateDocumentInput, options.input);
  const owner = contentOwner(options.owner.kind);
  await owner.change(context, options.owner.id, async (change) => {
    const document = await findDocument(change, options.owner, options.documentId);
    if (Object.keys(input).length === 0) return;
    await ensureNothingSigned(change);
    change.em.assign(document, input);
    await owner.audit(context, change, 'document.updated', { documentId: document.id, changed: Object.keys(input) });
  });
  return readDocument(context, options);
}

/**
 * Deletes a document and every field of the same owner left with no placement at all (docs/reference/interface-spec.md §3.1
 * rule 3); its placements go by foreign-key cascade. Answers the ids of the removed fields.
 */
async function removeDocument(change: OwnerChange, document: Document, ownerKind: OwnerRef['kind']): Promise<string[]> {
  const { em } = change;
  const placed = await em.find(FieldView, { document }, { fields: ['field'] });
  const affectedFieldIds = [...new Set(placed.map((view) => view.field.id))];
  await em.nativeDelete(Document, { id: document.id });
  if (affectedFieldIds.length === 0) return [];
  const stillPlaced = await em.find(FieldView, { field: { $in: affectedFieldIds } }, { fields: ['field'] });
  const keep = new Set(stillPlaced.map((view) => view.field.id));
  const removedFieldIds = affectedFieldIds.filter((id) => !keep.has(id));
  // Not a field another field's formula or conditions name (issue 32): the whole removal is refused.
  await ensureFieldsNotNamed(change, ownerKind, removedFieldIds);
  if (removedFieldIds.length > 0) await em.nativeDelete(Field, { id: { $in: removedFieldIds }, ...change.scope });
  return removedFieldIds;
}

/**
 * Removes a document from an owner. Its placements go with it (foreign-key cascade), and so does
 * every field that is left with no placement at all (docs/reference/interface-spec.md §3.1 rule 3): a field placed on this
 * document and on another one keeps its other placements.
 */
export async function deleteDocument(context: ServiceContext, options: { owner: OwnerRef; documentId: string }): Promise<void> {
  const owner = contentOwner(options.owner.kind);
  await owner.change(context, options.owner.id, async (change) => {
    const document = await findDocument(change, options.owner, options.documentId);
    await ensureNothingSigned(change);
    const removedFieldIds = await removeDocument(change, document, options.owner.kind);
    await owner.audit(context, change, 'document.removed', { documentId: document.id, name: document.name, removedFieldIds });
  });
}
