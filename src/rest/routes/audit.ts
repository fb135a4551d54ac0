import type { AuditEvent } from '../../domain/audit/audit-event.entity.ts';
import { listEnvelopeAuditEvents, verifyEnvelopeAuditChain } from '../../domain/audit/audit.service.ts';
import type { RestRoute } from '../router.ts';

export function auditEventJson(event: AuditEvent) {
  return {
    seq: event.seq,
    type: event.type,
    at: event.at.toISOString(),
    actor: { type: event.actorType, id: event.actorId },
    ip: event.ip,
    userAgent: event.userAgent,
    details: event.details,
    prevHash: event.prevHash,
    hash: event.hash,
  };
}

/** Contract §5: an envelope's audit events, oldest first. */
export const auditRoutes: RestRoute[] = [
  {
    method: 'GET',
    path: '/envelopes/:envelopeId/audit',
    async handler({ params, context }) {
      const events = await listEnvelopeAuditEvents(context, { envelopeId: params.envelopeId });
      return { events: events.map(auditEventJson) };
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
