import type { Plugin } from 'graphql-yoga';
import { openRequestContext, type ServingDependencies } from '../context.ts';
import { isDatabaseReady } from '../db/database.ts';
import type { NodeServerContext, RequestMetadataReader } from '../http/request-metadata.ts';
import { setRequestRoute } from '../http/request-tracing.ts';
import { MethodNotAllowedError, RouteNotFoundError } from '../shared/errors.ts';
import { answerCounted } from '../http/answer-counted.ts';
import { labelRoute } from '../http/metrics.ts';
import { successResponse } from '../http/contract-body.ts';
import { replyResponse, RestReply } from './respond.ts';
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
        // Both things every request may need: the database and the blob store (files or S3).
        const [database, blobStore] = await Promise.all([isDatabaseReady(dependencies.orm), dependencies.blobStore.check()]);
        const ready = database && blobStore;
        endResponse(
          Response.json(
            { status: ready ? 'ready' : 'not ready', database: database ? 'ok' : 'unavailable', blobStore: blobStore ? 'ok' : 'unavailable' },
            { status: ready ? 200 : 503 },
          ),
        );
        return;
      }
      if (url.pathname !== REST_PREFIX && !url.pathname.startsWith(`${REST_PREFIX}/`)) return;

      const metadata = requestMetadataOf(request, serverContext as NodeServerContext);
      const context = await openRequestContext(dependencies, { headers: request.headers, metadata });
      const path = url.pathname.slice(REST_PREFIX.length) || '/';
      const counted = {
        rateLimiter: dependencies.rateLimiter,
        context,
        requestId: metadata.requestId,
        alwaysHttp200: dependencies.config.restErrorsHttp200,
        endResponse,
        ResponseImpl: fetchAPI.Response,
      };
      const match = router.match(request.method, path);
      // Labelled before counting, so a refused (429) request is kept under its route too.
      if (match.kind === 'found') labelRoute(request, `${REST_PREFIX}${match.route.path}`);
      await answerCounted(counted, async () => {
        if (match.kind === 'not-found') throw new RouteNotFoundError(request.method, url.pathname);
        if (match.kind === 'method-not-allowed') throw new MethodNotAllowedError(request.method, match.allowed);
        // The template, never the path: some paths carry a credential (/downloads/:token).
        setRequestRoute((serverContext as NodeServerContext | undefined)?.req, `${REST_PREFIX}${match.route.path}`);
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
