import { z } from 'zod';
import { newId } from '../../shared/ids.ts';
import { auditChange } from '../change.ts';
import { enqueueSelected } from '../outbox/outbox.ts';
import { OUTBOX_TOPICS } from '../outbox/topics.ts';
import type { ServiceContext } from '../service-context.ts';
import { boundedText, parseInput } from '../validation.ts';
import { teamWebhookDeliveryRow, teamWebhookRow, teamWebhookRows, wellFormedWebhookDeliveryId, wellFormedWebhookId } from './team-webhook.ts';
import { WebhookCapacityExceededError, WebhookDeliveryNotFoundError, WebhookDisabledError, WebhookNotFoundError, WebhookUnknownEventTypeError } from './webhook.errors.ts';
import { readWebhook, readWebhookDelivery, type WebhookData, type WebhookDeliveryData } from './webhook.read.ts';
import { encryptWebhookSecret, newWebhookSecret } from './webhook-secret.ts';
import { WEBHOOK_EVENT_TYPES } from './webhook-topics.ts';
import { checkWebhookUrl } from './webhook-url.ts';

/*
 * Team webhook endpoints and their deliveries. Every write is one guarded statement scoped to the
 * caller's team (another team's id reads as unknown); answers come from the read model.
 */

/** How many endpoints one team may have: each audit event costs one delivery per matching endpoint. */
export const MAX_WEBHOOKS_PER_TEAM = 20;

const knownTypes = new Set<string>(WEBHOOK_EVENT_TYPES);

const eventTypesInput = z.array(z.string().max(64, 'must be at most 64 characters')).max(WEBHOOK_EVENT_TYPES.length, `must list at most ${WEBHOOK_EVENT_TYPES.length} types`);

export const createWebhookInput = z.strictObject({
  url: z.string().max(2000, 'must be at most 2000 characters'),
  eventTypes: eventTypesInput.optional(),
  enabled: z.boolean().optional(),
  description: boundedText(0, 500).nullable().optional(),
});

export const updateWebhookInput = z.strictObject({
  url: createWebhookInput.shape.url.optional(),
  eventTypes: eventTypesInput.optional(),
  enabled: z.boolean().optional(),
  description: boundedText(0, 500).nullable().optional(),
});

/** A webhook with its signing secret: answered once, on creation and on rotation, never on reads. */
export type WebhookWithSecret = { webhook: WebhookData; secret: string };

function checkEventTypes(eventTypes: string[] | undefined): string[] | undefined {
  if (eventTypes === undefined) return undefined;
  const unknown = eventTypes.filter((type) => !knownTypes.has(type));
  if (unknown.length > 0) throw new WebhookUnknownEventTypeError([...new Set(unknown)]);
  return [...new Set(eventTypes)];
}

function urlPolicy(context: ServiceContext) {
  return { allowPrivate: context.webhooks.allowPrivate, publicUrl: context.publicUrl };
}

/** Adds an endpoint; the answer carries its new signing secret (shown this once). */
export async function createWebhook(context: ServiceContext, options: { input: unknown }): Promise<WebhookWithSecret> {
  const input = parseInput(createWebhookInput, options.input);
  const url = checkWebhookUrl(input.url, urlPolicy(context));
  const eventTypes = checkEventTypes(input.eventTypes) ?? [];
  const caller = await context.caller();
  const secret = newWebhookSecret();
  const now = context.clock.now();
  const id = newId();
  await context.em.transactional(async (em) => {
    // The team row's lock serialises creations, so the count below cannot be raced past the cap.
    await em.execute('select id from team where id = ? for update', [caller.teamId]);
    const teams = teamWebhookRows('w', caller.teamId);
    const [counted] = await em.execute<{ count: number }[]>(`select count(*)::int as count from webhook_endpoint w where ${teams.sql}`, teams.parameters);
    if ((counted?.count ?? 0) >= MAX_WEBHOOKS_PER_TEAM) throw new WebhookCapacityExceededError(MAX_WEBHOOKS_PER_TEAM);
    await em.execute(
      `insert into webhook_endpoint (id, created_at, updated_at, team_id, url, event_types, enabled, description, secret_ciphertext)
       values (?, ?, ?, ?, ?, ?::text[], ?, ?, ?)`,
      [id, now, now, caller.teamId, url, toTextArray(eventTypes), input.enabled ?? true, emptyToNull(input.description), encryptWebhookSecret(context.auditKey, secret)],
    );
    await auditChange(context, { em, caller, now }, { envelopeId: null, type: 'webhook.created', details: { webhookId: id, url, eventTypes, enabled: input.enabled ?? true } });
  });
  return { webhook: await readWebhook(context, id), secret };
}

/**
 * Changes an endpoint; only the given keys change, `description: null` clears it. Enabling an
 * endpoint clears the reason the service recorded when it disabled it.
 */
export async function updateWebhook(context: ServiceContext, options: { webhookId: string; input: unknown }): Promise<WebhookData> {
  const input = parseInput(updateWebhookInput, options.input);
  const url = input.url === undefined ? undefined : checkWebhookUrl(input.url, urlPolicy(context));
  const eventTypes = checkEventTypes(input.eventTypes);
  const caller = await context.caller();
  wellFormedWebhookId(options.webhookId);
  const changes: [string, unknown][] = [['updated_at = ?', context.clock.now()]];
  if (url !== undefined) changes.push(['url = ?', url]);
  if (eventTypes !== undefined) changes.push(['event_types = ?::text[]', toTextArray(eventTypes)]);
  if (input.description !== undefined) changes.push(['description = ?', emptyToNull(input.description)]);
  if (input.enabled !== undefined) changes.push(['enabled = ?', input.enabled]);
  const sets = changes.map(([assignment]) => assignment);
  const values = changes.map(([, value]) => value);
  // Enabling clears the reason the service recorded when it disabled the endpoint.
  if (input.enabled === true) sets.push('disabled_reason = null', 'disabled_at = null');
  const now = context.clock.now();
  await context.em.transactional(async (em) => {
    const row = teamWebhookRow('w', caller.teamId, options.webhookId);
    const rows = await em.execute<{ id: string }[]>(`update webhook_endpoint w set ${sets.join(', ')} where ${row.sql} returning w.id`, [...values, ...row.parameters]);
    if (rows.length === 0) throw new WebhookNotFoundError(options.webhookId);
    const changed = Object.keys(input).filter((key) => (input as Record<string, unknown>)[key] !== undefined);
    await auditChange(context, { em, caller, now }, { envelopeId: null, type: 'webhook.updated', details: { webhookId: options.webhookId, changed } });
  });
  return readWebhook(context, options.webhookId);
}

/** Deletes an endpoint with its delivery log; queued deliveries to it are dropped when their turn comes. */
export async function deleteWebhook(context: ServiceContext, options: { webhookId: string }): Promise<void> {
  const caller = await context.caller();
  wellFormedWebhookId(options.webhookId);
  await context.em.transactional(async (em) => {
    const row = teamWebhookRow('w', caller.teamId, options.webhookId);
    const rows = await em.execute<{ id: string; url: string }[]>(`delete from webhook_endpoint w where ${row.sql} returning w.id, w.url`, row.parameters);
    if (rows.length === 0) throw new WebhookNotFoundError(options.webhookId);
    await auditChange(context, { em, caller, now: context.clock.now() }, { envelopeId: null, type: 'webhook.deleted', details: { webhookId: options.webhookId, url: rows[0]!.url } });
  });
}

/** How long the previous secret keeps signing after a rotation, unless the caller says otherwise. */
export const PREVIOUS_SECRET_GRACE_SECONDS = 24 * 60 * 60;
const MAX_PREVIOUS_SECRET_GRACE_SECONDS = 7 * 24 * 60 * 60;

export const rotateWebhookSecretInput = z.strictObject({
  previousSecretValidSeconds: z
    .number({ error: 'must be a number of seconds' })
    .int('must be a whole number of seconds')
    .min(0, 'must be at least 0')
    .max(MAX_PREVIOUS_SECRET_GRACE_SECONDS, `must be at most ${MAX_PREVIOUS_SECRET_GRACE_SECONDS} (7 days)`)
    .optional(),
});

/**
 * Replaces the endpoint's signing secret; every delivery from now on (retries included) is signed
 * with the new one. The previous secret also signs (a second `v1`) for `previousSecretValidSeconds`
 * (24 hours by default), so receivers can switch without refusing deliveries; 0 ends it at once
 * (a leaked secret). A second rotation within the grace period drops the older secret.
 */
export async function rotateWebhookSecret(context: ServiceContext, options: { webhookId: string; input?: unknown }): Promise<WebhookWithSecret> {
  const input = parseInput(rotateWebhookSecretInput, options.input ?? {});
  const caller = await context.caller();
  wellFormedWebhookId(options.webhookId);
  const secret = newWebhookSecret();
  const now = context.clock.now();
  const graceSeconds = input.previousSecretValidSeconds ?? PREVIOUS_SECRET_GRACE_SECONDS;
  const graceEnds = graceSeconds > 0 ? new Date(now.getTime() + graceSeconds * 1000) : null;
  await context.em.transactional(async (em) => {
    const row = teamWebhookRow('w', caller.teamId, options.webhookId);
    const rows = await em.execute<{ id: string }[]>(
      `update webhook_endpoint w
          set previous_secret_ciphertext = case when ?::timestamptz is null then null else w.secret_ciphertext end,
              previous_secret_expires_at = ?::timestamptz, secret_ciphertext = ?, updated_at = ?
        where ${row.sql} returning w.id`,
      [graceEnds, graceEnds, encryptWebhookSecret(context.auditKey, secret), now, ...row.parameters],
    );
    if (rows.length === 0) throw new WebhookNotFoundError(options.webhookId);
    // The trail says that and when the secret changed, never the secret.
    await auditChange(
      context,
      { em, caller, now },
      { envelopeId: null, type: 'webhook.secret_rotated', details: { webhookId: options.webhookId, previousSecretExpiresAt: graceEnds?.toISOString() ?? null } },
    );
  });
  return { webhook: await readWebhook(context, options.webhookId), secret };
}

/**
 * Queues a delivery again: the same body (same `id`) as a new attempt, now. The new queue row
 * becomes the one whose outcome the delivery shows. Refused for a disabled endpoint.
 */
export async function redeliverWebhookDelivery(context: ServiceContext, options: { webhookId: string; deliveryId: string }): Promise<WebhookDeliveryData> {
  const caller = await context.caller();
  wellFormedWebhookId(options.webhookId);
  wellFormedWebhookDeliveryId(options.deliveryId);
  const now = context.clock.now();
  const messageId = newId();
  const delivery = teamWebhookDeliveryRow('d', caller.teamId, options.webhookId, options.deliveryId);
  const endpoint = teamWebhookRow('e', caller.teamId, options.webhookId);
  const queued = await enqueueSelected(context.em, OUTBOX_TOPICS.webhookDelivery, {
    now,
    query: `with source as (
       update webhook_delivery d
          set state = 'pending', outbox_message_id = ?, next_attempt_at = ?, delivered_at = null, failed_at = null
         from webhook_endpoint e
        where ${delivery.sql} and ${endpoint.sql} and e.enabled
        returning d.id, d.team_id, d.outbox_message_id)`,
    parameters: [messageId, now, ...delivery.parameters, ...endpoint.parameters],
    idColumn: 'outbox_message_id',
    payload: `jsonb_build_object('teamId', source.team_id, 'deliveryId', source.id)`,
  });
  if (queued.length === 0) {
    // Only on refusal: tell an unknown delivery (or endpoint) from a disabled endpoint.
    const [found] = await context.em.execute<{ enabled: boolean }[]>(`select e.enabled from webhook_endpoint e where ${endpoint.sql}`, endpoint.parameters);
    if (!found) throw new WebhookNotFoundError(options.webhookId);
    const [foundDelivery] = await context.em.execute<{ id: string }[]>(`select d.id from webhook_delivery d where ${delivery.sql}`, delivery.parameters);
    if (!foundDelivery) throw new WebhookDeliveryNotFoundError(options.deliveryId);
    throw new WebhookDisabledError(options.webhookId);
  }
  return readWebhookDelivery(context, { webhookId: options.webhookId, deliveryId: options.deliveryId });
}

function toTextArray(values: string[]): string {
  // A PostgreSQL array literal; the types are known names (dotted lower case), nothing to escape.
  return `{${values.join(',')}}`;
}

function emptyToNull(value: string | null | undefined): string | null {
  return value === undefined || value === null || value.trim() === '' ? null : value;
}
