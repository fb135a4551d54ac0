import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { MAX_JSON_BYTES } from '../http/body.ts';
import type { NodeServerContext } from '../http/request-metadata.ts';
import type { Logger } from '../shared/logger.ts';
import { type LiveHandOver, type LiveSseServerContext, writeLiveResponse } from './live-fanout.ts';
import type { LeanLiveStatus } from './live-lean.ts';

/** What this needs of the yoga instance. */
type Yoga = {
  graphqlEndpoint: string;
  fetchAPI: { Request: typeof Request };
  fetch(request: Request, serverContext: NodeServerContext & LiveSseServerContext): Response | Promise<Response>;
};

export type LiveSseServer = {
  /**
   * Whether a request is served here: GraphQL over SSE (distinct connections) on the GraphQL path,
   * a GET or a POST with a declared body of at most 1 MB that is neither a multipart upload nor
   * compressed. Read from the head alone; anything else goes to yoga's Node adapter as before.
   */
  accepts(request: IncomingMessage, url: URL): boolean;
  /** Answers a request `accepts` took. */
  serve(request: IncomingMessage, response: ServerResponse): void;
};

/** Writes a `Response` of yoga's (its fetch API's own classes) to Node, as its Node adapter does. */
async function writeResponse(response: ServerResponse, answered: Response): Promise<void> {
  if (response.headersSent || response.destroyed) return;
  response.setHeaders(answered.headers);
  response.writeHead(answered.status);
  if (!answered.body) {
    response.end();
    return;
  }
  await pipeline(Readable.from(answered.body as unknown as AsyncIterable<Uint8Array>), response).catch(() => {
    // The client went away mid-way: the socket is closed either way.
  });
}

/**
 * GraphQL over SSE beside yoga's Node adapter (docs/decisions.md, "Live event streams straight
 * to Node"). A subscriber's event stream lives as long as the client keeps it open: through the
 * adapter, each one held a WHATWG `Request` with its abort signal, a `Response`, a
 * `ReadableStream` and the adapter's piping for its whole life (about 4 KiB of heap; what a
 * subscriber still costs is in docs/performance.md, "Live status fan-out"). Here the request
 * still goes through yoga whole (parsing, validation, the limits, authentication, the rate limit,
 * error masking, every plugin's headers, the access log and metrics) so that every answer is the
 * one yoga gives; only when the answer is an event stream does yoga hand back just its head, and
 * the stream is written straight to Node's response (live-fanout.ts, `writeLiveResponse`).
 * Refusals (bad queries, bad credentials, limits) are yoga's answers, written as its Node
 * adapter writes them.
 */
export function createLiveSseServer(yoga: Yoga, logger: Logger, lean?: LeanLiveStatus): LiveSseServer {
  async function answer(request: IncomingMessage, response: ServerResponse, body: Buffer | undefined): Promise<void> {
    // The body guard may have answered already (a stalled body's 408), or the client went away.
    if (response.headersSent || response.destroyed) return;
    // Live status, opened beside yoga when it can be (live-lean.ts); every other request, and every refusal, through yoga.
    if (lean) {
      const served = await lean.tryServe(request, response, body).catch((error: unknown) => {
        logger.warn({ err: error }, 'the lean live-status path failed; yoga answers');
        return false;
      });
      if (served || response.headersSent || response.destroyed) return;
    }
    const handOver: LiveHandOver = { stream: undefined };
    // As yoga's Node adapter builds it (the path after the Host), with the body already read.
    const whatwgRequest = new yoga.fetchAPI.Request(`http://${request.headers.host ?? 'localhost'}${request.url ?? '/'}`, {
      method: request.method,
      headers: request.headers as Record<string, string>,
      // As text: the request is kept as long as the stream lasts, and a string is its smallest form.
      body: body?.toString(),
    });
    const answered = await yoga.fetch(whatwgRequest, { req: request, liveSseHandOver: handOver });
    if (handOver.stream) writeLiveResponse(response, answered, handOver.stream);
    else await writeResponse(response, answered);
  }

  function answerOrFail(request: IncomingMessage, response: ServerResponse, body: Buffer | undefined): void {
    answer(request, response, body).catch((error: unknown) => {
      logger.error({ err: error }, 'could not write an answer');
      if (!response.headersSent) response.writeHead(500);
      response.end();
    });
  }

  return {
    accepts(request, url) {
      if (url.pathname !== yoga.graphqlEndpoint || !/\btext\/event-stream\b/.test(request.headers.accept ?? '')) return false;
      if (request.method === 'GET') return true;
      if (request.method !== 'POST' || request.headers['content-encoding'] !== undefined || request.headers['transfer-encoding'] !== undefined) return false;
      if (/^multipart\//i.test(request.headers['content-type'] ?? '')) return false;
      const length = Number(request.headers['content-length']);
      return Number.isInteger(length) && length >= 0 && length <= MAX_JSON_BYTES;
    },
    serve(request, response) {
      if (request.method === 'GET') {
        answerOrFail(request, response, undefined);
        return;
      }
      // The declared length is at most MAX_JSON_BYTES (accepts), and Node stops a body at it.
      let chunks: Buffer[] = [];
      const onData = (chunk: Buffer) => chunks.push(chunk);
      request.on('data', onData);
      request.once('end', () => {
        // The chunks are slices of the socket's reads: kept, each would hold its whole read (the
        // request's head with it) for as long as the stream lasts.
        request.off('data', onData);
        const body = Buffer.concat(chunks);
        chunks = [];
        answerOrFail(request, response, body);
      });
      // A body cut off: the client is gone, or the body guard answered (body-guard.ts).
      request.once('error', () => {});
    },
  };
}
