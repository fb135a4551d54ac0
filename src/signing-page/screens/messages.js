// The screens that say where the signer stands: done, finalized (with the download of the signed
// copy), voided, expired, declined, delegated, not your turn yet, a link that does not work, an error.
import { finalCopyUrl } from '../api.js';
import { errorMessage } from '../dialogs.js';
import { app, el } from '../dom.js';
import { load } from '../flow.js';
import { state } from '../store.js';
/** @import { MessageScreen } from '../types.js' */

/** @param {MessageScreen} screen */
export function renderMessage(screen) {
  const { t, session } = state;
  /** @type {Record<MessageScreen, [string, string]>} */
  const messages = {
    done: [t.doneTitle, t.doneText],
    finalized: [t.finalizedTitle, t.finalizedText],
    voided: [t.voidedTitle, t.voidedText],
    expired: [t.expiredTitle, t.expiredText],
    // Says what happened: a mail to the sender only when its team settings ask for one.
    declined: [t.declinedTitle, session?.sender?.declineNotified ? t.declinedText : t.declinedTextNoMail],
    delegated: [t.delegatedTitle, t.delegatedText],
    'not-your-turn': [t.notYourTurnTitle, t.notYourTurnText],
    approved: [
      t.approvedTitle,
      !session?.approval ? '' : session.approval.approvals >= session.approval.quorum ? t.approvedAllText : t.approvedText(session.approval.approvals, session.approval.quorum),
    ],
    'role-completed': [t.roleCompletedTitle, t.roleCompletedText],
    invalid: [t.invalidTitle, t.invalidText],
    error: [t.errorTitle, t.errorText],
    used: [t.usedTitle, t.usedText],
    'link-expired': [t.linkExpiredTitle, t.linkExpiredText],
    'session-expired': [t.sessionExpiredTitle, t.sessionExpiredText],
  };
  const [title, text] = messages[screen];
  app.replaceChildren(
    el(
      'section',
      { class: `state state-${screen}`, 'aria-labelledby': 'state-title' },
      el('h1', { id: 'state-title' }, title),
      session && !['invalid', 'error', 'used', 'link-expired'].includes(screen) ? el('p', { class: 'envelope-name' }, session.envelope.name) : null,
      el('p', {}, text),
      screen === 'error' ? el('button', { type: 'button', class: 'primary', onclick: () => load() }, t.retry) : null,
      screen === 'finalized' ? finalCopyButton() : null,
    ),
  );
  document.title = title;
  app.focus();
}

/**
 * The finalized screen's download: the link's own token is dead by now, but still names this
 * recipient, so the service answers a short-lived final-copy URL for it (asked on click, so it
 * never expires on an open page); the browser downloads the file from there.
 */
function finalCopyButton() {
  const status = el('p', { class: 'error', role: 'alert', id: 'final-copy-error' });
  const button = el('button', { type: 'button', class: 'primary', id: 'download-final-copy', onclick: () => downloadFinalCopy(status) }, state.t.downloadFinalCopy);
  return el('div', { class: 'final-copy' }, button, status);
}

/** @param {HTMLElement} status */
async function downloadFinalCopy(status) {
  status.textContent = '';
  try {
    const url = await finalCopyUrl();
    // Same service as this page: its path, whatever host name PUBLIC_URL gives the service.
    location.assign(new URL(url).pathname);
  } catch (error) {
    status.textContent = errorMessage(error);
  }
}
