/**
 * Delivering webhooks: the outbox handler that POSTs one delivery, the hooks that keep the
 * delivery log in step with the queue (next retry, given up), and the notice mail of a disabled
 * endpoint.
 *
 * A delivery's body and `id` are fixed when it is queued; every attempt (retries, a run again
 * after a crash between the POST and the acknowledgement, a manual redelivery) sends the same
 * `id`, so receivers de-duplicate by it. Only the queue row a delivery currently names
 * (`outbox_message_id`) changes its state, so an older row still running after a redelivery
 * cannot overwrite the newer outcome.
 */

import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import type { EntityManager } from '@mikro-orm/postgresql';
import { type FailureReason, failureDetail, ReasonedError } from '../../shared/failure-reason.ts';
import { newId } from '../../shared/ids.ts';
import { auditSystemChange } from '../change.ts';
import { mailMessageId } from '../notification/mail.handlers.ts';
import { mailLocale, renderWebhookDisabledMail } from '../notification/mail-templates.ts';
import type { Mailer } from '../notification/mailer.ts';
import { DELIVERY_FAILURES } from '../outbox/delivery-failures.ts';
import { enqueueSelected } from '../outbox/outbox.ts';
import { type OutboxFailureHook, type OutboxHandler, type OutboxRetryHook, PermanentOutboxError } from '../outbox/outbox-worker.ts';
import { OUTBOX_TOPICS } from '../outbox/topics.ts';
import { decryptWebhookSecret, webhookSignature } from './webhook-secret.ts';
import { isNonPublicAddress } from './webhook-url.ts';

/**
 * The webhook worker's retry policy (a worker of its own, so the generic defaults stay as they
 * are): 20 attempts, backoff from 1 minute doubling to a 4-hour cap, with the worker's jitter
 * (each wait 50–100 % of its step). The waits add up to at least 24 hours (about 36 on average)
 * before a delivery is given up.
 */
export const WEBHOOK_RETRY_POLICY = {
  maxAttempts: 20,
  baseBackoffMs: 60_000,
  maxBackoffMs: 4 * 60 * 60_000,
  /** Several slow receivers must not hold up the others for long. */
  concurrency: 4,
} as const;

export const WEBHOOK_HEADERS = {
  id: 'X-Envelope-Webhook-Id',
  timestamp: 'X-Envelope-Webhook-Timestamp',
  signature: 'X-Envelope-Signature',
} as const;

export type WebhookDeliveryOptions = { auditKey: Buffer; allowPrivate: boolean; timeoutMs: number };

/**
 * `failure`: what the team sees of a failed attempt (a stable code and words; docs/errors.md,
 * "Delivery failure reasons"), `detail`: the error as it happened, for the log only (it may name
 * the address a host resolved to, which the team must not learn from us). `refused`: the address
 * is not one a webhook may reach (no retry can change that).
 */
type PostResult = { statusCode: number | null; durationMs: number; failure: FailureReason | null; detail?: string; refused?: boolean };

const ADDRESS_NOT_ALLOWED = 'EADDRNOTALLOWED';

/** Why a webhook attempt failed, as the team sees it. */
export const WEBHOOK_FAILURES = {
  addressNotAllowed: { code: 'address_not_allowed', description: 'the endpoint’s address is not a public one; deliveries to it are refused' },
  dnsFailed: { code: 'dns_failed', description: 'the endpoint’s host name could not be resolved' },
  connectionRefused: { code: 'connection_refused', description: 'the endpoint refused the connection' },
  connectionReset: { code: 'connection_reset', description: 'the connection was closed before the endpoint answered' },
  unreachable: { code: 'unreachable', description: 'the endpoint could not be reached' },
  timeout: (timeoutMs: number): FailureReason => ({ code: 'timeout', description: `no answer within ${timeoutMs} ms` }),
  tlsFailed: (code: string): FailureReason => ({ code: 'tls_failed', description: `the TLS connection failed (${code})` }),
  networkError: { code: 'network_error', description: 'the connection to the endpoint failed' },
  httpStatus: (status: number): FailureReason => ({ code: 'http_status', description: `HTTP ${status}` }),
  endpointDisabled: { code: 'endpoint_disabled', description: 'the endpoint is disabled' },
} as const;

/** A connection error, by its code (never its message, which may carry addresses). */
function connectionFailure(error: NodeJS.ErrnoException, timeoutMs: number, timedOut: boolean): FailureReason {
  if (timedOut) return WEBHOOK_FAILURES.timeout(timeoutMs);
  const code = error.code ?? '';
  if (code === ADDRESS_NOT_ALLOWED) return WEBHOOK_FAILURES.addressNotAllowed;
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'ENODATA' || code === 'EAI_NONAME') return WEBHOOK_FAILURES.dnsFailed;
  if (code === 'ECONNREFUSED') return WEBHOOK_FAILURES.connectionRefused;
  if (code === 'ECONNRESET' || code === 'EPIPE' || code === 'ECONNABORTED') return WEBHOOK_FAILURES.connectionReset;
  if (code === 'ETIMEDOUT' || code === 'EHOSTUNREACH' || code === 'ENETUNREACH' || code === 'EHOSTDOWN' || code === 'ENETDOWN') return WEBHOOK_FAILURES.unreachable;
  // OpenSSL's and Node's certificate and handshake codes (CERT_HAS_EXPIRED, ERR_TLS_CERT_ALTNAME_INVALID, …): stable names worth showing.
  if (/^(ERR_TLS_|ERR_SSL_|CERT_|DEPTH_ZERO_|SELF_SIGNED_|UNABLE_TO_|HOSTNAME_MISMATCH)/.test(code)) return WEBHOOK_FAILURES.tlsFailed(code);
  return WEBHOOK_FAILURES.networkError;
}

/** Resolves like the system resolver, then refuses when any answer is a non-public address (the SSRF check at connect time). */
function guardedLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '', 0);
      const list = addresses as dns.LookupAddress[];
      const refused = !allowPrivate && list.find((entry) => isNonPublicAddress(entry.address));
      if (refused) return callback(Object.assign(new Error(`${hostname} resolves to a non-public address (${refused.address})`), { code: ADDRESS_NOT_ALLOWED }), '', 0);
      if ((options as { all?: boolean }).all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, list);
      const first = list[0];
      if (!first) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '', 0);
      callback(null, first.address, first.family);
    });
  };
}

/** One POST: no redirects followed (a 3xx is an answer like any other non-2xx), a hard time limit, the answer's body ignored. */
function post(urlText: string, body: string, headers: Record<string, string>, options: WebhookDeliveryOptions): Promise<PostResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  return new Promise((resolve) => {
    const url = new URL(urlText);
    const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    // A literal address never reaches the resolver: check it here.
    if (!options.allowPrivate && isIP(host) !== 0 && isNonPublicAddress(host)) {
      resolve({ statusCode: null, durationMs: 0, failure: WEBHOOK_FAILURES.addressNotAllowed, detail: `${host} is not a public address`, refused: true });
      return;
    }
    const client = url.protocol === 'https:' ? https : http;
    let settled = false;
    const finish = (result: PostResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(result);
    };
    const request = client.request(
      url,
      {
        method: 'POST',
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        lookup: guardedLookup(options.allowPrivate),
        agent: false,
      },
      (response) => {
        // Only the status matters; the body is drained and dropped.
        response.resume();
        const statusCode = response.statusCode ?? null;
        const delivered = statusCode !== null && statusCode >= 200 && statusCode < 300;
        finish({ statusCode, durationMs: elapsed(), failure: delivered ? null : WEBHOOK_FAILURES.httpStatus(statusCode ?? 0) });
      },
    );
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      request.destroy(new Error(`no answer within ${options.timeoutMs} ms`));
    }, options.timeoutMs);
    request.on('error', (error: NodeJS.ErrnoException) => {
      finish({
        statusCode: null,
        durationMs: elapsed(),
        failure: connectionFailure(error, options.timeoutMs, timedOut),
        detail: failureDetail(error),
        refused: error.code === ADDRESS_NOT_ALLOWED,
      });
    });
    request.end(body);
  });
}

/** The exact bytes POSTed: the stored payload with its keys in the documented order. */
export function webhookBody(payload: Record<string, unknown>): string {
  const { id, type, occurredAt, teamId, envelopeId, sequence, data } = payload;
  return JSON.stringify({ id, type, occurredAt, teamId, envelopeId, sequence, data });
}

/** `webhook.delivery`: POSTs the delivery, records the attempt, and marks it delivered on a 2xx answer. */
export function webhookDeliveryHandler(options: WebhookDeliveryOptions): OutboxHandler<typeof OUTBOX_TOPICS.webhookDelivery> {
  return async (message, { em, now }) => {
    const deliveryId = String(message.payload.deliveryId);
    const [row] = await em.execute<
      { payload: Record<string, unknown>; url: string; secret_ciphertext: string; previous_secret_ciphertext: string | null; previous_secret_expires_at: Date | null; enabled: boolean }[]
    >(
      `select d.payload, e.url, e.secret_ciphertext, e.previous_secret_ciphertext, e.previous_secret_expires_at, e.enabled
         from webhook_delivery d join webhook_endpoint e on e.id = d.endpoint_id where d.id = ?`,
      [deliveryId],
    );
    // The endpoint was deleted (with its log): nothing to deliver.
    if (!row) return;
    if (!row.enabled) throw new PermanentOutboxError(WEBHOOK_FAILURES.endpointDisabled);
    const body = webhookBody(row.payload);
    const timestamp = Math.floor(now.getTime() / 1000);
    const secrets = [decryptWebhookSecret(options.auditKey, row.secret_ciphertext)];
    // In a rotation's grace period the previous secret signs too (a second v1).
    if (row.previous_secret_ciphertext !== null && row.previous_secret_expires_at !== null && new Date(row.previous_secret_expires_at).getTime() > now.getTime()) {
      secrets.push(decryptWebhookSecret(options.auditKey, row.previous_secret_ciphertext));
    }
    const result = await post(
      row.url,
      body,
      {
        'content-type': 'application/json',
        'user-agent': 'envelope-service-webhooks/1',
        [WEBHOOK_HEADERS.id.toLowerCase()]: deliveryId,
        [WEBHOOK_HEADERS.timestamp.toLowerCase()]: String(timestamp),
        [WEBHOOK_HEADERS.signature.toLowerCase()]: webhookSignature(secrets, timestamp, body),
      },
      options,
    );
    const failure = result.failure;
    // The attempt is logged in one statement: a failed one at once, whatever the queue does next;
    // a delivered one with the acknowledgement, which the worker records even across a database
    // outage, so a receiver that answered 2xx is never posted the same delivery again for it.
    const attemptId = newId();
    const logAttempt = (target: EntityManager) =>
      target.execute(
        `with attempt as (
           insert into webhook_attempt (id, created_at, delivery_id, status_code, duration_ms, error_code, error) values (?, ?, ?, ?, ?, ?, ?) returning delivery_id)
         update webhook_delivery set attempt_count = attempt_count + 1, last_status_code = ?, last_error_code = ?, last_error = ?, last_attempt_at = ?
          where id = (select delivery_id from attempt)`,
        [
          attemptId,
          now,
          deliveryId,
          result.statusCode,
          result.durationMs,
          failure?.code ?? null,
          failure?.description ?? null,
          result.statusCode,
          failure?.code ?? null,
          failure?.description ?? null,
          now,
        ],
      );
    if (failure) {
      await logAttempt(em);
      // The team sees the reason; the worker logs the detail with the message id.
      const detail = `delivery ${deliveryId}: ${result.detail ?? failure.description}`;
      if (result.refused) throw new PermanentOutboxError(failure, detail);
      throw new ReasonedError(failure, detail);
    }
    return async (tx: EntityManager) => {
      await logAttempt(tx);
      await tx.execute(`update webhook_delivery set state = 'delivered', delivered_at = ?, next_attempt_at = null, failed_at = null where id = ? and outbox_message_id = ?`, [
        now,
        deliveryId,
        message.id,
      ]);
    };
  };
}

/** Records when the queue will try again, on the delivery and on its newest attempt. */
export const webhookRetryHook: OutboxRetryHook = async (message, _error, { em, retryAt }) => {
  if (message.topic !== OUTBOX_TOPICS.webhookDelivery) return;
  const deliveryId = String(message.payload.deliveryId);
  await em.execute(
    `with delivery as (update webhook_delivery set next_attempt_at = ? where id = ? and outbox_message_id = ? returning id)
     update webhook_attempt set next_retry_at = ?
      where id = (select a.id from webhook_attempt a where a.delivery_id = ? order by a.created_at desc, a.id desc limit 1)
        and exists (select 1 from delivery)`,
    [retryAt, deliveryId, message.id, retryAt, deliveryId],
  );
};

/**
 * A delivery given up for good (attempts exhausted after 24 hours and more, or a refused
 * address) fails, and its endpoint is disabled with the reason recorded on it; the team's users
 * are told by mail (one queued notice per user with an address). Disabling happens once: a
 * second delivery failing for a disabled endpoint changes nothing more.
 */
export const webhookFailureHook =
  (auditKey: Buffer): OutboxFailureHook =>
  async (message, failure, { em, now }) => {
    if (message.topic !== OUTBOX_TOPICS.webhookDelivery) return;
    const deliveryId = String(message.payload.deliveryId);
    // The delivery keeps its last attempt's reason; one that never got an attempt (a disabled endpoint) gets this one.
    const [failed] = await em.execute<{ endpoint_id: string; event_type: string; attempt_count: number; last_error: string }[]>(
      `update webhook_delivery set state = 'failed', failed_at = ?, next_attempt_at = null,
            last_error_code = case when last_error is null then ? else last_error_code end, last_error = coalesce(last_error, ?)
      where id = ? and outbox_message_id = ? returning endpoint_id, event_type, attempt_count, last_error`,
      [now, failure.code, failure.description, deliveryId, message.id],
    );
    if (!failed) return;
    const reason = `Delivery ${deliveryId} (${failed.event_type}) failed for good after ${failed.attempt_count} attempt(s): ${failed.last_error}`.slice(0, 1000);
    const [disabled] = await em.execute<{ id: string; url: string; team_id: string }[]>(
      `update webhook_endpoint set enabled = false, disabled_reason = ?, disabled_at = ?, updated_at = ? where id = ? and enabled returning id, url, team_id`,
      [reason, now, now, failed.endpoint_id],
    );
    if (!disabled) return;
    // The team's trail records it (a system event), like any change of the team's configuration.
    await auditSystemChange(em, auditKey, {
      teamId: disabled.team_id,
      envelopeId: null,
      type: 'webhook.disabled',
      details: { webhookId: disabled.id, url: disabled.url, reason },
      at: now,
    });
    await enqueueSelected(em, OUTBOX_TOPICS.webhookDisabledNotice, {
      now,
      query: 'with source as (select u.name, u.email, u.locale from team_user u where u.team_id = ?)',
      parameters: [disabled.team_id],
      payload: `jsonb_build_object('teamId', ?::text, 'webhookId', ?::text, 'url', ?::text, 'reason', ?::text,
              'to', jsonb_build_object('name', source.name, 'email', source.email, 'locale', source.locale))`,
      payloadParameters: [disabled.team_id, disabled.id, disabled.url, reason],
    });
  };

/** `webhook.disabled.notice`: the mail to one team user (run by the main worker, like the other mails). */
export function webhookDisabledNoticeHandler(options: { mailer: Mailer; publicUrl: string }): OutboxHandler<typeof OUTBOX_TOPICS.webhookDisabledNotice> {
  return async (message) => {
    const payload = message.payload;
    if (!payload.to?.email) throw new PermanentOutboxError(DELIVERY_FAILURES.noEmail);
    const locale = mailLocale(payload.to.locale);
    const content = renderWebhookDisabledMail(locale, { name: payload.to.name, url: payload.url, reason: payload.reason });
    await options.mailer.send({
      messageId: mailMessageId(message.id, options.publicUrl),
      to: { name: payload.to.name, address: payload.to.email },
      language: locale,
      ...content,
    });
  };
}
