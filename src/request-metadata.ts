import type { IncomingMessage } from 'node:http';
import { randomUUID } from 'node:crypto';
import type { RequestMetadata } from './context.ts';

const metadataByRequest = new WeakMap<Request, RequestMetadata>();
const acceptableRequestId = /^[A-Za-z0-9._:-]{8,64}$/;

/** The server context the Node adapter hands to yoga: the raw request, when there is one. */
export type NodeServerContext = { req?: IncomingMessage };

/**
 * Request id, client IP and user agent of a request, computed once and shared by the logging
 * plugin, the REST face and the GraphQL context. A caller-supplied `X-Request-Id` is kept when it
 * looks like an id, so a caller can correlate its own logs with ours.
 */
export function requestMetadataOf(request: Request, serverContext: NodeServerContext | undefined): RequestMetadata {
  const known = metadataByRequest.get(request);
  if (known) return known;
  const offered = request.headers.get('x-request-id');
  const metadata: RequestMetadata = {
    requestId: offered && acceptableRequestId.test(offered) ? offered : randomUUID(),
    ip: serverContext?.req?.socket?.remoteAddress ?? null,
    userAgent: request.headers.get('user-agent')?.slice(0, 512) ?? null,
  };
  metadataByRequest.set(request, metadata);
  return metadata;
}
