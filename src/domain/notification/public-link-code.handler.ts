import { DELIVERY_FAILURES } from '../outbox/delivery-failures.ts';
import { type OutboxHandler, PermanentOutboxError } from '../outbox/outbox-worker.ts';
import type { OUTBOX_TOPICS } from '../outbox/topics.ts';
import { mailMessageId } from './mail.handlers.ts';
import { mailLocale, renderPublicLinkCodeMail } from './mail-templates.ts';
import type { Mailer } from './mailer.ts';
import { OTP_POLICY } from './otp-policy.ts';

/**
 * Mails a public link's visitor the code to enter on the form (issue 36). The code is in the
 * outbox row's `secret` only, which the acknowledgement drops once the mail is out.
 */
export function publicLinkCodeHandler(options: { mailer: Mailer; publicUrl: string }): OutboxHandler<typeof OUTBOX_TOPICS.publicLinkCode> {
  return async (message) => {
    const payload = message.payload;
    if (!payload.to?.email) throw new PermanentOutboxError(DELIVERY_FAILURES.noEmail);
    const locale = mailLocale(payload.to.locale);
    const content = renderPublicLinkCodeMail(locale, {
      name: payload.to.name,
      code: payload.secret.code,
      formName: payload.formName,
      minutes: Math.round(OTP_POLICY.codeTtlMs / 60_000),
    });
    await options.mailer.send({ messageId: mailMessageId(message.id, options.publicUrl), to: { name: payload.to.name, address: payload.to.email }, language: locale, ...content });
  };
}
