/**
 * A person as the service knows one: the details an agent's inline `info`, a contact, a team user
 * and a delegation's new person all carry, the languages they may read, and the one schema that
 * checks them. A folder of its own, below the features that hold people (contact/, team/,
 * recipient/, field/), so each of them imports it and none imports another for it.
 */
import { z } from 'zod';
import { readableName } from '../validation.ts';

export const locales = ['en-US', 'tr-TR'] as const;
export type Locale = (typeof locales)[number];
export const phoneContactMethods = ['sms', 'whatsapp'] as const;
export type PhoneContactMethod = (typeof phoneContactMethods)[number];

/** A person's details as the spec's agent `info` carries them. */
export type AgentInfo = {
  name: string;
  email?: string | null;
  phone?: string | null;
  locale?: Locale | null;
  phoneContactMethod?: PhoneContactMethod | null;
  /** Signs inside the integrator's application (a signing URL on request): never invited by mail or phone. */
  embedded?: boolean;
};

/** Whether a person signs embedded (issue 21): no invitation, reminder or "your turn" message. */
export function isEmbedded(person: AgentInfo): boolean {
  return person.embedded === true;
}

/** E.164: a plus sign, a country code that does not start with 0, at most 15 digits in all. */
export const e164Phone = z.string().regex(/^\+[1-9]\d{6,14}$/, 'must be an E.164 phone number such as +905551234567');

export const personKeys = {
  // A name of only spaces would reach invitations as no name at all; the signer reads it too.
  name: readableName(1, 200),
  email: z.email('must be an email address').max(320).nullish(),
  phone: e164Phone.nullish(),
  locale: z.enum(locales, { error: `must be one of ${locales.join(', ')}` }).nullish(),
  phoneContactMethod: z.enum(phoneContactMethods, { error: `must be one of ${phoneContactMethods.join(', ')}` }).nullish(),
};

export function phoneMethodNeedsPhone(info: { phone?: string | null; phoneContactMethod?: string | null }, check: z.RefinementCtx) {
  if (info.phoneContactMethod && !info.phone) {
    check.addIssue({ code: 'custom', path: ['phoneContactMethod'], message: 'needs a phone number' });
  }
}

/** A person: a contact, a delegation's new person, an agent's inline info (which may add `embedded`). */
export const agentInfoSchema = z.strictObject(personKeys).superRefine(phoneMethodNeedsPhone);
