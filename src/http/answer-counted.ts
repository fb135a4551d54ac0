import type { RequestContext } from '../context.ts';
import { normalizeError } from '../shared/normalize-error.ts';
import { errorResponse } from './contract-body.ts';
import { consumeForRequest, RateLimitedError, rateLimitHeaders, type RateLimiter } from './rate-limit.ts';

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
