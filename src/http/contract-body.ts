/**
 * The contract's JSON body, `{ version, success, payload | error }`: what the REST face answers,
 * and what any other route outside GraphQL (the signing page's document route) answers on
 * failure, so a caller reads one error shape everywhere.
 */
import { answerableError, DEFAULT_RETRY_AFTER_SECONDS, type DomainError, httpStatusForError } from '../shared/errors.ts';
import type { Answer } from './answer.ts';

export const REST_VERSION = '1';

const jsonHeaders = { 'content-type': 'application/json; charset=utf-8' };

/**
 * The Response class answers are built with. The plugin passes yoga's (`fetchAPI.Response`), which
 * its Node adapter writes out directly; the platform's own costs a stream per answer.
 */
export type ResponseClass = typeof Response;

/** `{ version, success: true, payload }` with HTTP 200 (docs/reference/contract.md §4). */
export function successAnswer(payload: Record<string, unknown>, headers: Record<string, string> = {}): Answer & { body: string } {
  return { status: 200, headers: { ...jsonHeaders, ...headers }, body: JSON.stringify({ version: REST_VERSION, success: true, payload }) };
}

/** successAnswer of a payload that is already JSON text as JSON.stringify writes it: spliced, not parsed. */
export function successAnswerOfText(payloadJson: string, headers: Record<string, string> = {}): Answer & { body: string } {
  return { status: 200, headers: { ...jsonHeaders, ...headers }, body: `{"version":"${REST_VERSION}","success":true,"payload":${payloadJson}}` };
}

export function successResponse(payload: Record<string, unknown>, headers: Record<string, string> = {}, ResponseImpl: ResponseClass = Response): Response {
  const answer = successAnswer(payload, headers);
  return new ResponseImpl(answer.body, { status: answer.status, headers: answer.headers });
}

/**
 * `{ version, success: false, error: { name, description, context } }`. The status comes from the
 * one error table, unless the operator asked for the replaced service's "always 200" behaviour;
 * the body is identical either way. `context.requestId` ties the answer to the log lines.
 */
export function errorAnswer(error: DomainError, { requestId, alwaysHttp200 }: { requestId: string; alwaysHttp200: boolean }): Answer & { body: string } {
  const status = alwaysHttp200 ? 200 : httpStatusForError(error.name);
  const body = {
    version: REST_VERSION,
    success: false,
    // Fitted under 64 KB whatever the error holds (shared/errors.ts).
    error: answerableError(error, { requestId }),
  };
  const headers: Record<string, string> = { ...jsonHeaders };
  // Every 503 says when to come back, whether or not its error named a time (RFC 9110 §10.2.3).
  const retryAfter = error.context.retryAfterSeconds ?? (httpStatusForError(error.name) === 503 ? DEFAULT_RETRY_AFTER_SECONDS : undefined);
  if (typeof retryAfter === 'number') headers['retry-after'] = String(retryAfter);
  return { status, headers, body: JSON.stringify(body) };
}

export function errorResponse(error: DomainError, options: { requestId: string; alwaysHttp200: boolean }, ResponseImpl: ResponseClass = Response): Response {
  const answer = errorAnswer(error, options);
  return new ResponseImpl(answer.body, { status: answer.status, headers: answer.headers });
}
