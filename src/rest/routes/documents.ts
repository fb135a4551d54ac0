import { DocumentTooLargeError } from '../../domain/document/document.errors.ts';
import { addDocument, addDocumentInput, checkUploadTarget, deleteDocument, stageDocumentFile, updateDocument, updateDocumentInput } from '../../domain/document/document.service.ts';
import { readDocument, readDocuments } from '../../domain/owner/owner.read.ts';
import { readJsonObject } from '../../http/body.ts';
import { receiveMultipartUpload } from '../../http/multipart.ts';
import { CORRECTION_NOTE, OWNER_CHANGE_ERRORS, ownerContentRoutes, ownerInPath } from '../owner-routes.ts';

const UPLOAD = { filePart: 'document', fields: addDocumentInput };
const UPLOAD_ERRORS = [
  'Document.TooLarge',
  'Document.NotPdf',
  'Document.InvalidPdf',
  'Document.Encrypted',
  'Document.InspectionLimitExceeded',
  'Document.TooComplex',
  'Document.UploadIncomplete',
  'Request.PayloadTooLarge',
  'Request.Timeout',
  'Server.Busy',
  'Storage.Full',
  'Storage.Unavailable',
];

/** The interface spec (docs/reference/interface-spec.md) §4.2, §4.7 and docs/reference/contract.md §5: documents of an envelope or a template. */
export const documentRoutes = ownerContentRoutes([
  {
    method: 'POST',
    path: '/documents',
    docs: {
      envelope: {
        summary: 'Upload a PDF to a draft, or to a sent envelope nobody has acted on',
        description: CORRECTION_NOTE.documents,
        multipart: UPLOAD,
        isIdempotent: true,
        errors: [...OWNER_CHANGE_ERRORS.envelope, 'Envelope.AlreadySigned', 'Envelope.CapacityExceeded', ...UPLOAD_ERRORS],
      },
      template: { summary: 'Upload a PDF to a template', multipart: UPLOAD, isIdempotent: true, errors: [...OWNER_CHANGE_ERRORS.template, 'Template.CapacityExceeded', ...UPLOAD_ERRORS] },
    },
    async handler({ request, nodeRequest, params, context }) {
      const owner = ownerInPath(params);
      // Everything that can refuse the upload from its head is checked before the body is read:
      // the key, the owner (one read), then the declared size (in receiveMultipartUpload).
      await checkUploadTarget(context, { owner, idempotencyKey: context.idempotencyKey });
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
      const document = await addDocument(context, { owner, upload: upload.staged, fields: upload.fields, idempotencyKey: context.idempotencyKey });
      return { document };
    },
  },
  {
    method: 'GET',
    path: '/documents',
    docs: { envelope: { summary: 'List an envelope’s documents' } },
    async handler({ params, context }) {
      return { documents: await readDocuments(context, { owner: ownerInPath(params) }) };
    },
  },
  {
    method: 'GET',
    path: '/documents/:documentId',
    docs: { envelope: { summary: 'Read a document' } },
    async handler({ params, context }) {
      return { document: await readDocument(context, { owner: ownerInPath(params), documentId: params.documentId }) };
    },
  },
  {
    method: 'PATCH',
    path: '/documents/:documentId',
    docs: {
      envelope: {
        summary: 'Rename or reorder a document of a draft, or of a sent envelope nobody has acted on',
        description: CORRECTION_NOTE.documents,
        body: { schema: updateDocumentInput, example: { name: 'Contract.pdf' } },
        errors: [...OWNER_CHANGE_ERRORS.envelope, 'Envelope.AlreadySigned'],
      },
      template: { summary: 'Rename or reorder a template document', body: { schema: updateDocumentInput, example: { name: 'NDA.pdf' } }, errors: OWNER_CHANGE_ERRORS.template },
    },
    async handler({ request, params, context }) {
      const document = await updateDocument(context, { owner: ownerInPath(params), documentId: params.documentId, input: await readJsonObject(request) });
      return { document };
    },
  },
  {
    method: 'DELETE',
    path: '/documents/:documentId',
    docs: {
      envelope: {
        summary: 'Remove a document from a draft, or from a sent envelope nobody has acted on',
        description: CORRECTION_NOTE.documents,
        errors: [...OWNER_CHANGE_ERRORS.envelope, 'Envelope.AlreadySigned', 'Field.InUse'],
      },
      template: { summary: 'Remove a template document', errors: [...OWNER_CHANGE_ERRORS.template, 'Field.InUse'] },
    },
    async handler({ params, context }) {
      await deleteDocument(context, { owner: ownerInPath(params), documentId: params.documentId });
      return { deleted: true };
    },
  },
]);
