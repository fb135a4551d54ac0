import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { LiveConnection } from '../domain/live/live.service.ts';
import type { RequestMetadata } from '../shared/request-metadata.ts';

const acceptableRequestId = /^[A-Za-z0-9._:-]{8,64}$/;

/** The server context the Node adapter hands to yoga: the raw request, when there is one. */
export type NodeServerContext = { req?: IncomingMessage; liveConnection?: LiveConnection };

export type RequestMetadataReader = (request: Request, serverContext: NodeServerContext | undefined) => RequestMetadata;

/**
 * The client's address for the audit log. Behind `trustedProxyHops` reverse proxies the socket
 * peer is the nearest proxy, and each proxy appends the address it saw to X-Forwarded-For; the
 * client is the entry that many hops from the right. Entries further left were written by the
 * client itself and are never trusted. IPv4 addresses seen through an IPv6 socket lose their
 * `::ffff:` prefix.
 */
export function clientAddress(socketAddress: string | undefined, forwardedFor: string | null, trustedProxyHops: number): string | null {
  if (forwardedFor === null) {
    // No proxy believed, or none wrote the header: the socket peer, without building a chain (every request asks).
    const peer = socketAddress?.trim() ?? '';
    return peer === '' ? null : unmapped(peer);
  }
  const chain = [...forwardedFor.split(','), socketAddress ?? ''].map((entry) => entry.trim()).filter((entry) => entry !== '');
  if (chain.length === 0) return null;
  return unmapped(chain[Math.max(0, chain.length - 1 - trustedProxyHops)]);
}

function unmapped(address: string): string {
  return (address.startsWith('::ffff:') ? address.replace(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/, '$1') : address).slice(0, 64);
}

/**
 * Request id, client IP and user agent of a request, computed once and shared by the logging
 * plugin, the REST face and the GraphQL context. A caller-supplied `X-Request-Id` is kept when it
 * looks like an id, so a caller can correlate its own logs with ours.
 */
export function createRequestMetadataReader({ trustedProxyHops }: { trustedProxyHops: number }): RequestMetadataReader {
  const metadataByRequest = new WeakMap<Request, RequestMetadata>();
  return (request, serverContext) => {
    const known = metadataByRequest.get(request);
    if (known) return known;
    const metadata = requestMetadataOf((name) => request.headers.get(name) ?? undefined, serverContext?.req?.socket?.remoteAddress, trustedProxyHops);
    metadataByRequest.set(request, metadata);
    return metadata;
  };
}

/** The same for a request served straight from Node (the REST face, rest/serve.ts). */
export function nodeRequestMetadata(request: IncomingMessage, trustedProxyHops: number): RequestMetadata {
  return requestMetadataOf((name) => headerOf(request, name), request.socket?.remoteAddress, trustedProxyHops);
}

/** A header of a Node request as `Headers.get` gives it: repeated ones joined with ", ". */
export function headerOf(request: IncomingMessage, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

function requestMetadataOf(header: (name: string) => string | undefined, socketAddress: string | undefined, trustedProxyHops: number): RequestMetadata {
  const offered = header('x-request-id');
  return {
    requestId: offered && acceptableRequestId.test(offered) ? offered : randomUUID(),
    ip: clientAddress(socketAddress, trustedProxyHops > 0 ? (header('x-forwarded-for') ?? null) : null, trustedProxyHops),
    userAgent: header('user-agent')?.slice(0, 512) ?? null,
  };
}
