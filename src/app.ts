import { useGraphQlJit } from '@envelop/graphql-jit';
import { useGraphQLSSE } from '@graphql-yoga/plugin-graphql-sse';
import type { EntityManager } from '@mikro-orm/postgresql';
import { GraphQLError } from 'graphql';
import { createYoga, type Plugin, type YogaServerInstance } from 'graphql-yoga';
import { type AppDependencies, openRequestContext, type RequestContext, type ServingDependencies } from './context.ts';
import { watchPoolUsage } from './db/database.ts';
import { countStatusTransitions, EnvelopeEventHub, publishOnCommit } from './domain/live/envelope-event-hub.ts';
import { watchOutboxBacklog } from './domain/outbox/backlog.ts';
import { graphqlBodyLimitPlugin } from './graphql/body-limit.ts';
import { GRAPHQL_ENDPOINT, GRAPHQL_SSE_ENDPOINT } from './graphql/endpoints.ts';
import { boundedErrorsPlugin, createErrorMask } from './graphql/errors.ts';
import { GRAPHIQL_ASSET_PATH, GRAPHIQL_EXAMPLE_OPERATION, graphiqlAssetsPlugin, renderLocalGraphiQL } from './graphql/graphiql.ts';
import { graphqlLimitPlugins } from './graphql/limits.ts';
import { liveSsePlugin, sharedSubscriptionPlugin } from './graphql/live-fanout.ts';
import { createLeanLiveStatus } from './graphql/live-lean.ts';
import { createLiveSseServer, type LiveSseServer } from './graphql/live-sse.ts';
import { graphqlMetricsPlugin } from './graphql/metrics.ts';
import { graphqlPassThroughPlugin, KnownOperations } from './graphql/pass-through.ts';
import { createPassThroughHttp, type PassThroughHttp } from './graphql/pass-through-http.ts';
import { graphqlRateLimitPlugin } from './graphql/rate-limit.ts';
import { protoKeyInLiteralRule } from './graphql/scalars.ts';
import { schema } from './graphql/schema.ts';
import { unstorableTextPlugin } from './graphql/text-input.ts';
import { graphqlTracingPlugin } from './graphql/tracing.ts';
import { logRequest } from './http/access-log.ts';
import { type NodeAnswerRecorder, wasRefusedBelowTheFaces } from './http/body-guard.ts';
import { httpMetricsPlugin, METRICS_PATH, metricsEndpointPlugin, observeRequest, UNMATCHED_ROUTE } from './http/metrics.ts';
import { createRateLimiter } from './http/rate-limit.ts';
import { createRequestMetadataReader, type NodeServerContext, nodeRequestMetadata, type RequestMetadataReader } from './http/request-metadata.ts';
import { requestTracingPlugin } from './http/request-tracing.ts';
import { createSecurityHeaders } from './http/security-headers.ts';
import { createMcpHttpServer, MCP_PATH, type McpHttpServer } from './mcp/serve.ts';
import { publicLinkPagePlugin } from './public-link-page/plugin.ts';
import { REFERENCE_ASSET_PATH, referenceAssetsPlugin } from './rest/routes/reference.ts';
import { createRestServer, isRestPath, type RestServer, requestUrl } from './rest/serve.ts';
import { createMetrics } from './shared/metrics.ts';
import { SIGNING_ASSET_PATH, signingPagePlugins } from './signing-page/plugin.ts';

/**
 * The yoga instance (GraphQL, GraphiQL, the signing page, static assets, /metrics) and, beside
 * it, the REST face and health endpoints served straight on Node (rest/serve.ts), the MCP face
 * at /mcp, also straight on Node (mcp/serve.ts), and GraphQL
 * over SSE, whose event streams are written straight to Node (graphql/live-sse.ts); listen()
 * (server.ts) routes each request to one of them by path (and, for SSE, its Accept header).
 */
export type App = YogaServerInstance<NodeServerContext, RequestContext> & {
  rest: RestServer;
  mcp: McpHttpServer;
  liveSse: LiveSseServer;
  passThrough: PassThroughHttp | undefined;
  /** Times and logs what the Node server answers before (or instead of) a face: refusals, WebSocket upgrades (server.ts). */
  recordNodeAnswer: NodeAnswerRecorder;
};

/** One hub per ORM when none was brought: fed by this process's own commits (the embedded database, tools). */
const hubsByOrm = new WeakMap<AppDependencies['orm'], EnvelopeEventHub>();
function inProcessEnvelopeEvents(orm: AppDependencies['orm']): EnvelopeEventHub {
  let hub = hubsByOrm.get(orm);
  if (!hub) {
    hub = new EnvelopeEventHub();
    publishOnCommit(orm, hub);
    hubsByOrm.set(orm, hub);
  }
  return hub;
}

/**
 * What the app measures beyond its requests: the outbox backlog and the pool (read at scrape
 * time), open subscriptions, and the status changes its ORM commits. Answers their end (dispose).
 */
function watchAppMetrics(dependencies: ServingDependencies): () => void {
  const { metrics, orm, envelopeEvents } = dependencies;
  const stops = [
    // The pool first: read before the scrape's own statement takes a connection.
    watchPoolUsage(orm, metrics),
    watchOutboxBacklog(metrics, { em: orm.em as EntityManager, clock: dependencies.clock, logger: dependencies.logger }),
    metrics.onScrape(() => metrics.subscriptionsOpen.set(envelopeEvents.openCount)),
    countStatusTransitions(orm, metrics),
  ];
  return () => {
    for (const stop of stops) stop();
  };
}

/** Per-operation limits (depth, cost, aliases, directives, tokens): src/graphql/limits.ts, docs/limits.md. */
export { GRAPHQL_LIMITS } from './graphql/limits.ts';

/** One access-log line per request, and the request id echoed in a response header. */
function requestLogPlugin(dependencies: AppDependencies, requestMetadataOf: RequestMetadataReader): Plugin<NodeServerContext> {
  const startedAt = new WeakMap<Request, bigint>();
  return {
    onRequest({ request, serverContext }) {
      startedAt.set(request, process.hrtime.bigint());
      requestMetadataOf(request, serverContext as NodeServerContext);
    },
    onResponse({ request, response, serverContext }) {
      const metadata = requestMetadataOf(request, serverContext as NodeServerContext);
      response.headers.set('x-request-id', metadata.requestId);
      // The client got a refusal written below yoga, which logged itself (body-guard.ts).
      if (!dependencies.logger.isLevelEnabled('info') || wasRefusedBelowTheFaces((serverContext as NodeServerContext).req)) return;
      logRequest(dependencies.logger, { metadata, method: request.method, pathname: new URL(request.url).pathname, status: response.status, startedAt: startedAt.get(request) });
    },
  };
}

/**
 * The duration histogram's sample and the access line of an answer written below the faces
 * (http/body-guard.ts: a stalled body's 408, a GraphQL upload refused from its headers; a
 * WebSocket upgrade's 101), under the route the face would have named and the request id the
 * answer carried.
 */
function nodeAnswerRecorder(dependencies: ServingDependencies, rest: RestServer): NodeAnswerRecorder {
  const { metrics, logger, config } = dependencies;
  return (request, { status, requestId, startedAt }) => {
    const method = request.method ?? 'GET';
    const pathname = requestUrl(request.url)?.pathname ?? '/';
    const route = isRestPath(pathname) ? rest.routeOf(method, pathname) : pathname === GRAPHQL_ENDPOINT || pathname === MCP_PATH ? pathname : UNMATCHED_ROUTE;
    observeRequest(metrics, { route, method, status, startedAt });
    logRequest(logger, { metadata: { ...nodeRequestMetadata(request, config.trustedProxyHops), requestId }, method, pathname, status, startedAt });
  };
}

/** Refuses `__proto__` keys in JSONObject literals by name (see protoKeyInLiteralRule). */
const protoKeyLiteralPlugin: Plugin = {
  onValidate({ addValidationRule }) {
    addValidationRule(protoKeyInLiteralRule);
  },
};

/** Adds the request id to the context of every GraphQL error, as REST does. */
function graphqlRequestIdPlugin(requestMetadataOf: RequestMetadataReader): Plugin<NodeServerContext> {
  return {
    onResultProcess({ request, result, setResult, serverContext }) {
      if (Array.isArray(result) || !result || typeof result !== 'object' || !('errors' in result) || !result.errors) return;
      const { requestId } = requestMetadataOf(request, serverContext as NodeServerContext);
      setResult({
        ...result,
        errors: result.errors.map((error) => {
          const extensions = error.extensions ?? {};
          if (typeof extensions.code !== 'string' || !String(extensions.code).includes('.')) return error;
          return new GraphQLError(error.message, {
            nodes: error.nodes,
            source: error.source,
            positions: error.positions,
            path: error.path,
            originalError: error.originalError,
            extensions: { ...extensions, context: { ...((extensions.context as object) ?? {}), requestId } },
          });
        }),
      });
    },
  };
}

/**
 * Builds the yoga instance serving GraphQL (with GraphiQL) and the REST face beside it, sharing
 * one set of dependencies. It never listens: main.ts (and tests) put it behind a Node HTTP server.
 */
export function createApp(given: AppDependencies): App {
  const { logger } = given;
  // A process-local limiter unless main (or a test) brought a shared one.
  const rateLimiter = given.rateLimiter ?? createRateLimiter({ limits: given.config.rateLimits, store: { kind: 'memory' }, logger });
  const envelopeEvents = given.envelopeEvents ?? inProcessEnvelopeEvents(given.orm);
  // One registry per app (never prom-client's global one): main brings it, tests may leave it out.
  const metrics = given.metrics ?? createMetrics();
  const dependencies = { ...given, rateLimiter, envelopeEvents, metrics };
  const stopMetrics = watchAppMetrics(dependencies);
  const securityHeaders = createSecurityHeaders({ renderGraphiQL: renderLocalGraphiQL });
  const requestMetadataOf = createRequestMetadataReader({ trustedProxyHops: dependencies.config.trustedProxyHops });
  // Pass-through operations yoga has validated and answered once are served beside it after that.
  const knownOperations = dependencies.config.graphqlPassThrough ? new KnownOperations() : undefined;
  const yoga = createYoga<NodeServerContext, RequestContext>({
    schema,
    graphqlEndpoint: GRAPHQL_ENDPOINT,
    landingPage: false,
    // One operation per request: an array body is refused (yoga's default, stated so it stays).
    batching: false,
    renderGraphiQL: securityHeaders.renderGraphiQL,
    // Replaced by graphqlBodyLimitPlugin: REST's 1 MB, answered as Request.PayloadTooLarge.
    maxRequestBodySize: false,
    graphiql: {
      title: 'Envelope service',
      headers: JSON.stringify({ 'X-Service-Api-Key': '<your team key>' }, null, 2),
      defaultQuery: GRAPHIQL_EXAMPLE_OPERATION,
    },
    maskedErrors: { maskError: createErrorMask(logger) },
    logging: {
      debug: (...args) => logger.debug(args.map(String).join(' ')),
      info: (...args) => logger.info(args.map(String).join(' ')),
      warn: (...args) => logger.warn(args.map(String).join(' ')),
      // Yoga reports every masked error here; unexpected ones are already logged in full by
      // normalizeError, and domain errors are answers, not faults, so this stays at debug.
      error: (...args) => logger.debug(args.map(String).join(' ')),
    },
    // The request context's lazy parts (the entity manager fork, the request's logger) must stay
    // lazy: envelop merges a returned context into its own with Object.assign, which calls every
    // getter, so each operation forked an entity manager and made a child logger whether it needed
    // them or not, and every open subscription kept both. The properties are defined on envelop's
    // context object instead, getters as getters.
    context: async (initialContext) => {
      const { request, ...serverContext } = initialContext;
      const context = await openRequestContext(dependencies, {
        headers: request.headers,
        metadata: requestMetadataOf(request, serverContext as NodeServerContext),
        liveConnection: (serverContext as NodeServerContext).liveConnection,
      });
      Object.defineProperties(initialContext, Object.getOwnPropertyDescriptors(context));
      // Nothing left to merge: the context is already complete.
      return {} as RequestContext;
    },
    plugins: [
      // First, so that its clock starts before any other plugin's work.
      httpMetricsPlugin(metrics, {
        exact: [GRAPHQL_ENDPOINT, GRAPHQL_SSE_ENDPOINT, '/healthz', '/readyz', METRICS_PATH],
        assetPrefixes: [GRAPHIQL_ASSET_PATH, REFERENCE_ASSET_PATH, SIGNING_ASSET_PATH],
      }),
      ...(dependencies.config.metricsToken === undefined ? [] : [metricsEndpointPlugin(metrics, dependencies.config.metricsToken, requestMetadataOf)]),
      { onDispose: stopMetrics },
      // Traces: the request id and route on the request's span; a span per GraphQL operation.
      requestTracingPlugin(requestMetadataOf, GRAPHQL_ENDPOINT),
      graphqlTracingPlugin(),
      securityHeaders.plugin,
      graphiqlAssetsPlugin(),
      referenceAssetsPlugin(),
      ...signingPagePlugins(dependencies, requestMetadataOf),
      publicLinkPagePlugin(dependencies, requestMetadataOf),
      requestLogPlugin(dependencies, requestMetadataOf),
      graphqlRateLimitPlugin(rateLimiter),
      graphqlRequestIdPlugin(requestMetadataOf),
      // No error answer over 64 KB, however many errors graphql-js found (shared/errors.ts).
      boundedErrorsPlugin(),
      // Checked while parsing and validating, before any resolver runs; each refusal is named.
      ...graphqlLimitPlugins({ introspection: dependencies.config.graphqlIntrospection }),
      protoKeyLiteralPlugin,
      // NUL and lone surrogates in variables and literals: Request.Invalid before any resolver.
      unstorableTextPlugin(),
      graphqlBodyLimitPlugin(requestMetadataOf),
      ...(dependencies.config.graphqlJit ? [useGraphQlJit()] : []),
      // After graphql-jit: plain envelope pages are answered with PostgreSQL's text, the rest executed by it.
      ...(dependencies.config.graphqlPassThrough ? [graphqlPassThroughPlugin(knownOperations)] : []),
      graphqlMetricsPlugin(metrics),
      // Live events: executed once per distinct (operation, variables, team), serialised once.
      sharedSubscriptionPlugin(),
      liveSsePlugin(),
      // graphql-sse's single connection mode (one event stream carrying many operations).
      useGraphQLSSE({ endpoint: GRAPHQL_SSE_ENDPOINT }),
    ],
  });
  const rest = createRestServer(dependencies);
  return Object.assign(yoga, {
    rest,
    recordNodeAnswer: nodeAnswerRecorder(dependencies, rest),
    mcp: createMcpHttpServer(dependencies),
    liveSse: createLiveSseServer(yoga, logger, dependencies.config.graphqlLiveLean ? createLeanLiveStatus(dependencies) : undefined),
    passThrough: knownOperations && createPassThroughHttp(dependencies, { known: knownOperations, graphqlEndpoint: GRAPHQL_ENDPOINT, rateLimiter }),
  });
}
