import { defineEntity, p } from '@mikro-orm/core';
import { baseColumns, type JsonObject, updatedAtColumn } from '../../db/columns.ts';
import { Team } from '../team/team.entity.ts';

/**
 * A team's webhook endpoint: where the team's audit events are POSTed. `secretCiphertext` is the
 * signing secret encrypted with a key derived from the audit key (webhook-secret.ts): the service
 * must be able to compute HMACs with it, so it cannot be stored hashed. Writes are raw guarded
 * statements (webhook.service.ts); the entity describes the table for the migrations.
 */
export const WebhookEndpointSchema = defineEntity({
  name: 'WebhookEndpoint',
  tableName: 'webhook_endpoint',
  properties: {
    ...baseColumns(),
    updatedAt: updatedAtColumn(),
    team: () => p.manyToOne(Team).ref().deleteRule('cascade'),
    url: p.string().length(2000),
    /** Audit event types delivered; empty: every type. */
    eventTypes: p.array<string>().default([]),
    enabled: p.boolean().default(true),
    description: p.string().length(500).nullable(),
    secretCiphertext: p.text(),
    /** After a rotation, the old secret (encrypted the same way) also signs until `previousSecretExpiresAt`. */
    previousSecretCiphertext: p.text().nullable(),
    previousSecretExpiresAt: p.datetime().nullable(),
    /** Why the service turned the endpoint off (a delivery failed for good); cleared when re-enabled. */
    disabledReason: p.string().length(1000).nullable(),
    disabledAt: p.datetime().nullable(),
  },
  indexes: [
    { name: 'webhook_endpoint_team_created_idx', properties: ['team', 'createdAt', 'id'] },
    // Every audit event asks "which enabled endpoints does this team have?": teams without any answer from this small index.
    { name: 'webhook_endpoint_team_enabled_idx', properties: ['team'], where: { enabled: true } },
  ],
});

export class WebhookEndpoint extends WebhookEndpointSchema.class {}
WebhookEndpointSchema.setClass(WebhookEndpoint);

/**
 * One event for one endpoint: its `id` is the `id` of the POSTed body (the same on every attempt
 * and on manual redelivery, so receivers can de-duplicate), `payload` is that body. `outboxMessageId`
 * names the queue row currently responsible for it: only that row's outcome changes the state.
 */
export const WebhookDeliverySchema = defineEntity({
  name: 'WebhookDelivery',
  tableName: 'webhook_delivery',
  properties: {
    ...baseColumns(),
    teamId: p.uuid(),
    endpoint: () => p.manyToOne(WebhookEndpoint).ref().deleteRule('cascade'),
    eventId: p.uuid(),
    eventType: p.string().length(64),
    payload: p.json<JsonObject>(),
    /** `pending`, `delivered` or `failed`. */
    state: p.string().length(16).default('pending'),
    attemptCount: p.integer().default(0),
    lastStatusCode: p.integer().nullable(),
    /** Why the last attempt failed, as a stable code (webhook-delivery.ts WEBHOOK_FAILURES); `lastError` says it in words. */
    lastErrorCode: p.string().length(64).nullable(),
    lastError: p.text().nullable(),
    lastAttemptAt: p.datetime().nullable(),
    nextAttemptAt: p.datetime().nullable(),
    deliveredAt: p.datetime().nullable(),
    failedAt: p.datetime().nullable(),
    outboxMessageId: p.uuid().nullable(),
  },
  indexes: [
    { name: 'webhook_delivery_endpoint_created_idx', properties: ['endpoint', 'createdAt', 'id'] },
    // The housekeeping prune finds settled deliveries by age (notification/delivery-history.ts).
    { name: 'webhook_delivery_state_created_idx', properties: ['state', 'createdAt'] },
  ],
  uniques: [{ name: 'webhook_delivery_endpoint_event_unique', properties: ['endpoint', 'eventId'] }],
});

export class WebhookDelivery extends WebhookDeliverySchema.class {}
WebhookDeliverySchema.setClass(WebhookDelivery);

/** One HTTP attempt of a delivery: the delivery log's lines. */
export const WebhookAttemptSchema = defineEntity({
  name: 'WebhookAttempt',
  tableName: 'webhook_attempt',
  properties: {
    ...baseColumns(),
    delivery: () => p.manyToOne(WebhookDelivery).ref().deleteRule('cascade'),
    statusCode: p.integer().nullable(),
    durationMs: p.integer(),
    /** Why it failed, as a stable code (webhook-delivery.ts WEBHOOK_FAILURES); `error` says it in words. */
    errorCode: p.string().length(64).nullable(),
    error: p.text().nullable(),
    /** When the queue tries again after this attempt (set once the worker has rescheduled it). */
    nextRetryAt: p.datetime().nullable(),
  },
  indexes: [{ name: 'webhook_attempt_delivery_created_idx', properties: ['delivery', 'createdAt'] }],
});

export class WebhookAttempt extends WebhookAttemptSchema.class {}
WebhookAttemptSchema.setClass(WebhookAttempt);
