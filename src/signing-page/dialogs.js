// Modal dialogs (the field editors, finishing, delegating, declining) and the translated
// message a failed action shows.
import { ApiError } from './api.js';
import { el } from './dom.js';
import { load } from './flow.js';
import { state } from './store.js';
/** @import { Child } from './dom.js' */

/** @typedef {{ dialog: HTMLDialogElement, fail: (message: string) => string }} DialogHandle */

/**
 * @param {string} title
 * @param {Child | Child[]} body
 * @param {Child[]} actions
 * @param {() => void} [onClose]
 * @returns {DialogHandle}
 */
export function openDialog(title, body, actions, onClose) {
  const error = el('p', { class: 'error', role: 'alert' });
  const dialog = el('dialog', { class: 'editor', 'aria-labelledby': 'dialog-title' }, el('h2', { id: 'dialog-title' }, title), body, error, el('div', { class: 'actions' }, actions));
  dialog.addEventListener('close', () => {
    dialog.remove();
    onClose?.();
  });
  document.body.append(dialog);
  dialog.showModal();
  return { dialog, fail: (message) => (error.textContent = message) };
}

/**
 * What to tell the signer about a failure, in the page's language: the service's refusals by
 * name (its own messages are English), a generic sentence for any other; the page's own checks
 * already speak the language.
 * @param {unknown} error
 * @returns {string}
 */
export function errorMessage(error) {
  const { t } = state;
  if (error instanceof ApiError) return /** @type {Record<string, string | undefined>} */ (t.errors)[/** @type {string} */ (error.code)] ?? t.errors.generic;
  if (error instanceof TypeError) return t.errors.generic; // the network: fetch failed
  return /** @type {Error} */ (error).message;
}

/**
 * Runs an action of a dialog: closes it on success, shows a translated message otherwise.
 * @param {DialogHandle} handle
 * @param {() => Promise<unknown>} action
 */
export async function attempt(handle, action) {
  try {
    await action();
    handle.dialog.close();
  } catch (error) {
    // The code's verification lapsed while the page was open: back to the code step.
    if (error instanceof ApiError && error.code === 'Signing.OtpRequired') {
      handle.dialog.close();
      void load();
      return;
    }
    // The sender corrected the envelope while the dialog was open: nothing was saved; the page
    // shows the new revision (saying so) for the signer to look at before finishing again.
    if (error instanceof ApiError && error.code === 'Signing.EnvelopeChanged') {
      handle.dialog.close();
      state.envelopeChanged = true;
      void load();
      return;
    }
    handle.fail(errorMessage(error));
  }
}

/**
 * @param {() => DialogHandle} getHandle
 */
export function cancelButton(getHandle) {
  return el('button', { type: 'button', class: 'secondary', onclick: () => getHandle().dialog.close() }, state.t.cancel);
}
