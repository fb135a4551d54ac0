import { httpStatusForError, type DomainError } from '../shared/errors.ts';

export const REST_VERSION = '1';

const jsonHeaders = { 'content-type': 'application/json; charset=utf-8' };

/**
 * The Response class answers are built with. The plugin passes yoga's (`fetchAPI.Response`), which
 * its Node adapter writes out directly; the platform's own costs a stream per answer.
 */
type ResponseClass = typeof Response;

/** A handler's answer that needs more than a payload: its own status or headers. */
export class RestReply {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly payload: Record<string, unknown> | null;
  constructor(status: number, headers: Record<string, string>, payload: Record<string, unknown> | null) {
    this.status = status;
    this.headers = headers;
    this.payload = payload;
  }
}

/** `{ version, success: true, payload }` with HTTP 200 (contract §4). */
export function successResponse(payload: Record<string, unknown>, headers: Record<string, string> = {}, ResponseImpl: ResponseClass = Response): Response {
  return new ResponseImpl(JSON.stringify({ version: REST_VERSION, success: true, payload }), { status: 200, headers: { ...jsonHeaders, ...headers } });
}

/** The Response of a handler's `RestReply`. */
export function replyResponse(reply: RestReply, ResponseImpl: ResponseClass = Response): Response {
  if (reply.payload === null) return new ResponseImpl(null, { status: reply.status, headers: reply.headers });
  return successResponse(reply.payload, reply.headers, ResponseImpl);
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
export function notModifiedReply(etag: string): RestReply {
  return new RestReply(304, { etag, 'cache-control': 'private, no-cache' }, null);
}

/**
 * `{ version, success: false, error: { name, description, context } }`. The status comes from the
 * one error table, unless the operator asked for the replaced service's "always 200" behaviour;
 * the body is identical either way. `context.requestId` ties the answer to the log lines.
 */
export function errorResponse(
  error: DomainError,
  { requestId, alwaysHttp200 }: { requestId: string; alwaysHttp200: boolean },
  ResponseImpl: ResponseClass = Response,
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
  return new ResponseImpl(JSON.stringify(body), { status, headers });
}
