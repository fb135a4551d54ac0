/**
 * `signing.otp`: texts a one-time passcode (otp.service.ts) by SMS or WhatsApp, in the person's
 * locale. The acknowledgement drops the code from the outbox row (`secret`), as for signing links,
 * and records `otp.sent`; a code that can no longer be used when its turn comes (a newer one was
 * requested, it was verified or expired, the link died) is settled without a message.
 */

import { DELIVERY_FAILURES } from '../outbox/delivery-failures.ts';
import { type OutboxHandler, PermanentOutboxError } from '../outbox/outbox-worker.ts';
import { envelopeOf, mailMessageId, systemEvent } from './mail.handlers.ts';
import { mailLocale, renderOtpText } from './mail-templates.ts';
import { OTP_POLICY } from './otp-policy.ts';
import type { PhoneChannel, PhoneProvider } from './sms.ts';

export type OtpHandlerOptions = { phone: PhoneProvider; publicUrl: string; auditKey: Buffer };

export function signingOtpHandler(options: OtpHandlerOptions): OutboxHandler<'signing.otp'> {
  return async (message, { em, now, logger }) => {
    const payload = message.payload;
    // The acknowledgement drops `secret`: a row read back after it has none.
    const code = payload.secret?.code;
    if (!code) throw new PermanentOutboxError(DELIVERY_FAILURES.messageIncomplete, 'the message has no code');
    const envelopeId = payload.envelopeId;
    const envelope = await envelopeOf(em, envelopeId);
    const [otp] = await em.execute<{ expires_at: Date; verified_at: Date | null; revoked_at: Date | null; newest: boolean }[]>(
      `select o.expires_at, o.verified_at, t.revoked_at,
              not exists (select 1 from signing_otp n where n.token_id = o.token_id and n.created_at > o.created_at) as newest
         from signing_otp o join signing_token t on t.id = o.token_id where o.id = ?`,
      [payload.otpId],
    );
    if (!otp || !otp.newest || otp.verified_at !== null || otp.revoked_at !== null || new Date(otp.expires_at).getTime() <= now.getTime() || envelope.status !== 'sent') {
      logger.info({ messageId: message.id, envelopeId }, 'one-time code not sent: it can no longer be used');
      return;
    }
    const to = payload.to;
    if (!to?.phone) throw new PermanentOutboxError(DELIVERY_FAILURES.noPhone);
    const channel: PhoneChannel = payload.channel === 'whatsapp' ? 'whatsapp' : 'sms';
    const messageId = mailMessageId(message.id, options.publicUrl);
    const words = renderOtpText(mailLocale(to.locale), { code, envelopeName: envelope.name, minutes: Math.round(OTP_POLICY.codeTtlMs / 60_000) });
    // An SMS ends with the origin-bound line (`@host #code`) that lets phones offer the code only
    // on the signing page's own site (WebOTP, iOS autofill); WhatsApp does not autofill.
    const text = channel === 'sms' ? `${words}\n\n@${new URL(options.publicUrl).hostname} #${code}` : words;
    await options.phone.send({ messageId, to: to.phone, channel, text });
    return (tx) =>
      systemEvent(tx, options.auditKey, {
        teamId: envelope.teamId,
        envelopeId,
        type: 'otp.sent',
        at: now,
        details: { recipientId: payload.recipientId, agentId: payload.agentId, tokenId: payload.tokenId, otpId: payload.otpId, channel, messageId },
      });
  };
}
