import type { EntityManager } from '@mikro-orm/postgresql';
import { textFitsBox } from '../pdf/render.ts';
import type { Field } from './field.entity.ts';
import { displayText } from './field-display.ts';
import { FieldView } from './field-view.entity.ts';

/**
 * The text a value is drawn as in the sealed PDF, for the types drawn as text (a `text` field's
 * own text, and the types of `displayText`); undefined for the types drawn otherwise (signatures,
 * marks) and for no value.
 */
export function drawnTextOf(type: string, value: Record<string, unknown> | null | undefined, config: Record<string, unknown>, locale: string): string | undefined {
  // An attachment's box only lists its files' names, as an index: the files themselves follow the
  // document as pages, whole. A long name is clipped to the box rather than refusing the signer.
  if (value === null || value === undefined || type === 'attachment') return undefined;
  const text = type === 'text' ? (typeof value.text === 'string' ? value.text : undefined) : displayText(type, value, config, locale);
  return text === '' ? undefined : text;
}

/** A box a value does not fit: the field, and the page of the view (0-based) where it would overflow. */
export type ValueNotFitting = { fieldId: string; identifier: string; page: number };

/**
 * The views whose box is too small for its field's value as the sealed PDF draws it: at 8 pt,
 * wrapped, the value would run outside the box (docs/artefacts.md, "never below 8 pt, never
 * outside its box, never cut"). The rendering and this check share one layout (pdf/render.ts,
 * `textFitsBox`); what is refused here is never drawn.
 */
export function viewsNotFitting(
  field: { id: string; identifier: string; type: string; config: Record<string, unknown> | null; value: Record<string, unknown> | null | undefined },
  views: { page: number; width: number; height: number }[],
  locale: string,
): ValueNotFitting[] {
  const text = drawnTextOf(field.type, field.value, field.config ?? {}, locale);
  if (text === undefined) return [];
  return views.filter((view) => !textFitsBox(text, view.width, view.height)).map((view) => ({ fieldId: field.id, identifier: field.identifier, page: view.page }));
}

/** `viewsNotFitting` for fields already stored, their views read in one query. */
export async function storedValuesNotFitting(em: EntityManager, fields: Field[], locale: string): Promise<ValueNotFitting[]> {
  const drawn = fields.filter((field) => drawnTextOf(field.type, field.value, field.config ?? {}, locale) !== undefined);
  if (drawn.length === 0) return [];
  const views = await em.find(FieldView, { field: { $in: drawn.map((field) => field.id) } }, { orderBy: { position: 'asc' } });
  // Stored as double precision, which the driver may hand back as text.
  const boxes = views.map((view) => ({ fieldId: view.field.id, page: view.page, width: Number(view.width), height: Number(view.height) }));
  return drawn.flatMap((field) =>
    viewsNotFitting(
      field,
      boxes.filter((box) => box.fieldId === field.id),
      locale,
    ),
  );
}
