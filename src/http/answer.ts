/**
 * An answer written straight to Node's response, without WHATWG Request/Response objects: what
 * the REST face and the health endpoints answer with (rest/serve.ts). A face that still builds a
 * `Response` (a file download) is converted once, its body streamed.
 */
import type { ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

export type Answer = {
  status: number;
  /** Lower-case names. */
  headers: Record<string, string>;
  body: string | Buffer | Readable | null;
};

/** The answer of a `Response` a handler built (downloads, the reference page): its headers, its body as a Node stream. */
export function answerOfResponse(response: Response): Answer {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  return { status: response.status, headers, body: response.body ? Readable.fromWeb(response.body as import('node:stream/web').ReadableStream) : null };
}

/**
 * Writes an answer. A text or buffer body goes out with its Content-Length in one write; a stream
 * is piped (chunked) and destroyed if the client goes away first. Resolves once the answer is
 * handed to the socket (a stream: once it has ended or failed).
 */
export async function sendAnswer(response: ServerResponse, answer: Answer): Promise<void> {
  // The body guard may have answered already (a stalled body's 408, body-guard.ts).
  if (response.headersSent || response.writableEnded) {
    if (answer.body instanceof Readable) answer.body.destroy();
    return;
  }
  if (answer.body instanceof Readable) {
    response.writeHead(answer.status, answer.headers);
    await pipeline(answer.body, response).catch(() => {
      // The client went away or the source failed mid-way: the socket is closed either way.
    });
    return;
  }
  const headers = answer.body === null ? answer.headers : { ...answer.headers, 'content-length': String(Buffer.byteLength(answer.body)) };
  response.writeHead(answer.status, headers);
  response.end(answer.body ?? undefined);
}
