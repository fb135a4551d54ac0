import { httpStatusForError, type DomainError } from '../shared/errors.ts';

export const REST_VERSION = '1';

const jsonHeaders = { 'content-type': 'application/json; charset=utf-8' };

/** `{ version, success: true, payload }` with HTTP 200 (contract §4). */
export function successResponse(payload: Record<string, unknown>): Response {
  return new Response(JSON.stringify({ version: REST_VERSION, success: true, payload }), { status: 200, headers: jsonHeaders });
}

/**
 * `{ version, success: false, error: { name, description, context } }`. The status comes from the
 * one error table, unless the operator asked for the replaced service's "always 200" behaviour;
 * the body is identical either way. `context.requestId` ties the answer to the log lines.
 */
export function errorResponse(
  error: DomainError,
  { requestId, alwaysHttp200 }: { requestId: string; alwaysHttp200: boolean },
): Response {
  const status = alwaysHttp200 ? 200 : httpStatusForError(error.name);
  const body = {
    version: REST_VERSION,
    success: false,
    error: { name: error.name, description: error.description, context: { ...error.context, requestId } },
  };
  const headers: Record<string, string> = { ...jsonHeaders };
  const retryAfter = error.context.retryAfterSeconds;
  if (typeof retryAfter === 'number') headers['retry-after'] = String(retryAfter);
  return new Response(JSON.stringify(body), { status, headers });
}
