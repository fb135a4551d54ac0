import {
  readWebhook,
  readWebhookDelivery,
  readWebhookDeliveryPage,
  readWebhookPage,
  type WebhookAttemptData,
  type WebhookData,
  type WebhookDeliveryData,
  type WebhookDeliveryPageData,
  type WebhookPageData,
} from '../../domain/webhook/webhook.read.ts';
import { createWebhook, deleteWebhook, redeliverWebhookDelivery, rotateWebhookSecret, updateWebhook, type WebhookWithSecret } from '../../domain/webhook/webhook.service.ts';
import { builder } from '../builder.ts';
import { withoutNulls } from '../input.ts';
import { DeletedPayload, keysetConnection, pageArgs } from './common.ts';

/*
 * Team webhooks on the GraphQL face (REST: /webhooks). Answers come from the read model; the
 * signing secret appears only in the answers of createWebhook and rotateWebhookSecret.
 */

export const WebhookType = builder.objectRef<WebhookData>('Webhook').implement({
  description: "An endpoint that receives the team's audit events as signed POSTs (see README, Webhooks).",
  fields: (t) => ({
    id: t.exposeID('id'),
    url: t.exposeString('url', { description: 'https (http only for localhost, 127.0.0.1, [::1]).' }),
    eventTypes: t.exposeStringList('eventTypes', { description: 'Audit event types delivered; empty: all of them.' }),
    enabled: t.exposeBoolean('enabled'),
    description: t.string({ nullable: true, resolve: (webhook) => webhook.description }),
    disabledReason: t.string({
      nullable: true,
      description: 'Why the service disabled this endpoint (a delivery failed for good); cleared when it is enabled again.',
      resolve: (webhook) => webhook.disabledReason,
    }),
    disabledAt: t.field({ type: 'DateTime', nullable: true, resolve: (webhook) => webhook.disabledAt }),
    previousSecretExpiresAt: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'After a rotation: until when the previous secret also signs each delivery (a second v1 in X-Envelope-Signature).',
      resolve: (webhook) => webhook.previousSecretExpiresAt,
    }),
    createdAt: t.field({ type: 'DateTime', resolve: (webhook) => webhook.createdAt }),
    updatedAt: t.field({ type: 'DateTime', resolve: (webhook) => webhook.updatedAt }),
  }),
});

const WebhookWithSecretType = builder.objectRef<WebhookWithSecret>('WebhookWithSecret').implement({
  description: 'An endpoint with its signing secret: shown only here, once. Keep it to verify X-Envelope-Signature.',
  fields: (t) => ({
    webhook: t.field({ type: WebhookType, resolve: (answer) => answer.webhook }),
    secret: t.exposeString('secret', { description: 'whsec_…: the HMAC-SHA256 key of the signature header.' }),
  }),
});

const WebhookAttemptType = builder.objectRef<WebhookAttemptData>('WebhookAttempt').implement({
  description: 'One HTTP attempt of a delivery.',
  fields: (t) => ({
    id: t.exposeID('id'),
    at: t.field({ type: 'DateTime', resolve: (attempt) => attempt.at }),
    statusCode: t.int({ nullable: true, description: 'The receiver’s status; null when no answer came.', resolve: (attempt) => attempt.statusCode }),
    durationMs: t.exposeInt('durationMs'),
    errorCode: t.string({
      nullable: true,
      description: 'Why it failed, as a stable code: http_status, timeout, connection_refused, connection_reset, dns_failed, unreachable, tls_failed, address_not_allowed, network_error.',
      resolve: (attempt) => attempt.errorCode,
    }),
    error: t.string({ nullable: true, description: 'The same in words.', resolve: (attempt) => attempt.error }),
    nextRetryAt: t.field({ type: 'DateTime', nullable: true, description: 'When the queue tries again after this attempt.', resolve: (attempt) => attempt.nextRetryAt }),
  }),
});

const WebhookDeliveryStateEnum = builder.enumType('WebhookDeliveryState', {
  description: 'pending: queued or retrying; delivered: a 2xx answer; failed: given up (the endpoint is then disabled).',
  values: ['pending', 'delivered', 'failed'] as const,
});

const WebhookDeliveryType = builder.objectRef<WebhookDeliveryData>('WebhookDelivery').implement({
  description: 'One event for one endpoint. Its id is the `id` of the POSTed body, the same on every attempt and redelivery.',
  fields: (t) => ({
    id: t.exposeID('id'),
    webhookId: t.exposeID('webhookId'),
    eventId: t.exposeID('eventId', { description: 'The audit event.' }),
    eventType: t.exposeString('eventType'),
    envelopeId: t.id({ nullable: true, resolve: (delivery) => delivery.envelopeId }),
    sequence: t.exposeInt('sequence', { description: 'The event’s audit sequence in its envelope (or team) trail.' }),
    state: t.field({ type: WebhookDeliveryStateEnum, resolve: (delivery) => delivery.state }),
    attemptCount: t.exposeInt('attemptCount'),
    lastStatusCode: t.int({ nullable: true, resolve: (delivery) => delivery.lastStatusCode }),
    lastErrorCode: t.string({
      nullable: true,
      description: 'Why the last attempt failed, as a stable code (as WebhookAttempt.errorCode, or endpoint_disabled).',
      resolve: (delivery) => delivery.lastErrorCode,
    }),
    lastError: t.string({ nullable: true, description: 'The same in words.', resolve: (delivery) => delivery.lastError }),
    lastAttemptAt: t.field({ type: 'DateTime', nullable: true, resolve: (delivery) => delivery.lastAttemptAt }),
    nextAttemptAt: t.field({ type: 'DateTime', nullable: true, resolve: (delivery) => delivery.nextAttemptAt }),
    deliveredAt: t.field({ type: 'DateTime', nullable: true, resolve: (delivery) => delivery.deliveredAt }),
    failedAt: t.field({ type: 'DateTime', nullable: true, resolve: (delivery) => delivery.failedAt }),
    createdAt: t.field({ type: 'DateTime', resolve: (delivery) => delivery.createdAt }),
    payload: t.field({ type: 'JSONObject', description: 'The JSON body POSTed.', resolve: (delivery) => delivery.payload }),
    attempts: t.field({ type: [WebhookAttemptType], description: 'Every attempt, newest first.', resolve: (delivery) => delivery.attempts }),
  }),
});

const WebhookDeliveryConnection = keysetConnection('WebhookDelivery', {
  description: "A page of an endpoint's deliveries, newest first.",
  node: WebhookDeliveryType,
  nodesOf: (page: WebhookDeliveryPageData) => page.deliveries,
});

const WebhookConnection = keysetConnection('Webhook', {
  description: "A page of the team's webhook endpoints, newest first.",
  node: WebhookType,
  nodesOf: (page: WebhookPageData) => page.webhooks,
});

builder.queryFields((t) => ({
  webhook: t.field({
    type: WebhookType,
    description: 'One webhook endpoint of your team (REST: GET /webhooks/{id}). Unknown and foreign ids give Webhook.NotFound.',
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, context) => readWebhook(context, String(args.id)),
  }),
  webhooks: t.field({
    type: WebhookConnection,
    description: "Your team's webhook endpoints, newest first (REST: GET /webhooks).",
    args: {
      ...pageArgs(t.arg),
    },
    resolve: (_root, args, context) => readWebhookPage(context, { limit: args.first ?? undefined, cursor: args.after ?? undefined }),
  }),
  // A root field rather than Webhook.deliveries: every root field is one statement, also under a list of webhooks.
  webhookDeliveries: t.field({
    type: WebhookDeliveryConnection,
    description: "An endpoint's delivery log, newest first, each delivery with its attempts (REST: GET /webhooks/{id}/deliveries).",
    args: {
      webhookId: t.arg.id({ required: true }),
      ...pageArgs(t.arg),
    },
    resolve: (_root, args, context) => readWebhookDeliveryPage(context, { webhookId: String(args.webhookId), limit: args.first ?? undefined, cursor: args.after ?? undefined }),
  }),
  webhookDelivery: t.field({
    type: WebhookDeliveryType,
    description: 'One delivery of an endpoint (REST: GET /webhooks/{id}/deliveries/{deliveryId}).',
    args: { webhookId: t.arg.id({ required: true }), id: t.arg.id({ required: true }) },
    resolve: (_root, args, context) => readWebhookDelivery(context, { webhookId: String(args.webhookId), deliveryId: String(args.id) }),
  }),
}));

const CreateWebhookInput = builder.inputType('CreateWebhookInput', {
  description: 'A new endpoint. The answer carries its signing secret, once.',
  fields: (t) => ({
    url: t.string({ required: true, description: 'https (http only for localhost, 127.0.0.1, [::1]); no user name or password.' }),
    eventTypes: t.stringList({ required: false, description: 'Audit event types to deliver; empty or absent: all.' }),
    enabled: t.boolean({ required: false, description: 'Default true.' }),
    description: t.string({ required: false, description: 'At most 500 characters.' }),
  }),
});

const UpdateWebhookInput = builder.inputType('UpdateWebhookInput', {
  description: 'Only the given keys change; null clears the description. enabled: true also clears disabledReason.',
  fields: (t) => ({
    url: t.string({ required: false }),
    eventTypes: t.stringList({ required: false }),
    enabled: t.boolean({ required: false }),
    description: t.string({ required: false }),
  }),
});

builder.mutationFields((t) => ({
  createWebhook: t.field({
    type: WebhookWithSecretType,
    nullable: true,
    description: 'Adds a webhook endpoint (REST: POST /webhooks); the answer shows its signing secret, once.',
    args: { input: t.arg({ type: CreateWebhookInput, required: true }) },
    resolve: (_root, args, context) => createWebhook(context, { input: withoutNulls(args.input) }),
  }),
  updateWebhook: t.field({
    type: WebhookType,
    nullable: true,
    description: 'Changes a webhook endpoint (REST: PATCH /webhooks/{id}); enabled: true re-enables one the service disabled.',
    args: { id: t.arg.id({ required: true }), input: t.arg({ type: UpdateWebhookInput, required: true }) },
    resolve: (_root, args, context) => updateWebhook(context, { webhookId: String(args.id), input: withoutNulls(args.input, { keepNull: ['description'] }) }),
  }),
  deleteWebhook: t.field({
    type: DeletedPayload,
    nullable: true,
    description: 'Deletes a webhook endpoint and its delivery log (REST: DELETE /webhooks/{id}).',
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_root, args, context) => {
      await deleteWebhook(context, { webhookId: String(args.id) });
      return { id: String(args.id) };
    },
  }),
  rotateWebhookSecret: t.field({
    type: WebhookWithSecretType,
    nullable: true,
    description:
      'Replaces the signing secret (REST: POST /webhooks/{id}/rotate-secret); the answer shows the new one, once. The previous secret also signs for previousSecretValidSeconds (default 86400, at most 7 days; 0 ends it at once).',
    args: { id: t.arg.id({ required: true }), previousSecretValidSeconds: t.arg.int({ required: false }) },
    resolve: (_root, args, context) => rotateWebhookSecret(context, { webhookId: String(args.id), input: withoutNulls({ previousSecretValidSeconds: args.previousSecretValidSeconds }) }),
  }),
  redeliverWebhookDelivery: t.field({
    type: WebhookDeliveryType,
    nullable: true,
    description: 'Queues a delivery again, same body and id (REST: POST /webhooks/{id}/deliveries/{deliveryId}/redeliver); Webhook.Disabled for a disabled endpoint.',
    args: { webhookId: t.arg.id({ required: true }), id: t.arg.id({ required: true }) },
    resolve: (_root, args, context) => redeliverWebhookDelivery(context, { webhookId: String(args.webhookId), deliveryId: String(args.id) }),
  }),
}));
