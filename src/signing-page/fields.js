// This recipient's fields over the pages: each a box at its place (in percent of the page), in
// the recipient's colour, showing its value; the progress count; saving a value.
import { submitSigning } from './api.js';
import { tellHost } from './embedding.js';
import { app, el, fieldBox } from './dom.js';
import { fieldName, openEditor } from './field-editors.js';
import { currentSession, state } from './store.js';
/** @import { Field, FieldValue } from './types.js' */

/** The fields in reading order: by the first place each appears (document, page, top, left). */
export function fieldsInOrder() {
  const session = currentSession();
  const documentOrder = new Map(session.documents.map((document, index) => [document.id, index]));
  /**
   * @param {Field} field
   * @returns {number[]}
   */
  const first = (field) => {
    const order = (/** @type {string} */ documentId) => /** @type {number} */ (documentOrder.get(documentId));
    const view = [...field.views].sort((a, b) => order(a.documentId) - order(b.documentId) || a.page - b.page || a.location.y - b.location.y)[0];
    return view ? [order(view.documentId), view.page, view.location.y, view.location.x] : [Infinity, 0, 0, 0];
  };
  return [...session.fields].sort((a, b) => {
    const [x, y] = [first(a), first(b)];
    for (let index = 0; index < x.length; index += 1) if (x[index] !== y[index]) return x[index] - y[index];
    return 0;
  });
}

/** How many of the required fields this recipient fills have a value. */
export function requiredCount() {
  const required = currentSession().fields.filter((field) => field.required && !field.readonly);
  const done = required.filter((field) => field.value !== null).length;
  return { done, total: required.length };
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
  for (const field of fieldsInOrder()) {
    for (const view of field.views) {
      const key = `${view.documentId}:${view.page}`;
      const sheet = pages.get(key);
      const size = sizes.get(key);
      if (!sheet || !size) continue;
      const box = fieldElement(field);
      box.style.left = `${(view.location.x / size.width) * 100}%`;
      box.style.top = `${(view.location.y / size.height) * 100}%`;
      box.style.width = `${(view.size.width / size.width) * 100}%`;
      box.style.height = `${(view.size.height / size.height) * 100}%`;
      box.style.setProperty('--field-color', session.recipient.color);
      /** @type {HTMLElement} */ (sheet.querySelector('.overlays')).append(box);
    }
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
  const { t } = state;
  if (field.value === null) return el('span', { class: 'hint' }, t.fieldHint[field.type] ?? '');
  switch (field.type) {
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
  const label = `${shown ? `${shown} – ` : ''}${fieldName(field)}${field.required ? ` (${t.required})` : ''}${field.readonly ? ` (${t.readonly})` : ''}`;
  if (field.readonly) return el('div', { class: classes, 'data-field': field.identifier, role: 'note', 'aria-label': label, title: label }, valuePreview(field));
  if (field.type === 'checkbox') {
    return el(
      'button',
      {
        type: 'button',
        class: classes,
        role: 'checkbox',
        'aria-checked': String(field.value?.checked === true),
        'aria-label': label,
        title: label,
        'data-field': field.identifier,
        onclick: () => save(field, { checked: !(field.value?.checked === true) }),
      },
      valuePreview(field),
      field.required ? el('span', { class: 'marker', 'aria-hidden': 'true' }, '*') : null,
    );
  }
  return el(
    'button',
    { type: 'button', class: classes, 'aria-label': label, title: label, 'data-field': field.identifier, onclick: () => openEditor(field, (value) => save(field, value)) },
    valuePreview(field),
    field.required ? el('span', { class: 'marker', 'aria-hidden': 'true' }, '*') : null,
  );
}

/** Brings the next field to fill into view and focus: a required one first, then any empty one. */
export function goToNextField() {
  const open = fieldsInOrder().filter((field) => !field.readonly);
  const next = open.find((field) => field.required && field.value === null) ?? open.find((field) => field.value === null) ?? open[0];
  if (!next) return;
  const box = fieldBox(next.identifier);
  box?.scrollIntoView({ block: 'center', behavior: 'smooth' });
  box?.focus({ preventScroll: true });
}

/**
 * Saves one field's value; the service answers the session, whose fields are drawn again.
 * @param {Field} field
 * @param {FieldValue} value
 */
async function save(field, value) {
  state.session = await submitSigning({ values: [{ fieldId: field.id, value }] });
  tellHost('field_saved');
  renderFields();
  fieldBox(field.identifier)?.focus();
}
