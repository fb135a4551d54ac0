import { refuseUnstorableText } from '../domain/validation.ts';
import { InvalidRequestError, PayloadTooLargeError } from '../shared/errors.ts';
import { exceedsJsonDepth, MAX_JSON_DEPTH } from '../shared/json-depth.ts';

/**
 * What reading a body needs of a request: its headers and its body stream. A WHATWG `Request`
 * is one; so is the REST face's view of a Node request (rest/serve.ts).
 */
export type BodySource = { headers: { get(name: string): string | null }; body: ReadableStream<Uint8Array> | null };

/** The largest JSON body either face reads (REST bodies, GraphQL POST bodies): 1 MB. */
export const MAX_JSON_BYTES = 1024 * 1024;

/**
 * Reads a whole body, at most `limitBytes` of it, whatever its transfer encoding: a declared
 * Content-Length over the limit is refused before reading, a chunked body as soon as the bytes
 * counted pass it (`Request.PayloadTooLarge`). Past the limit the stream is only let go, never
 * cancelled: cancelling would destroy the socket under the answer (a reset instead of the 413);
 * the server closes the connection after the answer instead (see body-guard.ts).
 */
export async function readBodyBytes(request: BodySource, limitBytes: number): Promise<Buffer> {
  const declared = Number(request.headers.get('content-length') ?? '0');
  if (declared > limitBytes) throw new PayloadTooLargeError(limitBytes);
  if (!request.body) return Buffer.alloc(0);
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > limitBytes) throw new PayloadTooLargeError(limitBytes);
      chunks.push(value);
    }
  } catch (error) {
    if (error instanceof PayloadTooLargeError) throw error;
    // The client went away, or the body guard gave up on a stalled body (and answered already).
    throw new InvalidRequestError([{ path: '', message: 'the request body was cut off before it ended' }]);
  } finally {
    reader.releaseLock();
  }
  return Buffer.concat(chunks);
}

/**
 * Reads a JSON object body. An empty body reads as `{}` (several spec operations send none).
 * Anything that is not a JSON object, or that holds a NUL or a lone surrogate anywhere (a key or a
 * string), is `Request.Invalid`; the size is capped while reading.
 */
export async function readJsonObject(request: BodySource): Promise<Record<string, unknown>> {
  const text = (await readBodyBytes(request, MAX_JSON_BYTES)).toString('utf8').trim();
  if (text === '') return {};
  const contentType = request.headers.get('content-type') ?? '';
  if (contentType !== '' && !/^application\/(.+\+)?json\b/i.test(contentType)) {
    throw new InvalidRequestError([{ path: '', message: 'the body must be JSON with Content-Type: application/json' }]);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new InvalidRequestError([{ path: '', message: 'the body is not valid JSON' }]);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new InvalidRequestError([{ path: '', message: 'the body must be a JSON object' }]);
  }
  // The body itself wraps the caller's JSON values (a context, a field value) a level or two deep.
  if (exceedsJsonDepth(parsed, MAX_JSON_DEPTH + 4)) {
    throw new InvalidRequestError([{ path: '', message: `JSON may nest at most ${MAX_JSON_DEPTH} levels deep` }]);
  }
  // Every text of every body at once, whatever field it is meant for (the one check, see there).
  refuseUnstorableText(parsed);
  return parsed as Record<string, unknown>;
}
