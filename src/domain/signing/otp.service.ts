import { createHmac, randomInt, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import type { DomainError } from '../../shared/errors.ts';
import { newId } from '../../shared/ids.ts';
import { isOtpRequired, maskPhone, OTP_POLICY, type OtpChannel, otpChannelOf } from '../notification/otp-policy.ts';
import { reservePhoneMessage } from '../notification/phone-cap.ts';
import { enqueue } from '../outbox/outbox.ts';
import { OUTBOX_TOPICS } from '../outbox/topics.ts';
import type { ServiceContext } from '../service-context.ts';
import { parseInput } from '../validation.ts';
import { personOfToken } from './otp-gate.ts';
import {
  SigningOtpAlreadyUsedError,
  SigningOtpAttemptsExhaustedError,
  SigningOtpExpiredError,
  SigningOtpInvalidError,
  SigningOtpNotRequestedError,
  SigningOtpNotRequiredError,
  SigningOtpRateLimitedError,
  SigningPhoneMessageCapReachedError,
} from './signing.errors.ts';
import type { SigningSessionData } from './signing.read.ts';
import { actWithToken, ensureMayAct, sessionInTransaction } from './signing.service.ts';
import { SigningOtp } from './signing-otp.entity.ts';
import { recordEvent } from './workflow.ts';

/*
 * One-time passcodes for signers with a phone (docs/reference/contract.md §7, issue 12 item 4). A link whose person
 * has a phone acts (submits, declines, delegates, starts a hosted session) only after a code sent
 * to that phone was entered on it (otp-gate.ts). The code leaves this module once, in the outbox
 * message that texts it; it is never logged, answered or kept: the row holds an HMAC of it, and
 * the deliverer drops it from the outbox row when it has gone out.
 */

/** The codes' HMAC key, derived from the audit key so that no new secret needs managing. */
function otpKey(auditKey: Buffer): Buffer {
  return createHmac('sha256', auditKey).update('signing-otp/v1').digest();
}

/** Bound to the row: a code is worth nothing against another row, even of the same link. */
function hashCode(auditKey: Buffer, otpId: string, code: string): string {
  return createHmac('sha256', otpKey(auditKey)).update(`${otpId}:${code}`).digest('hex');
}

function secondsUntil(at: number, now: Date): number {
  return Math.max(1, Math.ceil((at - now.getTime()) / 1000));
}

export type SigningOtpRequest = { channel: OtpChannel; maskedPhone: string; expiresAt: string; resendAvailableAt: string; resendInSeconds: number };

/**
 * Texts a fresh code to the link's person (SMS or WhatsApp, their contact method) through the
 * outbox, replacing any earlier code of the link. Refused by name when the person has no phone,
 * within the resend interval or past the hourly number of codes (`Signing.OtpRateLimited`), or
 * when the person's daily phone allowance is used up (`Signing.PhoneMessageCapReached`); refused
 * like any recipient change out of turn, for a completed role, a dead link or a closed envelope.
 */
export async function requestSigningOtp(context: ServiceContext): Promise<SigningOtpRequest> {
  return actWithToken(context, async ({ workflow, token, recipient }) => {
    const { em, now } = workflow;
    ensureMayAct(recipient);
    const { agent, person } = await personOfToken(em, token);
    if (!person?.phone || !isOtpRequired(person.phone, recipient.type)) throw new SigningOtpNotRequiredError(recipient.id);
    // The person's row lock: two requests racing past the resend checks cannot both send.
    await em.execute('select id from agent where id = ? for update', [agent.id]);
    const recent = await em.execute<{ created_at: Date }[]>(
      'select created_at from signing_otp where agent_id = ? and person_index = ? and created_at > ? order by created_at desc limit ?',
      [agent.id, token.personIndex, new Date(now.getTime() - 60 * 60_000), OTP_POLICY.maxPerHour],
    );
    const last = recent[0] ? new Date(recent[0].created_at).getTime() : null;
    if (last !== null && now.getTime() - last < OTP_POLICY.resendIntervalMs) {
      throw new SigningOtpRateLimitedError('interval', secondsUntil(last + OTP_POLICY.resendIntervalMs, now));
    }
    if (recent.length >= OTP_POLICY.maxPerHour) {
      const oldest = new Date(recent[recent.length - 1]!.created_at).getTime();
      throw new SigningOtpRateLimitedError('hour', secondsUntil(oldest + 60 * 60_000, now));
    }
    const outboxId = newId();
    const cap = await reservePhoneMessage(em, {
      agentId: agent.id,
      personIndex: token.personIndex,
      envelopeId: workflow.envelopeId,
      kind: 'otp',
      outboxMessageId: outboxId,
      now,
      perDay: context.limits.phoneMessagesPerDay,
    });
    if (!cap.allowed) throw new SigningPhoneMessageCapReachedError(cap.limit, secondsUntil(cap.retryAt.getTime(), now));
    const code = String(randomInt(0, 10 ** OTP_POLICY.digits)).padStart(OTP_POLICY.digits, '0');
    const otpId = newId();
    const channel = otpChannelOf(person.phoneContactMethod);
    const expiresAt = new Date(now.getTime() + OTP_POLICY.codeTtlMs);
    em.persist(
      em.create(SigningOtp, {
        id: otpId,
        createdAt: now,
        token,
        agent,
        personIndex: token.personIndex,
        channel,
        codeHash: hashCode(context.auditKey, otpId, code),
        expiresAt,
      }),
    );
    await enqueue(
      em,
      OUTBOX_TOPICS.signingOtp,
      {
        teamId: workflow.teamId,
        envelopeId: workflow.envelopeId,
        recipientId: recipient.id,
        agentId: agent.id,
        personIndex: token.personIndex,
        tokenId: token.id,
        otpId,
        channel,
        to: { name: person.name, phone: person.phone, locale: person.locale ?? null },
        expiresAt: expiresAt.toISOString(),
        secret: { code },
      },
      { id: outboxId, now },
    );
    const maskedPhone = maskPhone(person.phone);
    await recordEvent(workflow, 'otp.requested', {
      recipientId: recipient.id,
      agentId: agent.id,
      personIndex: token.personIndex,
      tokenId: token.id,
      otpId,
      channel,
      phone: maskedPhone,
      expiresAt: expiresAt.toISOString(),
    });
    return {
      channel,
      maskedPhone,
      expiresAt: expiresAt.toISOString(),
      resendAvailableAt: new Date(now.getTime() + OTP_POLICY.resendIntervalMs).toISOString(),
      resendInSeconds: Math.ceil(OTP_POLICY.resendIntervalMs / 1000),
    };
  });
}

/**
 * A code as people type or paste it: compatibility forms folded (fullwidth digits, an ideographic
 * space), then white space, dashes and invisible format characters (bidi marks, zero-width
 * spaces that phones add around a pasted code) dropped. What is left must be 6 ASCII digits, else
 * the input is `Request.Invalid` and takes no attempt (docs/errors.md, `Signing.OtpInvalid`).
 */
export function normalizeOtpInput(raw: string): string {
  return raw.normalize('NFKC').replace(/[\s\p{Pd}\u2212\p{Cf}]+/gu, '');
}

const verifyInput = z.strictObject({
  code: z
    .string()
    .max(64, 'must be the 6 digits of the code')
    .transform(normalizeOtpInput)
    .pipe(z.string().regex(new RegExp(`^[0-9]{${OTP_POLICY.digits}}$`), 'must be the 6 digits of the code')),
});

type Verification = { session: SigningSessionData } | { refusal: DomainError };

/**
 * Checks a code against the link's newest one. Each try takes one attempt through a guarded
 * update (`attempts < 5 and verified_at is null`), and the comparison runs only for a try that got
 * one, so no number of racing guesses makes more than five comparisons. A right code marks the code
 * used with a second guarded update (`verified_at is null`): of several tries of the right code
 * (racing or not) exactly one verifies (`otp.verified`, the session answered, now verified); every
 * other, and any later try of a used code, is `Signing.OtpAlreadyUsed` and takes no attempt. The
 * attempt and the `otp.failed` event commit even when the code is refused (the refusal is raised
 * after the commit).
 */
export async function verifySigningOtp(context: ServiceContext, options: { input: unknown }): Promise<SigningSessionData> {
  const input = parseInput(verifyInput, options.input);
  const outcome = await actWithToken<Verification>(context, async ({ workflow, token, recipient }) => {
    const { em, now } = workflow;
    ensureMayAct(recipient);
    const { person } = await personOfToken(em, token);
    if (!isOtpRequired(person?.phone, recipient.type)) throw new SigningOtpNotRequiredError(recipient.id);
    const [latest] = await em.execute<{ id: string; expires_at: Date; verified_at: Date | null }[]>(
      'select id, expires_at, verified_at from signing_otp where token_id = ? order by created_at desc, id desc limit 1',
      [token.id],
    );
    if (!latest) throw new SigningOtpNotRequestedError();
    const details = { recipientId: recipient.id, agentId: token.agent.id, tokenId: token.id, otpId: latest.id };
    const alreadyUsed = async (): Promise<Verification> => {
      await recordEvent(workflow, 'otp.failed', { ...details, reason: 'already_used' });
      return { refusal: new SigningOtpAlreadyUsedError() };
    };
    if (latest.verified_at !== null) return alreadyUsed();
    const expiresAt = new Date(latest.expires_at);
    if (expiresAt.getTime() <= now.getTime()) {
      await recordEvent(workflow, 'otp.failed', { ...details, reason: 'expired' });
      return { refusal: new SigningOtpExpiredError(expiresAt) };
    }
    const [taken] = await em.execute<{ attempts: number; code_hash: string }[]>(
      `update signing_otp set attempts = attempts + 1 where id = ? and attempts < ? and verified_at is null returning attempts, code_hash`,
      [latest.id, OTP_POLICY.maxAttempts],
    );
    if (!taken) {
      // No attempt left, or a racing try verified the code since it was read: tell which.
      const [current] = await em.execute<{ verified_at: Date | null }[]>('select verified_at from signing_otp where id = ?', [latest.id]);
      if (current?.verified_at) return alreadyUsed();
      await recordEvent(workflow, 'otp.failed', { ...details, reason: 'attempts_exhausted' });
      return { refusal: new SigningOtpAttemptsExhaustedError(OTP_POLICY.maxAttempts) };
    }
    const matches = timingSafeEqual(Buffer.from(hashCode(context.auditKey, latest.id, input.code), 'hex'), Buffer.from(taken.code_hash, 'hex'));
    if (!matches) {
      const attemptsLeft = Math.max(0, OTP_POLICY.maxAttempts - taken.attempts);
      await recordEvent(workflow, 'otp.failed', { ...details, reason: 'wrong_code', attempt: taken.attempts, attemptsLeft });
      return { refusal: new SigningOtpInvalidError(attemptsLeft) };
    }
    // The code is used by the one try whose update wins; its twin racing it is refused.
    const [used] = await em.execute<{ id: string }[]>('update signing_otp set verified_at = ? where id = ? and verified_at is null returning id', [now, latest.id]);
    if (!used) return alreadyUsed();
    await recordEvent(workflow, 'otp.verified', { ...details, attempt: taken.attempts });
    return { session: await sessionInTransaction(em, token.id, now) };
  });
  if ('refusal' in outcome) throw outcome.refusal;
  return outcome.session;
}
