import type { IncomingMessage } from 'node:http';
import { type ExecutionResult, GraphQLError } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { RequestContext } from '../context.ts';
import { consumeForRequest, type RateLimitDecision, RateLimitedError, type RateLimiter, rateLimitHeaders } from '../http/rate-limit.ts';
import { decisionTakenBesideYoga } from './pass-through-http.ts';

/**
 * The GraphQL face of the rate limit: every executed operation counts once, against the same
 * budget as REST requests of the same key. A refused operation is not executed; it answers HTTP
 * 429 with the error `Request.RateLimited`, `Retry-After`, and the `X-RateLimit-*` headers that
 * every counted answer carries. Documents refused by parsing or validation never execute and are
 * not counted (they cost no database work).
 */
export function graphqlRateLimitPlugin(limiter: RateLimiter): Plugin {
  const decisions = new WeakMap<Request, RateLimitDecision>();
  async function consume(contextValue: unknown, setResultAndStopExecution: (result: ExecutionResult) => void) {
    const context = contextValue as RequestContext & { request: Request; req?: IncomingMessage };
    // Already counted beside yoga (graphql/pass-through-http.ts), which handed the request here: not counted twice.
    const taken = decisionTakenBesideYoga(context.req);
    const decision = taken ? taken.decision : await consumeForRequest(limiter, context);
    if (!decision) return;
    decisions.set(context.request, decision);
    if (decision.allowed) return;
    const error = new RateLimitedError(decision);
    setResultAndStopExecution({
      errors: [
        new GraphQLError(error.description, {
          extensions: {
            code: error.name,
            name: error.name,
            context: error.context,
            http: { status: 429, headers: rateLimitHeaders(decision) },
          },
        }),
      ],
    });
  }
  return {
    // A subscription counts once, when it is opened; the events it delivers later are not requests.
    onExecute: ({ args, setResultAndStopExecution }) => consume(args.contextValue, setResultAndStopExecution),
    onSubscribe: ({ args, setResultAndStopExecution }) => consume(args.contextValue, setResultAndStopExecution),
    onResponse({ request, response }) {
      const decision = decisions.get(request);
      if (!decision) return;
      for (const [name, value] of Object.entries(rateLimitHeaders(decision))) response.headers.set(name, value);
    },
  };
}
