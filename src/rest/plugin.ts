import type { Plugin } from 'graphql-yoga';
import { createRequestContext, type RequestContext, type ServingDependencies } from '../context.ts';
import { isDatabaseReady } from '../db/database.ts';
import type { NodeServerContext, RequestMetadataReader } from '../request-metadata.ts';
import { MethodNotAllowedError, RouteNotFoundError } from '../shared/errors.ts';
import { normalizeError } from '../shared/normalize-error.ts';
import { consumeForRequest, RateLimitedError, rateLimitHeaders, type RateLimiter } from '../rate-limit.ts';
import { errorResponse, replyResponse, RestReply, successResponse } from './respond.ts';
import { createRouter, type RestRoute } from './router.ts';
import { restRoutes } from './routes/index.ts';

export const REST_PREFIX = '/api/v1/key';

/**
 * Serves everything that is not GraphQL inside the same yoga instance: the REST compatibility
 * layer under /api/v1/key, and the health endpoints. Handlers only translate HTTP to domain calls;
 * every failure becomes the contract's error body here, in one place.
 */
export function restPlugin(
  dependencies: ServingDependencies,
  requestMetadataOf: RequestMetadataReader,
  routes: RestRoute[] = restRoutes,
): Plugin<NodeServerContext> {
  const router = createRouter(routes);
  return {
    async onRequest({ request, url, endResponse, serverContext, fetchAPI }) {
      if (url.pathname === '/healthz') {
        endResponse(Response.json({ status: 'ok' }));
        return;
      }
      if (url.pathname === '/readyz') {
        const ready = await isDatabaseReady(dependencies.orm);
        endResponse(Response.json({ status: ready ? 'ready' : 'not ready' }, { status: ready ? 200 : 503 }));
        return;
      }
      if (url.pathname !== REST_PREFIX && !url.pathname.startsWith(`${REST_PREFIX}/`)) return;

      const metadata = requestMetadataOf(request, serverContext as NodeServerContext);
      const context = createRequestContext(dependencies, { headers: request.headers, metadata });
      const path = url.pathname.slice(REST_PREFIX.length) || '/';
      const counted = {
        rateLimiter: dependencies.rateLimiter,
        context,
        requestId: metadata.requestId,
        alwaysHttp200: dependencies.config.restErrorsHttp200,
        endResponse,
        ResponseImpl: fetchAPI.Response,
      };
      await answerCounted(counted, async () => {
        const match = router.match(request.method, path);
        if (match.kind === 'not-found') throw new RouteNotFoundError(request.method, url.pathname);
        if (match.kind === 'method-not-allowed') throw new MethodNotAllowedError(request.method, match.allowed);
        const result = await match.route.handler({
          request,
          url,
          params: match.params,
          context,
          nodeRequest: (serverContext as NodeServerContext | undefined)?.req,
        });
        if (result instanceof RestReply) return replyResponse(result, fetchAPI.Response);
        if (result instanceof fetchAPI.Response || result instanceof Response) return result;
        return successResponse(result, {}, fetchAPI.Response);
      });
    },
  };
}

/**
 * How a request outside GraphQL is answered (the REST face, the signing page's document route):
 * counted against its budget before anything else runs, refused when over it, every answer (refusals
 * included) carrying the budget's headers, and any failure turned into the contract's error body.
 */
export async function answerCounted(
  {
    rateLimiter,
    context,
    requestId,
    alwaysHttp200,
    endResponse,
    ResponseImpl,
  }: {
    rateLimiter: RateLimiter | undefined;
    context: RequestContext;
    requestId: string;
    /** REST_ERRORS_HTTP200 for the REST face; routes outside it keep real statuses. */
    alwaysHttp200: boolean;
    endResponse: (response: Response) => void;
    ResponseImpl: typeof Response;
  },
  work: () => Promise<Response>,
): Promise<void> {
  const limit = rateLimiter ? await consumeForRequest(rateLimiter, context) : undefined;
  let response: Response;
  try {
    if (limit && !limit.allowed) throw new RateLimitedError(limit);
    response = await work();
  } catch (error) {
    response = errorResponse(normalizeError(error, context.log), { requestId, alwaysHttp200 }, ResponseImpl);
  }
  if (limit) for (const [name, value] of Object.entries(rateLimitHeaders(limit))) response.headers.set(name, value);
  endResponse(response);
}
