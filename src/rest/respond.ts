import { type ResponseClass, successResponse } from '../http/contract-body.ts';

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

/**
 * A success answer whose payload is JSON text already written as `JSON.stringify` would write it
 * (shared/canonical-json.ts): spliced into the contract's body, never parsed. The REST envelope
 * read answers with it (docs/decisions.md, "Reads straight on pg").
 */
export class RestJsonReply {
  readonly headers: Record<string, string>;
  readonly payloadJson: string;
  constructor(headers: Record<string, string>, payloadJson: string) {
    this.headers = headers;
    this.payloadJson = payloadJson;
  }
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
