import type { AgentInfo } from '../person/person.ts';
import type { Field } from './field.entity.ts';
import { resolveFields, type VisibleWhen } from './field-rules.js';

/*
 * What the service does to a recipient's fields when the recipient submits (issue 32), with the
 * same rules the signing page runs live (field-rules.js): conditions decide which fields are shown,
 * formulas are recomputed from the values as they now stand, and on completion the fields the
 * service fills get their values.
 */

/**
 * Applies the rules between fields to the recipient's fields, over every field of the envelope (a
 * condition or a formula may read an earlier recipient's fields), after the submitted values were
 * set on the entities: a hidden field (its conditions do not hold) loses the value the signer gave
 * it (a readonly field keeps the sender's, and is not drawn while hidden); the recipient's visible
 * formulas are recomputed (an empty result leaves no value), hidden ones are emptied. Answers the
 * recipient's hidden fields and those of them whose value was dropped.
 */
export function applyFieldRules(envelopeFields: Field[], ownFields: Field[]): { hidden: Set<Field>; dropped: Field[] } {
  const resolved = resolveFields(
    envelopeFields.map((field) => ({
      identifier: field.identifier,
      type: field.type,
      config: field.config,
      value: field.value ?? null,
      visibleWhen: (field.visibleWhen ?? null) as VisibleWhen | null,
    })),
  );
  const hidden = new Set<Field>();
  const dropped: Field[] = [];
  for (const field of ownFields) {
    const state = resolved.get(field.identifier);
    if (state === undefined) continue;
    if (!state.visible) hidden.add(field);
    if (field.type === 'formula') {
      if (JSON.stringify(state.value) !== JSON.stringify(field.value ?? null)) field.value = state.value;
      continue;
    }
    if (!state.visible && !field.readonly && field.value !== null && field.value !== undefined) {
      field.value = null;
      dropped.push(field);
    }
  }
  return { hidden, dropped };
}

/** The calendar date of an instant in a time zone, as `YYYY-MM-DD`. */
export function dateInTimeZone(instant: Date, timeZone: string): string {
  // en-CA writes dates as YYYY-MM-DD; the parts are read by type so no locale habit matters.
  const parts = new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).formatToParts(instant);
  const part = (type: string) => parts.find((entry) => entry.type === type)?.value ?? '';
  return `${part('year')}-${part('month')}-${part('day')}`;
}

/**
 * Fills the fields the service fills when the recipient completes: `date_signed` with the date of
 * completion in the field's time zone, `full_name` and `email` from the person who completed the
 * role (an email field stays empty for a person reached by phone only). Answers the fields filled.
 */
export function fillOnCompletion(ownFields: Field[], options: { now: Date; person: AgentInfo | undefined }): Field[] {
  const filled: Field[] = [];
  for (const field of ownFields) {
    let value: Record<string, unknown> | null = null;
    if (field.type === 'date_signed') value = { date: dateInTimeZone(options.now, typeof field.config.timeZone === 'string' ? field.config.timeZone : 'UTC') };
    else if (field.type === 'full_name') value = options.person?.name ? { text: options.person.name } : null;
    else if (field.type === 'email') value = options.person?.email ? { text: options.person.email } : null;
    else continue;
    field.value = value;
    filled.push(field);
  }
  return filled;
}
