import type { Plugin } from 'graphql-yoga';
import { createRequestContext, type ServingDependencies } from '../context.ts';
import { isDatabaseReady } from '../db/database.ts';
import type { NodeServerContext, RequestMetadataReader } from '../request-metadata.ts';
import { MethodNotAllowedError, RouteNotFoundError } from '../shared/errors.ts';
import { normalizeError } from '../shared/normalize-error.ts';
import { consumeForRequest, RateLimitedError, rateLimitHeaders } from '../rate-limit.ts';
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
      // Counted before anything else runs; every answer, refusals included, carries the budget.
      const limit = dependencies.rateLimiter ? await consumeForRequest(dependencies.rateLimiter, context) : undefined;
      const answer = (response: Response) => {
        if (limit) for (const [name, value] of Object.entries(rateLimitHeaders(limit))) response.headers.set(name, value);
        endResponse(response);
      };
      try {
        if (limit && !limit.allowed) throw new RateLimitedError(limit);
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
        if (result instanceof RestReply) answer(replyResponse(result, fetchAPI.Response));
        else if (result instanceof fetchAPI.Response || result instanceof Response) answer(result);
        else answer(successResponse(result, {}, fetchAPI.Response));
      } catch (error) {
        const domainError = normalizeError(error, context.log);
        answer(errorResponse(domainError, { requestId: metadata.requestId, alwaysHttp200: dependencies.config.restErrorsHttp200 }, fetchAPI.Response));
      }
    },
  };
}
