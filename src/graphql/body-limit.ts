import { GraphQLError } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { MAX_JSON_BYTES, readBodyBytes } from '../http/body.ts';
import type { NodeServerContext, RequestMetadataReader } from '../http/request-metadata.ts';
import { answerableError, httpStatusForError, PayloadTooLargeError } from '../shared/errors.ts';

/**
 * The 1 MB body limit REST has, for GraphQL POST bodies (JSON, `application/graphql`, forms): a
 * declared Content-Length over it is refused before parsing, a chunked body as soon as the bytes
 * counted pass it. The answer is `Request.PayloadTooLarge` with HTTP 413, as on REST. Multipart
 * uploads are not counted here: their operations part is capped by the upload wrapper and their
 * file by the document limit (graphql/uploads.ts).
 */
export function graphqlBodyLimitPlugin(requestMetadataOf: RequestMetadataReader, limitBytes = MAX_JSON_BYTES): Plugin<NodeServerContext> {
  return {
    onRequestParse({ request, requestParser, setRequestParser, endResponse, serverContext, fetchAPI }) {
      if (request.method !== 'POST') return;
      // A multipart upload reaches yoga with its operations already parsed (graphql/uploads.ts).
      if ((serverContext as NodeServerContext & { req?: { body?: unknown } }).req?.body !== undefined) return;
      const refuse = () => {
        const error = new PayloadTooLargeError(limitBytes);
        const { requestId } = requestMetadataOf(request, serverContext as NodeServerContext);
        const { description, context } = answerableError(error, { requestId });
        const body = { errors: [{ message: description, extensions: { code: error.name, name: error.name, context } }] };
        return new fetchAPI.Response(JSON.stringify(body), {
          status: httpStatusForError(error.name),
          headers: { 'content-type': 'application/json; charset=utf-8' },
        });
      };
      if (Number(request.headers.get('content-length') ?? '0') > limitBytes) {
        endResponse(refuse());
        return;
      }
      if (!requestParser) return;
      const parse = requestParser;
      setRequestParser(async (original) => {
        let bytes: Buffer;
        try {
          bytes = await readBodyBytes(original, limitBytes);
        } catch (error) {
          if (error instanceof PayloadTooLargeError) return refuse();
          throw new GraphQLError('The request body was cut off before it ended.', { extensions: { code: 'Request.Invalid', http: { status: 400 } } });
        }
        return parse(new fetchAPI.Request(original.url, { method: original.method, headers: original.headers, body: new Uint8Array(bytes) }));
      });
    },
  };
}
