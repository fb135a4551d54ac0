import { downloadBySignedUrl, downloadDocumentPdf, downloadEnvelopeZip, downloadResponse } from '../../domain/artefact/download.service.ts';
import type { RestRoute } from '../router.ts';

/** Spec §4.6: the signed documents (a draft copy before finalization), one PDF or all as a ZIP. */
export const artefactRoutes: RestRoute[] = [
  {
    method: 'GET',
    path: '/envelopes/:envelopeId/documents/:documentId/pdf',
    async handler({ params, context }) {
      return downloadResponse(await downloadDocumentPdf(context, { envelopeId: params.envelopeId, documentId: params.documentId }));
    },
  },
  {
    method: 'GET',
    path: '/envelopes/:envelopeId/pdf',
    async handler({ params, context }) {
      return downloadResponse(await downloadEnvelopeZip(context, { envelopeId: params.envelopeId }));
    },
  },
  {
    // A signed URL from GraphQL's downloadUrl: no key header; the URL is the credential.
    method: 'GET',
    path: '/downloads/:token',
    async handler({ params, context }) {
      return downloadResponse(await downloadBySignedUrl(context, params.token));
    },
  },
];
