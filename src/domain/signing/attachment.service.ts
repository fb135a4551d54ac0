import { type Readable, Transform } from 'node:stream';
import type { EntityManager } from '@mikro-orm/postgresql';
import { BlobSourceError, BlobTooLargeError, type StagedBlob } from '../../shared/blob-store/index.ts';
import { ServerBusyError } from '../../shared/errors.ts';
import { isUuid } from '../../shared/ids.ts';
import {
  AttachmentImageTooLargeError,
  AttachmentInvalidImageError,
  AttachmentInvalidPdfError,
  AttachmentNotAttachmentFieldError,
  AttachmentTooLargeError,
  AttachmentTooManyFilesError,
  AttachmentTypeNotAcceptedError,
  AttachmentUnknownFileError,
  AttachmentUnsupportedTypeError,
  AttachmentUploadIncompleteError,
} from '../field/attachment.errors.ts';
import { contentTypeOf, sniffAttachment } from '../field/attachment-content.ts';
import { Field } from '../field/field.entity.ts';
import { FieldAttachment } from '../field/field-attachment.entity.ts';
import { type AttachmentConfig, type AttachmentContentType, type AttachmentFile, fieldLimits, parseFieldConfig } from '../field/field-values.ts';
import { PdfInspectionError } from '../pdf/inspect/inspect.ts';
import { PdfWorkersBusyError, PdfWorkLimitError } from '../pdf/worker-pool.ts';
import type { ServiceContext } from '../service-context.ts';
import { unreadableNameProblem } from '../validation.ts';
import { ensureOtpVerified } from './otp-gate.ts';
import { SigningFieldNotAssignedError } from './signing.errors.ts';
import { actWithToken, ensureMayAct, lookUpToken, type TokenRow } from './signing.service.ts';

/*
 * Files a signer uploads for an attachment field (issue 32, docs/fields.md#attachment), under the
 * signing link's token like every signing operation. The order of the checks is what keeps a
 * refusal free: who and which field before any byte is read; the size while the bytes stream to a
 * local staging file (never into the store); what the bytes are, and for images their claimed
 * size, before anything decodes them; a PDF through the documents' own inspection. Only a file
 * that passed everything is written to the blob store, and its row is recorded under the
 * envelope's lock, where the field's file count is checked again.
 */

/** An uploaded file as the faces answer it (the `files` entries of the field's value). */
export type AttachmentRecord = AttachmentFile & { fieldId: string; createdAt: Date };

type AttachmentTarget = { field: { id: string; type: string; config: Record<string, unknown> }; config: AttachmentConfig };

/** The field of the token's recipient, as an attachment field, with its config's defaults filled. */
async function attachmentTarget(em: EntityManager, found: TokenRow, fieldId: string): Promise<AttachmentTarget & { uploaded: number }> {
  const [row] = isUuid(fieldId)
    ? await em.execute<{ id: string; type: string; config: Record<string, unknown>; recipient_id: string | null; uploaded: string }[]>(
        `select f.id, f.type, f.config, f.recipient_id,
                (select count(*) from field_attachment a where a.field_id = f.id and a.recipient_id = ?) as uploaded
           from field f where f.id = ? and f.envelope_id = ?`,
        [found.recipient_id, fieldId.toLowerCase(), found.envelope_id],
      )
    : [];
  // Another recipient's field is told apart from none only by the sender: to the signer both are not theirs.
  if (!row || row.recipient_id !== found.recipient_id) throw new SigningFieldNotAssignedError([fieldId]);
  if (row.type !== 'attachment') throw new AttachmentNotAttachmentFieldError(row.id, row.type);
  const config = parseFieldConfig('attachment', row.config, 'config').config as AttachmentConfig;
  return { field: row, config, uploaded: Number(row.uploaded) };
}

/** The name a file is listed under: its own, made storable and readable; else `attachment`. */
function attachmentName(filename: string | undefined, contentType: AttachmentContentType): string {
  const cleaned = (filename ?? '').replace(/[\u0000-\u001f\u007f]/g, '').replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd');
  const base = cleaned.split(/[\\/]/).pop()?.trim() ?? '';
  const fallback = `attachment.${{ 'application/pdf': 'pdf', 'image/png': 'png', 'image/jpeg': 'jpg' }[contentType]}`;
  if (base === '' || unreadableNameProblem(base) !== undefined) return fallback;
  return [...base].slice(0, fieldLimits.attachmentNameMaxLength).join('');
}

/**
 * Streams the upload to a staging file and stops at the first byte past `limitBytes`: the staging
 * file is deleted (stageFile's own clean-up) and nothing more of the file is read into it. (The
 * store's own limit reads on to twice the limit for a documents' clean answer; a signer's file
 * over its field's few megabytes is refused at once.) The rest of the request body is drained by
 * the face so that the refusal can be answered.
 */
async function stageWithin(context: ServiceContext, stream: Readable, limitBytes: number): Promise<StagedBlob> {
  let received = 0;
  let overLimit = false;
  const limiter = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      received += chunk.length;
      if (received > limitBytes) {
        overLimit = true;
        callback(new AttachmentTooLargeError(limitBytes));
        return;
      }
      callback(null, chunk);
    },
  });
  stream.once('error', (error) => limiter.destroy(error));
  stream.pipe(limiter);
  try {
    return await context.blobStore.stage(limiter, { limitBytes });
  } catch (error) {
    if (overLimit || error instanceof BlobTooLargeError) throw new AttachmentTooLargeError(limitBytes);
    if (error instanceof BlobSourceError) throw new AttachmentUploadIncompleteError();
    throw error;
  } finally {
    stream.unpipe(limiter);
  }
}

/** What the staged bytes are, checked against the field's `accept`; PDFs through the documents' inspection. */
async function judgeContent(context: ServiceContext, staged: StagedBlob, config: AttachmentConfig, teamId: string): Promise<AttachmentContentType> {
  const sniffed = await sniffAttachment(staged.stagingPath);
  if ('problem' in sniffed) {
    const { problem } = sniffed;
    if (problem.reason === 'too_large') {
      throw new AttachmentImageTooLargeError(problem.width, problem.height, { maxSide: fieldLimits.attachmentImageMaxSide, maxPixels: fieldLimits.attachmentImageMaxPixels });
    }
    throw new AttachmentInvalidImageError(problem.contentType, problem.detail);
  }
  const contentType = contentTypeOf(sniffed.content);
  if (contentType === undefined) throw new AttachmentUnsupportedTypeError();
  if (!config.accept.includes(contentType)) throw new AttachmentTypeNotAcceptedError(contentType, config.accept);
  if (contentType === 'application/pdf') await inspectPdf(context, staged.stagingPath, teamId);
  return contentType;
}

async function inspectPdf(context: ServiceContext, filePath: string, teamId: string): Promise<void> {
  try {
    // In a PDF worker, in the team's turn, with the documents' time and memory bounds.
    await context.pdfWorkers.inspect(filePath, { team: teamId });
  } catch (error) {
    if (error instanceof PdfInspectionError) {
      if (error.reason === 'not_pdf' || error.reason === 'invalid') throw new AttachmentInvalidPdfError('invalid', error.detail);
      if (error.reason === 'encrypted') throw new AttachmentInvalidPdfError('encrypted');
      if (error.reason === 'too_complex') throw new AttachmentInvalidPdfError('too_complex', error.detail);
      throw new AttachmentInvalidPdfError('invalid', error.detail);
    }
    if (error instanceof PdfWorkLimitError) throw new AttachmentInvalidPdfError('inspection_limit', error.message);
    if (error instanceof PdfWorkersBusyError) {
      throw new ServerBusyError('The service is checking too many documents right now; nothing was stored. Retry in a few seconds.', { reason: error.reason });
    }
    throw error;
  }
}

function recordOf(row: FieldAttachment): AttachmentRecord {
  return { id: row.id, fieldId: row.field.id, name: row.name, contentType: row.contentType, size: row.byteSize, sha256: row.sha256, createdAt: row.createdAt };
}

/**
 * Receives one file for one of the token's recipient's attachment fields and answers its record.
 * Refusals (each named, nothing stored): not the recipient's field, not an attachment field, the
 * field's `maxFiles` already uploaded, over `maxBytes` (while streaming), a type outside `accept`
 * or none of the three, an image claiming too many pixels or damaged, a PDF the inspection
 * refuses; and every refusal of signing itself (dead link, not the recipient's turn, completed,
 * one-time code not verified, envelope closed).
 */
export async function uploadSigningAttachment(context: ServiceContext, options: { fieldId: string; stream: Readable; filename: string | undefined }): Promise<AttachmentRecord> {
  const found = await lookUpToken(context);
  const target = await attachmentTarget(context.em.fork(), found, options.fieldId);
  if (target.uploaded >= target.config.maxFiles) throw new AttachmentTooManyFilesError(target.field.id, target.config.maxFiles);
  const staged = await stageWithin(context, options.stream, target.config.maxBytes);
  let contentType: AttachmentContentType;
  try {
    contentType = await judgeContent(context, staged, target.config, found.team_id);
    // Written before its row, as documents are: a row never names a missing object, and an
    // object whose row then loses (the count raced, the role completed) is an orphan that
    // orphan-blobs.ts removes after its grace period.
    await staged.commit();
  } catch (error) {
    await staged.discard();
    throw error;
  }
  const name = attachmentName(options.filename, contentType);
  return actWithToken(context, async ({ workflow, token, recipient }) => {
    const { em, now } = workflow;
    ensureMayAct(recipient);
    await ensureOtpVerified(em, { token, recipient, now });
    // Counted again under the envelope's lock: two uploads racing for the last slot get one.
    const again = await attachmentTarget(em, found, target.field.id);
    if (again.uploaded >= again.config.maxFiles) throw new AttachmentTooManyFilesError(again.field.id, again.config.maxFiles);
    const row = em.create(FieldAttachment, {
      envelope: found.envelope_id,
      field: target.field.id,
      recipient: found.recipient_id,
      name,
      contentType,
      byteSize: staged.byteSize,
      sha256: staged.sha256,
      createdAt: now,
    });
    await em.flush();
    return recordOf(row);
  });
}

/**
 * Removes one of the recipient's uploads before it completes (to make room under `maxFiles`, or
 * drop a wrong file); a field value naming it loses it. The object stays in the store while any
 * row names it; orphan-blobs.ts removes it after that.
 */
export async function removeSigningAttachment(context: ServiceContext, options: { fileId: string }): Promise<{ id: string }> {
  return actWithToken(context, async ({ workflow, token, recipient }) => {
    const { em, now } = workflow;
    ensureMayAct(recipient);
    await ensureOtpVerified(em, { token, recipient, now });
    const row = isUuid(options.fileId) ? await em.findOne(FieldAttachment, { id: options.fileId.toLowerCase(), recipient: recipient.id, envelope: workflow.envelopeId }) : null;
    if (!row) throw new AttachmentUnknownFileError([options.fileId]);
    const field = await em.findOneOrFail(Field, { id: row.field.id });
    const files = (field.value?.files as AttachmentFile[] | undefined)?.filter((file) => file.id !== row.id);
    if (files !== undefined) field.value = files.length > 0 ? { files } : null;
    em.remove(row);
    await em.flush();
    return { id: row.id };
  });
}
