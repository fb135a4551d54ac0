// The editor of each field type, opened from the field's box: a dialog that checks what it can
// before sending and hands the value to `save` (fields.js saves it and draws the box again).
// A checkbox has no editor: its box toggles.
import { ApiError, removeAttachment, uploadAttachment } from './api.js';
import { attempt, cancelButton, errorMessage, openDialog } from './dialogs.js';
import { el, fieldBox } from './dom.js';
/** @import { DialogHandle } from './dialogs.js' */
import { decimalPlaces, formatNumber } from './field-rules.js';
import { createSignaturePad } from './signature-pad.js';
import { currentSession, state } from './store.js';
/** @import { AttachmentField, AttachmentFile, BinaryChoiceField, DateField, DropdownField, Field, FieldValue, NumberField, RadioField, SignatureField, TextField } from './types.js' */

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
  if (field.type === 'dropdown') {
    openDropdownEditor(field, save, title, returnFocus);
    return;
  }
  if (field.type === 'attachment') openAttachmentEditor(field, save, title, returnFocus);
}

const ATTACHMENT_TYPE_NAMES = /** @type {Record<string, string>} */ ({ 'application/pdf': 'PDF', 'image/png': 'PNG', 'image/jpeg': 'JPEG' });

/**
 * What the signer reads when a file is refused: the service's own description of an attachment's
 * refusal (it names the limit or the type it found), the page's message for anything else.
 * @param {unknown} error
 */
function attachmentRefusal(error) {
  if (error instanceof ApiError && typeof error.code === 'string' && error.code.startsWith('Attachment.')) return `${state.t.attachmentRefused} ${error.message}`;
  return errorMessage(error);
}

/**
 * Files for an attachment field: the signer's files listed, each with a button removing it; a
 * labelled file input adding one (a native control: Tab reaches it, Enter or Space opens the
 * picker); a progress bar while the file uploads (XMLHttpRequest's upload progress); and the
 * service's description when it refuses a file. Each upload or removal is saved at once as the
 * field's value, so the dialog closes with nothing left to save.
 * @param {AttachmentField} field
 * @param {Save} save
 * @param {string} title
 * @param {() => void} returnFocus
 */
function openAttachmentEditor(field, save, title, returnFocus) {
  const { t } = state;
  const accept = field.config.accept ?? ['application/pdf', 'image/png', 'image/jpeg'];
  const maxFiles = field.config.maxFiles ?? 1;
  const maxBytes = field.config.maxBytes ?? 10 * 1024 * 1024;
  /** @type {AttachmentFile[]} */
  let files = [...(field.value?.files ?? [])];
  const size = `${Math.round((maxBytes / (1024 * 1024)) * 10) / 10} MB`;
  const list = el('ul', { class: 'attachment-list', 'aria-labelledby': 'attachment-files' });
  const input = /** @type {HTMLInputElement} */ (el('input', { id: 'field-input', type: 'file', accept: accept.join(','), 'aria-describedby': 'field-help' }));
  const progress = /** @type {HTMLProgressElement} */ (el('progress', { id: 'attachment-progress', max: '100', value: '0', 'aria-labelledby': 'attachment-status' }));
  progress.hidden = true;
  const status = el('p', { id: 'attachment-status', class: 'help', role: 'status' });
  /** @type {DialogHandle} */
  let handle;

  /** The value names the files listed, in order (the service fills in each one's record). */
  const keep = async (/** @type {AttachmentFile[]} */ next) => {
    await save(next.length > 0 ? /** @type {FieldValue} */ ({ files: next.map((file) => ({ id: file.id })) }) : /** @type {FieldValue} */ (/** @type {unknown} */ (null)));
    files = next;
    render();
  };
  const render = () => {
    list.replaceChildren(
      ...(files.length === 0
        ? [el('li', { class: 'help' }, t.attachmentNone)]
        : files.map((file) =>
            el(
              'li',
              {},
              el('span', {}, file.name),
              ' ',
              el(
                'button',
                {
                  type: 'button',
                  class: 'secondary',
                  'aria-label': t.attachmentRemove(file.name),
                  onclick: async () => {
                    handle.fail('');
                    try {
                      await removeAttachment(file.id);
                      await keep(files.filter((kept) => kept.id !== file.id));
                      input.focus();
                    } catch (error) {
                      handle.fail(attachmentRefusal(error));
                    }
                  },
                },
                '✕',
              ),
            ),
          )),
    );
    input.disabled = files.length >= maxFiles;
    if (input.disabled && status.textContent === '') status.textContent = t.attachmentFull;
    else if (!input.disabled && status.textContent === t.attachmentFull) status.textContent = '';
  };
  input.addEventListener('change', async () => {
    const file = input.files?.[0];
    if (!file) return;
    handle.fail('');
    status.textContent = t.attachmentUploading(file.name);
    progress.value = 0;
    progress.hidden = false;
    input.disabled = true;
    try {
      const uploaded = await uploadAttachment(field.id, file, (sent, total) => {
        progress.value = total > 0 ? Math.round((sent / total) * 100) : 0;
      });
      status.textContent = '';
      await keep([...files, uploaded]);
    } catch (error) {
      status.textContent = '';
      handle.fail(attachmentRefusal(error));
    } finally {
      progress.hidden = true;
      input.value = '';
      render();
      if (!input.disabled) input.focus();
    }
  });
  const body = el(
    'div',
    {},
    el('h3', { id: 'attachment-files' }, t.attachmentFiles),
    list,
    el('label', { for: 'field-input' }, t.attachmentPick),
    input,
    el('p', { class: 'help', id: 'field-help' }, t.attachmentHelp(accept.map((type) => ATTACHMENT_TYPE_NAMES[type] ?? type).join(', '), size, maxFiles)),
    progress,
    status,
  );
  handle = openDialog(title, body, [el('button', { type: 'button', class: 'primary', onclick: () => handle.dialog.close() }, t.attachmentDone)], returnFocus);
  render();
  input.focus();
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
  const help = [
    config.prefix || config.suffix ? shown(decimals > 0 ? 1.5 : 1) : '',
    typeof config.min === 'number' ? t.atLeast(shown(config.min)) : '',
    typeof config.max === 'number' ? t.atMost(shown(config.max)) : '',
  ]
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
      el(
        'label',
        { class: 'choice' },
        el('input', { type: 'radio', name: 'field-radio', value: option.value, id: `option-${index}`, checked: field.value?.selected === option.value }),
        option.label,
      ),
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
  const drawPanel = el(
    'div',
    { class: 'panel', id: 'draw-panel' },
    el('p', { class: 'help', id: 'draw-help' }, t.drawHere),
    pad.element,
    el('button', { type: 'button', class: 'link', onclick: () => pad.clear() }, t.clear),
  );
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
