import type { IncomingMessage } from 'node:http';
import { PassThrough, Readable } from 'node:stream';
import busboy from 'busboy';
import { DocumentMissingError } from '../domain/document/document.errors.ts';
import { InvalidRequestError } from '../shared/errors.ts';

const MAX_TEXT_FIELD_BYTES = 64 * 1024;

export type MultipartUpload<Staged> = { staged: Staged; fields: Record<string, unknown> };

/** Multipart text fields arrive as strings; numbers and JSON objects are read back as such. */
function readFieldValue(name: string, value: string): unknown {
  if (name === 'order' && /^-?\d+$/.test(value.trim())) return Number(value.trim());
  if (name === 'context') {
    try {
      return JSON.parse(value);
    } catch {
      return value;
    }
  }
  return value;
}

/**
 * Reads a `multipart/form-data` body with one file part named `fileField` and text fields.
 * The file is handed to `stage` as a stream while it arrives (nothing is buffered here). When
 * `stage` refuses it (too large, not a PDF, unknown envelope), the rest of the body is read and
 * dropped so the connection can carry the answer; the refusal is then rethrown.
 */
export async function receiveMultipartUpload<Staged>(options: {
  request: Request;
  nodeRequest: IncomingMessage | undefined;
  fileField: string;
  stage: (stream: Readable, filename: string | undefined) => Promise<Staged>;
  discard: (staged: Staged) => Promise<void>;
}): Promise<MultipartUpload<Staged>> {
  const contentType = options.request.headers.get('content-type') ?? '';
  if (!/^multipart\/form-data\b/i.test(contentType)) {
    throw new InvalidRequestError([{ path: '', message: 'the body must be multipart/form-data with the file in the `document` part' }]);
  }
  const source: Readable = options.nodeRequest ?? Readable.fromWeb(options.request.body as import('node:stream/web').ReadableStream);
  let parser: busboy.Busboy;
  try {
    parser = busboy({
      headers: { 'content-type': contentType },
      // Browsers, curl and fetch send file names as raw UTF-8; busboy's default (latin1) would
      // turn "café.pdf" into "cafÃ©.pdf". RFC 5987 `filename*` still carries its own charset.
      defParamCharset: 'utf8',
      limits: { files: 1, fields: 20, fieldSize: MAX_TEXT_FIELD_BYTES },
    });
  } catch (error) {
    // busboy refuses a content type it cannot parse (e.g. without a boundary) when constructed.
    throw new InvalidRequestError([{ path: '', message: `malformed multipart body: ${(error as Error).message}` }]);
  }
  const fields: Record<string, unknown> = {};
  let staging: Promise<Staged> | undefined;
  let failure: unknown;
  let malformed: InvalidRequestError | undefined;

  const finished = new Promise<void>((resolve) => {
    parser.on('field', (name, value, info) => {
      if (info.valueTruncated) {
        failure ??= new InvalidRequestError([{ path: name, message: `must be at most ${MAX_TEXT_FIELD_BYTES} bytes` }]);
        return;
      }
      fields[name] = readFieldValue(name, value);
    });
    parser.on('file', (name, file, info) => {
      if (name !== options.fileField || staging) {
        failure ??= new InvalidRequestError([{ path: name, message: `unexpected file part; send exactly one file, in \`${options.fileField}\`` }]);
        file.resume();
        return;
      }
      // The stager reads a pass-through, not busboy's own stream, so that if it gives up early
      // busboy's stream can still be drained and parsing can reach the end of the body.
      const passThrough = new PassThrough();
      file.pipe(passThrough);
      // A body cut off mid-file errors busboy's stream; pipe() would not pass that on. The stager
      // may attach its own listeners only later (after its envelope check), so the pass-through
      // keeps a listener of its own: the problem is reported through the parser's error.
      passThrough.on('error', () => {});
      file.once('error', (error) => passThrough.destroy(error));
      staging = options.stage(passThrough, info.filename || undefined);
      staging.catch((error) => {
        failure ??= error;
        file.unpipe(passThrough);
        file.resume();
      });
    });
    parser.on('filesLimit', () => {
      failure ??= new InvalidRequestError([{ path: options.fileField, message: 'send exactly one file per request' }]);
    });
    parser.on('error', (error) => {
      malformed = new InvalidRequestError([{ path: '', message: `malformed multipart body: ${(error as Error).message}` }]);
      resolve();
    });
    parser.on('close', () => resolve());
    // A client that goes away mid-body: busboy never sees the end, so stop it here. Destroying it
    // fails the file stream, which makes the stager delete its partial file.
    const abandon = () => {
      if (source.readableEnded) return;
      malformed ??= new InvalidRequestError([{ path: '', message: 'the request body was cut off before it ended' }]);
      parser.destroy(new Error('request aborted'));
      resolve();
    };
    source.once('close', abandon);
    source.once('error', abandon);
  });
  source.pipe(parser);

  await finished;
  if (malformed) {
    source.unpipe(parser);
    source.resume();
  }
  const staged = staging ? await staging.catch(() => undefined) : undefined;
  // A malformed body is the caller's first problem, whatever the file stage made of the pieces.
  const problem = malformed ?? failure;
  if (problem !== undefined) {
    if (staged !== undefined) await options.discard(staged);
    throw problem;
  }
  if (staged === undefined) throw new DocumentMissingError();
  return { staged, fields };
}
