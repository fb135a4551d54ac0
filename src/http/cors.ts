/**
 * Cross-origin headers as graphql-yoga's default CORS handling gives them (every origin allowed,
 * credentials included), for the answers served beside yoga (the REST face, health): the same
 * browser-facing behaviour on every path, whichever part of the server answers.
 */

/** The headers for a request with an `Origin` (none without one). */
export function corsHeaders(header: (name: string) => string | undefined): Record<string, string> | undefined {
  const origin = header('origin');
  if (origin === undefined) return undefined;
  const headers: Record<string, string> = { 'access-control-allow-origin': origin, vary: 'Origin' };
  const method = header('access-control-request-method');
  if (method) headers['access-control-allow-methods'] = method;
  const requested = header('access-control-request-headers');
  if (requested) {
    headers['access-control-allow-headers'] = requested;
    headers.vary += ', Access-Control-Request-Headers';
  }
  headers['access-control-allow-credentials'] = 'true';
  return headers;
}

/** A preflight (`OPTIONS`) is answered 204 with an empty body before any route is looked at. */
export const PREFLIGHT_HEADERS = { 'content-length': '0' };
