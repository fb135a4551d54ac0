import type { EntityManager } from '@mikro-orm/postgresql';
import { enqueueSelected, enqueueSelectedAlong, type SqlPart } from '../outbox/outbox.ts';
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
export async function enqueueWebhookDeliveries(em: EntityManager, event: WebhookEvent): Promise<void> {
  await enqueueSelected(em, OUTBOX_TOPICS.webhookDelivery, webhookFanout(event));
}

/**
 * The same deliveries, queued by the statement that writes the event itself (`lead`, a
 * data-modifying `with` clause of the caller's, run first): the audit append writes its event,
 * the event's deliveries and its live announcement (`answer`, one row) in one round trip.
 */
export async function enqueueWebhookDeliveriesAlong<Answer extends object>(
  em: EntityManager,
  event: WebhookEvent,
  along: { lead: SqlPart; answer: SqlPart },
): Promise<Answer & { queued: number }> {
  const fanout = webhookFanout(event);
  return enqueueSelectedAlong<Answer>(em, OUTBOX_TOPICS.webhookDelivery, {
    ...fanout,
    query: `with ${along.lead.sql}, ${fanout.query.slice('with '.length)}`,
    parameters: [...along.lead.parameters, ...fanout.parameters],
    answer: along.answer,
  });
}

function webhookFanout(event: WebhookEvent) {
  const body = {
    type: event.type,
    occurredAt: event.at.toISOString(),
    teamId: event.teamId,
    envelopeId: event.envelopeId,
    sequence: event.sequence,
    data: event.details ?? {},
  };
  const endpoints = teamWebhookRows('w', event.teamId);
  return {
    now: event.at,
    query: `with matched as (
       select gen_random_uuid() as delivery_id, gen_random_uuid() as message_id, w.id as endpoint_id
         from webhook_endpoint w
        where ${endpoints.sql} and w.enabled and ((cardinality(w.event_types) = 0 and ? not like 'webhook.%') or ? = any(w.event_types))),
     source as (
       insert into webhook_delivery (id, created_at, team_id, endpoint_id, event_id, event_type, payload, state, attempt_count, next_attempt_at, outbox_message_id)
       select m.delivery_id, ?, ?, m.endpoint_id, ?, ?, jsonb_build_object('id', m.delivery_id) || ?::jsonb, 'pending', 0, ?, m.message_id from matched m
       returning id, outbox_message_id)`,
    parameters: [...endpoints.parameters, event.type, event.type, event.at, event.teamId, event.eventId, event.type, JSON.stringify(body), event.at],
    idColumn: 'outbox_message_id',
    payload: `jsonb_build_object('teamId', ?::text, 'deliveryId', source.id)`,
    payloadParameters: [event.teamId],
  };
}
