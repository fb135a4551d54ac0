import type { EnvelopeStatus } from '../envelope/envelope.entity.ts';
import { EnvelopeClosedError } from './signing.errors.ts';

/*
 * "Past `expiresAt`", in one place (docs/reference/workflow.md "States"): a sent envelope whose
 * `expiresAt` is now or earlier is expired even before the sweep has closed it. Every check of
 * the rule (a signer's action, a sender's action on a sent envelope, the signing link's state,
 * the signing page's `isExpired`, the reminder windows) asks this module, and a refusal is
 * always `Envelope.Closed` with `status: 'expired'`: the same answer the envelope gives once
 * the sweep has closed it, so a caller never sees the sweep's timing.
 */

/** Whether `expiresAt` (a Date, or an ISO string as a read answers it; null: never) has passed at `now`. */
export function isPastExpiry(expiresAt: Date | string | null | undefined, now: Date): boolean {
  if (expiresAt === null || expiresAt === undefined) return false;
  return now.getTime() >= (typeof expiresAt === 'string' ? Date.parse(expiresAt) : expiresAt.getTime());
}

/** Whether the envelope reads as expired at `now`: closed as expired, or sent and past `expiresAt`. */
export function isExpiredAt(envelope: { status: string; expiresAt: Date | string | null }, now: Date): boolean {
  return envelope.status === 'expired' || isPastExpiry(envelope.expiresAt, now);
}

/** `Envelope.Closed` (`status: 'expired'`) when the envelope's `expiresAt` has passed at `now`. */
export function ensureNotPastExpiry(envelope: { id: string; expiresAt?: Date | null }, now: Date): void {
  if (isPastExpiry(envelope.expiresAt, now)) throw new EnvelopeClosedError(envelope.id, 'expired' satisfies EnvelopeStatus);
}
