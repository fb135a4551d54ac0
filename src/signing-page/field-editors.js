// The editor of each field type, opened from the field's box: a dialog that checks what it can
// before sending and hands the value to `save` (fields.js saves it and draws the box again).
// A checkbox has no editor: its box toggles.
import { attempt, cancelButton, openDialog } from './dialogs.js';
import { el, fieldBox } from './dom.js';
import { createSignaturePad } from './signature-pad.js';
import { currentSession, state } from './store.js';
/** @import { DialogHandle } from './dialogs.js' */
import { decimalPlaces, formatNumber } from './field-rules.js';
/** @import { BinaryChoiceField, DateField, DropdownField, Field, FieldValue, NumberField, RadioField, SignatureField, TextField } from './types.js' */

/** @typedef {(value: FieldValue) => Promise<void>} Save */

/**
 * The name a field goes by: its label, else its tooltip, else its identifier.
 * @param {Field} field
 */
export function fieldName(field) {
  return field.label || field.tooltip || field.identifier;
}

/**
 * @param {Field} field
 * @param {Save} save
 */
export function openEditor(field, save) {
  const returnFocus = () => fieldBox(field.identifier)?.focus();
  const title = fieldName(field);
  if (field.type === 'text') {
    openTextEditor(field, save, title, returnFocus);
    return;
  }
  if (field.type === 'radio') {
    openRadioEditor(field, save, title, returnFocus);
    return;
  }
  if (field.type === 'binary_choice') {
    openBinaryChoiceEditor(field, save, title, returnFocus);
    return;
  }
  if (field.type === 'simple_signature' || field.type === 'biometric_signature' || field.type === 'initials') {
    openSignatureEditor(field, save, title, returnFocus);
    return;
  }
  if (field.type === 'date') {
    openDateEditor(field, save, title, returnFocus);
    return;
  }
  if (field.type === 'number') {
    openNumberEditor(field, save, title, returnFocus);
    return;
  }
  if (field.type === 'dropdown') openDropdownEditor(field, save, title, returnFocus);
}

/**
 * A one-input dialog: the input labelled by the dialog's title, a help line describing it, Enter
 * saves; `read` turns the input into the value or throws the message to show.
 * @param {HTMLInputElement | HTMLSelectElement} input
 * @param {{ title: string, help: string, read: () => FieldValue, save: Save, returnFocus: () => void }} dialog
 */
function openInputDialog(input, { title, help, read, save, returnFocus }) {
  /** @type {DialogHandle} */
  let handle;
  const submit = () => attempt(handle, () => save(read()));
  input.setAttribute('aria-labelledby', 'dialog-title');
  const helpLine = help ? el('p', { class: 'help', id: 'field-help' }, help) : null;
  if (helpLine) input.setAttribute('aria-describedby', 'field-help');
  handle = openDialog(title, el('div', {}, input, helpLine), [cancelButton(() => handle), el('button', { type: 'button', class: 'primary', onclick: submit }, state.t.save)], returnFocus);
  input.addEventListener('keydown', (event) => {
    if (/** @type {KeyboardEvent} */ (event).key === 'Enter') {
      event.preventDefault();
      submit();
    }
  });
  input.focus();
}

/**
 * A date, with the browser's date picker; the config's range is offered and checked here first.
 * @param {DateField} field
 * @param {Save} save
 * @param {string} title
 * @param {() => void} returnFocus
 */
function openDateEditor(field, save, title, returnFocus) {
  const { min, max } = field.config;
  const input = el('input', { id: 'field-input', type: 'date', min: min ?? undefined, max: max ?? undefined, value: field.value?.date ?? '' });
  const help = [min ? state.t.atLeast(min) : '', max ? state.t.atMost(max) : ''].filter(Boolean).join(' ');
  openInputDialog(input, {
    title,
    help,
    read: () => {
      const { t } = state;
      const date = input.value;
      if (!/^[0-9]{4}-[0-9]{2}-[0-9]{2}$/.test(date)) throw new Error(t.empty);
      if (min && date < min) throw new Error(t.atLeast(min));
      if (max && date > max) throw new Error(t.atMost(max));
      return { date };
    },
    save,
    returnFocus,
  });
}

/**
 * A number: typed with the locale's decimal mark or a point, its decimals and range checked here
 * first (the service checks again); the prefix and suffix are said in the help line.
 * @param {NumberField} field
 * @param {Save} save
 * @param {string} title
 * @param {() => void} returnFocus
 */
function openNumberEditor(field, save, title, returnFocus) {
  const { t, locale } = state;
  const config = field.config;
  const decimals = config.decimals ?? 0;
  const input = el('input', { id: 'field-input', type: 'text', inputmode: decimals > 0 ? 'decimal' : 'numeric', autocomplete: 'off', value: field.value ? String(field.value.number) : '' });
  const shown = (/** @type {number} */ number) => formatNumber(number, config, locale);
  const help = [config.prefix || config.suffix ? shown(decimals > 0 ? 1.5 : 1) : '', typeof config.min === 'number' ? t.atLeast(shown(config.min)) : '', typeof config.max === 'number' ? t.atMost(shown(config.max)) : '']
    .filter(Boolean)
    .join(' ');
  openInputDialog(input, {
    title,
    help,
    read: () => {
      const text = input.value.trim().replace(',', '.');
      if (!/^-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)$/.test(text)) throw new Error(t.notANumber);
      const number = Number(text);
      if (decimalPlaces(number) > decimals) throw new Error(t.tooManyDecimals(decimals));
      if (typeof config.min === 'number' && number < config.min) throw new Error(t.atLeast(shown(config.min)));
      if (typeof config.max === 'number' && number > config.max) throw new Error(t.atMost(shown(config.max)));
      return { number };
    },
    save,
    returnFocus,
  });
}

/**
 * A drop-down: one of the config's options, under its placeholder.
 * @param {DropdownField} field
 * @param {Save} save
 * @param {string} title
 * @param {() => void} returnFocus
 */
function openDropdownEditor(field, save, title, returnFocus) {
  const { t } = state;
  const select = el(
    'select',
    { id: 'field-input' },
    el('option', { value: '' }, field.config.placeholder || t.chooseOption),
    (field.config.options ?? []).map((option) => el('option', { value: option.value, selected: field.value?.selected === option.value }, option.label)),
  );
  openInputDialog(select, {
    title,
    help: '',
    read: () => {
      if (select.value === '') throw new Error(t.empty);
      return { selected: select.value };
    },
    save,
    returnFocus,
  });
}

/**
 * Text: one line or several, the config's placeholder and length; the pattern is checked here
 * first (the service checks it again).
 * @param {TextField} field
 * @param {Save} save
 * @param {string} title
 * @param {() => void} returnFocus
 */
function openTextEditor(field, save, title, returnFocus) {
  const config = field.config;
  const input = config.multiline
    ? el('textarea', { id: 'field-input', rows: 4, maxlength: config.maxLength, placeholder: config.placeholder ?? undefined })
    : el('input', { id: 'field-input', type: 'text', maxlength: config.maxLength, placeholder: config.placeholder ?? undefined, autocomplete: 'off' });
  input.value = field.value?.text ?? '';
  /** @type {DialogHandle} */
  let handle;
  const submit = () =>
    attempt(handle, async () => {
      const { t } = state;
      const text = input.value;
      if (text.length === 0) throw new Error(t.empty);
      if ([...text].length > config.maxLength) throw new Error(t.tooLong(config.maxLength));
      if (config.pattern && !new RegExp(`^(?:${config.pattern})$`, 'u').test(text)) throw new Error(t.patternMismatch);
      await save({ text });
    });
  // The dialog's title names the field; the input is labelled by it rather than by a second copy of it.
  input.setAttribute('aria-labelledby', 'dialog-title');
  handle = openDialog(title, el('div', {}, input), [cancelButton(() => handle), el('button', { type: 'button', class: 'primary', onclick: submit }, state.t.save)], returnFocus);
  input.addEventListener('keydown', (event) => {
    if (/** @type {KeyboardEvent} */ (event).key === 'Enter' && !config.multiline) submit();
  });
  input.focus();
}

/**
 * A radio group: one of the config's options.
 * @param {RadioField} field
 * @param {Save} save
 * @param {string} title
 * @param {() => void} returnFocus
 */
function openRadioEditor(field, save, title, returnFocus) {
  const group = el(
    'fieldset',
    // Named by the dialog's title, not by a legend repeating it.
    { class: 'choices', 'aria-labelledby': 'dialog-title' },
    (field.config.options ?? []).map((option, index) =>
      el('label', { class: 'choice' }, el('input', { type: 'radio', name: 'field-radio', value: option.value, id: `option-${index}`, checked: field.value?.selected === option.value }), option.label),
    ),
  );
  /** @type {DialogHandle} */
  let handle;
  const submit = () =>
    attempt(handle, async () => {
      const selected = /** @type {HTMLInputElement | null} */ (group.querySelector('input:checked'));
      if (!selected) throw new Error(state.t.empty);
      await save({ selected: selected.value });
    });
  handle = openDialog(title, group, [cancelButton(() => handle), el('button', { type: 'button', class: 'primary', onclick: submit }, state.t.save)], returnFocus);
}

/**
 * Accept or decline, with the config's labels.
 * @param {BinaryChoiceField} field
 * @param {Save} save
 * @param {string} title
 * @param {() => void} returnFocus
 */
function openBinaryChoiceEditor(field, save, title, returnFocus) {
  const { t } = state;
  /** @type {DialogHandle} */
  let handle;
  /** @param {'accept' | 'decline'} choice */
  const choose = (choice) => attempt(handle, () => save({ choice }));
  handle = openDialog(
    title,
    el('p', {}, field.tooltip ?? ''),
    [
      cancelButton(() => handle),
      el('button', { type: 'button', class: 'secondary', 'data-choice': 'decline', onclick: () => choose('decline') }, field.config.declineLabel ?? t.declineChoice),
      el('button', { type: 'button', class: 'primary', 'data-choice': 'accept', onclick: () => choose('accept') }, field.config.acceptLabel ?? t.accept),
    ],
    returnFocus,
  );
}

/**
 * A signature: drawn on the pad, or (a simple signature that allows it) typed in one of two
 * styles. A biometric signature sends the pad's samples with the image.
 * @param {SignatureField} field
 * @param {Save} save
 * @param {string} title
 * @param {() => void} returnFocus
 */
function openSignatureEditor(field, save, title, returnFocus) {
  const { t } = state;
  const session = currentSession();
  const biometric = field.type === 'biometric_signature';
  const initials = field.type === 'initials';
  const allowDrawn = biometric || field.config.allowDrawn !== false;
  const allowTyped = !biometric && field.config.allowTyped !== false;
  const pad = createSignaturePad();
  // Initials: at most 8 characters, offered as the first letters of the signer's name.
  const offered = initials ? initialsOf(session.signerName) : session.signerName;
  const typedInput = el('input', { id: 'typed-signature', type: 'text', maxlength: initials ? 8 : 100, autocomplete: initials ? 'off' : 'name', value: offered });
  const fontSelect = el('select', { id: 'typed-font' }, el('option', { value: 'cursive' }, t.fontCursive), el('option', { value: 'serif' }, t.fontSerif));
  const preview = el('p', { class: 'typed font-cursive', 'aria-hidden': 'true' }, offered);
  const syncPreview = () => {
    preview.textContent = typedInput.value;
    preview.className = `typed font-${fontSelect.value}`;
  };
  typedInput.addEventListener('input', syncPreview);
  fontSelect.addEventListener('change', syncPreview);
  const drawPanel = el('div', { class: 'panel', id: 'draw-panel' }, el('p', { class: 'help', id: 'draw-help' }, t.drawHere), pad.element, el('button', { type: 'button', class: 'link', onclick: () => pad.clear() }, t.clear));
  const typePanel = el(
    'div',
    { class: 'panel', id: 'type-panel' },
    el('label', { for: 'typed-signature' }, initials ? t.typeInitials : t.typeName),
    typedInput,
    el('label', { for: 'typed-font' }, t.font),
    fontSelect,
    preview,
  );
  /** @type {'draw' | 'type'} */
  let mode = allowDrawn ? 'draw' : 'type';
  const tabs = el('div', { class: 'tabs', role: 'tablist' });
  /** @param {'draw' | 'type'} next */
  const showMode = (next) => {
    mode = next;
    drawPanel.hidden = mode !== 'draw';
    typePanel.hidden = mode !== 'type';
    for (const tab of /** @type {HTMLCollectionOf<HTMLElement>} */ (tabs.children)) tab.setAttribute('aria-selected', String(tab.dataset.mode === mode));
  };
  if (allowDrawn && allowTyped) {
    tabs.append(
      el('button', { type: 'button', role: 'tab', 'data-mode': 'draw', onclick: () => showMode('draw') }, t.draw),
      el('button', { type: 'button', role: 'tab', 'data-mode': 'type', onclick: () => showMode('type') }, t.type),
    );
  }
  /** @type {DialogHandle} */
  let handle;
  const submit = () =>
    attempt(handle, async () => {
      if (mode === 'type') {
        if (typedInput.value.trim() === '') throw new Error(state.t.typeFirst);
        await save({ kind: 'typed', text: typedInput.value.trim(), font: fontSelect.value });
        return;
      }
      if (pad.strokes.length === 0) throw new Error(state.t.drawFirst);
      const image = pad.image();
      await save(biometric ? { image, strokes: pad.strokes } : { kind: 'drawn', image });
    });
  handle = openDialog(
    title,
    el('div', { class: 'signature-editor' }, tabs, allowDrawn ? drawPanel : null, allowTyped ? typePanel : null),
    [cancelButton(() => handle), el('button', { type: 'button', class: 'primary', id: 'save-signature', onclick: submit }, t.save)],
    returnFocus,
  );
  showMode(mode);
  pad.fit();
}

/**
 * The first letter of each word of a name, at most 8 (`Ada Augusta King` → `AAK`).
 * @param {string} name
 */
function initialsOf(name) {
  return name
    .split(/\s+/)
    .filter(Boolean)
    .map((word) => [...word][0] ?? '')
    .join('')
    .slice(0, 8);
}
