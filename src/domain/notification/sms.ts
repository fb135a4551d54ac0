/**
 * SMS and WhatsApp: one provider interface. The generic HTTP provider POSTs a body built from a
 * configured JSON template (`SMS_PROVIDER_BODY`: `{{to}}`, `{{channel}}`, `{{text}}`,
 * `{{messageId}}` placed inside JSON strings, each value JSON-escaped so no value can change the
 * body's shape), with `Authorization` from `SMS_PROVIDER_AUTHORIZATION` and an `Idempotency-Key`
 * header carrying the message's stable id (the outbox row's), so a provider that honours it sends
 * a message retried after a crash once. Without a provider, messages are written as JSON files
 * under `DATA_DIR/sms` (named by message id) and logged.
 *
 * A 4xx answer other than 408 and 429 cannot be fixed by retrying (bad number, bad credentials):
 * it fails the message for good; anything else (5xx, 408, 429, a network error) is retried.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { ReasonedError } from '../../shared/failure-reason.ts';
import type { Logger } from '../../shared/logger.ts';
import { DELIVERY_FAILURES } from '../outbox/delivery-failures.ts';
import { PermanentOutboxError } from '../outbox/outbox-worker.ts';

export type PhoneChannel = 'sms' | 'whatsapp';
export type PhoneMessage = { messageId: string; to: string; channel: PhoneChannel; text: string };
export type PhoneProvider = { send(message: PhoneMessage): Promise<void> };

const TIMEOUT_MS = 10_000;

export function renderSmsBody(template: string, message: PhoneMessage): string {
  const values: Record<string, string> = { to: message.to, channel: message.channel, text: message.text, messageId: message.messageId };
  return template.replace(/\{\{(\w+)\}\}/g, (whole, name: string) => (name in values ? JSON.stringify(values[name]).slice(1, -1) : whole));
}

export function createPhoneProvider(options: {
  provider: { url: string; authorization: string | undefined; bodyTemplate: string } | undefined;
  dataDir: string;
  logger: Logger;
}): PhoneProvider {
  const provider = options.provider;
  if (provider) {
    return {
      async send(message) {
        const response = await fetch(provider.url, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'idempotency-key': message.messageId,
            ...(provider.authorization ? { authorization: provider.authorization } : {}),
          },
          body: renderSmsBody(provider.bodyTemplate, message),
          signal: AbortSignal.timeout(TIMEOUT_MS),
          redirect: 'error',
        });
        await response.body?.cancel();
        if (response.ok) return;
        if (response.status >= 400 && response.status < 500 && response.status !== 408 && response.status !== 429) {
          throw new PermanentOutboxError(DELIVERY_FAILURES.phoneRefused(response.status));
        }
        throw new ReasonedError(DELIVERY_FAILURES.phoneUnavailable(response.status));
      },
    };
  }
  const directory = path.join(options.dataDir, 'sms');
  return {
    async send(message) {
      await fs.mkdir(directory, { recursive: true });
      const file = path.join(directory, `${message.messageId.replace(/[^A-Za-z0-9._-]/g, '_')}.json`);
      await fs.writeFile(`${file}.tmp`, JSON.stringify(message, null, 2));
      await fs.rename(`${file}.tmp`, file);
      options.logger.info({ file, to: message.to, channel: message.channel }, 'phone message written (SMS_PROVIDER_URL is not set)');
    },
  };
}
