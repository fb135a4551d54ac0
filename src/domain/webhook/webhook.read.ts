import { type ExpressionBuilder, sql } from 'kysely';
import { jsonArrayFrom } from 'kysely/helpers/postgres';
import { decodeCursorPosition, keysetPageInput, takePage } from '../pagination.ts';
import { isoTimestamp } from '../read-model.ts';
import type { ServiceContext } from '../service-context.ts';
import { parseInput } from '../validation.ts';
import { teamWebhooks, wellFormedWebhookDeliveryId, wellFormedWebhookId } from './team-webhook.ts';
import { WebhookDeliveryNotFoundError, WebhookNotFoundError } from './webhook.errors.ts';

/*
 * The webhooks' read model: endpoints (never their secret), and an endpoint's delivery log with
 * each delivery's attempts, each read with ONE statement that starts from the caller's team's
 * endpoint row, so another team's endpoint or delivery reads as unknown.
 */

export type WebhookData = {
  id: string;
  url: string;
  eventTypes: string[];
  enabled: boolean;
  description: string | null;
  /** Set when the service disabled the endpoint (a delivery failed for good); cleared when it is enabled again. */
  disabledReason: string | null;
  disabledAt: string | null;
  /** After a rotation: until when the previous secret also signs (null when it does not). */
  previousSecretExpiresAt: string | null;
  createdAt: string;
  updatedAt: string;
};

export type WebhookAttemptData = {
  id: string;
  at: string;
  /** The receiver's HTTP status; null when no answer came (network error, timeout, refused address). */
  statusCode: number | null;
  durationMs: number;
  /** Why it failed, as a stable code (docs/errors.md, "Delivery failure reasons"); null for a 2xx. */
  errorCode: string | null;
  /** The same in words: the HTTP status, the timeout, the connection problem (never an address it resolved to). */
  error: string | null;
  /** When the queue tries again after this attempt; null after the last one. */
  nextRetryAt: string | null;
};

export type WebhookDeliveryData = {
  id: string;
  webhookId: string;
  eventId: string;
  eventType: string;
  envelopeId: string | null;
  sequence: number;
  /** `pending` (queued or retrying), `delivered` (a 2xx answer) or `failed` (given up). */
  state: 'pending' | 'delivered' | 'failed';
  attemptCount: number;
  lastStatusCode: number | null;
  /** Why the last attempt failed, as a stable code (docs/errors.md, "Delivery failure reasons"). */
  lastErrorCode: string | null;
  lastError: string | null;
  lastAttemptAt: string | null;
  nextAttemptAt: string | null;
  deliveredAt: string | null;
  failedAt: string | null;
  createdAt: string;
  /** The JSON body POSTed (the same on every attempt). */
  payload: Record<string, unknown>;
  /** Every attempt, newest first. */
  attempts: WebhookAttemptData[];
};

export type WebhookPageData = { webhooks: WebhookData[]; nextCursor: string | null };
export type WebhookDeliveryPageData = { deliveries: WebhookDeliveryData[]; nextCursor: string | null };

type AnyEb = ExpressionBuilder<any, any>;

function webhookColumns(eb: AnyEb) {
  return [
    eb.ref('w.id').as('id'),
    eb.ref('w.url').as('url'),
    eb.ref('w.event_types').as('eventTypes'),
    eb.ref('w.enabled').as('enabled'),
    eb.ref('w.description').as('description'),
    eb.ref('w.disabled_reason').as('disabledReason'),
    isoTimestamp(eb.ref('w.disabled_at')).as('disabledAt'),
    isoTimestamp(eb.ref('w.previous_secret_expires_at')).as('previousSecretExpiresAt'),
    isoTimestamp(eb.ref('w.created_at')).as('createdAt'),
    isoTimestamp(eb.ref('w.updated_at')).as('updatedAt'),
  ];
}

function attemptsOf(eb: AnyEb) {
  return jsonArrayFrom(
    eb
      .selectFrom('webhook_attempt as a')
      .select((inner: AnyEb) => [
        inner.ref('a.id').as('id'),
        isoTimestamp(inner.ref('a.created_at')).as('at'),
        inner.ref('a.status_code').as('statusCode'),
        inner.ref('a.duration_ms').as('durationMs'),
        inner.ref('a.error_code').as('errorCode'),
        inner.ref('a.error').as('error'),
        isoTimestamp(inner.ref('a.next_retry_at')).as('nextRetryAt'),
      ])
      .whereRef('a.delivery_id', '=', 'd.id')
      .orderBy('a.created_at', 'desc')
      .orderBy('a.id', 'desc'),
  );
}

function deliveryColumns(eb: AnyEb) {
  return [
    eb.ref('d.id').as('id'),
    eb.ref('d.endpoint_id').as('webhookId'),
    eb.ref('d.event_id').as('eventId'),
    eb.ref('d.event_type').as('eventType'),
    sql<string | null>`d.payload ->> 'envelopeId'`.as('envelopeId'),
    sql<number>`(d.payload ->> 'sequence')::int`.as('sequence'),
    eb.ref('d.state').as('state'),
    eb.ref('d.attempt_count').as('attemptCount'),
    eb.ref('d.last_status_code').as('lastStatusCode'),
    eb.ref('d.last_error_code').as('lastErrorCode'),
    eb.ref('d.last_error').as('lastError'),
    isoTimestamp(eb.ref('d.last_attempt_at')).as('lastAttemptAt'),
    isoTimestamp(eb.ref('d.next_attempt_at')).as('nextAttemptAt'),
    isoTimestamp(eb.ref('d.delivered_at')).as('deliveredAt'),
    isoTimestamp(eb.ref('d.failed_at')).as('failedAt'),
    isoTimestamp(eb.ref('d.created_at')).as('createdAt'),
    eb.ref('d.payload').as('payload'),
    attemptsOf(eb).as('attempts'),
  ];
}

/** One endpoint of the caller's team; `Webhook.NotFound` otherwise. */
export async function readWebhook(context: ServiceContext, webhookId: string): Promise<WebhookData> {
  const query = teamWebhooks(context.reader, (await context.caller()).teamId);
  wellFormedWebhookId(webhookId);
  const row = await query
    .select((eb) => webhookColumns(eb as AnyEb))
    .where('w.id', '=', webhookId)
    .executeTakeFirst();
  if (!row) throw new WebhookNotFoundError(webhookId);
  return row as unknown as WebhookData;
}

/** The caller's endpoints, newest first, keyset-paginated on (createdAt, id). */
export async function readWebhookPage(context: ServiceContext, options: { limit?: number; cursor?: string }): Promise<WebhookPageData> {
  const input = parseInput(keysetPageInput, options);
  const after = input.cursor === undefined ? undefined : decodeCursorPosition(input.cursor);
  let query = teamWebhooks(context.reader, (await context.caller()).teamId).select((eb) => webhookColumns(eb as AnyEb));
  if (after) query = query.where((eb) => eb(eb.refTuple('w.created_at', 'w.id'), '<', eb.tuple(after.createdAt, after.id)));
  const rows = (await query
    .orderBy('w.created_at', 'desc')
    .orderBy('w.id', 'desc')
    .limit(input.limit + 1)
    .execute()) as unknown as WebhookData[];
  const page = takePage(rows, input.limit);
  return { webhooks: page.rows, nextCursor: page.nextCursor };
}

/**
 * An endpoint's delivery log, newest first, keyset-paginated, each delivery with its attempts
 * (newest first). One statement: the endpoint row (the tenant check) with its page of deliveries.
 */
export async function readWebhookDeliveryPage(context: ServiceContext, options: { webhookId: string; limit?: number; cursor?: string }): Promise<WebhookDeliveryPageData> {
  const input = parseInput(keysetPageInput, { limit: options.limit, cursor: options.cursor });
  const after = input.cursor === undefined ? undefined : decodeCursorPosition(input.cursor);
  const query = teamWebhooks(context.reader, (await context.caller()).teamId);
  wellFormedWebhookId(options.webhookId);
  const row = await query
    .select((eb) =>
      jsonArrayFrom(
        (eb as AnyEb)
          .selectFrom('webhook_delivery as d')
          .select((inner: AnyEb) => deliveryColumns(inner))
          .whereRef('d.endpoint_id', '=', 'w.id')
          .$if(after !== undefined, (q: any) => q.where((inner: AnyEb) => inner(inner.refTuple('d.created_at', 'd.id'), '<', inner.tuple(after!.createdAt, after!.id))))
          .orderBy('d.created_at', 'desc')
          .orderBy('d.id', 'desc')
          .limit(input.limit + 1),
      ).as('deliveries'),
    )
    .where('w.id', '=', options.webhookId)
    .executeTakeFirst();
  if (!row) throw new WebhookNotFoundError(options.webhookId);
  const page = takePage(row.deliveries as unknown as WebhookDeliveryData[], input.limit);
  return { deliveries: page.rows, nextCursor: page.nextCursor };
}

/** One delivery of one endpoint of the caller's team, with its attempts. */
export async function readWebhookDelivery(context: ServiceContext, options: { webhookId: string; deliveryId: string }): Promise<WebhookDeliveryData> {
  const query = teamWebhooks(context.reader, (await context.caller()).teamId);
  wellFormedWebhookId(options.webhookId);
  wellFormedWebhookDeliveryId(options.deliveryId);
  const row = await query
    .leftJoin('webhook_delivery as d', (join) => join.onRef('d.endpoint_id', '=', 'w.id').on('d.id', '=', options.deliveryId))
    .select((eb) => [eb.ref('w.id').as('endpointId'), ...deliveryColumns(eb as AnyEb)])
    .where('w.id', '=', options.webhookId)
    .executeTakeFirst();
  if (!row) throw new WebhookNotFoundError(options.webhookId);
  if ((row as { id: string | null }).id === null) throw new WebhookDeliveryNotFoundError(options.deliveryId);
  const { endpointId: _endpointId, ...delivery } = row as unknown as WebhookDeliveryData & { endpointId: string };
  return delivery;
}
