import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { openRequestContext, type RequestContext, type ServingDependencies } from '../context.ts';
import { isDatabaseReady } from '../db/database.ts';
import { refuseUnstorableText } from '../domain/validation.ts';
import { logRequest } from '../http/access-log.ts';
import { type Answer, answerOfResponse, sendAnswer } from '../http/answer.ts';
import { countedAnswer } from '../http/answer-counted.ts';
import { errorAnswer, successAnswer, successAnswerOfText } from '../http/contract-body.ts';
import { corsHeaders, PREFLIGHT_HEADERS } from '../http/cors.ts';
import { createKeyInFlight } from '../http/key-in-flight.ts';
import { observeRequest, routeLabel, UNMATCHED_ROUTE } from '../http/metrics.ts';
import { createOverBudgetMarks, type RateLimitDecision, RateLimitedError, rateLimitHeaders } from '../http/rate-limit.ts';
import { headerOf, nodeRequestMetadata } from '../http/request-metadata.ts';
import { setRequestId, setRequestRoute } from '../http/request-tracing.ts';
import { applySecurityHeaders, recordHeaders } from '../http/security-headers.ts';
import { MethodNotAllowedError, RouteNotFoundError } from '../shared/errors.ts';
import { normalizeError } from '../shared/normalize-error.ts';
import type { RequestMetadata } from '../shared/request-metadata.ts';
import { RestJsonReply, RestReply } from './respond.ts';
import { createRouter, type RestHttpRequest, type RestRoute, type RouteMatch } from './router.ts';
import { restRoutes } from './routes/index.ts';

/** How long /readyz waits for each dependency's check before counting it as not ready (it must answer within 2 s). */
export const READINESS_DEADLINE_MS = 1_500;

/** The check's answer, or false once `milliseconds` have passed (then `onLate` stops the check). */
function withinDeadline(check: Promise<boolean>, milliseconds: number, onLate?: () => void): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      onLate?.();
      resolve(false);
    }, milliseconds);
    check.then(
      (answer) => {
        clearTimeout(timer);
        resolve(answer);
      },
      () => {
        clearTimeout(timer);
        resolve(false);
      },
    );
  });
}

export const REST_PREFIX = '/api/v1/key';

/**
 * The URL of a request target as yoga's adapter reads it (the path appended to the origin, so
 * `//x` stays a path); undefined when it cannot be read (yoga answers those as before).
 */
export function requestUrl(target: string | undefined): URL | undefined {
  try {
    return target?.startsWith('/') ? new URL(`http://localhost${target}`) : new URL(target ?? '/', 'http://localhost');
  } catch {
    return undefined;
  }
}

/** A query string's names and values as one object (a repeated name keeps every value) for the text check. */
function queryOf(url: URL): Record<string, string[]> {
  // No prototype: a parameter named `__proto__` is a name like any other.
  const query = Object.create(null) as Record<string, string[]>;
  for (const [name, value] of url.searchParams) (query[name] ??= []).push(value);
  return query;
}

/**
 * Whether a request target may decode to text no column can hold (U+0000, a lone surrogate). Only
 * a percent escape or a raw NUL can: Node reads the target as Latin-1 and the URL parser writes
 * any other character as its UTF-8 escape, which decodes back to the same character. Most targets
 * have neither, and are not decoded and walked again for the check.
 */
function mayDecodeToUnstorableText(target: string | undefined): boolean {
  return target === undefined || target.includes('%') || target.includes('\u0000');
}

/** Whether a route's GET hands out a file (and so records a download). */
function isDownload(route: RestRoute): boolean {
  return route.doc.produces === 'application/pdf' || route.doc.produces === 'application/zip' || route.doc.produces === 'signer-file';
}

/** Whether a path is answered here, beside yoga: the REST face and the health endpoints. */
export function isRestPath(pathname: string): boolean {
  return pathname === '/healthz' || pathname === '/readyz' || pathname === REST_PREFIX || pathname.startsWith(`${REST_PREFIX}/`);
}

/** Refusals held at once per process (each costs its socket and a timer); past it, refusals are answered at once. */
const MAX_HELD_REFUSALS = 10_000;

export type RestServer = {
  /**
   * Answers 429 when the request's API key is known over its budget (see createOverBudgetMarks),
   * before anything else is done for it, after holding the answer for up to
   * `rateLimitRefusalHoldMs` (never past the window's end); false when the key is not marked. If
   * the window has ended by the time the hold is over, the request is served after all: `proceed`
   * is called, as the listener would have done.
   */
  refuseKnownOverBudget(request: IncomingMessage, response: ServerResponse, proceed: () => void): boolean;
  /** The histogram's route of a path isRestPath accepts: its template, the health path, or `unmatched`. */
  routeOf(method: string, pathname: string): string;
  /** Answers a request whose path isRestPath. */
  serve(request: IncomingMessage, response: ServerResponse, url: URL): void;
};

/**
 * A REST handler's view of a Node request. Its body is made on first read only: most requests
 * have none, and uploads stream from the Node request. A class, so the `body` accessor is one
 * function on its prototype: a getter written in a per-request object literal costs V8 a hidden
 * class per request (src/context.ts, `lazyAccessors`).
 */
class NodeRestRequest implements RestHttpRequest {
  readonly method: string;
  readonly headers: RestHttpRequest['headers'];
  readonly #nodeRequest: IncomingMessage;
  #body: ReadableStream<Uint8Array> | null | undefined;
  constructor(nodeRequest: IncomingMessage, method: string, headers: RestHttpRequest['headers']) {
    this.#nodeRequest = nodeRequest;
    this.method = method;
    this.headers = headers;
  }
  get body(): ReadableStream<Uint8Array> | null {
    this.#body ??= this.method === 'GET' || this.method === 'HEAD' ? null : (Readable.toWeb(this.#nodeRequest) as ReadableStream<Uint8Array>);
    return this.#body;
  }
}

/**
 * The REST compatibility layer under /api/v1/key and the health endpoints, served straight on
 * Node's request and response beside yoga (server.ts routes by path): no WHATWG Request or
 * Response per request, no plugin chain. What yoga's plugins gave these answers is given here with
 * the same shared pieces (src/http): the request id and access log, security headers, CORS as
 * yoga's default, the duration histogram under the route template, the span's route and request
 * id, the rate limit and its headers, and the contract's error body from the one error table.
 * Handlers only translate HTTP to domain calls; every failure becomes the contract's error body
 * here, in one place.
 */
export function createRestServer(dependencies: ServingDependencies, routes: RestRoute[] = restRoutes): RestServer {
  const router = createRouter(routes);

  /**
   * The route of a request. HEAD is answered as the GET of the same path (Node leaves the body
   * out), except where that GET hands out a file: a download records an audit event (and may
   * seal), which a link checker's HEAD must not do, so those answer 405 naming GET.
   */
  function matchRoute(method: string, path: string): RouteMatch {
    const match = router.match(method === 'HEAD' ? 'GET' : method, path);
    if (method !== 'HEAD') return match;
    if (match.kind === 'method-not-allowed') return { ...match, allowed: match.allowed.includes('GET') ? [...match.allowed, 'HEAD'] : match.allowed };
    if (match.kind === 'found' && isDownload(match.route)) return { kind: 'method-not-allowed', allowed: ['GET'] };
    return match;
  }
  // The histogram's label of each route, made once (a regular-expression pass per request otherwise).
  const labels = new Map<string, string>(routes.map((route) => [route.path, routeLabel(`${REST_PREFIX}${route.path}`)]));
  const labelOf = (route: RestRoute) => labels.get(route.path) ?? routeLabel(`${REST_PREFIX}${route.path}`);
  const marks = createOverBudgetMarks();
  let heldRefusals = 0;
  const { config, logger, metrics } = dependencies;
  const readsInFlight = createKeyInFlight(config.readsInFlightPerKey);

  /** One request as it is answered: the Node pair, its path, its metadata and when it started. */
  type Exchange = { request: IncomingMessage; response: ServerResponse; pathname: string; metadata: RequestMetadata; startedAt: bigint };

  /** Adds what every answer carries, times it, writes it and logs it. `route` undefined: not in the histogram (a preflight, as under yoga). */
  function finish(exchange: Exchange, route: string | undefined, answer: Answer): void {
    const { request, response, pathname, metadata, startedAt } = exchange;
    // Answered below the faces while this one worked (the body guard's 408, body-guard.ts): that
    // refusal is what the client got and it recorded itself; this answer is dropped unrecorded.
    if (response.headersSent || response.writableEnded) {
      void sendAnswer(response, answer);
      return;
    }
    const cors = corsHeaders((name) => headerOf(request, name));
    if (cors) Object.assign(answer.headers, cors);
    applySecurityHeaders(recordHeaders(answer.headers));
    answer.headers['x-request-id'] = metadata.requestId;
    const method = request.method ?? 'GET';
    if (route !== undefined) observeRequest(metrics, { route, method, status: answer.status, startedAt });
    logRequest(logger, { metadata, method, pathname, status: answer.status, startedAt });
    void sendAnswer(response, answer);
  }

  async function health(pathname: string): Promise<Answer> {
    if (pathname === '/healthz') return { status: 200, headers: { 'content-type': 'application/json' }, body: '{"status":"ok"}' };
    // Both things every request may need: the database and the blob store (files or S3), each
    // given READINESS_DEADLINE_MS: a dependency that hangs is "not ready", and the probe (whose
    // own timeout is often 1–2 s) gets its answer instead of timing out itself.
    const abort = new AbortController();
    const [database, blobStore] = await Promise.all([
      withinDeadline(isDatabaseReady(dependencies.orm), READINESS_DEADLINE_MS),
      withinDeadline(dependencies.blobStore.check({ signal: abort.signal }), READINESS_DEADLINE_MS, () => abort.abort()),
    ]);
    const ready = database && blobStore;
    return {
      status: ready ? 200 : 503,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ status: ready ? 'ready' : 'not ready', database: database ? 'ok' : 'unavailable', blobStore: blobStore ? 'ok' : 'unavailable' }),
    };
  }

  /**
   * Runs a read (GET or HEAD) of an authenticated key within its share of the process (see
   * key-in-flight.ts); anything else, and a request without a valid key, runs at once. A read whose
   * client went away while it waited is not worked on.
   */
  async function withinKeyShare<T>(request: IncomingMessage, context: RequestContext, work: () => Promise<T>): Promise<T | RestReply> {
    if (request.method !== 'GET' && request.method !== 'HEAD') return work();
    const caller = await context.caller().catch(() => undefined);
    if (!caller) return work();
    const release = await readsInFlight.enter(caller.apiKeyId);
    try {
      // Nobody to answer (the socket is closed): nothing is read, and nothing will be written.
      if (request.destroyed) return new RestReply(499, {}, null);
      return await work();
    } finally {
      release();
    }
  }

  async function answerRest(request: IncomingMessage, url: URL, metadata: RequestMetadata, labelled: (route: string) => void): Promise<Answer> {
    const method = request.method ?? 'GET';
    const headers = { get: (name: string) => headerOf(request, name) ?? null };
    const restRequest = new NodeRestRequest(request, method, headers);
    const context = await openRequestContext(dependencies, { headers, metadata });
    const apiKey = headers.get('x-service-api-key')?.trim();
    const match = matchRoute(method, url.pathname.slice(REST_PREFIX.length) || '/');
    // Labelled before counting, so a refused (429) request is kept under its route too.
    if (match.kind === 'found') labelled(labelOf(match.route));
    return countedAnswer(
      {
        rateLimiter: dependencies.rateLimiter,
        context,
        requestId: metadata.requestId,
        alwaysHttp200: config.restErrorsHttp200,
        onRefused: (decision) => {
          if (apiKey) marks.mark(apiKey, decision);
        },
      },
      async () => {
        if (match.kind === 'not-found') throw new RouteNotFoundError(method, url.pathname);
        if (match.kind === 'method-not-allowed') throw new MethodNotAllowedError(method, match.allowed);
        // The template, never the path: some paths carry a credential (/downloads/:token).
        setRequestRoute(request, `${REST_PREFIX}${match.route.path}`);
        // Path segments and the query string are caller text like a body (`%00` decodes to NUL).
        if (mayDecodeToUnstorableText(request.url)) refuseUnstorableText({ ...match.params, ...queryOf(url) });
        const result = await withinKeyShare(request, context, () => match.route.handler({ request: restRequest, url, params: match.params, context, nodeRequest: request }));
        if (result instanceof RestReply)
          return result.payload === null ? { status: result.status, headers: { ...result.headers }, body: null } : successAnswer(result.payload, result.headers);
        if (result instanceof RestJsonReply) return successAnswerOfText(result.payloadJson, result.headers);
        if (result instanceof Response) return answerOfResponse(result);
        return successAnswer(result);
      },
    );
  }

  function routeOf(method: string, pathname: string): string {
    if (pathname === '/healthz' || pathname === '/readyz') return pathname;
    const match = matchRoute(method, pathname.slice(REST_PREFIX.length) || '/');
    return match.kind === 'found' ? labelOf(match.route) : UNMATCHED_ROUTE;
  }

  return {
    routeOf,
    refuseKnownOverBudget(request, response, proceed) {
      const offered = request.headers['x-service-api-key'];
      if (typeof offered !== 'string') return false;
      const apiKey = offered.trim();
      const decision = marks.refusal(apiKey);
      if (!decision) return false;
      const url = requestUrl(request.url);
      if (!url || !isRestPath(url.pathname) || url.pathname === '/healthz' || url.pathname === '/readyz' || request.method === 'OPTIONS') return false;
      const refuse = (refusal: RateLimitDecision, startedAt: bigint) => {
        const metadata = nodeRequestMetadata(request, config.trustedProxyHops);
        setRequestId(request, metadata.requestId);
        metrics.rateLimited.inc({ scope: refusal.scope });
        const answer = errorAnswer(new RateLimitedError(refusal), { requestId: metadata.requestId, alwaysHttp200: config.restErrorsHttp200 });
        Object.assign(answer.headers, rateLimitHeaders(refusal));
        finish({ request, response, pathname: url.pathname, metadata, startedAt }, routeOf(request.method ?? 'GET', url.pathname), answer);
      };
      const holdMs = Math.min(config.rateLimitRefusalHoldMs, (decision.windowEndsAtMs ?? 0) - Date.now());
      if (holdMs <= 0 || heldRefusals >= MAX_HELD_REFUSALS) {
        refuse(decision, process.hrtime.bigint());
        return true;
      }
      // Held: a client that ignores Retry-After and asks again at once gets its next answer only
      // after the hold, so it sends a request per connection per hold instead of as many as the
      // listener can refuse, and the cores stay with the teams within their budgets
      // (docs/decisions.md, "Floods held"). Nothing is read or kept for a held request but its socket.
      heldRefusals += 1;
      let released = false;
      const release = () => {
        if (released) return false;
        released = true;
        heldRefusals -= 1;
        clearTimeout(timer);
        response.off('close', release);
        return true;
      };
      const timer = setTimeout(() => {
        if (!release()) return;
        // The window may have ended during the hold (the hold never outlasts it by more than a tick).
        const refusal = marks.refusal(apiKey);
        if (refusal) refuse(refusal, process.hrtime.bigint());
        else proceed();
      }, holdMs);
      // A client that goes away during the hold is simply let go.
      response.once('close', release);
      return true;
    },
    serve(request, response, url) {
      const startedAt = process.hrtime.bigint();
      const metadata = nodeRequestMetadata(request, config.trustedProxyHops);
      setRequestId(request, metadata.requestId);
      const { pathname } = url;
      const exchange: Exchange = { request, response, pathname, metadata, startedAt };
      if (request.method === 'OPTIONS') {
        // A CORS preflight, answered before any route is looked at (as yoga's CORS handling does).
        finish(exchange, undefined, { status: 204, headers: { ...PREFLIGHT_HEADERS }, body: null });
        return;
      }
      let route = UNMATCHED_ROUTE;
      const answered =
        pathname === '/healthz' || pathname === '/readyz'
          ? ((route = pathname), setRequestRoute(request, pathname), health(pathname))
          : answerRest(request, url, metadata, (label) => (route = label));
      answered
        .catch((error: unknown) => errorAnswer(normalizeError(error, logger), { requestId: metadata.requestId, alwaysHttp200: pathname.startsWith(REST_PREFIX) && config.restErrorsHttp200 }))
        .then((answer) => finish(exchange, route, answer))
        .catch((error: unknown) => {
          logger.error({ err: error }, 'could not write an answer');
          if (!response.headersSent) response.writeHead(500);
          response.end();
        });
    },
  };
}
