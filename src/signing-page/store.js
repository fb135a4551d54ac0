// The page's shared state: what more than one module reads or changes. Each module keeps what
// only it needs to itself (the code step's countdown in screens/verify.js, the drawn PDFs in
// documents.js, the live stream in live.js, the timers in flow.js).
import { STRINGS } from './strings.js';
/** @import { Locale, Screen, Session } from './types.js' */
/** @import { Strings } from './strings.js' */

const linkToken = decodeURIComponent(location.pathname.split('/')[2] ?? '');

export const state = {
  /** The token in this page's URL. */
  linkToken,
  /** The token the page acts with: the link's, or a hosted signer's while a host hands the device over. */
  token: linkToken,
  /** While an in-person signer signs on the host's device: that signer's role name. */
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
