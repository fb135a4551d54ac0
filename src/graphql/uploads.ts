import type { IncomingMessage, ServerResponse } from 'node:http';
import { PassThrough, type Readable } from 'node:stream';
import { processRequest } from 'graphql-upload-minimal';
import { DocumentTooLargeError } from '../domain/document/document.errors.ts';
import { MAX_JSON_BYTES } from '../http/body.ts';
import { type NodeAnswerRecorder, writeNodeRefusal } from '../http/body-guard.ts';
import { MULTIPART_OVERHEAD_BYTES } from '../http/multipart.ts';
import { InvalidRequestError, MissingApiKeyError, PayloadTooLargeError } from '../shared/errors.ts';

type NodeListener = (request: IncomingMessage, response: ServerResponse) => void;

/**
 * Streams GraphQL multipart requests (file uploads) instead of letting yoga read them whole
 * into memory: graphql-upload-minimal parses the operations, and each file reaches the resolver
 * as a stream while the body is still arriving. The parsed operations are set as the request's
 * body, which yoga's Node adapter then reads as JSON; the multipart content-length no longer
 * describes that body, so it is dropped.
 *
 * The library silently truncates a file at `maxFileSize`; it is set one byte past the document
 * limit, so an over-limit file reaches the domain one byte too long and is refused there
 * (`Document.TooLarge`) by the same check REST uploads go through, as soon as that byte arrives.
 *
 * Refused before the body is read: a request with neither an API key nor a signing token (401
 * `Auth.MissingApiKey`; every upload needs one of them) and a declared Content-Length no acceptable upload can have (413
 * `Document.TooLarge`). A wrong key or envelope can only be known from the `operations` part,
 * the body's first: the mutation runs as soon as it is parsed, before the file is read, and its
 * refusal is answered while the file is still arriving (the server then closes the connection).
 */
export function withGraphQLUploads(listener: NodeListener, options: { graphqlPath: string; maxFileBytes: number; recordAnswer?: NodeAnswerRecorder }): NodeListener {
  return (request, response) => {
    const isUpload = request.method === 'POST' && (request.url ?? '').split('?')[0] === options.graphqlPath && /^multipart\/form-data\b/i.test(request.headers['content-type'] ?? '');
    if (!isUpload) {
      listener(request, response);
      return;
    }
    const record = options.recordAnswer && { recorder: options.recordAnswer, startedAt: process.hrtime.bigint() };
    // A team's key uploads documents; a signing link's token uploads a signer's attachments.
    if (!request.headers['x-service-api-key']?.toString().trim() && !request.headers['x-signing-token']?.toString().trim()) {
      writeNodeRefusal(request, response, new MissingApiKeyError(), record);
      return;
    }
    if (Number(request.headers['content-length'] ?? '0') > options.maxFileBytes + MULTIPART_OVERHEAD_BYTES) {
      writeNodeRefusal(request, response, new DocumentTooLargeError(options.maxFileBytes), record);
      return;
    }
    processRequest(request, response, { maxFileSize: options.maxFileBytes + 1, maxFiles: 1, maxFieldSize: MAX_JSON_BYTES }).then(
      (operations) => {
        (request as IncomingMessage & { body?: unknown }).body = operations;
        delete request.headers['content-length'];
        listener(request, response);
      },
      (error: Error & { status?: number; expose?: boolean }) => {
        // Already answered: the body guard gave up on a stalled body, or the client went away.
        if (response.headersSent || response.writableEnded) return;
        // The operations or map part over its 1 MB is the JSON body limit of every other request.
        const refusal = /multipart field value exceeds the \d+ byte size limit/.test(error.message)
          ? new PayloadTooLargeError(MAX_JSON_BYTES)
          : new InvalidRequestError(
              [{ path: '', message: `Invalid multipart request: ${error.expose === false ? 'malformed body' : error.message}` }],
              `Invalid multipart request: ${error.expose === false ? 'malformed body' : error.message}`,
            );
        writeNodeRefusal(request, response, refusal, record);
      },
    );
  };
}

/**
 * The stream of one uploaded file, safe to hand to the domain. graphql-upload-minimal calls
 * `unpipe()` on the file stream when it hits `maxFileSize`, which would silently detach any
 * consumer that used `pipe` and leave it waiting forever. Forwarding with 'data' listeners (and
 * manual backpressure) keeps the consumer attached until the part ends, so it sees the extra
 * byte and refuses the file by size.
 */
export function uploadedFileStream(source: Readable): Readable {
  const forward = new PassThrough();
  // The domain attaches its listeners only after its own checks; a body cut off before then must
  // not become an unhandled 'error' (which would end the process). It still fails the read.
  forward.on('error', () => {});
  // At the size limit the library stops the file short (one byte over the limit) but only ends it
  // with its part, which may be the rest of a huge body: end it here instead, once the bytes it
  // holds are forwarded, so the domain refuses the file now rather than after the whole body.
  let truncated = false;
  const endIfTruncated = () => {
    if (truncated && source.readableLength === 0 && !forward.writableEnded) forward.end();
  };
  source.once('limit', () => {
    truncated = true;
    setImmediate(endIfTruncated);
  });
  source.on('data', (chunk: Buffer) => {
    if (forward.writableEnded) return;
    if (!forward.write(chunk)) source.pause();
    endIfTruncated();
  });
  forward.on('drain', () => source.resume());
  source.once('end', () => {
    if (!forward.writableEnded) forward.end();
  });
  source.once('error', (error) => forward.destroy(error));
  forward.once('close', () => {
    // The domain stopped reading early (refused the file): drain the rest of the part.
    if (!source.readableEnded) source.resume();
  });
  return forward;
}
