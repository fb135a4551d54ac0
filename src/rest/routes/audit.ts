import { verifyEnvelopeAuditChain } from '../../domain/audit/audit.service.ts';
import { readAuditEvents } from '../../domain/envelope/envelope.read.ts';
import { integerQuery } from '../query.ts';
import type { RestRoute } from '../router.ts';
import { auditLogPdf, auditPdfLocaleOf } from '../../domain/artefact/audit-pdf.service.ts';
import { downloadResponse } from '../../domain/artefact/download.service.ts';

/** Contract §5: an envelope's audit events, oldest first. */
export const auditRoutes: RestRoute[] = [
  {
    method: 'GET',
    path: '/envelopes/:envelopeId/audit',
    async handler({ url, params, context }) {
      // Oldest first, at most `limit` (1–1000, default 1000) after `afterSeq`; `nextAfterSeq`
      // continues the trail, null at its end.
      return readAuditEvents(context, {
        envelopeId: params.envelopeId,
        afterSeq: integerQuery(url, 'afterSeq'),
        limit: integerQuery(url, 'limit'),
      });
    },
  },
  {
    method: 'GET',
    path: '/envelopes/:envelopeId/audit/verify',
    async handler({ params, context }) {
      return { verification: await verifyEnvelopeAuditChain(context, { envelopeId: params.envelopeId }) };
    },
  },
  {
    method: 'GET',
    path: '/envelopes/:envelopeId/audit/pdf',
    async handler({ request, url, params, context }) {
      const locale = auditPdfLocaleOf(url.searchParams.get('locale'), request.headers.get('accept-language'));
      return downloadResponse(await auditLogPdf(context, { envelopeId: params.envelopeId, locale }));
    },
  },
];
