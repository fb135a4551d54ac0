/**
 * The bearer credentials this service issues travel in URLs and headers, and none may reach a log
 * or a failure record: a signing token copied from a log completes the signer's role, a final-copy
 * link hands out the sealed documents for 30 days. `redactSecrets` knows every form and replaces
 * the secret part with `[redacted]`, keeping the rest readable (`GET /sign/[redacted]`). The
 * logger runs it over every line it writes (shared/logger.ts), whoever logs (the request log,
 * errors with their stacks, the outbox worker, the mail and SMS file sinks, yoga); the request log
 * and the outbox's `last_error` also call it themselves. Forms:
 *
 * - signing page links, `/sign/<token>` (workflow.ts `signingLink`);
 * - final-copy links, `/final-copy/<payload>.<mac>` (the completion mail's 30-day link, the page's
 *   5-minute one: final-copy-link.ts);
 * - signed download URLs, `/downloads/<payload>.<mac>` (`downloadUrl`, `auditLogPdfUrl`: download-url.ts);
 * - the prefixed secrets wherever they appear, in a header value (`X-Signing-Token`,
 *   `X-Service-Api-Key`) or in text: signing tokens `sgn_…`, one-use signing URLs `sgu_…`, API keys `esk_…`, webhook secrets `whsec_…`;
 * - query parameters named for a credential (`token`, `access_token`, `signature`, `sig`,
 *   `X-Amz-Signature`, `key`, `api_key`, `code`, `secret`, `password`, …), as presigned and
 *   third-party URLs carry them;
 * - `Authorization` values (`Bearer …`, `Basic …`), credential headers in a logged header object
 *   (`authorization`, `cookie`, `set-cookie`, `x-service-api-key`, `x-signing-token`), and the
 *   `user:password@` of a URL (`SMTP_URL`).
 */

const REDACTED = '[redacted]';

/** Path segments that are themselves credentials: what follows them up to the next `/`, `?`, `#`, quote or space. */
const CREDENTIAL_PATH = /\/(sign|final-copy|downloads)\/(?!\[redacted\])[^/?#\s"'\\<>]+/g;

/** The service's prefixed secrets (shared/ids.ts `newSecret`): 43 base64url characters after the prefix. */
const PREFIXED_SECRET = /\b(sgn|sgu|esk|whsec)_(?!\[redacted\])[A-Za-z0-9_-]+/g;

/**
 * A query parameter whose name says it carries a credential. The name's parts around the word are
 * bounded, so that a long run of text cannot make the match quadratic (a request path is logged).
 */
const CREDENTIAL_PARAMETER =
  /([?&;][\w.[\]-]{0,40}?(?:token|signature|sig|secret|password|passwd|pwd|api[_-]?key|apikey|key|code|auth|credential|jwt|session)[\w.[\]-]{0,40}=)(?!\[redacted\])[^&#\s"'\\<>]+/gi;

/** An Authorization scheme and its credentials (long enough not to be a word of a sentence). */
const AUTHORIZATION_VALUE = /\b(Bearer|Basic)\s+(?!\[redacted\])[A-Za-z0-9._~+/=-]{8,}/gi;

/** A credential header in a logged header object (JSON or `name: value` text). */
const CREDENTIAL_HEADER = /(["']?\b(?:authorization|proxy-authorization|cookie|set-cookie|x-service-api-key|x-signing-token)["']?\s*[:=]\s*["']?)(?!\[redacted\])[^"'\r\n,}]+/gi;

/** `scheme://user:password@` (bounded, as above). */
const URL_USERINFO = /\b([a-z][a-z0-9+.-]{0,30}:\/\/)(?!\[redacted\])[^/\s@"'\\<>]{1,512}@/gi;

/** `text` with every bearer credential the service knows of replaced by `[redacted]`. */
export function redactSecrets(text: string): string {
  return text
    .replace(CREDENTIAL_PATH, `/$1/${REDACTED}`)
    .replace(PREFIXED_SECRET, `$1_${REDACTED}`)
    .replace(CREDENTIAL_PARAMETER, `$1${REDACTED}`)
    .replace(AUTHORIZATION_VALUE, `$1 ${REDACTED}`)
    .replace(CREDENTIAL_HEADER, `$1${REDACTED}`)
    .replace(URL_USERINFO, `$1${REDACTED}@`);
}
