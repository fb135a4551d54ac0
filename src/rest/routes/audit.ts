import { auditLogPdf, auditPdfLocaleOf, currentFlagOf } from '../../domain/artefact/audit-pdf.service.ts';
import { downloadResponse } from '../../domain/artefact/download.service.ts';
import { evidencePackage } from '../../domain/artefact/evidence.service.ts';
import { readAuditEvents } from '../../domain/envelope/envelope.read.ts';
import { verifyEnvelopeAuditChain } from '../../domain/envelope/envelope-audit-chain.ts';
import { integerQuery } from '../query.ts';
import type { RestRoute } from '../router.ts';

/** Contract (docs/reference/contract.md) §5: an envelope's audit events, oldest first. */
export const auditRoutes: RestRoute[] = [
  {
    method: 'GET',
    path: '/envelopes/:envelopeId/audit',
    doc: {
      summary: 'Read an envelope’s audit events',
      query: [
        { name: 'limit', description: 'At most this many events (1–1000, default 1000).', schema: { type: 'integer', minimum: 1, maximum: 1000 } },
        { name: 'afterSeq', description: 'Events after this sequence number.', schema: { type: 'integer', minimum: 0 } },
      ],
    },
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
    doc: { summary: 'Verify an envelope’s audit hash chain' },
    async handler({ params, context }) {
      return { verification: await verifyEnvelopeAuditChain(context, { envelopeId: params.envelopeId }) };
    },
  },
  {
    method: 'GET',
    path: '/envelopes/:envelopeId/audit/pdf',
    doc: {
      summary: 'The certificate of completion (sealed audit-log PDF) of a closed envelope',
      description:
        'The certificate fixed when the envelope closed: every download answers the same bytes (the download itself is recorded in the audit chain, not in the file). ' +
        'With `current=true`, a variant rendered now with the trail as it is, marked on every page as not the fixed certificate.',
      query: [
        { name: 'locale', description: '`en-US` (default) or `tr-TR`; otherwise `Accept-Language` decides.', schema: { type: 'string', enum: ['en-US', 'tr-TR'] } },
        { name: 'current', description: '`true`: an on-demand variant with every event so far, not the fixed certificate.', schema: { type: 'boolean' } },
      ],
      produces: 'application/pdf',
      errors: ['Envelope.NotFinalized', 'Envelope.AuditNotFound', 'Server.Busy'],
    },
    async handler({ request, url, params, context }) {
      const locale = auditPdfLocaleOf(url.searchParams.get('locale'), request.headers.get('accept-language'));
      return downloadResponse(await auditLogPdf(context, { envelopeId: params.envelopeId, locale, current: currentFlagOf(url.searchParams.get('current')) }));
    },
  },
  {
    method: 'GET',
    path: '/envelopes/:envelopeId/evidence',
    doc: {
      summary: 'The evidence package of a closed envelope',
      description:
        'A ZIP with every sealed document, the fixed certificate of completion (en-US and tr-TR), the audit chain as JSON lines, the raw data of each biometric signature, ' +
        'README.txt and manifest.json (SHA-256 of every part) with its detached CMS signature manifest.json.p7s. Check it offline with `npm run cli -- verify-package FILE.zip`.',
      produces: 'application/zip',
      errors: ['Envelope.NotFinalized', 'Envelope.AuditNotFound', 'Server.Busy'],
    },
    async handler({ params, context }) {
      return downloadResponse(await evidencePackage(context, { envelopeId: params.envelopeId }));
    },
  },
];
