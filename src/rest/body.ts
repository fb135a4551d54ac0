import { InvalidRequestError, PayloadTooLargeError } from '../shared/errors.ts';
import { exceedsJsonDepth, MAX_JSON_DEPTH } from '../shared/json-depth.ts';

const MAX_JSON_BYTES = 1024 * 1024;

/**
 * Reads a JSON object body. An empty body reads as `{}` (several spec operations send none).
 * Anything that is not a JSON object is `Request.Invalid`; the size is capped while reading.
 */
export async function readJsonObject(request: Request): Promise<Record<string, unknown>> {
  const declared = Number(request.headers.get('content-length') ?? '0');
  if (declared > MAX_JSON_BYTES) throw new PayloadTooLargeError(MAX_JSON_BYTES);
  const chunks: Uint8Array[] = [];
  let total = 0;
  if (request.body) {
    for await (const chunk of request.body as unknown as AsyncIterable<Uint8Array>) {
      total += chunk.byteLength;
      if (total > MAX_JSON_BYTES) throw new PayloadTooLargeError(MAX_JSON_BYTES);
      chunks.push(chunk);
    }
  }
  const text = Buffer.concat(chunks).toString('utf8').trim();
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
  return parsed as Record<string, unknown>;
}
