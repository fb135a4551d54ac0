// Signing in person: the host's screen (its in-person signers, each handed the device in turn)
// and the hand-back screen between two signers.
import { startHostedSigning } from '../api.js';
import { app, el } from '../dom.js';
import { errorScreen, load, show } from '../flow.js';
import { currentSession, state } from '../store.js';

/** @import { HostedSigner } from '../types.js' */

/**
 * Who the host hands the device to: the person by name (the host may be hosting several people
 * in one role type), with the role beside it; the role alone when the sender named nobody.
 * @param {HostedSigner} signer
 */
function nameOf(signer) {
  return signer.personName ? state.t.personInRole(signer.personName, signer.roleName) : signer.roleName;
}

/** The host's page: the hosted signers whose turn it is, each handed the device in turn. */
export function renderHost() {
  const { t } = state;
  const session = currentSession();
  const waiting = session.hostedSigners.filter((signer) => signer.activatedAt && !signer.completedAt);
  const done = session.hostedSigners.filter((signer) => signer.completedAt);
  app.replaceChildren(
    el(
      'section',
      { class: 'state state-host', 'aria-labelledby': 'state-title' },
      el('h1', { id: 'state-title' }, t.hostTitle),
      el('p', { class: 'envelope-name' }, session.envelope.name),
      el('p', {}, t.hostText),
      el(
        'ul',
        { class: 'hosted' },
        waiting.map((signer) => el('li', {}, el('button', { type: 'button', class: 'primary', 'data-hosted': signer.id, onclick: () => handOver(signer) }, t.handTo(nameOf(signer))))),
        done.map((signer) => el('li', { class: 'hosted-done' }, t.hostedDone(nameOf(signer)))),
      ),
      waiting.length === 0 && done.length < session.hostedSigners.length ? el('p', {}, t.notYourTurnText) : null,
    ),
  );
  document.title = t.hostTitle;
  app.focus();
}

/**
 * The page acts with the signer's own token until the signer is done.
 * @param {HostedSigner} signer
 */
async function handOver(signer) {
  try {
    const hosted = await startHostedSigning(signer.id);
    state.token = hosted.token;
    state.hostedSigner = signer.personName ?? signer.roleName;
    await load();
  } catch (error) {
    show(errorScreen(error));
  }
}

/** Between two signers: the device goes back to the host before anyone sees the next session. */
export function renderHandBack() {
  const { t } = state;
  app.replaceChildren(
    el(
      'section',
      { class: 'state state-hand-back', 'aria-labelledby': 'state-title' },
      el('h1', { id: 'state-title' }, t.handBackTitle),
      el('p', {}, t.handBackText(state.hostedSigner ?? '')),
      el('button', { type: 'button', class: 'primary', id: 'back-to-host', onclick: backToHost }, t.backToHost),
    ),
  );
  document.title = t.handBackTitle;
  app.focus();
}

async function backToHost() {
  state.token = state.linkToken;
  state.hostedSigner = null;
  await load();
}
