import { readWebhook, readWebhookDelivery, readWebhookDeliveryPage, readWebhookPage } from '../../domain/webhook/webhook.read.ts';
import {
  createWebhook,
  createWebhookInput,
  deleteWebhook,
  redeliverWebhookDelivery,
  rotateWebhookSecret,
  rotateWebhookSecretInput,
  updateWebhook,
  updateWebhookInput,
} from '../../domain/webhook/webhook.service.ts';
import { readJsonObject } from '../../http/body.ts';
import { PAGE_QUERY } from '../openapi-shared.ts';
import { integerQuery } from '../query.ts';
import type { RestRoute } from '../router.ts';

function pageQuery(url: URL) {
  return { limit: integerQuery(url, 'limit'), cursor: url.searchParams.get('cursor') ?? undefined };
}

const URL_ERRORS = ['Webhook.InvalidUrl', 'Webhook.UnsupportedScheme', 'Webhook.CredentialsInUrl', 'Webhook.AddressNotAllowed', 'Webhook.UnknownEventType'];

/**
 * Team webhooks (README, Webhooks): endpoints, their delivery logs and redelivery. The signing
 * secret is in the answers of the creation and of rotate-secret only.
 */
export const webhookRoutes: RestRoute[] = [
  {
    method: 'POST',
    path: '/webhooks',
    doc: {
      summary: 'Add a webhook endpoint',
      description: 'The answer carries `secret`, the endpoint’s signing secret: shown this once (rotate-secret makes a new one).',
      body: { schema: createWebhookInput, example: { url: 'https://example.com/hooks/envelopes', eventTypes: ['envelope.finalized'], description: 'ERP' } },
      errors: [...URL_ERRORS, 'Webhook.CapacityExceeded'],
    },
    async handler({ request, context }) {
      return createWebhook(context, { input: await readJsonObject(request) });
    },
  },
  {
    method: 'GET',
    path: '/webhooks',
    doc: { summary: 'List webhook endpoints', query: PAGE_QUERY },
    async handler({ url, context }) {
      return readWebhookPage(context, pageQuery(url));
    },
  },
  {
    method: 'GET',
    path: '/webhooks/:webhookId',
    doc: { summary: 'Read a webhook endpoint' },
    async handler({ params, context }) {
      return { webhook: await readWebhook(context, params.webhookId) };
    },
  },
  {
    method: 'PATCH',
    path: '/webhooks/:webhookId',
    doc: {
      summary: 'Change a webhook endpoint',
      description: '`enabled: true` re-enables an endpoint the service disabled and clears `disabledReason`.',
      body: { schema: updateWebhookInput, example: { enabled: true } },
      errors: URL_ERRORS,
    },
    async handler({ request, params, context }) {
      return { webhook: await updateWebhook(context, { webhookId: params.webhookId, input: await readJsonObject(request) }) };
    },
  },
  {
    method: 'DELETE',
    path: '/webhooks/:webhookId',
    doc: { summary: 'Delete a webhook endpoint and its delivery log' },
    async handler({ params, context }) {
      await deleteWebhook(context, { webhookId: params.webhookId });
      return { deleted: true };
    },
  },
  {
    method: 'POST',
    path: '/webhooks/:webhookId/rotate-secret',
    doc: {
      summary: 'Replace a webhook endpoint’s signing secret',
      description:
        'The answer carries the new `secret`, shown this once. The previous secret also signs each delivery (a second `v1`) for `previousSecretValidSeconds` (default 86400, at most 7 days; 0 ends it at once). The body is optional.',
      body: { schema: rotateWebhookSecretInput, example: { previousSecretValidSeconds: 3600 }, required: false },
    },
    async handler({ request, params, context }) {
      return rotateWebhookSecret(context, { webhookId: params.webhookId, input: await readJsonObject(request) });
    },
  },
  {
    method: 'GET',
    path: '/webhooks/:webhookId/deliveries',
    doc: { summary: 'A webhook endpoint’s delivery log, newest first', query: PAGE_QUERY },
    async handler({ url, params, context }) {
      return readWebhookDeliveryPage(context, { webhookId: params.webhookId, ...pageQuery(url) });
    },
  },
  {
    method: 'GET',
    path: '/webhooks/:webhookId/deliveries/:deliveryId',
    doc: { summary: 'Read one delivery with its attempts' },
    async handler({ params, context }) {
      return { delivery: await readWebhookDelivery(context, { webhookId: params.webhookId, deliveryId: params.deliveryId }) };
    },
  },
  {
    method: 'POST',
    path: '/webhooks/:webhookId/deliveries/:deliveryId/redeliver',
    doc: { summary: 'Queue a delivery again (same body, same id)', errors: ['Webhook.Disabled'] },
    async handler({ params, context }) {
      return { delivery: await redeliverWebhookDelivery(context, { webhookId: params.webhookId, deliveryId: params.deliveryId }) };
    },
  },
];
