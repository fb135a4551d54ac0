import { DomainError } from '../shared/errors.ts';

/**
 * How much one envelope (and one contact group) may hold. Every list a read answers is bounded by
 * these, so no envelope can make a read, an answer or a signing page arbitrarily large; the
 * per-request limits (fields per batch, views per field, agents per recipient) sit beside the
 * rules they belong to. docs/limits.md lists them all with the reasons for their values.
 */
export const ENVELOPE_CAPACITY = {
  documents: 50,
  recipients: 50,
  fields: 1_000,
  views: 5_000,
} as const;

export const CONTACT_GROUP_CAPACITY = { members: 1_000 } as const;

export type EnvelopeCapacity = keyof typeof ENVELOPE_CAPACITY;

/**
 * `Envelope.CapacityExceeded` / `ContactGroup.CapacityExceeded`: the change would take the envelope
 * (or group) past one of its documented caps; `context` says which, the cap, how many there are
 * and how many the request adds. Nothing was changed.
 */
export class CapacityExceededError extends DomainError {
  constructor(owner: 'Envelope' | 'ContactGroup', what: string, limit: number, current: number, adding: number) {
    super(
      `${owner}.CapacityExceeded`,
      `${owner === 'Envelope' ? 'An envelope' : 'A contact group'} holds at most ${limit} ${what}; it has ${current} and this request adds ${adding}.`,
      { what, limit, current, adding },
    );
  }
}

/**
 * Refuses a change that would go past a cap. Callers count under the lock that serialises changes
 * of the owner (the envelope's draft lock, the group's row lock), so two racing requests cannot
 * both fit into the last free place.
 */
export function ensureCapacity(owner: 'Envelope' | 'ContactGroup', what: string, limit: number, current: number, adding: number): void {
  if (current + adding > limit) throw new CapacityExceededError(owner, what, limit, current, adding);
}
