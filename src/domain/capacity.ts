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

/**
 * How much one template may hold: the envelope's caps, so that every envelope jumpstarted from a
 * template fits its own caps.
 */
export const TEMPLATE_CAPACITY = ENVELOPE_CAPACITY;

/** How many other teams one template may be shared with (`teamScope`). */
export const MAX_TEMPLATE_TEAM_SCOPE = 100;

export const CONTACT_GROUP_CAPACITY = { members: 1_000 } as const;

export type EnvelopeCapacity = keyof typeof ENVELOPE_CAPACITY;

export type CapacityOwner = 'Envelope' | 'Template' | 'ContactGroup';
const OWNER_NOUNS: Record<CapacityOwner, string> = { Envelope: 'An envelope', Template: 'A template', ContactGroup: 'A contact group' };

/**
 * `Envelope.CapacityExceeded` / `Template.CapacityExceeded` / `ContactGroup.CapacityExceeded`: the
 * change would take the envelope (template, group) past one of its documented caps; `context` says which, the cap, how many there are
 * and how many the request adds. Nothing was changed.
 */
/** What would overflow: `adding` more `what` to the `current` ones, against at most `limit`. */
export type CapacityOverflow = { what: string; limit: number; current: number; adding: number };

export class CapacityExceededError extends DomainError {
  constructor(owner: CapacityOwner, overflow: CapacityOverflow) {
    const { what, limit, current, adding } = overflow;
    super(`${owner}.CapacityExceeded`, `${OWNER_NOUNS[owner]} holds at most ${limit} ${what}; it has ${current} and this request adds ${adding}.`, { what, limit, current, adding });
  }
}

/**
 * Refuses a change that would go past a cap. Callers count under the lock that serialises changes
 * of the owner (the envelope's draft lock, the template's or group's row lock), so two racing requests cannot
 * both fit into the last free place.
 */
export function ensureCapacity(owner: CapacityOwner, overflow: CapacityOverflow): void {
  if (overflow.current + overflow.adding > overflow.limit) throw new CapacityExceededError(owner, overflow);
}
