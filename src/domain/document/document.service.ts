import fs from 'node:fs';
import { decryptWithoutPassword } from './pdf-decrypt.ts';
import type { Readable } from 'node:stream';
import { z } from 'zod';
import { BlobSourceError, BlobTooLargeError, type StagedBlob } from '../../shared/blob-store.ts';
import { ServerBusyError } from '../../shared/errors.ts';
import { isUuid } from '../../shared/ids.ts';
import { InvalidRequestError } from '../../shared/errors.ts';
import { Envelope } from '../envelope/envelope.entity.ts';
import { EnvelopeNotDraftError } from '../envelope/envelope.errors.ts';
import { auditChange, changeDraftEnvelope, createInDraftEnvelope, findTeamEnvelope } from '../envelope/envelope.service.ts';
import { ENVELOPE_CAPACITY, ensureCapacity } from '../capacity.ts';
import { readDocument, type DocumentData } from '../envelope/envelope.read.ts';
import { Field } from '../field/field.entity.ts';
import type { Template } from '../template/template.entity.ts';
import { FieldView } from '../field/field-view.entity.ts';
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
import { PDF_INFLATED_BYTES_LIMIT, PdfInspectionError, type PdfInspection } from './pdf-inspector.ts';
import { PdfWorkersBusyError, PdfWorkLimitError } from './pdf-worker-pool.ts';

export const MAX_DOCUMENT_NAME_LENGTH = 140;

/** An upload that arrived completely, is a readable unencrypted PDF, and is not stored yet. */
export type StagedDocument = {
  blob: StagedBlob;
  filename: string | undefined;
  inspection: PdfInspection;
};

/**
 * The checks an upload must pass before any of its bytes are read: the caller is authenticated
 * and the envelope is theirs and a draft (`Envelope.NotFound`, `Envelope.NotDraft`). One cheap
 * read, no lock; the draft rule is checked again under the lock when the document is added.
 *
 * With an `Idempotency-Key` the draft check waits for `addDocument`: a repeat of an upload that
 * succeeded before the envelope was sent must still get its first answer, and whether it is a
 * repeat depends on the file's hash, known only once it has arrived.
 */
export async function checkUploadTarget(context: ServiceContext, options: { envelopeId: string; idempotencyKey?: string }): Promise<void> {
  const caller = await context.caller();
  const envelope = await findTeamEnvelope(context.em, caller, options.envelopeId);
  if (envelope.status !== 'draft' && options.idempotencyKey === undefined) throw new EnvelopeNotDraftError(envelope.id, envelope.status);
}

/**
 * Receives an upload for a draft envelope: checks the envelope first (so a wrong id, or an
 * envelope that is no longer a draft, costs no upload), then stages the file (`stageDocumentFile`).
 */
export async function stageDocumentUpload(
  context: ServiceContext,
  options: { envelopeId: string; stream: Readable; filename: string | undefined; idempotencyKey?: string },
): Promise<StagedDocument> {
  await checkUploadTarget(context, options);
  return stageDocumentFile(context, options);
}

/**
 * Streams the bytes to a staging file while hashing and counting (never holding the file in
 * memory), then checks by content, in a PDF worker thread, that it is a complete, unencrypted PDF and reads its page
 * geometry. Anything refused is deleted at once: no partial file stays behind. This is all done
 * before `addDocument` takes the envelope's row lock, so a slow upload never holds the lock (or a
 * database connection). The caller has run `checkUploadTarget` first.
 */
export function stageDocumentFile(context: ServiceContext, options: { stream: Readable; filename: string | undefined }): Promise<StagedDocument> {
  return stagePdf(context, options);
}

/**
 * Inspects an upload; an encrypted one that opens without a password (owner password only) is
 * inspected through its decrypted copy (pdf-decrypt.ts), the rest stay `encrypted`.
 */
async function inspectDecryptingOwnerOnly(context: ServiceContext, filePath: string) {
  try {
    return await context.pdfWorkers.inspect(filePath);
  } catch (error) {
    if (!(error instanceof PdfInspectionError) || error.reason !== 'encrypted') throw error;
    const decryptedPath = `${filePath}.decrypted`;
    if (!(await decryptWithoutPassword(filePath, decryptedPath))) throw error;
    try {
      return await context.pdfWorkers.inspect(decryptedPath);
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
      if (error.reason === 'too_complex') throw new DocumentTooComplexError(PDF_INFLATED_BYTES_LIMIT);
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

export type DocumentOwner = { envelope: Envelope; template: null } | { envelope: null; template: Template };

/** An upload's form fields (name, order, context), checked; the name defaults to the file name. */
export function parseDocumentFields(upload: StagedDocument, fields: unknown): { name: string; order: number | undefined; context: Record<string, unknown> } {
  const input = parseInput(addDocumentInput, fields);
  return { name: input.name ?? defaultNameFor(upload.filename), order: input.order, context: input.context };
}

/**
 * Stores a staged upload's bytes under their SHA-256 (before the row that points at it commits, so
 * metadata never names a missing file; the same bytes are stored once for every owner) and writes
 * the document row for its owner, an envelope or a template. `existing` is how many documents the
 * owner has: the default order puts the new one after them.
 */
export async function storeDocument(
  em: ServiceContext['em'],
  owner: DocumentOwner,
  upload: StagedDocument,
  fields: ReturnType<typeof parseDocumentFields>,
  existing: number,
): Promise<Document> {
  const stored = await upload.blob.commit();
  const document = em.create(Document, {
    ...owner,
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
 * Adds a staged upload to a draft envelope: stores the original once under its SHA-256 (before
 * the row that points at it commits, so metadata never names a missing file), records page count
 * and page sizes, and audits. `order` defaults to after the last document; `name` to the file name.
 * Always consumes the staged upload: stored on success, deleted on any refusal.
 */
export async function addDocument(
  context: ServiceContext,
  options: { envelopeId: string; upload: StagedDocument; fields: unknown; idempotencyKey?: string },
): Promise<DocumentData> {
  const { upload } = options;
  try {
    const fields = parseDocumentFields(upload, options.fields);
    return await createInDraftEnvelope(
      context,
      {
        envelopeId: options.envelopeId,
        idempotencyKey: options.idempotencyKey,
        request: { operation: 'addDocument', sha256: upload.blob.sha256, fields: options.fields },
      },
      async (draft) => {
        const existing = await draft.em.count(Document, { envelope: draft.envelope });
        ensureCapacity('Envelope', 'documents', ENVELOPE_CAPACITY.documents, existing, 1);
        const document = await storeDocument(draft.em, { envelope: draft.envelope, template: null }, upload, fields, existing);
        await auditChange(context, draft, {
          envelopeId: draft.envelope.id,
          type: 'document.added',
          details: documentAddedDetails(document),
        });
        return document.id;
      },
      (reading, documentId) => readDocument(reading, { envelopeId: options.envelopeId, documentId }),
    );
  } finally {
    // A no-op after a successful commit (the staging file was renamed away).
    await upload.blob.discard();
  }
}

/** What `document.added` records of a new document. */
export function documentAddedDetails(document: Document) {
  return { documentId: document.id, name: document.name, sha256: document.contentSha256, pageCount: document.pageCount, byteSize: document.byteSize };
}

async function findDraftDocument(em: ServiceContext['em'], envelope: Envelope, documentId: string): Promise<Document> {
  if (!isUuid(documentId)) throw new DocumentNotFoundError(documentId);
  const document = await em.findOne(Document, { id: documentId, envelope });
  if (!document) throw new DocumentNotFoundError(documentId);
  return document;
}

export const updateDocumentInput = z.strictObject({
  name: readableName(1, MAX_DOCUMENT_NAME_LENGTH).optional(),
  order: boundedInteger(0, 10_000).optional(),
  context: jsonObject.optional(),
});

/** Renames (or reorders) a document of a draft envelope. */
export async function updateDocument(
  context: ServiceContext,
  options: { envelopeId: string; documentId: string; input: unknown },
): Promise<DocumentData> {
  const input = parseInput(updateDocumentInput, options.input);
  await changeDraftEnvelope(context, options.envelopeId, async (draft) => {
    const document = await findDraftDocument(draft.em, draft.envelope, options.documentId);
    if (Object.keys(input).length === 0) return;
    draft.em.assign(document, input);
    await auditChange(context, draft, {
      envelopeId: draft.envelope.id,
      type: 'document.updated',
      details: { documentId: document.id, changed: Object.keys(input) },
    });
  });
  return readDocument(context, options);
}

/**
 * Deletes a document (of an envelope or a template) and every field of the same owner left with
 * no placement at all (spec §3.1 rule 3); its placements go by foreign-key cascade. Answers the
 * ids of the removed fields.
 */
export async function removeDocument(em: ServiceContext['em'], document: Document): Promise<string[]> {
  const placed = await em.find(FieldView, { document }, { fields: ['field'] });
  const affectedFieldIds = [...new Set(placed.map((view) => view.field.id))];
  const owner = document.envelope ? { envelope: document.envelope.id } : { template: document.template!.id };
  await em.nativeDelete(Document, { id: document.id });
  if (affectedFieldIds.length === 0) return [];
  const stillPlaced = await em.find(FieldView, { field: { $in: affectedFieldIds } }, { fields: ['field'] });
  const keep = new Set(stillPlaced.map((view) => view.field.id));
  const removedFieldIds = affectedFieldIds.filter((id) => !keep.has(id));
  if (removedFieldIds.length > 0) await em.nativeDelete(Field, { id: { $in: removedFieldIds }, ...owner });
  return removedFieldIds;
}

/**
 * Removes a document from a draft envelope. Its placements go with it (foreign-key cascade), and
 * so does every field that is left with no placement at all (spec §3.1 rule 3): a field placed on
 * this document and on another one keeps its other placements.
 */
export async function deleteDocument(context: ServiceContext, options: { envelopeId: string; documentId: string }): Promise<void> {
  await changeDraftEnvelope(context, options.envelopeId, async (draft) => {
    const document = await findDraftDocument(draft.em, draft.envelope, options.documentId);
    const removedFieldIds = await removeDocument(draft.em, document);
    await auditChange(context, draft, {
      envelopeId: draft.envelope.id,
      type: 'document.removed',
      details: { documentId: document.id, name: document.name, removedFieldIds },
    });
  });
}
