import type { ZodType } from 'zod';
import type { RequestContext } from '../context.ts';
import type { BodySource } from '../http/body.ts';
import type { RestJsonReply, RestReply } from './respond.ts';

/**
 * The request as a REST handler sees it: method, headers and body stream (for readJsonObject).
 * Served straight from Node (rest/serve.ts), it is a thin view of the Node request, not a
 * WHATWG `Request`; the body stream is made only when read.
 */
export type RestHttpRequest = BodySource & { method: string };

export type RestRequest = {
  request: RestHttpRequest;
  url: URL;
  params: Record<string, string>;
  context: RequestContext;
  /** The Node request, when served by the Node HTTP server: uploads stream from it directly. */
  nodeRequest: import('node:http').IncomingMessage | undefined;
};

/** A handler returns the success payload, a reply with its own status or headers, a payload already as JSON text, or a ready Response for binary downloads. */
export type RestHandler = (request: RestRequest) => Promise<Record<string, unknown> | RestReply | RestJsonReply | Response>;

/**
 * What the OpenAPI document (rest/openapi.ts) says of a route. It sits beside the handler and the
 * type requires it, so a route cannot be added without being documented. Request bodies are the
 * domain's own zod schemas, converted, never a second description written by hand.
 */
export type RouteDoc = {
  summary: string;
  /** A longer explanation, Markdown. */
  description?: string;
  /** The JSON body: the schema the domain validates it with; `wrap` when the body nests it under one key (`{ recipient: {...} }`). */
  body?: { schema: ZodType; wrap?: string; example: unknown; required?: boolean };
  /** A multipart upload: the file part's name, what it holds (default: the PDF), and the other parts' schema. With `body` too, either is accepted. */
  multipart?: { filePart: string; fields: ZodType; fileDescription?: string };
  /** Query parameters. */
  query?: { name: string; description: string; schema: Record<string, unknown> }[];
  /** The success payload's JSON Schema, where the document describes it (`{ version, success, payload }` around it). */
  payload?: Record<string, unknown>;
  /** Errors this route answers beyond those every route of its kind does (see openapi.ts). */
  errors?: string[];
  /** Answered without an API key. */
  isPublic?: boolean;
  /** The success answer's type when it is not the `{ version, success, payload }` body (a page, a file, the OpenAPI document). */
  /** `signer-file`: a signer's attachment, streamed as the type its bytes are (PDF, PNG or JPEG). */
  produces?: 'text/html' | 'application/json' | 'application/pdf' | 'application/zip' | 'signer-file';
  /** Honours `Idempotency-Key`. */
  isIdempotent?: boolean;
};

export type RestRoute = { method: string; path: string; doc: RouteDoc; handler: RestHandler };

type CompiledRoute = RestRoute & { segments: string[] };

export type RouteMatch = { kind: 'found'; route: RestRoute; params: Record<string, string> } | { kind: 'method-not-allowed'; allowed: string[] } | { kind: 'not-found' };

/**
 * The REST route table: paths like `/envelopes/:envelopeId/documents`, matched segment by
 * segment. Literal segments win over parameters, so `/envelopes/jumpstart/:templateId` is never
 * read as an envelope id.
 */
export function createRouter(routes: RestRoute[]) {
  const compiled: CompiledRoute[] = routes
    .map((route) => ({ ...route, segments: route.path.split('/').filter(Boolean) }))
    // More literal segments first.
    .sort((a, b) => literalCount(b.segments) - literalCount(a.segments));
  // Only routes of a path's segment count can match it: looked at alone, in the same order.
  const bySegmentCount = new Map<number, CompiledRoute[]>();
  for (const route of compiled) bySegmentCount.set(route.segments.length, [...(bySegmentCount.get(route.segments.length) ?? []), route]);

  return {
    match(method: string, path: string): RouteMatch {
      const parts = path.split('/').filter(Boolean);
      const allowed: string[] = [];
      for (const route of bySegmentCount.get(parts.length) ?? []) {
        const params = matchSegments(route.segments, parts);
        if (!params) continue;
        if (route.method === method) return { kind: 'found', route, params };
        allowed.push(route.method);
      }
      return allowed.length > 0 ? { kind: 'method-not-allowed', allowed } : { kind: 'not-found' };
    },
  };
}

function literalCount(segments: string[]): number {
  return segments.filter((segment) => !segment.startsWith(':')).length;
}

function matchSegments(segments: string[], parts: string[]): Record<string, string> | null {
  if (segments.length !== parts.length) return null;
  const params: Record<string, string> = {};
  for (let index = 0; index < segments.length; index += 1) {
    const segment = segments[index];
    const part = parts[index];
    if (segment.startsWith(':')) {
      try {
        params[segment.slice(1)] = decodeURIComponent(part);
      } catch {
        return null;
      }
    } else if (segment !== part) {
      return null;
    }
  }
  return params;
}
