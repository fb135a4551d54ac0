import type { Readable } from 'node:stream';
import type { Upload } from 'graphql-upload-minimal';
import { issueAttachmentDownloadUrl } from '../../domain/artefact/attachment-download.service.ts';
import type { EnvelopeAttachmentData } from '../../domain/envelope/envelope.read.ts';
import { AttachmentUploadIncompleteError } from '../../domain/field/attachment.errors.ts';
import { type AttachmentRecord, removeSigningAttachment, uploadSigningAttachment } from '../../domain/signing/attachment.service.ts';
import { builder } from '../builder.ts';
import { nested } from '../selection.ts';
import { uploadedFileStream } from '../uploads.ts';
import { DownloadUrl } from './artefact.ts';
import { EnvelopeType } from './envelope.ts';

/** The file part of a multipart request as a stream; a body cut off before the file is the attachment's own refusal. */
async function openAttachmentUpload(file: Upload): Promise<{ stream: Readable; filename: string | undefined }> {
  try {
    const upload = await file.promise;
    return { stream: uploadedFileStream(upload.createReadStream()), filename: upload.filename || undefined };
  } catch {
    throw new AttachmentUploadIncompleteError();
  }
}

export const AttachmentFileType = builder.objectRef<AttachmentRecord>('AttachmentFile').implement({
  description: 'A file a signer uploaded for an attachment field (docs/fields.md#attachment). Its type is judged from its bytes.',
  fields: (t) => ({
    id: t.exposeID('id', { description: 'Name it in the field’s value: { files: [{ id }] }.' }),
    fieldId: t.exposeID('fieldId'),
    name: t.exposeString('name', { description: 'The uploaded file’s name (at most 200 characters).' }),
    contentType: t.exposeString('contentType', { description: 'application/pdf, image/png or image/jpeg, from the bytes.' }),
    size: t.exposeInt('size', { description: 'In bytes.' }),
    sha256: t.exposeString('sha256', { description: 'Hex SHA-256 of the bytes.' }),
    createdAt: t.field({ type: 'DateTime', resolve: (file) => file.createdAt }),
  }),
});

builder.mutationFields((t) => ({
  uploadSigningAttachment: t.field({
    type: AttachmentFileType,
    nullable: true,
    description:
      'Uploads one file for one of your attachment fields (X-Signing-Token; a GraphQL multipart request). Checked by its bytes against the field’s accept, maxBytes (while it streams) and maxFiles; name it in submitSigning’s value to keep it.',
    args: { fieldId: t.arg.id({ required: true }), file: t.arg({ type: 'Upload', required: true }) },
    resolve: async (_root, args, context) => {
      const { stream, filename } = await openAttachmentUpload(args.file as Upload);
      return uploadSigningAttachment(context, { fieldId: String(args.fieldId), stream, filename }).catch((error) => {
        // Refused before or while reading: drop the rest of the file so the request can finish.
        stream.destroy();
        throw error;
      });
    },
  }),
  removeSigningAttachment: t.field({
    type: builder.objectRef<{ id: string }>('RemovedAttachment').implement({ fields: (f) => ({ id: f.exposeID('id') }) }),
    nullable: true,
    description: 'Removes one of your uploads before you complete (a value naming it loses it), freeing its place under maxFiles.',
    args: { fileId: t.arg.id({ required: true }) },
    resolve: (_root, args, context) => removeSigningAttachment(context, { fileId: String(args.fileId) }),
  }),
}));

// The sender's side: the files signers kept, read with the envelope in its one statement.

const EnvelopeAttachmentType = builder.objectRef<EnvelopeAttachmentData>('EnvelopeAttachment').implement({
  description: 'A file a signer uploaded for an attachment field and kept (named by the field’s submitted value). REST: GET /envelopes/{id}/attachments.',
  fields: (t) => ({
    id: t.exposeID('id'),
    fieldId: t.exposeID('fieldId'),
    fieldIdentifier: t.exposeString('fieldIdentifier'),
    recipientId: t.exposeID('recipientId'),
    name: t.exposeString('name'),
    contentType: t.exposeString('contentType', { description: 'application/pdf, image/png or image/jpeg, judged from the bytes.' }),
    size: t.exposeInt('size', { description: 'In bytes.' }),
    sha256: t.exposeString('sha256', { description: 'Hex SHA-256 of the bytes.' }),
    createdAt: t.field({ type: 'DateTime', resolve: (file) => new Date(file.createdAt) }),
  }),
});

builder.objectField(EnvelopeType, 'attachments', (t) =>
  t.field({
    type: [EnvelopeAttachmentType],
    description: 'The files signers uploaded for attachment fields and kept, oldest first. An upload its signer did not keep is never listed.',
    resolve: (envelope) => nested(envelope.attachments, 'Envelope.attachments'),
  }),
);

builder.queryField('attachmentDownloadUrl', (t) =>
  t.field({
    type: DownloadUrl,
    description:
      'A signed URL, valid for 5 minutes, for one attachment’s bytes as uploaded (REST: GET /envelopes/{id}/attachments/{fileId}). Attachment.NotFound for a file the envelope does not list. Each fetch is recorded as artefact.downloaded.',
    args: { envelopeId: t.arg.id({ required: true }), fileId: t.arg.id({ required: true }) },
    resolve: (_root, args, context) => issueAttachmentDownloadUrl(context, { envelopeId: String(args.envelopeId), fileId: String(args.fileId) }),
  }),
);
