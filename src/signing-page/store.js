// The page's shared state: what more than one module reads or changes. Each module keeps what
// only it needs to itself (the code step's countdown in screens/verify.js, the drawn PDFs in
// documents.js, the live stream in live.js, the timers in flow.js). What the page decides from
// what it reads here is page-logic.js's, which reads no browser global (and so runs in Node too).
import { embeddedSessionOf, linkTokenOf, openedSessionOf, sessionKeyOf, tokenInWindowName, windowNameFor } from './page-logic.js';
import { STRINGS } from './strings.js';

/** @import { Locale, Screen, Session } from './types.js' */
/** @import { Strings } from './strings.js' */

const linkToken = linkTokenOf(location.pathname);

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
const SESSION_KEY = sessionKeyOf(linkToken);

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
    window.name = windowNameFor(SESSION_KEY, token);
  }
}

function kept() {
  try {
    const stored = sessionStorage.getItem(SESSION_KEY);
    if (stored) return stored;
  } catch {
    // Storage denied: the frame's name below.
  }
  return tokenInWindowName(window.name, SESSION_KEY);
}

/**
 * A one-use signing URL (issue 21): its page is served without consuming it (`link` is `open`);
 * this script, once it runs, opens it (openSigningUrlSession) and gets the session credential in
 * the answer. It is kept by this tab or frame only (never in a URL, never sent to another origin),
 * so reloading the page here resumes the session while a second open anywhere else gets the "link
 * used" page.
 */
const embedded = embeddedSessionOf(meta('link'), kept);

export const state = {
  /** The token in this page's URL. */
  linkToken,
  /** The token the page acts with: the link's (or its session's), or a hosted signer's while a host hands the device over. */
  token: embedded.token ?? linkToken,
  /** A one-use signing URL that cannot be opened here: used (and no session in this tab), expired, unknown. */
  linkGone: /** @type {'used' | 'expired' | 'unknown' | null} */ (embedded.gone),
  /** Embedded signing: the origin of the page that frames this one (messages go there only), where to go when done, the language asked for. */
  embedding: { frameOrigin: meta('frame-origin'), returnUrl: meta('return-url'), locale: meta('locale') },
  /** While an in-person signer signs on the host's device: that signer's name (the role's when nobody is named). */
  hostedSigner: /** @type {string | null} */ (null),
  /** The opening of a one-use signing URL, begun by sign.js (nothing to open for an invitation link). */
  opening: /** @type {Promise<void> | null} */ (null),
  /**
   * The session's first read, begun by sign.js before the screens' modules are in (null once
   * taken by flow.js's load, or when the link opened no session): on a slow line it saves a round trip.
   */
  firstRead: /** @type {Promise<Session | null> | null} */ (null),
  /** The session last read or answered by the service (null until the first read). */
  session: /** @type {Session | null} */ (null),
  /**
   * What the signer gave that the service has not taken yet, by field id: kept across a reload
   * when the sender corrected the envelope meanwhile (fields.js), so nothing typed is lost.
   */
  unsaved: /** @type {Map<string, import('./types.js').FieldValue>} */ (new Map()),
  /** The sender corrected the envelope while the page was open: the signing screen says so. */
  envelopeChanged: false,
  /** What is on screen. */
  screen: /** @type {Screen} */ ('loading'),
  locale: /** @type {Locale} */ ('en-US'),
  /** The strings of `locale`. */
  t: /** @type {Strings} */ (STRINGS['en-US']),
};

/**
 * Opens the signing URL this page was served for, when it is unopened: the page runs, so the
 * browser showed it (a frame it refused never gets here, and the URL stays usable). Consuming it
 * answers the session credential, kept for this tab; a URL another open took meanwhile says why it
 * no longer opens (`state.linkGone`). Fails (the page shows its error) when the service does not answer.
 */
export async function openSigningUrlSession() {
  if (!embedded.unopened) return;
  const response = await fetch(location.pathname, { method: 'POST', headers: { accept: 'application/json' }, credentials: 'same-origin' });
  const opened = openedSessionOf(response.ok, await response.json().catch(() => ({})));
  if (opened && 'sessionToken' in opened) {
    keep(opened.sessionToken);
    state.token = opened.sessionToken;
    return;
  }
  if (opened) {
    state.linkGone = opened.gone;
    return;
  }
  throw new Error(`the signing URL could not be opened (${response.status})`);
}

/**
 * The session, for the screens that only show once one was read (all but loading, invalid and error).
 * @returns {Session}
 */
export function currentSession() {
  return /** @type {Session} */ (state.session);
}
