/**
 * The span of each HTTP request (server kind), started where every request passes, the Node
 * server's listener (server.ts), so that uploads refused before yoga, REST, GraphQL and the
 * signing page all get one, and everything the request does runs inside it (the context is
 * active across the listener's awaits and callbacks).
 *
 * The span is named `METHOD route` once a face knows the request's route template (REST from its
 * router, GraphQL and a few fixed paths here), else `METHOD`. The URL itself is never recorded:
 * signing links, final-copy links and signed downloads carry their credential in the path. The
 * request id (the one in the logs and in `X-Request-Id`) is an attribute, to go from a trace to
 * its log lines. An incoming W3C `traceparent` makes the request a child of the caller's span.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { context, propagation, ROOT_CONTEXT, trace } from '@opentelemetry/api';
import type { Plugin } from 'graphql-yoga';
import { isTracing, type Span, SpanKind, SpanStatusCode, tracer } from '../shared/tracing.ts';
import type { NodeServerContext, RequestMetadataReader } from './request-metadata.ts';

type NodeListener = (request: IncomingMessage, response: ServerResponse) => void;

const spansByRequest = new WeakMap<IncomingMessage, Span>();

/** Wraps the server's listener: with tracing off, it is called as it is. */
export function traceHttpRequests(listener: NodeListener): NodeListener {
  return (request, response) => {
    if (!isTracing()) return listener(request, response);
    const method = request.method ?? 'GET';
    const parent = propagation.extract(ROOT_CONTEXT, request.headers);
    const span = tracer.startSpan(method, { kind: SpanKind.SERVER, attributes: { 'http.request.method': method } }, parent);
    spansByRequest.set(request, span);
    // 'close' comes for finished and for cut-off responses alike; an event stream ends here too.
    response.once('close', () => {
      span.setAttribute('http.response.status_code', response.statusCode);
      if (response.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      if (!response.writableFinished) span.setAttribute('http.response.aborted', true);
      span.end();
    });
    context.with(trace.setSpan(parent, span), () => listener(request, response));
  };
}

/** Names the request's span by its route template (`/api/v1/key/envelopes/:envelopeId`). */
export function setRequestRoute(request: IncomingMessage | undefined, route: string): void {
  const span = request && spansByRequest.get(request);
  if (!span) return;
  span.setAttribute('http.route', route);
  span.updateName(`${request.method ?? 'GET'} ${route}`);
}

/** The request id (the one in the logs and in `X-Request-Id`) on the request's span. */
export function setRequestId(request: IncomingMessage | undefined, requestId: string): void {
  const span = request && spansByRequest.get(request);
  if (span) span.setAttribute('request.id', requestId);
}

/**
 * Paths that are their own template. The signing page's `/sign/<token>` is named by its
 * template here too (the token never is); REST names its routes itself (rest/serve.ts).
 */
function fixedRoute(pathname: string, graphqlEndpoint: string): string | undefined {
  if (pathname === graphqlEndpoint || pathname === `${graphqlEndpoint}/stream` || pathname === '/healthz' || pathname === '/readyz') return pathname;
  if (pathname.startsWith('/sign/')) return '/sign/:token';
  if (pathname.startsWith('/signing/documents/')) return pathname.includes('/pages/') ? '/signing/documents/:documentId/pages/:index' : '/signing/documents/:documentId';
  return undefined;
}

/** Adds what only yoga knows to the request's span: the request id, and the route of fixed paths. */
export function requestTracingPlugin(requestMetadataOf: RequestMetadataReader, graphqlEndpoint: string): Plugin<NodeServerContext> {
  return {
    onRequest({ request, url, serverContext }) {
      const nodeRequest = (serverContext as NodeServerContext | undefined)?.req;
      if (!nodeRequest || !spansByRequest.has(nodeRequest)) return;
      setRequestId(nodeRequest, requestMetadataOf(request, serverContext as NodeServerContext).requestId);
      const route = fixedRoute(url.pathname, graphqlEndpoint);
      if (route) setRequestRoute(nodeRequest, route);
    },
  };
}
