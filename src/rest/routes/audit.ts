import { verifyEnvelopeAuditChain } from '../../domain/audit/audit.service.ts';
import { readAuditEvents } from '../../domain/envelope/envelope.read.ts';
import type { RestRoute } from '../router.ts';

/** Contract §5: an envelope's audit events, oldest first. */
export const auditRoutes: RestRoute[] = [
  {
    method: 'GET',
    path: '/envelopes/:envelopeId/audit',
    async handler({ params, context }) {
      return { events: await readAuditEvents(context, { envelopeId: params.envelopeId }) };
    },
  },
  {
    method: 'GET',
    path: '/envelopes/:envelopeId/audit/verify',
    async handler({ params, context }) {
      return { verification: await verifyEnvelopeAuditChain(context, { envelopeId: params.envelopeId }) };
    },
  },
];
