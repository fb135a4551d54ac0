import { sql } from 'kysely';
import { isUuid } from '../../shared/ids.ts';
import { type EnvelopeAttachmentData, readEnvelope } from '../envelope/envelope.read.ts';
import { AttachmentNotFoundError } from '../field/attachment.errors.ts';
import type { ReadDb } from '../read-model.ts';
import type { ServiceContext } from '../service-context.ts';
import type { Download } from './download.ts';
import { recordDownload } from './download-record.ts';
import { DOWNLOAD_URL_TTL_SECONDS, signDownloadToken } from './download-url.ts';

/*
 * The sender's side of attachment fields (docs/fields.md#attachment): the files signers uploaded
 * and kept, listed through the envelope's read model (team-scoped there: another team's envelope
 * is Envelope.NotFound, as one that does not exist) and downloaded as stored, streamed.
 */

/** The envelope's kept attachments, oldest first (one statement). */
export async function readEnvelopeAttachments(context: ServiceContext, options: { envelopeId: string }): Promise<EnvelopeAttachmentData[]> {
  const envelope = await readEnvelope(context, options.envelopeId, { attachments: true, keys: { envelope: new Set(['id']) } });
  return envelope.attachments ?? [];
}

/**
 * One attachment's bytes, with the content type judged at upload and its name; recorded in the
 * audit chain as every download is. An id the envelope's values do not name (an upload not kept,
 * another envelope's file) is `Attachment.NotFound`.
 */
export async function downloadAttachment(context: ServiceContext, options: { envelopeId: string; fileId: string }): Promise<Download> {
  const caller = await context.caller();
  const envelope = await readEnvelope(context, options.envelopeId, { attachments: true, keys: { envelope: new Set(['id']) } });
  const file = isUuid(options.fileId) ? envelope.attachments?.find((attachment) => attachment.id === options.fileId.toLowerCase()) : undefined;
  if (!file) throw new AttachmentNotFoundError(options.fileId);
  // Opened before the download is recorded: a missing object is Storage.ObjectMissing, and no record.
  const stream = await context.blobStore.openRead(file.sha256);
  try {
    await recordDownload(
      context,
      { teamId: caller.teamId, envelopeId: envelope.id },
      { format: 'attachment', attachmentId: file.id, sha256: file.sha256 },
      { type: 'api_key', id: caller.apiKeyId },
    );
  } catch (error) {
    stream.destroy();
    throw error;
  }
  return { fileName: file.name, contentType: file.contentType, stream, sealed: false };
}

/** A signed URL (5 minutes, no key header) for one attachment; checked now, as the download would be. */
export async function issueAttachmentDownloadUrl(context: ServiceContext, options: { envelopeId: string; fileId: string }): Promise<{ url: string; expiresAt: Date }> {
  const envelope = await readEnvelope(context, options.envelopeId, { attachments: true, keys: { envelope: new Set(['id']) } });
  const file = isUuid(options.fileId) ? envelope.attachments?.find((attachment) => attachment.id === options.fileId.toLowerCase()) : undefined;
  if (!file) throw new AttachmentNotFoundError(options.fileId);
  const expiresAt = new Date(context.clock.now().getTime() + DOWNLOAD_URL_TTL_SECONDS * 1000);
  const token = signDownloadToken(context.auditKey, await context.caller(), { envelopeId: envelope.id, documentId: null, attachmentId: file.id }, expiresAt);
  return { url: `${context.publicUrl}/api/v1/key/downloads/${token}`, expiresAt };
}

/** A kept attachment as the artefacts carry it (the ZIP, the evidence package, the certificate). */
export type KeptAttachment = { id: string; fieldIdentifier: string; recipientId: string; name: string; contentType: string; size: number; sha256: string };

/**
 * The kept attachments of an envelope already located through its team's gate, oldest first:
 * those a field's submitted value names (one statement).
 */
export async function keptAttachmentsOf(reader: ReadDb, envelopeId: string): Promise<KeptAttachment[]> {
  const rows = await reader
    .selectFrom('field_attachment as fa')
    .innerJoin('field as af', 'af.id', 'fa.field_id')
    .select([
      'fa.id as id',
      'af.identifier as fieldIdentifier',
      'fa.recipient_id as recipientId',
      'fa.name as name',
      'fa.content_type as contentType',
      'fa.byte_size as size',
      'fa.sha256 as sha256',
    ])
    .where('fa.envelope_id', '=', envelopeId)
    .where(sql<boolean>`af.value -> 'files' @> jsonb_build_array(jsonb_build_object('id', fa.id::text))`)
    .orderBy('fa.created_at')
    .orderBy('fa.id')
    .execute();
  return rows.map((row) => ({ ...row, size: Number(row.size) }));
}
