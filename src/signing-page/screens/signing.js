// The signing screen: the summary, the toolbar (next field, delegate, decline, finish), the
// documents with this recipient's fields over them, and the dialogs that end a signer's part:
// the consent to sign electronically (finish), delegating and declining.
import { approveSigning, declineSigning, delegateSigning, submitSigning } from '../api.js';
import { attempt, cancelButton, openDialog } from '../dialogs.js';
import { app, el } from '../dom.js';
import { returnToIntegrator, tellHost } from '../embedding.js';
import { fitTypedSignatures, goToNextField, renderFields, requiredCount } from '../fields.js';
import { closingAction, screenOf, show } from '../flow.js';
import { currentSession, state } from '../store.js';

/** @import { DialogHandle } from '../dialogs.js' */

/**
 * Draws the pages near the screen (documents.js, imported with the first drawing: the fields work
 * before it, and pdf.js after it, are here).
 */
function drawPages() {
  import('../documents.js').then(
    (documents) => documents.drawPages(),
    () => {
      document.body.dataset.pagesDrawn = 'true';
    },
  );
}

export function renderSigning() {
  const { t } = state;
  const session = currentSession();
  document.title = `${session.envelope.name} · ${t.brand}`;
  const progress = el('p', { id: 'progress', class: 'progress', role: 'status' });
  // An approver (issue 33) fills nothing in: it reads the documents and approves or rejects them.
  const approver = session.recipient.type === 'approver';
  const toolbar = approver
    ? el(
        'div',
        { class: 'toolbar', role: 'toolbar', 'aria-label': t.brand },
        el('button', { type: 'button', id: 'decline', class: 'secondary', onclick: () => openDecline(t.rejectTitle, t.reject) }, t.reject),
        el('button', { type: 'button', id: 'approve', class: 'primary', onclick: openApprove }, t.approve),
      )
    : el(
        'div',
        { class: 'toolbar', role: 'toolbar', 'aria-label': t.brand },
        el('button', { type: 'button', id: 'next-field', onclick: goToNextField }, t.nextField),
        session.recipient.type === 'delegator' ? el('button', { type: 'button', id: 'delegate', class: 'secondary', onclick: openDelegate }, t.delegate) : null,
        el('button', { type: 'button', id: 'decline', class: 'secondary', onclick: () => openDecline(t.declineTitle, t.declineConfirm) }, t.decline),
        el('button', { type: 'button', id: 'finish', class: 'primary', onclick: openFinish }, t.finish),
      );
  const documents = session.documents.map((document) =>
    el(
      'section',
      { class: 'document', 'aria-label': document.name },
      el('h2', {}, document.name),
      document.pages.map((page) => {
        const canvas = el('canvas', { 'aria-hidden': 'true' });
        const sheet = el(
          'div',
          { class: 'page', 'data-document': document.id, 'data-page': page.index, role: 'group', 'aria-label': t.page(page.index + 1, document.pageCount) },
          canvas,
          el('div', { class: 'overlays' }),
        );
        sheet.style.aspectRatio = `${page.width} / ${page.height}`;
        return sheet;
      }),
    ),
  );
  // The sender corrected the envelope while this page was open (what was typed is kept, fields.js).
  const changed = state.envelopeChanged ? el('p', { id: 'envelope-changed', class: 'notice', role: 'status' }, t.envelopeChanged) : null;
  // A signer at a trust service: what Finish will do, and why the last attempt did not sign.
  const trust = session.trustSignature;
  const trustNote = trust ? el('p', { id: 'trust-level', class: 'notice' }, trust.status === 'signing' ? t.trustSigning : t.trustLevelNote(trust.level)) : null;
  const trustFailed =
    trust?.status === 'failed' && trust.error
      ? el('p', { id: 'trust-failed', class: 'notice error', role: 'alert' }, t.trustFailedBanner(trust.error.reason, trust.error.providerSaid ?? null))
      : null;
  app.replaceChildren(
    el(
      'section',
      { class: 'summary' },
      el('h1', {}, session.envelope.name),
      el('p', { class: 'signer' }, (approver ? t.approvingAs : t.signingAs)(state.hostedSigner ?? session.signerName)),
      changed,
      trustFailed,
      trustNote,
      approver ? null : progress,
    ),
    toolbar,
    el('div', { class: 'documents' }, documents),
  );
  document.body.dataset.pagesDrawn = 'false';
  renderFields();
  drawPages();
}

/**
 * Finishing: with a required field still empty, says so and goes to it; otherwise asks for the
 * signer's consent to sign electronically, whose text is sent with the completion.
 */
function openFinish() {
  const { t } = state;
  const missing = currentSession().requiredFieldIds.length;
  if (missing > 0) {
    const status = document.getElementById('progress');
    if (status) status.textContent = `${t.progress(requiredCount().done, requiredCount().total)} · ${t.missing(missing)}`;
    goToNextField();
    return;
  }
  /** @type {DialogHandle} */
  let handle;
  const consent = t.consent;
  handle = openDialog(t.confirmTitle, el('p', { id: 'consent-text' }, consent), [
    cancelButton(() => handle),
    el(
      'button',
      {
        type: 'button',
        class: 'primary',
        id: 'confirm-signing',
        onclick: () =>
          attempt(handle, async () => {
            const session = await closingAction(() => submitSigning({ values: [], complete: true, consent }));
            // Advanced or qualified: the trust service signs, at its own page; this page comes back
            // when it is done (the service's callback brings the browser here) and shows the outcome.
            const authorizeUrl = session.trustSignature?.authorizeUrl;
            if (authorizeUrl) {
              app.replaceChildren(el('p', { id: 'trust-redirecting', class: 'notice', role: 'status' }, t.trustRedirecting));
              window.location.assign(authorizeUrl);
              return;
            }
            state.session = session;
            show(screenOf(session));
            if (!state.hostedSigner) tellHost('completed');
            returnToIntegrator('signing_complete');
          }),
      },
      t.confirm,
    ),
  ]);
}

/** An approver approves, with an optional comment; the screen then says where the quorum stands. */
function openApprove() {
  const { t } = state;
  const comment = el('textarea', { id: 'approve-comment', rows: 3, maxlength: 2000 });
  /** @type {DialogHandle} */
  let handle;
  handle = openDialog(t.approveTitle, el('div', {}, el('p', {}, t.approveText), el('label', { for: 'approve-comment' }, t.comment), comment), [
    cancelButton(() => handle),
    el(
      'button',
      {
        type: 'button',
        class: 'primary',
        id: 'confirm-approve',
        onclick: () =>
          attempt(handle, async () => {
            const session = await closingAction(() => approveSigning(comment.value.trim() === '' ? null : comment.value.trim()));
            state.session = session;
            show(screenOf(session));
            tellHost('completed');
            returnToIntegrator('signing_complete');
          }),
      },
      t.approveConfirm,
    ),
  ]);
  comment.focus();
}

/** A delegator hands the role to another person, who is invited; this link stops working. */
function openDelegate() {
  const { t } = state;
  const name = el('input', { id: 'delegate-name', type: 'text', maxlength: 200, autocomplete: 'off' });
  const email = el('input', { id: 'delegate-email', type: 'email', maxlength: 254, autocomplete: 'off' });
  /** @type {DialogHandle} */
  let handle;
  handle = openDialog(
    t.delegateTitle,
    el('div', {}, el('p', {}, t.delegateText), el('label', { for: 'delegate-name' }, t.delegateName), name, el('label', { for: 'delegate-email' }, t.delegateEmail), email),
    [
      cancelButton(() => handle),
      el(
        'button',
        {
          type: 'button',
          class: 'primary',
          id: 'confirm-delegate',
          onclick: () =>
            attempt(handle, async () => {
              if (name.value.trim() === '' || email.value.trim() === '') throw new Error(state.t.empty);
              await closingAction(() => delegateSigning({ name: name.value.trim(), email: email.value.trim(), locale: state.locale }));
              show('delegated');
              tellHost('delegated');
              returnToIntegrator('delegated');
            }),
        },
        t.delegateConfirm,
      ),
    ],
  );
  name.focus();
}

/**
 * Declining (an approver: rejecting) ends the envelope for everyone, with the signer's reason.
 * @param {string} title
 * @param {string} confirmLabel
 */
function openDecline(title, confirmLabel) {
  const { t } = state;
  const reason = el('textarea', { id: 'decline-reason', rows: 3, maxlength: 500, required: true });
  /** @type {DialogHandle} */
  let handle;
  handle = openDialog(
    title,
    el('div', {}, el('p', {}, state.session?.sender?.declineNotified ? t.declineText : t.declineTextNoMail), el('label', { for: 'decline-reason' }, t.reason), reason),
    [
      cancelButton(() => handle),
      el(
        'button',
        {
          type: 'button',
          class: 'danger',
          id: 'confirm-decline',
          onclick: () =>
            attempt(handle, async () => {
              if (reason.value.trim() === '') throw new Error(state.t.empty);
              await closingAction(() => declineSigning(reason.value.trim()));
              show('declined');
              if (!state.hostedSigner) tellHost('declined');
              returnToIntegrator('declined');
            }),
        },
        confirmLabel,
      ),
    ],
  );
  reason.focus();
}

/** A page drawn for one width is drawn again for another (a phone turned, a window resized). */
export function redrawOnResize() {
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let resizeTimer;
  let drawnWidth = window.innerWidth;
  window.addEventListener('resize', () => {
    if (state.screen === 'signing') fitTypedSignatures();
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => {
      if (state.screen !== 'signing' || window.innerWidth === drawnWidth) return;
      drawnWidth = window.innerWidth;
      drawPages();
    }, 200);
  });
}
