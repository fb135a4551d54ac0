// This recipient's fields over the pages: each a box at its place (in percent of the page), in
// the recipient's colour, showing its value; the progress count; saving a value.
import { ApiError, readSession, submitSigning } from './api.js';
import { app, el, fieldBox } from './dom.js';
import { tellHost } from './embedding.js';
import { fieldName, openEditor } from './field-editors.js';
import { formatDate, formatNumber, resolveFields } from './field-rules.js';
import { screenOf, show } from './flow.js';
import { fieldsInOrder as fieldsInReadingOrder, NOT_GIVEN, nextFieldOf, requiredCountOf, shownFieldsOf } from './page-logic.js';
import { currentSession, state } from './store.js';
/** @import { Field, FieldValue } from './types.js' */
/** @import { ResolvedField, RuleField } from './field-rules.js' */

// NOT_GIVEN (page-logic.js): the types whose value the signer does not give; the service fills them at completion, or computes them.

/**
 * Which fields show and what formulas come to, as the signer fills: the rules the service applies
 * at submit (field-rules.js, the very file), over this signer's values and earlier signers'.
 * @returns {Map<string, ResolvedField>}
 */
export function fieldRules() {
  const session = currentSession();
  /** @param {Field} field @returns {RuleField} */
  const rule = (field) => ({ identifier: field.identifier, type: field.type, config: field.config, value: field.value, visibleWhen: field.visibleWhen ?? null });
  return resolveFields([...(session.completedFields ?? []).map((completed) => rule(completed.field)), ...session.fields.map(rule)]);
}

/**
 * This signer's fields shown now (conditions hidden ones left out), formulas with their live result.
 * @returns {Field[]}
 */
export function shownFields() {
  return shownFieldsOf(currentSession(), fieldRules());
}

/** The fields in reading order: by the first place each appears (document, page, top, left). */
export function fieldsInOrder() {
  return fieldsInReadingOrder(currentSession());
}

/** How many of the required fields this recipient fills have a value. */
export function requiredCount() {
  return requiredCountOf(shownFields());
}

/** Puts every field's box on its page (again), and updates the progress count. */
export function renderFields() {
  const session = currentSession();
  const { done, total } = requiredCount();
  const progress = document.getElementById('progress');
  if (progress) progress.textContent = state.t.progress(done, total);
  for (const overlays of app.querySelectorAll('.overlays')) overlays.replaceChildren();
  const pages = new Map([.../** @type {NodeListOf<HTMLElement>} */ (app.querySelectorAll('.page'))].map((sheet) => [`${sheet.dataset.document}:${sheet.dataset.page}`, sheet]));
  const sizes = new Map(session.documents.flatMap((document) => document.pages.map((page) => [`${document.id}:${page.index}`, page])));
  /**
   * @param {import('./types.js').FieldView} view
   * @param {string} color
   * @param {() => HTMLElement} make
   */
  const place = (view, color, make) => {
    const key = `${view.documentId}:${view.page}`;
    const sheet = pages.get(key);
    const size = sizes.get(key);
    if (!sheet || !size) return;
    const box = make();
    box.style.left = `${(view.location.x / size.width) * 100}%`;
    box.style.top = `${(view.location.y / size.height) * 100}%`;
    box.style.width = `${(view.size.width / size.width) * 100}%`;
    box.style.height = `${(view.size.height / size.height) * 100}%`;
    box.style.setProperty('--field-color', color);
    /** @type {HTMLElement} */ (sheet.querySelector('.overlays')).append(box);
  };
  // Earlier signers' fields first, so this signer's controls lie above them where boxes meet.
  // (A readonly value an earlier signer's conditions hid was not theirs to show, and is not shown here.)
  const rules = fieldRules();
  for (const completed of session.completedFields ?? []) {
    if (rules.get(completed.field.identifier)?.visible === false) continue;
    for (const view of completed.field.views) place(view, completed.color, () => completedFieldElement(completed));
  }
  // Shown fields only: a section appears and disappears as the signer fills what its conditions name.
  for (const field of shownFields()) {
    for (const view of field.views) place(view, session.recipient.color, () => fieldElement(field));
  }
  fitTypedSignatures();
}

/**
 * A typed signature fills its box as a drawn one does, and never runs out of it: the font is
 * sized to the box's height, then shrunk until the name fits its width (a long name in a small
 * box on a phone). Measured, as only the browser knows how wide a name is in the font it has.
 */
export function fitTypedSignatures() {
  for (const text of /** @type {NodeListOf<HTMLElement>} */ (app.querySelectorAll('.field .typed'))) {
    const box = /** @type {HTMLElement} */ (text.parentElement);
    const style = getComputedStyle(box);
    const width = box.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    const height = box.clientHeight;
    if (width <= 0 || height <= 0) continue;
    text.style.lineHeight = '1';
    let size = height * 0.8;
    text.style.fontSize = `${size}px`;
    for (let attempt = 0; attempt < 3 && text.offsetWidth > width; attempt += 1) {
      size *= (width / text.offsetWidth) * 0.98;
      text.style.fontSize = `${size}px`;
    }
  }
}

/**
 * What a field's box shows: its value, or a hint of what to do.
 * @param {Field} field
 * @returns {HTMLElement}
 */
function valuePreview(field) {
  const { t, locale } = state;
  if (field.value === null) return el('span', { class: 'hint' }, t.fieldHint[field.type] ?? '');
  switch (field.type) {
    case 'initials':
      return field.value.kind === 'typed' ? el('span', { class: `typed font-${field.value.font}` }, field.value.text) : el('img', { src: field.value.image, alt: '' });
    case 'date':
    case 'date_signed':
      return el('span', { class: 'text-value' }, formatDate(field.value.date, field.config.format ?? 'YYYY-MM-DD', locale));
    case 'number':
    case 'formula':
      return el('span', { class: 'text-value' }, formatNumber(field.value.number, field.config, locale));
    case 'dropdown': {
      const value = field.value;
      return el('span', { class: 'text-value' }, field.config.options?.find((option) => option.value === value.selected)?.label ?? value.selected);
    }
    case 'full_name':
    case 'email':
      return el('span', { class: 'text-value' }, field.value.text);
    case 'attachment':
      return el('span', { class: 'text-value' }, field.value.files.map((file) => file.name).join(', '));
    case 'text':
      return el('span', { class: 'text-value' }, field.value.text);
    case 'checkbox':
      return el('span', { class: 'check', 'aria-hidden': 'true' }, field.value.checked ? '✓' : '');
    case 'radio': {
      const value = field.value;
      return el('span', {}, field.config.options?.find((option) => option.value === value.selected)?.label ?? value.selected);
    }
    case 'binary_choice':
      return el('span', {}, field.value.choice === 'accept' ? (field.config.acceptLabel ?? t.accept) : (field.config.declineLabel ?? t.declineChoice));
    case 'simple_signature':
      return field.value.kind === 'typed' ? el('span', { class: `typed font-${field.value.font}` }, field.value.text) : el('img', { src: field.value.image, alt: '' });
    case 'biometric_signature':
      return el('img', { src: field.value.image, alt: '' });
    default:
      return el('span', {}, JSON.stringify(/** @type {Field} */ (field).value));
  }
}

/**
 * A field's box: a note for a readonly field, a checkbox that toggles, or a button that opens
 * the field's editor.
 * @param {Field} field
 * @returns {HTMLElement}
 */
function fieldElement(field) {
  const { t } = state;
  const classes = ['field', `field-${field.type}`, field.required ? 'required' : '', field.value !== null ? 'filled' : '', field.readonly ? 'readonly' : ''].filter(Boolean).join(' ');
  // The accessible name starts with what the box shows (WCAG 2.5.3, label in name), then says which field it is.
  const shown = (valuePreview(field).textContent ?? '').trim();
  const given = NOT_GIVEN.has(field.type);
  const label = `${shown ? `${shown} – ` : ''}${fieldName(field)}${field.required ? ` (${t.required})` : ''}${field.readonly ? ` (${t.readonly})` : given ? ` (${t.filledByService})` : ''}`;
  const preview = el('span', { class: 'field-value' }, valuePreview(field));
  if (field.readonly || given) return el('div', { class: classes, 'data-field': field.identifier, 'data-box': field.identifier, role: 'note', 'aria-label': label, title: label }, preview);
  // The drawn box keeps the field's size on the page; the control inside it reaches at least
  // 44×44 CSS pixels around it (sign.css), so a small box is still a finger's target on a phone.
  const control =
    field.type === 'checkbox'
      ? el('button', {
          type: 'button',
          class: 'field-control',
          role: 'checkbox',
          'aria-checked': String(field.value?.checked === true),
          'aria-label': label,
          title: label,
          'data-field': field.identifier,
          onclick: () => save(field, { checked: !(field.value?.checked === true) }),
        })
      : el('button', {
          type: 'button',
          class: 'field-control',
          'aria-label': label,
          title: label,
          'data-field': field.identifier,
          onclick: () => openEditor(field, (value) => save(field, value)),
        });
  return el('div', { class: classes, 'data-box': field.identifier }, preview, field.required ? el('span', { class: 'marker', 'aria-hidden': 'true' }, '*') : null, control);
}

/**
 * An earlier signer's completed field: shown over its box in that signer's colour, read only
 * (no control: it is not this signer's to change).
 * @param {import('./types.js').CompletedField} field
 * @returns {HTMLElement}
 */
function completedFieldElement(field) {
  const shown = (valuePreview(field.field).textContent ?? '').trim();
  const label = `${shown ? `${shown} – ` : ''}${state.t.signedBy(field.signerName)}`;
  return el(
    'div',
    { class: `field field-${field.field.type} filled readonly earlier`, 'data-earlier-field': field.field.identifier, role: 'note', 'aria-label': label, title: label },
    el('span', { class: 'field-value' }, valuePreview(field.field)),
  );
}

/** Brings the next field to fill into view and focus: a required one first, then any empty one. */
export function goToNextField() {
  const next = nextFieldOf(shownFields());
  if (!next) return;
  const control = /** @type {HTMLElement | null} */ (fieldBox(next.identifier));
  control?.scrollIntoView({ block: 'center', behavior: 'instant' });
  control?.focus({ preventScroll: true });
  // On a phone scrolling alone leaves the signer to find and tap a small box: the field's editor
  // opens at once (a checkbox is its own editor, and a tap there would tick it, so it only gets focus).
  if (next.type !== 'checkbox') openEditor(next, (value) => save(next, value));
}

/**
 * Saves one field's value; the service answers the session, whose fields are drawn again. When
 * the sender corrected the envelope since the page loaded it (`Signing.EnvelopeChanged`), the page
 * reads the new revision and saves again what the signer gave for the fields that still exist;
 * a field the correction removed takes its value with it.
 * @param {Field} field
 * @param {FieldValue} value
 */
async function save(field, value) {
  state.unsaved.set(field.id, value);
  try {
    state.session = await submitSigning({ values: [...state.unsaved].map(([fieldId, given]) => ({ fieldId, value: given })) });
    state.unsaved.clear();
  } catch (error) {
    if (!(error instanceof ApiError) || error.code !== 'Signing.EnvelopeChanged') {
      state.unsaved.delete(field.id);
      throw error;
    }
    await reloadChangedEnvelope();
    return;
  }
  tellHost('field_saved');
  renderFields();
  fieldBox(field.identifier)?.focus();
}

/**
 * The envelope changed under the page: reads the new revision, saves what the signer gave for
 * the fields it still has (theirs to fill), and shows the screen the new session calls for.
 */
export async function reloadChangedEnvelope() {
  state.envelopeChanged = true;
  state.session = await readSession();
  const fillable = new Set(state.session.fields.filter((field) => !field.readonly && !NOT_GIVEN.has(field.type)).map((field) => field.id));
  const kept = [...state.unsaved].filter(([fieldId]) => fillable.has(fieldId));
  state.unsaved.clear();
  if (kept.length > 0 && state.session.isMyTurn) state.session = await submitSigning({ values: kept.map(([fieldId, value]) => ({ fieldId, value })) });
  show(screenOf(state.session));
}
