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
