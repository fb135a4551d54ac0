import { DocumentTooLargeError } from '../../domain/document/document.errors.ts';
import { addDocument, addDocumentInput, checkUploadTarget, deleteDocument, stageDocumentFile, updateDocument, updateDocumentInput } from '../../domain/document/document.service.ts';
import { readDocument, readDocuments } from '../../domain/envelope/envelope.read.ts';
import { readJsonObject } from '../../http/body.ts';
import { receiveMultipartUpload } from '../../http/multipart.ts';
import type { RestRoute } from '../router.ts';

/** Spec §4.2 and contract §5: documents of an envelope. */
export const documentRoutes: RestRoute[] = [
  {
    method: 'POST',
    path: '/envelopes/:envelopeId/documents',
    doc: { summary: 'Upload a PDF to a draft', multipart: { filePart: 'document', fields: addDocumentInput }, isIdempotent: true, errors: ['Envelope.NotDraft', 'Envelope.Busy', 'Envelope.CapacityExceeded', 'Document.TooLarge', 'Document.NotPdf', 'Document.InvalidPdf', 'Document.Encrypted', 'Document.InspectionLimitExceeded', 'Document.UploadIncomplete', 'Request.PayloadTooLarge', 'Request.Timeout', 'Server.Busy', 'Storage.Full'] },
    async handler({ request, nodeRequest, params, context }) {
      // Everything that can refuse the upload from its head is checked before the body is read:
      // the key, the envelope (one read), then the declared size (in receiveMultipartUpload).
      await checkUploadTarget(context, { envelopeId: params.envelopeId, idempotencyKey: context.idempotencyKey });
      const maxFileBytes = context.limits.maxDocumentBytes;
      const upload = await receiveMultipartUpload({
        request,
        nodeRequest,
        fileField: 'document',
        maxFileBytes,
        tooLarge: () => new DocumentTooLargeError(maxFileBytes),
        stage: (stream, filename) => stageDocumentFile(context, { stream, filename }),
        discard: (staged) => staged.blob.discard(),
      });
      const document = await addDocument(context, {
        envelopeId: params.envelopeId,
        upload: upload.staged,
        fields: upload.fields,
        idempotencyKey: context.idempotencyKey,
      });
      return { document };
    },
  },
  {
    method: 'GET',
    path: '/envelopes/:envelopeId/documents',
    doc: { summary: 'List an envelope’s documents' },
    async handler({ params, context }) {
      return { documents: await readDocuments(context, { envelopeId: params.envelopeId }) };
    },
  },
  {
    method: 'GET',
    path: '/envelopes/:envelopeId/documents/:documentId',
    doc: { summary: 'Read a document' },
    async handler({ params, context }) {
      return { document: await readDocument(context, { envelopeId: params.envelopeId, documentId: params.documentId }) };
    },
  },
  {
    method: 'PATCH',
    path: '/envelopes/:envelopeId/documents/:documentId',
    doc: { summary: 'Rename or reorder a document of a draft', body: { schema: updateDocumentInput, example: { name: 'Contract.pdf' } }, errors: ['Envelope.NotDraft', 'Envelope.Busy'] },
    async handler({ request, params, context }) {
      const document = await updateDocument(context, {
        envelopeId: params.envelopeId,
        documentId: params.documentId,
        input: await readJsonObject(request),
      });
      return { document };
    },
  },
  {
    method: 'DELETE',
    path: '/envelopes/:envelopeId/documents/:documentId',
    doc: { summary: 'Remove a document from a draft', errors: ['Envelope.NotDraft', 'Envelope.Busy'] },
    async handler({ params, context }) {
      await deleteDocument(context, { envelopeId: params.envelopeId, documentId: params.documentId });
      return { deleted: true };
    },
  },
];
