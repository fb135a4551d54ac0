/**
 * The reasons a queued message (a mail, an SMS or WhatsApp message, a job) can fail, as callers
 * see them: on the agent (`notification.failure.reason` and `.error`, both faces) and in the trail
 * (`notification.failed`). Stable codes, listed in docs/errors.md ("Delivery failure reasons");
 * descriptions never carry a class name, a stack or the service's own infrastructure (the mail
 * relay's reply text, its host); the detail is logged with the outbox message id.
 * It lives with the outbox, which every feature that queues work imports and which imports none
 * of them (notification, artefact and webhook handlers all fail with these).
 */
import type { FailureReason } from '../../shared/failure-reason.ts';

/** SMTP reply codes of a refusal, in words (RFC 5321 §4.2.3). */
const SMTP_REFUSALS: Record<number, string> = {
  550: 'the mailbox is unavailable (no such address, or refused)',
  551: 'the address is not served by the receiving server',
  552: 'the mailbox is full or the message is too large',
  553: 'the address is not accepted',
  554: 'the message was refused',
  555: 'the message was refused',
};

/** The reply code and the enhanced status code (RFC 3463, e.g. `5.1.1`) of an SMTP reply, no free text. */
function smtpCodes(responseCode: number | undefined, response: string | undefined): string {
  const enhanced = /\b([245]\.\d{1,3}\.\d{1,3})\b/.exec(response ?? '')?.[1];
  return [responseCode, enhanced].filter((part) => part !== undefined).join(' ');
}

export const DELIVERY_FAILURES = {
  envelopeMissing: { code: 'envelope_missing', description: 'the envelope no longer exists' },
  envelopeNotFinalized: (status: string): FailureReason => ({ code: 'envelope_not_finalized', description: `the envelope is ${status}, not finalized` }),
  documentsNotSealed: { code: 'documents_not_sealed', description: 'the envelope has documents that are not sealed' },
  /** The queued row lacks what its topic needs (a link, a code, an envelope id): a fault of the service, not the caller's. */
  messageIncomplete: { code: 'message_incomplete', description: 'the queued message was incomplete; the operators find the details in the log' },
  /** The TSA (TSA_URL) gave no timestamp: the seal is retried, never made without one. */
  timestampUnavailable: { code: 'timestamp_unavailable', description: 'the timestamp authority gave no timestamp; the seal is retried' },
  /** No OCSP responder or CRL a seal certificate names gave its status: the seal is retried, never made without it. */
  revocationUnavailable: { code: 'revocation_unavailable', description: 'the revocation status of a seal certificate could not be fetched; the seal is retried' },
  /** The seal's key could not be reached (a PKCS#11 token removed or not answering): the seal is retried. */
  sealSignerUnavailable: { code: 'seal_signer_unavailable', description: "the seal's signing key (its token) could not be reached; the seal is retried" },
  noAddress: { code: 'no_address', description: 'the person has neither an email address nor a phone number' },
  noPhone: { code: 'no_phone', description: 'the person has no phone number' },
  noEmail: { code: 'no_email', description: 'the user has no email address' },
  /** A 5xx reply to the recipient or the message: final. */
  mailRefused: (responseCode: number | undefined, response: string | undefined): FailureReason => ({
    code: 'mail_refused',
    description: `the mail server refused the message (SMTP ${smtpCodes(responseCode, response)}): ${SMTP_REFUSALS[responseCode ?? 0] ?? 'the message was refused'}`,
  }),
  /** A 4xx reply: the server asked to try later. */
  mailDeferred: (responseCode: number, response: string | undefined): FailureReason => ({
    code: 'mail_deferred',
    description: `the mail server deferred the message (SMTP ${smtpCodes(responseCode, response)})`,
  }),
  /** No reply at all: the server could not be reached, the connection broke, authentication failed. */
  mailUnavailable: { code: 'mail_unavailable', description: 'the mail server could not be reached or did not take the message' },
  phoneRefused: (status: number): FailureReason => ({ code: 'phone_provider_refused', description: `the SMS provider answered HTTP ${status}` }),
  phoneUnavailable: (status: number | null): FailureReason => ({
    code: 'phone_provider_unavailable',
    description: status === null ? 'the SMS provider could not be reached' : `the SMS provider answered HTTP ${status}`,
  }),
  phoneCapReached: (limit: number): FailureReason => ({
    code: 'phone_cap_reached',
    description: `not sent: the person already received ${limit} phone messages in 24 hours (PHONE_MESSAGES_PER_DAY)`,
  }),
} as const satisfies Record<string, FailureReason | ((...args: never[]) => FailureReason)>;
