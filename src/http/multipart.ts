import type { IncomingMessage } from 'node:http';
import { PassThrough, Readable } from 'node:stream';
import busboy from 'busboy';
import { DocumentMissingError } from '../domain/document/document.errors.ts';
import { refuseUnstorableText } from '../domain/validation.ts';
import { InvalidRequestError } from '../shared/errors.ts';
import type { BodySource } from './body.ts';

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
 * Room for the multipart framing and the text fields around the file: a body larger than the file
 * limit plus this cannot hold an acceptable upload (20 fields of at most 64 KB, part headers).
 */
export const MULTIPART_OVERHEAD_BYTES = 2 * 1024 * 1024;

/**
 * Reads a `multipart/form-data` body with one file part named `fileField` and text fields.
 * The file is handed to `stage` as a stream while it arrives (nothing is buffered here).
 *
 * A refusal stops reading at once: when `stage` refuses the file (not a PDF...), when the file
 * passes `maxFileBytes` or the body `maxFileBytes + MULTIPART_OVERHEAD_BYTES` (`tooLarge()`), or
 * when the form is wrong. The rest of the body is not waited for: the answer goes out while it is
 * still arriving, and the server closes the connection after it (see body-guard.ts).
 */
export async function receiveMultipartUpload<Staged>(options: {
  request: BodySource;
  nodeRequest: IncomingMessage | undefined;
  fileField: string;
  maxFileBytes: number;
  tooLarge: () => Error;
  stage: (stream: Readable, filename: string | undefined) => Promise<Staged>;
  discard: (staged: Staged) => Promise<void>;
  /** The refusal of a form without the file (default `Document.Missing`). */
  missing?: () => Error;
}): Promise<MultipartUpload<Staged>> {
  const contentType = options.request.headers.get('content-type') ?? '';
  if (!/^multipart\/form-data\b/i.test(contentType)) {
    throw new InvalidRequestError([{ path: '', message: `the body must be multipart/form-data with the file in the \`${options.fileField}\` part` }]);
  }
  const maxBodyBytes = options.maxFileBytes + MULTIPART_OVERHEAD_BYTES;
  if (Number(options.request.headers.get('content-length') ?? '0') > maxBodyBytes) throw options.tooLarge();
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
  let fileStream: PassThrough | undefined;
  let failure: unknown;
  let malformed: InvalidRequestError | undefined;

  const finished = new Promise<void>((resolve) => {
    let stopped = false;
    // Ends the read on the first refusal: busboy is detached from the request (whose remaining
    // bytes the server drops while closing), and a file still being staged fails, so the stager
    // deletes its partial file.
    const stop = (problem: unknown) => {
      failure ??= problem;
      if (stopped) return;
      stopped = true;
      source.unpipe(parser);
      source.off('data', countBody);
      if (fileStream && !fileStream.writableFinished) fileStream.destroy(new Error('upload refused'));
      resolve();
    };
    let bodyBytes = 0;
    const countBody = (chunk: Buffer) => {
      bodyBytes += chunk.length;
      if (bodyBytes > maxBodyBytes) stop(options.tooLarge());
    };
    source.on('data', countBody);

    parser.on('field', (name, value, info) => {
      if (info.valueTruncated) {
        stop(new InvalidRequestError([{ path: name, message: `must be at most ${MAX_TEXT_FIELD_BYTES} bytes` }]));
        return;
      }
      fields[name] = readFieldValue(name, value);
    });
    parser.on('file', (name, file, info) => {
      if (name !== options.fileField || staging) {
        file.resume();
        stop(new InvalidRequestError([{ path: name, message: `unexpected file part; send exactly one file, in \`${options.fileField}\`` }]));
        return;
      }
      // The stager reads a pass-through, not busboy's own stream: it is cut off at the size limit
      // (the stager then sees an error and deletes its partial file) without stopping busboy.
      const passThrough = new PassThrough();
      fileStream = passThrough;
      let fileBytes = 0;
      file.on('data', (chunk: Buffer) => {
        if (stopped) return;
        fileBytes += chunk.length;
        if (fileBytes > options.maxFileBytes) {
          stop(options.tooLarge());
          return;
        }
        if (!passThrough.write(chunk)) file.pause();
      });
      passThrough.on('drain', () => file.resume());
      file.once('end', () => passThrough.end());
      // A body cut off mid-file errors busboy's stream; it is passed on to the stager. The stager
      // may attach its own listeners only later, so the pass-through keeps a listener of its own.
      passThrough.on('error', () => {});
      file.once('error', (error) => passThrough.destroy(error));
      staging = options.stage(passThrough, info.filename || undefined);
      staging.catch((error) => stop(error));
    });
    parser.on('filesLimit', () => {
      stop(new InvalidRequestError([{ path: options.fileField, message: 'send exactly one file per request' }]));
    });
    parser.on('error', (error) => {
      malformed = new InvalidRequestError([{ path: '', message: `malformed multipart body: ${(error as Error).message}` }]);
      stop(undefined);
    });
    parser.on('close', () => {
      stopped = true;
      source.off('data', countBody);
      resolve();
    });
    // A client that goes away mid-body: busboy never sees the end, so stop it here. Destroying it
    // fails the file stream, which makes the stager delete its partial file.
    const abandon = () => {
      if (source.readableEnded) return;
      malformed ??= new InvalidRequestError([{ path: '', message: 'the request body was cut off before it ended' }]);
      parser.destroy(new Error('request aborted'));
      stop(undefined);
    };
    source.once('close', abandon);
    source.once('error', abandon);
    source.pipe(parser);
  });

  await finished;
  const staged = staging ? await staging.catch(() => undefined) : undefined;
  // A malformed body is the caller's first problem, whatever the file stage made of the pieces.
  const problem = malformed ?? failure;
  if (problem !== undefined) {
    if (staged !== undefined) await options.discard(staged);
    throw problem;
  }
  if (staged === undefined) throw options.missing?.() ?? new DocumentMissingError();
  try {
    // The text parts (names and values) meet the one text check of every input. The file name is
    // not refused: it is cleaned where it becomes a name (a file name is what the client's system allowed).
    refuseUnstorableText(fields);
  } catch (error) {
    await options.discard(staged);
    throw error;
  }
  return { staged, fields };
}
