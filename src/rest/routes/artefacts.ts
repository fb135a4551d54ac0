import { z } from 'zod';
import { downloadAttachment, readEnvelopeAttachments } from '../../domain/artefact/attachment-download.service.ts';
import { downloadBySignedUrl, downloadDocumentPdf, downloadEnvelopeZip, downloadResponse } from '../../domain/artefact/download.service.ts';
import { downloadFinalCopy } from '../../domain/artefact/final-copy.service.ts';
import { verifyUploadedPdf } from '../../domain/artefact/verify.service.ts';
import { DocumentTooLargeError } from '../../domain/document/document.errors.ts';
import { receiveMultipartUpload } from '../../http/multipart.ts';
import type { RestRoute } from '../router.ts';

/** The interface spec (docs/reference/interface-spec.md) §4.6: the signed documents (a draft copy before finalization), one PDF or all as a ZIP. */
export const artefactRoutes: RestRoute[] = [
  {
    method: 'GET',
    path: '/envelopes/:envelopeId/documents/:documentId/pdf',
    doc: {
      summary: 'Download one document: sealed once finalized, a marked draft copy before',
      produces: 'application/pdf',
      errors: ['Server.Busy', 'Storage.Unavailable', 'Storage.ObjectMissing'],
    },
    async handler({ params, context }) {
      return downloadResponse(await downloadDocumentPdf(context, { envelopeId: params.envelopeId, documentId: params.documentId }));
    },
  },
  {
    method: 'GET',
    path: '/envelopes/:envelopeId/pdf',
    doc: { summary: 'Download every document as a ZIP (streamed)', produces: 'application/zip', errors: ['Server.Busy', 'Storage.Unavailable', 'Storage.ObjectMissing'] },
    async handler({ params, context }) {
      return downloadResponse(await downloadEnvelopeZip(context, { envelopeId: params.envelopeId }));
    },
  },
  {
    method: 'GET',
    path: '/envelopes/:envelopeId/attachments',
    doc: {
      summary: 'List the files signers uploaded for attachment fields',
      description:
        'The payload is `{ attachments }`, oldest first, each `{ id, fieldId, fieldIdentifier, recipientId, name, contentType, size, sha256, createdAt }`. ' +
        'Only files a field’s submitted value names: an upload its signer did not keep is never listed (docs/fields.md#attachment). `contentType` was judged from the bytes.',
    },
    async handler({ params, context }) {
      return { attachments: await readEnvelopeAttachments(context, { envelopeId: params.envelopeId }) };
    },
  },
  {
    method: 'GET',
    path: '/envelopes/:envelopeId/attachments/:fileId',
    doc: {
      summary: 'Download one attachment a signer uploaded (streamed, with its content type and file name)',
      produces: 'signer-file',
      errors: ['Attachment.NotFound', 'Storage.Unavailable', 'Storage.ObjectMissing'],
    },
    async handler({ params, context }) {
      return downloadResponse(await downloadAttachment(context, { envelopeId: params.envelopeId, fileId: params.fileId }));
    },
  },
  {
    // GraphQL verifySealedPdf's twin: multipart with the PDF in the `document` field.
    method: 'POST',
    path: '/verify',
    doc: {
      summary:
        'Check any PDF’s signatures: signer, time, integrity, byte ranges, PAdES level, chain to the trust anchors, revocation from the DSS; and, for this service’s seal, the envelope it names',
      description:
        'The payload is `{ verification }`: `valid`, `problem`, `ours`, `envelopeId`, `level` (the PAdES baseline level the last signature reached: `B-B`, `B-T`, `B-LT` or `B-LTA`; null without a valid one), ' +
        '`timestamps` (each `{ type: signature | document, time, valid }`), `dss` (`{ certificates, ocspResponses, crls }` or null), `signatures` and `auditChain` (docs/artefacts.md, "Verification"). ' +
        'Each signature: `type` (`signature` or `document-timestamp`), `valid` (its digest matches the bytes its byte range covers and its CMS signature verifies), `problem`, `byteRange` (four numbers), `coversWholeFile`, ' +
        '`signer` (`subject`, `issuer`, `serialNumber` in hex, `notBefore`, `notAfter`, `sha256`, `qcStatements` `{ compliance, sscd, types }`, `level`: `qualified` with QcCompliance and QcSSCD, else `advanced`, and `qualifiedCertificate`: QcCompliance), `signingTime`, `timestamp`, `level` (this signature’s PAdES level, null for a document timestamp or an invalid signature), ' +
        '`chain` (`{ status: trusted | untrusted | unchecked, anchor, problem }`, validated up to the certificates of TRUST_ANCHORS) and `revocation` (`{ status: good | revoked | unknown | not-applicable, source: ocsp | crl | null }`, from the file’s /DSS). ' +
        'Checked in a PDF worker thread under the verify task’s time and memory limits.',
      multipart: { filePart: 'document', fields: z.strictObject({}) },
      errors: ['Document.NotPdf', 'Document.TooLarge', 'Document.InspectionLimitExceeded', 'Document.UploadIncomplete', 'Request.PayloadTooLarge', 'Request.Timeout', 'Server.Busy'],
    },
    async handler({ request, nodeRequest, context }) {
      await context.caller();
      const maxFileBytes = context.limits.maxDocumentBytes;
      const upload = await receiveMultipartUpload({
        request,
        nodeRequest,
        fileField: 'document',
        maxFileBytes,
        tooLarge: () => new DocumentTooLargeError(maxFileBytes),
        stage: (stream) => verifyUploadedPdf(context, { stream }),
        discard: async () => undefined,
      });
      return { verification: upload.staged };
    },
  },
  {
    // A signed URL from GraphQL's downloadUrl: no key header; the URL is the credential.
    method: 'GET',
    path: '/downloads/:token',
    doc: {
      summary: 'Download through a signed URL from GraphQL’s downloadUrl (no key: the URL is the credential, valid 5 minutes)',
      produces: 'application/pdf',
      isPublic: true,
      errors: ['Download.InvalidLink', 'Envelope.NotFound', 'Document.NotFound', 'Server.Busy', 'Storage.Unavailable', 'Storage.ObjectMissing'],
    },
    async handler({ params, context }) {
      return downloadResponse(await downloadBySignedUrl(context, params.token));
    },
  },
  {
    // A recipient's final-copy link (signing page, completion mail): no key; the URL is the credential.
    method: 'GET',
    path: '/final-copy/:token',
    doc: {
      summary: 'A recipient’s copy of the sealed documents of a finalized envelope (the PDF, or a ZIP for several), through the link from the signing page or the completion mail',
      produces: 'application/pdf',
      isPublic: true,
      errors: ['Download.InvalidLink', 'Envelope.NotFinalized', 'Envelope.NotFound', 'Server.Busy', 'Storage.Unavailable', 'Storage.ObjectMissing'],
    },
    async handler({ params, context }) {
      return downloadResponse(await downloadFinalCopy(context, params.token));
    },
  },
];
