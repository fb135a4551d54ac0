// Which screen, and when: reading the session, choosing the screen it calls for, showing it,
// following the envelope live while a screen waits or signs, and the page's language.
import { ApiError, readSession } from './api.js';
import { localeSelect } from './dom.js';
import { returnToIntegrator, tellHost } from './embedding.js';
import { follow, stopFollowing } from './live.js';
import { pickLocaleOf, screenOf } from './page-logic.js';
import { state } from './store.js';
import { STRINGS } from './strings.js';

/** @import { Locale, Screen, Session } from './types.js' */

/** Waiting for one's turn, the live stream says when it comes; this slow look only covers a stream that could not be kept open. */
const FALLBACK_POLL_MS = 60_000;

/** Screens that follow the envelope live (a void, finalization or expiry shows at once). */
const LIVE_SCREENS = ['signing', 'not-your-turn', 'host', 'verify'];

/** @type {ReturnType<typeof setTimeout> | undefined} */
let pollTimer;

/**
 * Draws `state.screen`: set once by sign.js, the one module that knows every screen (a screen
 * that imported it would close an import circle, as every screen uses load and show).
 * @type {() => void}
 */
let renderScreen = () => {};

/** @param {() => void} renderer */
export function setScreenRenderer(renderer) {
  renderScreen = renderer;
}

/** Draws the current screen again (after a change of language or of the screen's own state). */
export function render() {
  renderScreen();
}

/** @param {Screen} screen */
function isLive(screen) {
  return LIVE_SCREENS.includes(screen);
}

/** @param {string | null} preferred */
export function pickLocale(preferred) {
  return pickLocaleOf(preferred, navigator.languages ?? [navigator.language]);
}

/** @param {Locale} next */
export function setLocale(next) {
  state.locale = next;
  state.t = STRINGS[next];
  document.documentElement.lang = next;
  localeSelect.value = next;
  /** @type {HTMLElement} */ (document.getElementById('locale-label')).textContent = state.t.language;
  /** @type {HTMLElement} */ (document.getElementById('brand')).textContent = state.session?.sender?.displayName ?? state.t.brand;
  render();
}

/**
 * The sending team's branding (team settings): its name in the bar, its logo (served by this
 * service), its accent colour and its footer line. Text goes in as text, never as markup; the
 * colour is a #rrggbb the settings checked, set through the CSSOM (CSP allows no inline style).
 * @param {Session} session
 */
function applyBranding(session) {
  const sender = session.sender;
  if (!sender) return;
  const brand = /** @type {HTMLElement} */ (document.getElementById('brand'));
  brand.textContent = sender.displayName ?? state.t.brand;
  if (sender.logoUrl && !document.getElementById('brand-logo')) {
    const logo = document.createElement('img');
    logo.id = 'brand-logo';
    logo.className = 'brand-logo';
    logo.alt = '';
    logo.src = sender.logoUrl;
    brand.before(logo);
  }
  if (sender.accentColor && /^#[0-9a-f]{6}$/i.test(sender.accentColor)) document.documentElement.style.setProperty('--accent', sender.accentColor);
  if (sender.footer && !document.getElementById('brand-footer')) {
    const footer = document.createElement('footer');
    footer.id = 'brand-footer';
    footer.className = 'brand-footer';
    footer.textContent = sender.footer;
    document.body.append(footer);
  }
}

// Which screen a session calls for (screenOf, needsCode) is page-logic.js's, unit-tested in Node.
export { needsCode, screenOf } from './page-logic.js';

/** Reads the session and shows the screen it calls for (the first read also picks the language). */
export async function load() {
  try {
    // The first load takes the read sign.js began; later ones (the live stream's events) read anew.
    const early = state.firstRead;
    state.firstRead = null;
    const session = (early && (await early)) || (await readSession());
    // A new revision (the live stream's envelope.corrected, or a refused action): the screen says so.
    if (state.session && session.envelope.revision !== state.session.envelope.revision) state.envelopeChanged = true;
    state.session = session;
    applyBranding(session);
    const first = state.screen === 'loading';
    // A language the integrator asked for (its signing URL's locale) wins over the agent's.
    if (first) setLocale(pickLocale(state.embedding.locale ?? session.locale));
    show(screenOf(session));
    if (first) tellHost('ready');
    if (isLive(state.screen)) watchEnvelope();
  } catch (error) {
    show(errorScreen(error));
  }
}

/**
 * The screen a failure to read or act calls for.
 * @param {unknown} error
 * @returns {Screen}
 */
export function errorScreen(error) {
  if (error instanceof ApiError) {
    if (error.code === 'Envelope.Closed') return /** @type {Record<string, Screen>} */ ({ finalized: 'finalized', voided: 'voided', expired: 'expired' })[error.context.status] ?? 'voided';
    if (error.code === 'Signing.RoleCompleted') return 'role-completed';
    if (error.code === 'Signing.InvalidToken' || error.code === 'Signing.MissingToken') return 'invalid';
    if (error.code === 'Signing.SessionExpired') return 'session-expired';
  }
  return 'error';
}

/**
 * The signer's own last action (complete, decline, delegate): the live stream is ended first, so
 * the event this very action causes (say, envelope.voided by a decline) does not replace the
 * screen that answers it; if the action fails, watching resumes.
 * @template T
 * @param {() => Promise<T>} action
 * @returns {Promise<T>}
 */
export async function closingAction(action) {
  stopFollowing();
  try {
    return await action();
  } catch (error) {
    watchEnvelope();
    throw error;
  }
}

/** @param {Screen} next */
export function show(next) {
  // An in-person signer who is done (or declined) hands the device back to the host.
  state.screen = state.hostedSigner && ['done', 'finalized', 'declined', 'voided'].includes(next) ? 'hand-back' : next;
  clearTimeout(pollTimer);
  if (!isLive(state.screen)) stopFollowing();
  // Embedded: the host page hears of a page that cannot go on; an ended session goes back to it.
  if (['error', 'invalid', 'used', 'link-expired', 'session-expired'].includes(state.screen)) tellHost('error');
  if (state.screen === 'session-expired') returnToIntegrator('session_expired');
  if (state.screen === 'not-your-turn') pollTimer = setTimeout(load, FALLBACK_POLL_MS);
  render();
}

/**
 * While a session is open, the envelope's status changes arrive live (live.js). When the
 * envelope closes (voided by the sender, finalized, expired) the page shows it at once.
 */
function watchEnvelope() {
  follow({
    // Only a page still waiting or signing looks again; a screen the signer reached stays.
    onEvent: () => {
      if (isLive(state.screen)) void load();
    },
    // The stream ended without the page asking (a restart, a proxy's timeout): look again soon,
    // which also opens a new stream.
    onEnd: () => {
      if (isLive(state.screen)) {
        clearTimeout(pollTimer);
        pollTimer = setTimeout(load, 5000);
      }
    },
  });
}
