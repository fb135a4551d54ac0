import type { EntityManager } from '@mikro-orm/postgresql';
import { enqueueSelected } from '../outbox/outbox.ts';
import { OUTBOX_TOPICS } from '../outbox/topics.ts';
import { teamWebhookRows } from './team-webhook.ts';

/*
 * Where audit events become webhook deliveries. A module of its own, importing nothing of the
 * domain, because the audit service calls it: the webhook service (which records its own changes
 * in the trail) imports the audit service, and the arrows must not meet in a circle.
 */

export type WebhookEvent = {
  eventId: string;
  teamId: string;
  envelopeId: string | null;
  sequence: number;
  type: string;
  at: Date;
  details: unknown;
};

/**
 * Called by appendAuditEvent inside the event's transaction: one delivery, and one queue row,
 * per enabled endpoint of the team that takes this type. An endpoint that takes every type
 * (`eventTypes: []`) is not sent the webhooks' own configuration events (`webhook.*`, e.g. its
 * own creation): those go only to endpoints that name them. ONE statement, which for a team without
 * endpoints is an empty probe of the partial index `webhook_endpoint_team_enabled_idx`.
 */
export async function enqueueWebhookDeliveries(
  em: EntityManager,
  event: WebhookEvent,
  /**
   * A data-modifying statement (an `insert`) run in the same statement, before the fan-out: the
   * audit event's own row, so appending an event and queueing its deliveries is one round trip.
   */
  alongside?: { sql: string; parameters: unknown[] },
): Promise<void> {
  const body = {
    type: event.type,
    occurredAt: event.at.toISOString(),
    teamId: event.teamId,
    envelopeId: event.envelopeId,
    sequence: event.sequence,
    data: event.details ?? {},
  };
  const endpoints = teamWebhookRows('w', event.teamId);
  await enqueueSelected(em, OUTBOX_TOPICS.webhookDelivery, {
    now: event.at,
    query: `with ${alongside === undefined ? '' : `written as (${alongside.sql}), `}matched as (
       select gen_random_uuid() as delivery_id, gen_random_uuid() as message_id, w.id as endpoint_id
         from webhook_endpoint w
        where ${endpoints.sql} and w.enabled and ((cardinality(w.event_types) = 0 and ? not like 'webhook.%') or ? = any(w.event_types))),
     source as (
       insert into webhook_delivery (id, created_at, team_id, endpoint_id, event_id, event_type, payload, state, attempt_count, next_attempt_at, outbox_message_id)
       select m.delivery_id, ?, ?, m.endpoint_id, ?, ?, jsonb_build_object('id', m.delivery_id) || ?::jsonb, 'pending', 0, ?, m.message_id from matched m
       returning id, outbox_message_id)`,
    parameters: [...(alongside?.parameters ?? []), ...endpoints.parameters, event.type, event.type, event.at, event.teamId, event.eventId, event.type, JSON.stringify(body), event.at],
    idColumn: 'outbox_message_id',
    payload: `jsonb_build_object('teamId', ?::text, 'deliveryId', source.id)`,
    payloadParameters: [event.teamId],
  });
}
