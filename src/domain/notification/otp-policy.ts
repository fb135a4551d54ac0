/*
 * One-time passcodes for signers with a phone (docs/reference/contract.md §7): the numbers, in one place, and the
 * pure parts shared by the service (otp.service.ts), the gate (otp-gate.ts) and the session read.
 * The choices are explained in docs/decisions.md ("One-time passcodes").
 * It lives with the notifications, not with signing, because the code's message states these
 * numbers (otp.handler.ts) and signing already imports notification: here the arrow runs one way.
 */

export const OTP_POLICY = {
  /** Digits of a code. */
  digits: 6,
  /** A code can be entered for this long after it was requested. */
  codeTtlMs: 5 * 60_000,
  /** Guesses per code (wrong or right); the sixth is refused whatever it is. */
  maxAttempts: 5,
  /** At most one code per this interval per person. */
  resendIntervalMs: 30_000,
  /** ... and at most this many per hour per person. */
  maxPerHour: 5,
  /** A verification lets the link act for this long (then a new code is needed). */
  verificationTtlMs: 60 * 60_000,
} as const;

export type OtpChannel = 'sms' | 'whatsapp';

/** What the signing page needs to know about the link's one-time code. */
export type SigningOtpStatus = {
  /** The link's person has a phone: submitting, declining and delegating need a verified code. */
  required: boolean;
  /** A code was verified on this link within the verification period. */
  verified: boolean;
  verifiedUntil: string | null;
  /** The phone with all but the country prefix and last two digits hidden, e.g. +90•••••••12. */
  maskedPhone: string | null;
  channel: OtpChannel | null;
  /** When the next code may be requested (the resend interval after the last one), if later than now. */
  resendAvailableAt: string | null;
  /** The same as seconds from now (0 when a code may be requested): pages count down with it, whatever their own clock says. */
  resendInSeconds: number;
};

/** Hides a phone number but for its first three and last two characters (`+90•••••••12`). */
export function maskPhone(phone: string): string {
  const compact = phone.replace(/[^+\d]/g, '');
  if (compact.length <= 5) return '•'.repeat(compact.length);
  return `${compact.slice(0, 3)}${'•'.repeat(compact.length - 5)}${compact.slice(-2)}`;
}

export function otpChannelOf(method: string | null | undefined): OtpChannel {
  return method === 'whatsapp' ? 'whatsapp' : 'sms';
}

/**
 * Whether a link needs a code: its person has a phone, unless the role is an in-person signer,
 * whose links exist only on its host's device (startHostedSigning) and whose host stands for it.
 */
export function isOtpRequired(phone: string | null | undefined, recipientType: string): boolean {
  return Boolean(phone) && recipientType !== 'in_person_signer';
}

export function otpStatus(input: {
  phone: string | null;
  phoneContactMethod: string | null;
  recipientType: string;
  lastVerifiedAt: string | null;
  lastRequestedAt: string | null;
  now: Date;
}): SigningOtpStatus {
  const required = isOtpRequired(input.phone, input.recipientType);
  if (!required || !input.phone) return { required: false, verified: false, verifiedUntil: null, maskedPhone: null, channel: null, resendAvailableAt: null, resendInSeconds: 0 };
  const until = input.lastVerifiedAt ? Date.parse(input.lastVerifiedAt) + OTP_POLICY.verificationTtlMs : null;
  const verified = until !== null && input.now.getTime() < until;
  const resend = input.lastRequestedAt ? Date.parse(input.lastRequestedAt) + OTP_POLICY.resendIntervalMs : null;
  return {
    required,
    verified,
    verifiedUntil: verified && until !== null ? new Date(until).toISOString() : null,
    maskedPhone: maskPhone(input.phone),
    channel: otpChannelOf(input.phoneContactMethod),
    resendAvailableAt: resend !== null && resend > input.now.getTime() ? new Date(resend).toISOString() : null,
    resendInSeconds: resend !== null && resend > input.now.getTime() ? Math.ceil((resend - input.now.getTime()) / 1000) : 0,
  };
}
