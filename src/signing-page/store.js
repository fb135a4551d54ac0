// The page's shared state: what more than one module reads or changes. Each module keeps what
// only it needs to itself (the code step's countdown in screens/verify.js, the drawn PDFs in
// documents.js, the live stream in live.js, the timers in flow.js).
import { STRINGS } from './strings.js';
/** @import { Locale, Screen, Session } from './types.js' */
/** @import { Strings } from './strings.js' */

const linkToken = decodeURIComponent(location.pathname.split('/')[2] ?? '');

/**
 * A `<meta name="signing-…">` the service put in this page (embedded signing, issue 21), read once
 * and removed, so the page's DOM keeps no credential.
 * @param {string} name
 */
function meta(name) {
  const element = document.querySelector(`meta[name="signing-${name}"]`);
  const value = element?.getAttribute('content') ?? null;
  element?.remove();
  return value || null;
}

/** Where this tab keeps the session a one-use signing URL opened, so a reload in the same tab resumes it. */
const SESSION_KEY = `envelope-signing:${linkToken}`;

/**
 * Keeps the session credential for this browsing context: sessionStorage, or, where the browser
 * denies storage to a third-party frame (third-party cookies blocked), the frame's own
 * `window.name`, which survives a reload of this frame and no other context can read (embedding.js
 * clears it before leaving for the return URL).
 * @param {string} token
 */
function keep(token) {
  try {
    sessionStorage.setItem(SESSION_KEY, token);
    return;
  } catch {
    window.name = `${SESSION_KEY}=${token}`;
  }
}

function kept() {
  try {
    const stored = sessionStorage.getItem(SESSION_KEY);
    if (stored) return stored;
  } catch {
    // Storage denied: the frame's name below.
  }
  return window.name.startsWith(`${SESSION_KEY}=`) ? window.name.slice(SESSION_KEY.length + 1) : null;
}

/**
 * A one-use signing URL (issue 21): the first open hands the page its session credential in the
 * answer; it is kept by this tab or frame only (never in a URL, never sent to another origin), so
 * reloading the page here resumes the session while a second open anywhere else gets the "link
 * used" page.
 */
function embeddedSession() {
  const given = meta('session');
  const link = /** @type {'used' | 'expired' | 'unknown' | null} */ (meta('link'));
  if (given) {
    keep(given);
    return { token: given, gone: null };
  }
  const stored = link === 'used' ? kept() : null;
  if (stored) return { token: stored, gone: null };
  return { token: null, gone: link };
}

const embedded = embeddedSession();

export const state = {
  /** The token in this page's URL. */
  linkToken,
  /** The token the page acts with: the link's (or its session's), or a hosted signer's while a host hands the device over. */
  token: embedded.token ?? linkToken,
  /** A one-use signing URL that cannot be opened here: used (and no session in this tab), expired, unknown. */
  linkGone: embedded.gone,
  /** Embedded signing: the origin of the page that frames this one (messages go there only), where to go when done, the language asked for. */
  embedding: { frameOrigin: meta('frame-origin'), returnUrl: meta('return-url'), locale: meta('locale') },
  /** While an in-person signer signs on the host's device: that signer's name (the role's when nobody is named). */
  hostedSigner: /** @type {string | null} */ (null),
  /** The session last read or answered by the service (null until the first read). */
  session: /** @type {Session | null} */ (null),
  /** What is on screen. */
  screen: /** @type {Screen} */ ('loading'),
  locale: /** @type {Locale} */ ('en-US'),
  /** The strings of `locale`. */
  t: /** @type {Strings} */ (STRINGS['en-US']),
};

/**
 * The session, for the screens that only show once one was read (all but loading, invalid and error).
 * @returns {Session}
 */
export function currentSession() {
  return /** @type {Session} */ (state.session);
}
