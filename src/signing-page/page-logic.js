// The page's pure logic: what the page decides from what it was given (its path, its meta tags,
// what this tab kept, the session the service answered, the browser's languages), with no DOM,
// no `location`, no storage and no network. A module of its own so that it is importable in Node
// and unit-tested there (test/signing-page-logic.test.ts); store.js, flow.js and fields.js read the
// browser and call it. Imports only strings.js (data).
import { LOCALES } from './strings.js';
/** @import { Field, Locale, Screen, Session } from './types.js' */

/**
 * The signing link's token, from the page's path (`/sign/{token}`); empty when there is none.
 * @param {string} pathname
 */
export function linkTokenOf(pathname) {
  return decodeURIComponent(pathname.split('/')[2] ?? '');
}

/**
 * Where a tab keeps the session a one-use signing URL opened, for this link.
 * @param {string} linkToken
 */
export function sessionKeyOf(linkToken) {
  return `envelope-signing:${linkToken}`;
}

/**
 * The frame's `window.name` that keeps `token` under `key` (storage denied to a third-party frame).
 * @param {string} key
 * @param {string} token
 */
export function windowNameFor(key, token) {
  return `${key}=${token}`;
}

/**
 * The token a frame's `window.name` keeps under `key`, or null (a name set by anything else).
 * @param {string} windowName
 * @param {string} key
 */
export function tokenInWindowName(windowName, key) {
  const token = windowName.startsWith(`${key}=`) ? windowName.slice(key.length + 1) : '';
  return token || null;
}

/**
 * What this page acts with when it was served for a one-use signing URL (issue 21), from the
 * `signing-link` meta tag and what this tab kept: an unopened URL is opened by the page
 * (`unopened`); a used one resumes the session this tab kept, or says it is gone; an expired or
 * unknown one is gone. A page served for an ordinary signing link (no meta tag) acts with its link.
 * @param {string | null} link the meta tag's value
 * @param {() => string | null} kept what this tab kept (read only for a used URL)
 * @returns {{ token: string | null, gone: 'used' | 'expired' | 'unknown' | null, unopened: boolean }}
 */
export function embeddedSessionOf(link, kept) {
  if (link === 'open') return { token: null, gone: null, unopened: true };
  const stored = link === 'used' ? kept() : null;
  if (stored) return { token: stored, gone: null, unopened: false };
  const gone = link === 'used' || link === 'expired' || link === 'unknown' ? link : null;
  return { token: null, gone, unopened: false };
}

/**
 * What opening a one-use signing URL answered: the session credential, or why the URL no longer
 * opens, or null for anything else (the page shows its error).
 * @param {boolean} ok
 * @param {unknown} body
 * @returns {{ sessionToken: string } | { gone: 'used' | 'expired' | 'unknown' } | null}
 */
export function openedSessionOf(ok, body) {
  const answer = /** @type {{ sessionToken?: unknown, link?: unknown }} */ (body ?? {});
  if (ok && typeof answer.sessionToken === 'string') return { sessionToken: answer.sessionToken };
  if (answer.link === 'used' || answer.link === 'expired' || answer.link === 'unknown') return { gone: answer.link };
  return null;
}

/**
 * The page's language: the one asked for (embedded signing) when the page speaks it, else the
 * first of the browser's languages it speaks (by language when the region differs), else en-US.
 * @param {string | null} preferred
 * @param {readonly string[]} languages
 * @returns {Locale}
 */
export function pickLocaleOf(preferred, languages) {
  if (preferred && isLocale(preferred)) return preferred;
  for (const language of languages) {
    const match = LOCALES.find((candidate) => candidate.toLowerCase() === language.toLowerCase() || candidate.slice(0, 2) === language.slice(0, 2).toLowerCase());
    if (match) return match;
  }
  return 'en-US';
}

/**
 * @param {string} value
 * @returns {value is Locale}
 */
export function isLocale(value) {
  return /** @type {string[]} */ (LOCALES).includes(value);
}

/**
 * Whether the one-time code step stands before this recipient's screen.
 * @param {Session} current
 */
export function needsCode(current) {
  return Boolean(current.otp?.required && !current.otp.verified && current.recipient.activatedAt);
}

/**
 * The screen a session calls for: a closed envelope or a finished role first, then the host's,
 * then whose turn it is, with the code step before acting.
 * @param {Session} current
 * @returns {Screen}
 */
export function screenOf(current) {
  if (current.recipient.declinedAt) return 'declined';
  if (current.envelope.status === 'voided') return 'voided';
  if (current.envelope.status === 'finalized') return 'finalized';
  if (current.isExpired) return 'expired';
  // An approver who approved has signed nothing: its screen says where the quorum stands.
  if (current.approval?.approvedByMe) return 'approved';
  if (current.recipient.completedAt) return 'done';
  if (current.recipient.type === 'host') return needsCode(current) ? 'verify' : 'host';
  if (!current.isMyTurn) return 'not-your-turn';
  return needsCode(current) ? 'verify' : 'signing';
}

/** Types that hold no value the signer gives (the service fills them, or they are computed). */
export const NOT_GIVEN = new Set(['date_signed', 'full_name', 'email', 'formula']);

/**
 * The session's fields in reading order: by the first place each appears (document, page, top, left).
 * @param {Pick<Session, 'documents' | 'fields'>} session
 * @returns {Field[]}
 */
export function fieldsInOrder(session) {
  const documentOrder = new Map(session.documents.map((document, index) => [document.id, index]));
  /**
   * @param {Field} field
   * @returns {number[]}
   */
  const first = (field) => {
    const order = (/** @type {string} */ documentId) => /** @type {number} */ (documentOrder.get(documentId));
    const view = [...field.views].sort((a, b) => order(a.documentId) - order(b.documentId) || a.page - b.page || a.location.y - b.location.y)[0];
    return view ? [order(view.documentId), view.page, view.location.y, view.location.x] : [Infinity, 0, 0, 0];
  };
  return [...session.fields].sort((a, b) => {
    const [x, y] = [first(a), first(b)];
    for (let index = 0; index < x.length; index += 1) if (x[index] !== y[index]) return x[index] - y[index];
    return 0;
  });
}

/**
 * The fields shown now, in reading order: those a condition hides left out, formulas with their
 * live result. `rules` is field-rules.js's `resolveFields` over this signer's values and earlier
 * signers' (fields.js computes it; the page serves that file from the field domain).
 * @param {Pick<Session, 'documents' | 'fields'>} session
 * @param {Map<string, { visible: boolean, value?: unknown }>} rules
 * @returns {Field[]}
 */
export function shownFieldsOf(session, rules) {
  return fieldsInOrder(session)
    .filter((field) => rules.get(field.identifier)?.visible !== false)
    .map((field) => (field.type === 'formula' ? /** @type {Field} */ ({ ...field, value: rules.get(field.identifier)?.value ?? null }) : field));
}

/**
 * How many of the required fields the signer fills have a value, of how many.
 * @param {Field[]} shown
 */
export function requiredCountOf(shown) {
  const required = shown.filter((field) => field.required && !field.readonly && !NOT_GIVEN.has(field.type));
  return { done: required.filter((field) => field.value !== null).length, total: required.length };
}

/**
 * The field to fill next: the first empty required one, else the first empty one, else the first
 * the signer can change at all; undefined when there is none.
 * @param {Field[]} shown
 * @returns {Field | undefined}
 */
export function nextFieldOf(shown) {
  const open = shown.filter((field) => !field.readonly && !NOT_GIVEN.has(field.type));
  return open.find((field) => field.required && field.value === null) ?? open.find((field) => field.value === null) ?? open[0];
}
