/*
 * The tenant gate of webhook endpoints and their deliveries, in one place: visible only to their
 * own team. Unknown, malformed and foreign ids all give the same `Webhook.NotFound` /
 * `WebhookDelivery.NotFound`. Reads start from `teamWebhooks`; writes (one guarded statement
 * each, webhook.service.ts) filter on the team in the same statement.
 */
import type { ReadDb } from '../read-model.ts';
import { wellFormedId } from '../tenant.ts';
import { WebhookDeliveryNotFoundError, WebhookNotFoundError } from './webhook.errors.ts';

/** The id, or `Webhook.NotFound` when it cannot name an endpoint. */
export function wellFormedWebhookId(webhookId: string): string {
  return wellFormedId(webhookId, (id) => new WebhookNotFoundError(id));
}

/** The id, or `WebhookDelivery.NotFound` when it cannot name a delivery. */
export function wellFormedWebhookDeliveryId(deliveryId: string): string {
  return wellFormedId(deliveryId, (id) => new WebhookDeliveryNotFoundError(id));
}

/** The team's endpoints, as `w`: every read starts here. */
export function teamWebhooks(reader: ReadDb, teamId: string) {
  return reader.selectFrom('webhook_endpoint as w').where('w.team_id', '=', teamId);
}

/** A condition of a guarded statement, in SQL text with its parameters in order. */
export type SqlCondition = { sql: string; parameters: unknown[] };

/**
 * The team's endpoint `webhookId` as the row `alias` of a guarded write (`update webhook_endpoint w
 * … where ${sql}`): the team is tested in the statement itself, so another team's endpoint is
 * never touched and reads as not found.
 */
export function teamWebhookRow(alias: string, teamId: string, webhookId: string): SqlCondition {
  return { sql: `${alias}.id = ? and ${alias}.team_id = ?`, parameters: [webhookId, teamId] };
}

/** The team's endpoints as rows `alias` (every one of them: a count, a fan-out). */
export function teamWebhookRows(alias: string, teamId: string): SqlCondition {
  return { sql: `${alias}.team_id = ?`, parameters: [teamId] };
}

/** The team's delivery `deliveryId` of endpoint `webhookId` as the row `alias` of a guarded statement. */
export function teamWebhookDeliveryRow(alias: string, teamId: string, webhookId: string, deliveryId: string): SqlCondition {
  return { sql: `${alias}.id = ? and ${alias}.endpoint_id = ? and ${alias}.team_id = ?`, parameters: [deliveryId, webhookId, teamId] };
}
