import type { IncomingMessage, ServerResponse } from 'node:http';
import { PassThrough, type Readable } from 'node:stream';
import { processRequest } from 'graphql-upload-minimal';

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
 * (`Document.TooLarge`) by the same check REST uploads go through.
 */
export function withGraphQLUploads(listener: NodeListener, options: { graphqlPath: string; maxFileBytes: number }): NodeListener {
  return (request, response) => {
    const isUpload =
      request.method === 'POST' &&
      (request.url ?? '').split('?')[0] === options.graphqlPath &&
      /^multipart\/form-data\b/i.test(request.headers['content-type'] ?? '');
    if (!isUpload) {
      listener(request, response);
      return;
    }
    processRequest(request, response, { maxFileSize: options.maxFileBytes + 1, maxFiles: 1, maxFieldSize: 1024 * 1024 }).then(
      (operations) => {
        (request as IncomingMessage & { body?: unknown }).body = operations;
        delete request.headers['content-length'];
        listener(request, response);
      },
      (error: Error & { status?: number; expose?: boolean }) => {
        const status = error.status && error.status >= 400 && error.status < 500 ? error.status : 400;
        response.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'x-content-type-options': 'nosniff' });
        response.end(
          JSON.stringify({
            errors: [
              {
                message: `Invalid multipart request: ${error.expose === false ? 'malformed body' : error.message}`,
                extensions: { code: 'Request.Invalid', name: 'Request.Invalid', context: {} },
              },
            ],
          }),
        );
        request.resume();
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
  source.on('data', (chunk: Buffer) => {
    if (!forward.write(chunk)) source.pause();
  });
  forward.on('drain', () => source.resume());
  source.once('end', () => forward.end());
  source.once('error', (error) => forward.destroy(error));
  forward.once('close', () => {
    // The domain stopped reading early (refused the file): drain the rest of the part.
    if (!source.readableEnded) source.resume();
  });
  return forward;
}
