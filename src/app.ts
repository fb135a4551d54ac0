import { useGraphQlJit } from '@envelop/graphql-jit';
import { maxAliasesPlugin } from '@escape.tech/graphql-armor-max-aliases';
import { maxTokensPlugin } from '@escape.tech/graphql-armor-max-tokens';
import { createYoga, type Plugin, type YogaServerInstance } from 'graphql-yoga';
import { GraphQLError } from 'graphql';
import { createRequestContext, type AppDependencies, type RequestContext } from './context.ts';
import { graphqlBodyLimitPlugin } from './graphql/body-limit.ts';
import { createErrorMask } from './graphql/errors.ts';
import { schema } from './graphql/schema.ts';
import { createRequestMetadataReader, type NodeServerContext, type RequestMetadataReader } from './request-metadata.ts';
import { restPlugin } from './rest/plugin.ts';

export type App = YogaServerInstance<NodeServerContext, RequestContext>;

/** Per-operation limits: far above what any real query here needs (GraphiQL's introspection is ~600 tokens). */
export const GRAPHQL_LIMITS = { aliases: 20, tokens: 5000 };

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
      if (!dependencies.logger.isLevelEnabled('info')) return;
      const started = startedAt.get(request);
      const durationMs = started === undefined ? undefined : Number(process.hrtime.bigint() - started) / 1e6;
      const url = new URL(request.url);
      dependencies.logger.info(
        { requestId: metadata.requestId, method: request.method, path: url.pathname, status: response.status, durationMs, ip: metadata.ip },
        'request',
      );
    },
  };
}

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
 * Builds the one yoga instance serving GraphQL (with GraphiQL), REST and health. It never
 * listens: main.ts (and tests) put it behind a Node HTTP server.
 */
export function createApp(dependencies: AppDependencies): App {
  const { logger } = dependencies;
  const requestMetadataOf = createRequestMetadataReader({ trustedProxyHops: dependencies.config.trustedProxyHops });
  return createYoga<NodeServerContext, RequestContext>({
    schema,
    graphqlEndpoint: '/graphql',
    landingPage: false,
    // Replaced by graphqlBodyLimitPlugin: REST's 1 MB, answered as Request.PayloadTooLarge.
    maxRequestBodySize: false,
    graphiql: { title: 'Envelope service', headers: JSON.stringify({ 'X-Service-Api-Key': '<your team key>' }) },
    maskedErrors: { maskError: createErrorMask(logger) },
    logging: {
      debug: (...args) => logger.debug(args.map(String).join(' ')),
      info: (...args) => logger.info(args.map(String).join(' ')),
      warn: (...args) => logger.warn(args.map(String).join(' ')),
      // Yoga reports every masked error here; unexpected ones are already logged in full by
      // normalizeError, and domain errors are answers, not faults, so this stays at debug.
      error: (...args) => logger.debug(args.map(String).join(' ')),
    },
    context: ({ request, ...serverContext }) =>
      createRequestContext(dependencies, {
        headers: request.headers,
        metadata: requestMetadataOf(request, serverContext as NodeServerContext),
      }),
    plugins: [
      requestLogPlugin(dependencies, requestMetadataOf),
      restPlugin(dependencies, requestMetadataOf),
      graphqlRequestIdPlugin(requestMetadataOf),
      graphqlBodyLimitPlugin(requestMetadataOf),
      // The schema has no cycles, so depth is bounded by it; what a client can still multiply is
      // work per request, through aliases (each alias re-runs its field) and sheer document size.
      maxAliasesPlugin({ n: GRAPHQL_LIMITS.aliases }),
      maxTokensPlugin({ n: GRAPHQL_LIMITS.tokens }),
      ...(dependencies.config.graphqlJit ? [useGraphQlJit()] : []),
    ],
  });
}
