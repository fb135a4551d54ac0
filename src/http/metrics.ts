/**
 * Metrics over HTTP: the request-duration histogram every request of the yoga instance passes
 * through, the route label it is kept under, and the two ways `GET /metrics` is served
 * (docs/operations.md#metrics): on the main port behind `METRICS_TOKEN`, and on a port of its
 * own (`METRICS_PORT`) meant for a network only the scraper reaches.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Plugin } from 'graphql-yoga';
import { InvalidMetricsTokenError } from '../shared/errors.ts';
import { observeLabelled } from '../shared/histogram-children.ts';
import type { Logger } from '../shared/logger.ts';
import type { Metrics } from '../shared/metrics.ts';
import { wasRefusedBelowTheFaces } from './body-guard.ts';
import { errorResponse } from './contract-body.ts';
import type { NodeServerContext, RequestMetadataReader } from './request-metadata.ts';

export const METRICS_PATH = '/metrics';

/** The label of any path no route claimed: never the path itself, which may hold ids or a signing token. */
export const UNMATCHED_ROUTE = 'unmatched';

const routeTemplates = new WeakMap<Request, string>();

/**
 * Records the route template that served `request` (`/api/v1/key/envelopes/:envelopeId` is kept
 * as `/api/v1/key/envelopes/{envelopeId}`). The router that matched the path calls it; only
 * templates from the code reach a label, never a value from the path.
 */
export function labelRoute(request: Request, template: string): void {
  routeTemplates.set(request, routeLabel(template));
}

/** The label of a route template: `:name` parameters written `{name}`. */
export function routeLabel(template: string): string {
  return template.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, '{$1}');
}

const KNOWN_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** One request into the duration histogram: by the yoga plugin below, and by the REST face served beside yoga (rest/serve.ts). */
export function observeRequest(metrics: Pick<Metrics, 'httpRequestDuration'>, request: { route: string; method: string; status: number; startedAt: bigint }): void {
  const seconds = Number(process.hrtime.bigint() - request.startedAt) / 1e9;
  const method = KNOWN_METHODS.has(request.method) ? request.method : 'other';
  const status = String(request.status);
  // The series of each route, method and status is resolved once (shared/histogram-children.ts).
  observeLabelled(metrics.httpRequestDuration, { route: request.route, method, status }, [request.route, method, status], seconds);
}

/**
 * Times every request the yoga instance answers (`http_server_request_duration_seconds`), until
 * its response head: a stream (a download, a subscription's event stream) ends later. Requests
 * the Node server answers before yoga sees them (a body refused by the body guard, a WebSocket
 * upgrade) are timed by `App.recordNodeAnswer` instead, and a request yoga still finishes after
 * such a refusal is not timed twice. The route is the template a router labelled, one of the fixed paths, a
 * static asset prefix, or `unmatched`.
 */
export function httpMetricsPlugin(metrics: Pick<Metrics, 'httpRequestDuration'>, routes: { exact: string[]; assetPrefixes: string[] }): Plugin {
  const startedAt = new WeakMap<Request, bigint>();
  const exact = new Set(routes.exact);
  function routeOf(request: Request): string {
    const labelled = routeTemplates.get(request);
    if (labelled) return labelled;
    const { pathname } = new URL(request.url);
    if (exact.has(pathname)) return pathname;
    const prefix = routes.assetPrefixes.find((candidate) => pathname.startsWith(candidate));
    return prefix ? `${prefix}{asset}` : UNMATCHED_ROUTE;
  }
  return {
    onRequest({ request }) {
      startedAt.set(request, process.hrtime.bigint());
    },
    onResponse({ request, response, serverContext }) {
      const started = startedAt.get(request);
      // A refusal written below yoga (a stalled body's 408) timed itself under its own status.
      if (started === undefined || wasRefusedBelowTheFaces((serverContext as NodeServerContext | undefined)?.req)) return;
      observeRequest(metrics, { route: routeOf(request), method: request.method, status: response.status, startedAt: started });
    },
  };
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/**
 * Whether `Authorization` carries `Bearer <token>`. Both sides are hashed first, so the comparison
 * takes the same time whatever the given value's length or how much of it is right.
 */
export function bearerTokenMatches(authorization: string | null, token: string): boolean {
  const given = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '')?.[1] ?? '';
  return timingSafeEqual(sha256(given), sha256(token));
}

async function exposition(metrics: Pick<Metrics, 'scrape' | 'registry'>): Promise<{ body: string; contentType: string }> {
  return { body: await metrics.scrape(), contentType: metrics.registry.contentType };
}

/**
 * `GET /metrics` on the main port, for `Authorization: Bearer <METRICS_TOKEN>`; a missing or wrong
 * token is `Auth.InvalidMetricsToken` (401) in the contract's error body. Without a token the
 * plugin is not installed and the path is unknown like any other (404).
 */
export function metricsEndpointPlugin(metrics: Metrics, token: string, requestMetadataOf: RequestMetadataReader): Plugin<NodeServerContext> {
  return {
    async onRequest({ request, url, endResponse, serverContext, fetchAPI }) {
      if (url.pathname !== METRICS_PATH) return;
      if (!bearerTokenMatches(request.headers.get('authorization'), token)) {
        const { requestId } = requestMetadataOf(request, serverContext as NodeServerContext);
        endResponse(errorResponse(new InvalidMetricsTokenError(), { requestId, alwaysHttp200: false }, fetchAPI.Response));
        return;
      }
      const { body, contentType } = await exposition(metrics);
      endResponse(new fetchAPI.Response(request.method === 'HEAD' ? null : body, { headers: { 'content-type': contentType, 'cache-control': 'no-store' } }));
    },
  };
}

export type MetricsServer = { url: string; close(): Promise<void> };

/**
 * `GET /metrics` on a port of its own, without a token: whoever reaches the port may read it, so
 * it belongs on a network only the scraper reaches. It serves nothing else (404), and a scrape
 * that fails answers 500 with the error logged, never a partial text.
 */
export async function listenForMetrics(options: { port: number; host?: string; metrics: Metrics; logger: Logger }): Promise<MetricsServer> {
  const server = http.createServer((request, response) => {
    const path = (request.url ?? '').split('?')[0];
    if (path !== METRICS_PATH || (request.method !== 'GET' && request.method !== 'HEAD')) {
      response.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('Not found: this port serves GET /metrics only.\n');
      return;
    }
    exposition(options.metrics).then(
      ({ body, contentType }) => response.writeHead(200, { 'content-type': contentType, 'cache-control': 'no-store' }).end(request.method === 'HEAD' ? undefined : body),
      (error: unknown) => {
        options.logger.error({ err: error }, 'metrics scrape failed');
        response.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('The metrics could not be collected; see the service log.\n');
      },
    );
  });
  // A scrape is small and quick; a client holding the connection open is not worth a socket.
  server.requestTimeout = 30_000;
  server.headersTimeout = 10_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${shownHost === '[::]' || shownHost === '0.0.0.0' ? 'localhost' : shownHost}:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}
