import { httpStatusForError, type DomainError } from '../shared/errors.ts';

export const REST_VERSION = '1';

const jsonHeaders = { 'content-type': 'application/json; charset=utf-8' };

/** `{ version, success: true, payload }` with HTTP 200 (contract §4). */
export function successResponse(payload: Record<string, unknown>, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify({ version: REST_VERSION, success: true, payload }), { status: 200, headers: { ...jsonHeaders, ...headers } });
}

/**
 * Whether an `If-None-Match` header names the current entity tag (RFC 9110 §13.1.2: weak
 * comparison, a list of tags, or `*`).
 */
export function ifNoneMatchHits(header: string | null, etag: string): boolean {
  if (header === null) return false;
  const wanted = etag.replace(/^W\//, '');
  return header.split(',').some((candidate) => {
    const tag = candidate.trim();
    return tag === '*' || tag.replace(/^W\//, '') === wanted;
  });
}

/** 304: the caller's copy is current. No body; the tag and caching policy are repeated. */
export function notModifiedResponse(etag: string): Response {
  return new Response(null, { status: 304, headers: { etag, 'cache-control': 'private, no-cache' } });
}

/**
 * `{ version, success: false, error: { name, description, context } }`. The status comes from the
 * one error table, unless the operator asked for the replaced service's "always 200" behaviour;
 * the body is identical either way. `context.requestId` ties the answer to the log lines.
 */
export function errorResponse(
  error: DomainError,
  { requestId, alwaysHttp200 }: { requestId: string; alwaysHttp200: boolean },
): Response {
  const status = alwaysHttp200 ? 200 : httpStatusForError(error.name);
  const body = {
    version: REST_VERSION,
    success: false,
    error: { name: error.name, description: error.description, context: { ...error.context, requestId } },
  };
  const headers: Record<string, string> = { ...jsonHeaders };
  const retryAfter = error.context.retryAfterSeconds;
  if (typeof retryAfter === 'number') headers['retry-after'] = String(retryAfter);
  return new Response(JSON.stringify(body), { status, headers });
}
