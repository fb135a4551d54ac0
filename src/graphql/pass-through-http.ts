import type { IncomingMessage, ServerResponse } from 'node:http';
import { openRequestContext, type RequestContext, type ServingDependencies } from '../context.ts';
import { unstorableTextIssues } from '../domain/validation.ts';
import { logRequest } from '../http/access-log.ts';
import { MAX_JSON_BYTES } from '../http/body.ts';
import { corsHeaders } from '../http/cors.ts';
import { observeRequest } from '../http/metrics.ts';
import { consumeForRequest, type RateLimitDecision, type RateLimiter, rateLimitHeaders } from '../http/rate-limit.ts';
import { headerOf, nodeRequestMetadata } from '../http/request-metadata.ts';
import { applySecurityHeaders, recordHeaders } from '../http/security-headers.ts';
import { isTracing } from '../shared/tracing.ts';
import { observeOperation } from './metrics.ts';
import { answerPlan, KnownOperations } from './pass-through.ts';

/*
 * Pass-through operations served beside yoga (docs/decisions.md, "GraphQL pass-through beside
 * yoga"): a JSON POST to /graphql whose text (query and operation name) yoga has parsed,
 * validated (every limit included) and the pass-through has answered before is answered here,
 * straight on Node's request and response, with the same statement and the same bytes: no WHATWG
 * Request or Response, no plugin chain, no parse or validation cache lookups, no envelop
 * context. What yoga's plugins give such an answer is given here with the same shared pieces: the
 * request id and access log, security and CORS headers, the rate limit counted once with its
 * headers, the request and operation histograms. Anything else (an unknown text, bad variables,
 * no caller, a refusal, a failure of the read) goes to yoga with the body already read, and with
 * the rate limit's decision when it was already taken, so it is counted once and answered exactly
 * as before. With tracing on, every request goes to yoga, whose spans stay as they are.
 */

type NodeListener = (request: IncomingMessage, response: ServerResponse) => void;

/** One request beside yoga: the Node pair, yoga's listener to hand it to, its body as read, when it started. */
type Exchange = { request: IncomingMessage; response: ServerResponse; yoga: NodeListener; body: Buffer; startedAt: bigint };

/** A decision taken here before handing the request to yoga: its rate-limit plugin takes it instead of counting again. */
const decidedBeforeYoga = new WeakMap<IncomingMessage, { decision: RateLimitDecision | undefined }>();

/** The rate limit's decision already taken for a Node request beside yoga, if any. */
export function decisionTakenBesideYoga(request: IncomingMessage | undefined): { decision: RateLimitDecision | undefined } | undefined {
  return request ? decidedBeforeYoga.get(request) : undefined;
}

/** Records the decision taken beside yoga for a request yoga will answer (this path's and live-lean.ts's). */
export function decidedBesideYoga(request: IncomingMessage, decided: { decision: RateLimitDecision | undefined }): void {
  decidedBeforeYoga.set(request, decided);
}

export type PassThroughHttp = {
  /** Whether a request may be a known pass-through operation (checked on its head alone). */
  accepts(request: IncomingMessage, pathname: string): boolean;
  /** Answers it, or hands it to `yoga` with its body read. */
  serve(request: IncomingMessage, response: ServerResponse, yoga: NodeListener): void;
  /** Requests answered here (for tests). */
  readonly answered: number;
};

const ANSWERABLE_TYPES = new Set(['application/json', 'application/graphql-response+json', '*/*']);

/**
 * The media type yoga answers a successful operation with, for an Accept header listing only JSON
 * types without parameters (else undefined: yoga answers it). Yoga's result processors try the
 * listed types last to first and keep the last match, so the first listed type decides:
 * `application/graphql-response+json` for itself, `application/json` for itself and for `*\/*`
 * (graphql-yoga's plugins/use-result-processor.js and result-processor/accept.js).
 */
function answerMediaType(accept: string | undefined): string | undefined {
  const types = (accept || '*/*').replace(/\s/g, '').toLowerCase().split(',');
  if (!types.every((type) => ANSWERABLE_TYPES.has(type))) return undefined;
  return types[0] === 'application/graphql-response+json' ? types[0] : 'application/json';
}

const JSON_TYPE = /^application\/json\s*(?:;\s*charset=utf-8\s*)?$/i;

export function createPassThroughHttp(dependencies: ServingDependencies, options: { known: KnownOperations; graphqlEndpoint: string; rateLimiter: RateLimiter }): PassThroughHttp {
  const { known, graphqlEndpoint, rateLimiter } = options;
  const { config, logger, metrics } = dependencies;
  let answered = 0;

  /** Yoga answers it, with the body read here given to its Node adapter as the parsed request's body. */
  function toYoga({ request, response, yoga, body }: Exchange, decided?: { decision: RateLimitDecision | undefined }) {
    if (decided) decidedBesideYoga(request, decided);
    (request as IncomingMessage & { body?: unknown }).body = body;
    yoga(request, response);
  }

  async function answer(exchange: Exchange): Promise<void> {
    const { request, response, body, startedAt } = exchange;
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString('utf8'));
    } catch {
      return toYoga(exchange);
    }
    const { query, operationName, variables, ...rest } = (parsed ?? {}) as { query?: unknown; operationName?: unknown; variables?: unknown };
    const plainRequest =
      typeof parsed === 'object' &&
      parsed !== null &&
      !Array.isArray(parsed) &&
      typeof query === 'string' &&
      (operationName === undefined || operationName === null || typeof operationName === 'string') &&
      (variables === undefined || variables === null || (typeof variables === 'object' && !Array.isArray(variables))) &&
      Object.keys(rest).length === 0;
    if (!plainRequest) return toYoga(exchange);
    const key = KnownOperations.key(query, operationName as string | null | undefined);
    const operation = known.get(key);
    // Unknown text: yoga parses and validates it; if the pass-through answers it, it is known from then on.
    if (!operation || unstorableTextIssues(variables ?? {}).length > 0) return toYoga(exchange);
    const metadata = nodeRequestMetadata(request, config.trustedProxyHops);
    let context: RequestContext;
    let decision: RateLimitDecision | undefined;
    try {
      context = await openRequestContext(dependencies, { headers: { get: (name) => headerOf(request, name) ?? null }, metadata });
      // Counted as yoga's rate-limit plugin counts an executed operation, once.
      decision = await consumeForRequest(rateLimiter, context);
    } catch {
      // Yoga meets the same failure and answers it as it always has.
      return toYoga(exchange);
    }
    if (decision && !decision.allowed) return toYoga(exchange, { decision });
    const executionStartedAt = process.hrtime.bigint();
    let text: string | null;
    try {
      text = await answerPlan(operation.plan, { schema: operation.schema, variableValues: variables ?? {}, context });
    } catch {
      text = null;
    }
    // A bad cursor, filter or variable, no caller: yoga executes it and answers as always.
    if (text === null) return toYoga(exchange, { decision });
    if (response.headersSent || response.writableEnded) return;
    answered += 1;
    const name = operation.plan.operation.name?.value ?? (operationName as string | null | undefined);
    observeOperation(metrics, { operation_name: metrics.operationNameLabel(name), operation_type: 'query', result: 'success', startedAt: executionStartedAt });
    const headers: Record<string, string> = { 'content-type': `${answerMediaType(headerOf(request, 'accept'))}; charset=utf-8`, 'content-length': String(Buffer.byteLength(text)) };
    const cors = corsHeaders((header) => headerOf(request, header));
    if (cors) Object.assign(headers, cors);
    if (decision) Object.assign(headers, rateLimitHeaders(decision));
    applySecurityHeaders(recordHeaders(headers));
    headers['x-request-id'] = metadata.requestId;
    observeRequest(metrics, { route: graphqlEndpoint, method: 'POST', status: 200, startedAt });
    logRequest(logger, { metadata, method: 'POST', pathname: graphqlEndpoint, status: 200, startedAt });
    response.writeHead(200, headers);
    response.end(text);
  }

  return {
    get answered() {
      return answered;
    },
    accepts(request, pathname) {
      if (request.method !== 'POST' || pathname !== graphqlEndpoint || known.size === 0 || isTracing()) return false;
      const length = Number(request.headers['content-length']);
      // A declared length within the JSON limit: the body is read whole here, and yoga's own limit would have let it through.
      return (
        Number.isInteger(length) &&
        length > 0 &&
        length <= MAX_JSON_BYTES &&
        JSON_TYPE.test(request.headers['content-type'] ?? '') &&
        answerMediaType(headerOf(request, 'accept')) !== undefined
      );
    },
    serve(request, response, yoga) {
      const startedAt = process.hrtime.bigint();
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      // A client gone mid-body: nothing is answered (the socket is closed), and the failure is not the process's.
      request.once('error', () => {});
      request.once('end', () => {
        // The body guard may have answered a stalled body already (http/body-guard.ts).
        if (response.headersSent || response.writableEnded) return;
        const body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
        answer({ request, response, yoga, body, startedAt }).catch((error: unknown) => {
          logger.error({ err: error }, 'could not answer a pass-through operation');
          if (!response.headersSent) response.writeHead(500);
          response.end();
        });
      });
    },
  };
}
