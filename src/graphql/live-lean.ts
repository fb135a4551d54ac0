import type { IncomingMessage, ServerResponse } from 'node:http';
import { type DocumentNode, type ExecutionResult, execute, getVariableValues, Kind, type OperationDefinitionNode, parse, validate } from 'graphql';
import { openRequestContext, type ServingDependencies } from '../context.ts';
import { type LiveItem, subscribeEnvelopeStatusChanged } from '../domain/live/live.service.ts';
import { refuseUnstorableText } from '../domain/validation.ts';
import { logRequest } from '../http/access-log.ts';
import { corsHeaders } from '../http/cors.ts';
import { observeRequest } from '../http/metrics.ts';
import { consumeForRequest, rateLimitHeaders } from '../http/rate-limit.ts';
import { headerOf, nodeRequestMetadata } from '../http/request-metadata.ts';
import { setRequestId, setRequestRoute } from '../http/request-tracing.ts';
import { applySecurityHeaders, recordHeaders } from '../http/security-headers.ts';
import { GRAPHQL_ENDPOINT } from './endpoints.ts';
import { createErrorMask } from './errors.ts';
import { sharedEventResult, writeLiveStream } from './live-fanout.ts';
import { decidedBesideYoga } from './pass-through-http.ts';
import { schema } from './schema.ts';

/*
 * The lean path of live status (docs/decisions.md, "Live status beside envelop"): a GraphQL-over-SSE
 * subscription to `envelopeStatusChanged` whose document is one plain selection of the event's
 * fields is opened here, beside yoga, and its events are written from the subscriber's queue
 * straight to its response. Through yoga, each subscriber held envelop's chain of async
 * iterators (error masking, metrics, tracing, the sharing map: ~34 closures, ~4.5 KiB), the
 * merged request context, yoga's `Request`, and an opening's garbage of yoga's whole request
 * pipeline; here it holds its queue (the hub's watcher), a small mapping iterator and the writer.
 *
 * Only the successful opening is served here. Anything else goes to yoga whole, which answers as
 * it always did: a document or variables this path does not recognise, and every refusal (no or a
 * bad key, an unknown envelope, the subscription limits, the rate limit). What the answer carries
 * is what yoga's plugins give it, from the same shared pieces the REST face uses: the request id,
 * CORS, security headers, the rate limit's headers, the access log line, the request histogram
 * under `/graphql`, the operation's duration, the span's route and request id. The events are the
 * bytes yoga's path writes: the same document executed (once per event for every subscriber of
 * the team with the same document and variables), the error that ends a subscription masked by
 * the same mask.
 */

/** The event's fields a recognised document may select (EnvelopeEvent's leaves). */
const EVENT_FIELDS = new Set(['envelopeId', 'sequence', 'type', 'status', 'at', 'revision', '__typename']);
/** Longer documents go to yoga (its token limit and the rest apply there). */
const MAX_DOCUMENT_LENGTH = 2_000;
/** Documents recognised (or not) by their text: clients send the same few over and over. */
const MAX_REMEMBERED = 256;

type Recognised = { document: DocumentNode; operation: OperationDefinitionNode; variableName: string | undefined };

const remembered = new Map<string, Recognised | false>();

/**
 * The document when it is a single subscription operation with `envelopeStatusChanged` as its only
 * field, its `envelopeId` absent or a variable, selecting only the event's own fields, with no
 * aliases, directives or fragments, and valid against the schema; else undefined (yoga serves it).
 */
function recognise(query: string): Recognised | undefined {
  // Checked before remembering: a long text is never kept.
  if (query.length > MAX_DOCUMENT_LENGTH) return undefined;
  const known = remembered.get(query);
  if (known !== undefined) return known || undefined;
  const recognised = recogniseNew(query);
  if (remembered.size >= MAX_REMEMBERED) remembered.delete(remembered.keys().next().value as string);
  remembered.set(query, recognised ?? false);
  return recognised;
}

function recogniseNew(query: string): Recognised | undefined {
  let document: DocumentNode;
  try {
    document = parse(query);
  } catch {
    return undefined;
  }
  if (document.definitions.length !== 1) return undefined;
  const operation = document.definitions[0];
  if (operation.kind !== Kind.OPERATION_DEFINITION || operation.operation !== 'subscription' || operation.directives?.length) return undefined;
  if (operation.variableDefinitions?.some((definition) => definition.directives?.length)) return undefined;
  const [root, ...others] = operation.selectionSet.selections;
  if (others.length > 0 || root.kind !== Kind.FIELD || root.name.value !== 'envelopeStatusChanged' || root.alias || root.directives?.length) return undefined;
  let variableName: string | undefined;
  for (const argument of root.arguments ?? []) {
    if (argument.name.value !== 'envelopeId' || argument.value.kind !== Kind.VARIABLE) return undefined;
    variableName = argument.value.name.value;
  }
  const fields = root.selectionSet?.selections ?? [];
  if (fields.length === 0) return undefined;
  for (const field of fields) {
    if (field.kind !== Kind.FIELD || field.alias || field.directives?.length || field.arguments?.length || field.selectionSet || !EVENT_FIELDS.has(field.name.value)) return undefined;
  }
  if (validate(schema, document).length > 0) return undefined;
  return { document, operation, variableName };
}

/** The GraphQL-over-HTTP parameters of a request, when they are plain: a query and an optional variables object and operation name. */
type Parameters = { query: string; variables: Record<string, unknown>; operationName: string | undefined };

function parametersOf(request: IncomingMessage, body: Buffer | undefined): Parameters | undefined {
  let given: unknown;
  if (request.method === 'GET') {
    const url = new URL(request.url ?? '/', 'http://localhost');
    const variables = url.searchParams.get('variables');
    try {
      given = {
        query: url.searchParams.get('query') ?? undefined,
        variables: variables === null ? undefined : JSON.parse(variables),
        operationName: url.searchParams.get('operationName') ?? undefined,
      };
    } catch {
      return undefined;
    }
  } else {
    if (!body || !/^application\/json\b/i.test(request.headers['content-type'] ?? '')) return undefined;
    try {
      given = JSON.parse(body.toString());
    } catch {
      return undefined;
    }
  }
  if (typeof given !== 'object' || given === null || Array.isArray(given)) return undefined;
  const { query, variables, operationName, ...rest } = given as Record<string, unknown>;
  // Extensions (persisted queries and the like) are yoga's to read.
  if (Object.keys(rest).length > 0 || typeof query !== 'string') return undefined;
  if (variables !== undefined && variables !== null && (typeof variables !== 'object' || Array.isArray(variables))) return undefined;
  if (operationName !== undefined && operationName !== null && typeof operationName !== 'string') return undefined;
  return { query, variables: (variables as Record<string, unknown> | null) ?? {}, operationName: operationName ?? undefined };
}

/** Subscriptions opened on this path in this process (tests read it: the path is taken). */
export const liveLeanCounters = { opened: 0 };

const SSE_HEADERS = { 'content-type': 'text/event-stream', connection: 'keep-alive', 'cache-control': 'no-cache', 'content-encoding': 'none' };

export type LeanLiveStatus = {
  /**
   * Opens the subscription of a request `live-sse.ts` accepted, when it is one this path serves
   * and it succeeds; resolves false when yoga is to answer it instead (nothing has been written).
   */
  tryServe(request: IncomingMessage, response: ServerResponse, body: Buffer | undefined): Promise<boolean>;
};

export function createLeanLiveStatus(dependencies: ServingDependencies): LeanLiveStatus {
  const { config, logger, metrics, rateLimiter } = dependencies;
  const mask = createErrorMask(logger);

  return {
    async tryServe(request, response, body) {
      const startedAt = process.hrtime.bigint();
      const parameters = parametersOf(request, body);
      const recognised = parameters && recognise(parameters.query);
      if (!parameters || !recognised) return false;
      const { document, operation, variableName } = recognised;
      if (parameters.operationName !== undefined && parameters.operationName !== operation.name?.value) return false;
      try {
        // NUL and lone surrogates: yoga's Request.Invalid.
        refuseUnstorableText(parameters.variables);
      } catch {
        return false;
      }
      const coerced = getVariableValues(schema, operation.variableDefinitions ?? [], parameters.variables);
      if (coerced.errors) return false;
      const envelopeId = variableName === undefined ? undefined : coerced.coerced[variableName];
      const metadata = nodeRequestMetadata(request, config.trustedProxyHops);
      const headers = { get: (name: string) => headerOf(request, name) ?? null };
      const context = await openRequestContext(dependencies, { headers, metadata });
      const endTimer = metrics.graphqlOperationDuration.startTimer({ operation_name: metrics.operationNameLabel(operation.name?.value), operation_type: 'subscription' });
      let stream: AsyncIterableIterator<LiveItem>;
      try {
        stream = (await subscribeEnvelopeStatusChanged(context, {
          envelopeId: envelopeId === null || envelopeId === undefined ? null : String(envelopeId),
        })) as AsyncIterableIterator<LiveItem>;
      } catch {
        // Refused (credentials, the envelope, the limits): yoga answers it, as it always has.
        return false;
      }
      // Counted once opened, as yoga counts an operation that executes. A refusal is yoga's to write,
      // with this decision: its rate-limit plugin takes it instead of counting the request again.
      const decision = rateLimiter ? await consumeForRequest(rateLimiter, context) : undefined;
      if ((decision && !decision.allowed) || response.destroyed || response.headersSent) {
        await stream.return?.();
        if (response.destroyed || response.headersSent) return true;
        decidedBesideYoga(request, { decision });
        return false;
      }
      endTimer({ result: 'success' });
      const { teamId } = await context.caller();
      const sharingKey = `lean\u0000${teamId}\u0000${parameters.query}\u0000${operation.name?.value ?? ''}\u0000${JSON.stringify(coerced.coerced)}`;
      const variableValues = coerced.coerced;
      const resultOf = (item: LiveItem): ExecutionResult | Promise<ExecutionResult> => {
        // The resolvers read only the event: no request context is kept for them.
        const run = () => execute({ schema, document, rootValue: item, contextValue: {}, variableValues }) as ExecutionResult | Promise<ExecutionResult>;
        if (!('ended' in item)) return sharedEventResult(item, sharingKey, run);
        // The error a subscription ends with: this subscriber's own, masked as yoga masks it.
        return Promise.resolve(run()).then((result) => (result.errors ? { ...result, errors: result.errors.map((error) => mask(error) as never) } : result));
      };
      const results: AsyncIterator<ExecutionResult> = {
        async next() {
          const next = await stream.next();
          if (next.done) return { value: undefined, done: true };
          return { value: await resultOf(next.value), done: false };
        },
        async return() {
          await stream.return?.();
          return { value: undefined, done: true };
        },
      };
      const answerHeaders: Record<string, string> = { ...SSE_HEADERS };
      const cors = corsHeaders((name) => headerOf(request, name));
      if (cors) Object.assign(answerHeaders, cors);
      if (decision) Object.assign(answerHeaders, rateLimitHeaders(decision));
      applySecurityHeaders(recordHeaders(answerHeaders));
      answerHeaders['x-request-id'] = metadata.requestId;
      setRequestId(request, metadata.requestId);
      setRequestRoute(request, GRAPHQL_ENDPOINT);
      const method = request.method ?? 'GET';
      observeRequest(metrics, { route: GRAPHQL_ENDPOINT, method, status: 200, startedAt });
      logRequest(logger, { metadata, method, pathname: GRAPHQL_ENDPOINT, status: 200, startedAt });
      writeLiveStream(response, { status: 200, headers: answerHeaders }, results);
      liveLeanCounters.opened += 1;
      return true;
    },
  };
}
