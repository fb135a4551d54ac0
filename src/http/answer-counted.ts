import type { RequestContext } from '../context.ts';
import type { DomainError } from '../shared/errors.ts';
import { normalizeError } from '../shared/normalize-error.ts';
import type { Answer } from './answer.ts';
import { errorAnswer, errorResponse } from './contract-body.ts';
import { consumeForRequest, type RateLimitDecision, RateLimitedError, type RateLimiter, rateLimitHeaders } from './rate-limit.ts';

type Counting = {
  rateLimiter: RateLimiter | undefined;
  context: RequestContext;
  requestId: string;
  /** REST_ERRORS_HTTP200 for the REST face; routes outside it keep real statuses. */
  alwaysHttp200: boolean;
  /** Which budget of a signing link the request spends (consumeForRequest); its other requests' by default. */
  linkScope?: 'signingToken' | 'signingPage';
};

/** The rule of answerCounted and countedAnswer, for either kind of answer. */
async function counted<T>(
  { rateLimiter, context, linkScope }: Counting,
  work: () => Promise<T>,
  failed: (error: DomainError) => T,
): Promise<{ answer: T; limit: RateLimitDecision | undefined }> {
  const limit = rateLimiter ? await consumeForRequest(rateLimiter, context, linkScope) : undefined;
  try {
    if (limit && !limit.allowed) throw new RateLimitedError(limit);
    return { answer: await work(), limit };
  } catch (error) {
    return { answer: failed(normalizeError(error, context.log)), limit };
  }
}

/**
 * answerCounted for answers written straight to Node (the REST face, rest/serve.ts): the same
 * counting, refusal, budget headers and error body. `onRefused` hears of each refusal (the
 * listener's over-budget marks, rate-limit.ts).
 */
export async function countedAnswer(counting: Counting & { onRefused?: (decision: RateLimitDecision) => void }, work: () => Promise<Answer>): Promise<Answer> {
  const { answer, limit } = await counted(counting, work, (error) => errorAnswer(error, counting));
  if (limit) {
    Object.assign(answer.headers, rateLimitHeaders(limit));
    if (!limit.allowed) counting.onRefused?.(limit);
  }
  return answer;
}

/**
 * How a request outside GraphQL is answered (the REST face, the signing page's document route):
 * counted against its budget before anything else runs, refused when over it, every answer (refusals
 * included) carrying the budget's headers, and any failure turned into the contract's error body.
 */
export async function answerCounted(counting: Counting & { endResponse: (response: Response) => void; ResponseImpl: typeof Response }, work: () => Promise<Response>): Promise<void> {
  const { answer: response, limit } = await counted(counting, work, (error) => errorResponse(error, counting, counting.ResponseImpl));
  if (limit) for (const [name, value] of Object.entries(rateLimitHeaders(limit))) response.headers.set(name, value);
  counting.endResponse(response);
}
