import { addDocument, deleteDocument, stageDocumentUpload, updateDocument } from '../../domain/document/document.service.ts';
import { readDocument, readDocuments } from '../../domain/envelope/envelope.read.ts';
import { readJsonObject } from '../body.ts';
import { receiveMultipartUpload } from '../multipart.ts';
import type { RestRoute } from '../router.ts';

/** Spec §4.2 and contract §5: documents of an envelope. */
export const documentRoutes: RestRoute[] = [
  {
    method: 'POST',
    path: '/envelopes/:envelopeId/documents',
    async handler({ request, nodeRequest, params, context }) {
      const upload = await receiveMultipartUpload({
        request,
        nodeRequest,
        fileField: 'document',
        stage: (stream, filename) =>
          stageDocumentUpload(context, { envelopeId: params.envelopeId, stream, filename, idempotencyKey: context.idempotencyKey }),
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
    async handler({ params, context }) {
      return { documents: await readDocuments(context, { envelopeId: params.envelopeId }) };
    },
  },
  {
    method: 'GET',
    path: '/envelopes/:envelopeId/documents/:documentId',
    async handler({ params, context }) {
      return { document: await readDocument(context, { envelopeId: params.envelopeId, documentId: params.documentId }) };
    },
  },
  {
    method: 'PATCH',
    path: '/envelopes/:envelopeId/documents/:documentId',
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
    async handler({ params, context }) {
      await deleteDocument(context, { envelopeId: params.envelopeId, documentId: params.documentId });
      return { deleted: true };
    },
  },
];
