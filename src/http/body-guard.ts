import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { answerableError, type DomainError, httpStatusForError, RequestTimeoutError } from '../shared/errors.ts';

/**
 * How long a request body may take (docs/limits.md, "Bodies, uploads and locks"). The values are
 * for production; tests pass shorter ones to `listen` so that stalls are seen in milliseconds.
 */
export type BodyTimeouts = {
  /** No body byte at all for this long (while the server is waiting for one): 408. */
  idleMs: number;
  /** Over every window of `rateWindowMs`, the body must average at least this many bytes a second. */
  minBytesPerSecond: number;
  rateWindowMs: number;
  /** The whole body, however fast it trickles, must have arrived within this long. */
  totalMs: number;
  /**
   * After an answer sent before the body ended, how long the rest is still read (and dropped)
   * before the socket is destroyed, so the client can read the answer before any reset.
   */
  lingerMs: number;
  /** Node's own limit on receiving the request head. */
  headersMs: number;
};

export const BODY_TIMEOUTS: BodyTimeouts = {
  idleMs: 10_000,
  minBytesPerSecond: 1024,
  rateWindowMs: 10_000,
  // 48 MB at the minimum rate would take far longer; 15 minutes still lets a 48 MB upload through
  // at 55 KB/s.
  totalMs: 15 * 60_000,
  lingerMs: 2_000,
  headersMs: 30_000,
};

const acceptableRequestId = /^[A-Za-z0-9._:-]{8,64}$/;

/**
 * The request id of an answer written below yoga (which never saw the request): the caller's own
 * `X-Request-Id` when it looks like one, as the request log would have kept it.
 */
export function nodeRequestId(request: IncomingMessage): string {
  const offered = request.headers['x-request-id'];
  return typeof offered === 'string' && acceptableRequestId.test(offered) ? offered : randomUUID();
}

/**
 * Records an answer the Node server writes below the faces, which the faces' own bookkeeping
 * never sees (a refusal here, a WebSocket upgrade): the duration histogram and the access line.
 * server.ts hands in the app's, `App.recordNodeAnswer`. `startedAt` is when the request arrived
 * (process.hrtime.bigint()).
 */
export type NodeAnswerRecorder = (request: IncomingMessage, answer: { status: number; requestId: string; startedAt: bigint }) => void;

const refusedBelowTheFaces = new WeakSet<IncomingMessage>();

/**
 * Whether writeNodeRefusal answered this request. A face that still finishes the request afterwards
 * (yoga reading a body the guard gave up on) leaves the histogram and the access log alone: the
 * refusal the client got is already recorded, under the request id it carried.
 */
export function wasRefusedBelowTheFaces(request: IncomingMessage | undefined): boolean {
  return request !== undefined && refusedBelowTheFaces.has(request);
}

/**
 * Writes a refusal straight on the Node response, in the error shape of the face the path belongs
 * to (REST's `{ version, success, error }` or GraphQL's `{ errors }`), for answers given before
 * yoga runs (or instead of it, when the body stalls), and records it with `record`.
 */
export function writeNodeRefusal(request: IncomingMessage, response: ServerResponse, error: DomainError, record?: { recorder: NodeAnswerRecorder; startedAt: bigint }): void {
  if (response.headersSent || response.writableEnded) return;
  const requestId = nodeRequestId(request);
  const { description, context } = answerableError(error, { requestId });
  const isRest = (request.url ?? '').startsWith('/api/');
  const body = isRest
    ? { version: '1', success: false, error: { name: error.name, description, context } }
    : { errors: [{ message: description, extensions: { code: error.name, name: error.name, context } }] };
  const status = httpStatusForError(error.name);
  refusedBelowTheFaces.add(request);
  response.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'x-content-type-options': 'nosniff', 'x-request-id': requestId });
  response.end(JSON.stringify(body));
  record?.recorder(request, { status, requestId, startedAt: record.startedAt });
}

function hasBody(request: IncomingMessage): boolean {
  const length = request.headers['content-length'];
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/**
 * Guards one request's body at the Node level, for both faces:
 *
 * - An answer written before the body has fully arrived (a refusal from the headers, a 413 at the
 *   limit) says `Connection: close`, and the connection is then closed instead of reading the rest
 *   of the body to keep it alive. Closing at once would make the kernel answer the client's
 *   unread bytes with a reset, which can destroy the answer before the client reads it (what
 *   "connection reset instead of 413" was); so the rest is still read and dropped for `lingerMs`
 *   after our side is shut, then the socket is destroyed.
 * - A body that stalls (no byte for `idleMs`), trickles (under `minBytesPerSecond` over a window)
 *   or takes longer than `totalMs` is answered 408 `Request.Timeout` if nothing was answered yet,
 *   and the connection closes the same way. Time the server itself spends not reading (its own
 *   checks, a full buffer) does not count against the client.
 */
export function guardRequestBody(request: IncomingMessage, response: ServerResponse, timeouts: BodyTimeouts, recorder?: NodeAnswerRecorder): void {
  if (!hasBody(request)) return;
  const arrivedAt = process.hrtime.bigint();
  const socket = request.socket as Socket & { destroySoon?: () => void };

  // Once its answer is written, Node forgets the request: when the socket closes later, the
  // request stream is neither ended nor failed, and whatever still reads it (a file being staged
  // when the body stalled) would wait forever. End it here, so readers clean up after themselves.
  const endAbandonedRequest = () => {
    if (!request.complete && !request.destroyed) request.destroy();
  };
  socket.once('close', endAbandonedRequest);

  const writeHead = response.writeHead;
  const writeHeadClosingEarly = function writeHeadClosingEarly(this: ServerResponse, ...args: unknown[]) {
    if (!request.complete && !this.headersSent) {
      this.setHeader('connection', 'close');
      lingerOnClose();
    }
    return (writeHead as (...a: unknown[]) => ServerResponse).apply(this, args);
  } as typeof response.writeHead;
  response.writeHead = writeHeadClosingEarly;

  let lingering = false;
  function lingerOnClose() {
    if (lingering) return;
    lingering = true;
    // Node ends a `Connection: close` exchange with socket.destroySoon() once the answer is
    // flushed; for this socket that becomes: shut our side, keep dropping what still arrives for
    // a moment, then destroy. A client that read the answer and closed ends it sooner.
    socket.destroySoon = () => {
      if (request.readableFlowing !== true) request.resume();
      socket.end();
      const timer = setTimeout(() => socket.destroy(), timeouts.lingerMs);
      timer.unref();
      socket.once('close', () => clearTimeout(timer));
    };
  }

  const startedAt = Date.now();
  let lastBytes = socket.bytesRead;
  let lastProgressAt = startedAt;
  let windowStartedAt = startedAt;
  let windowStartBytes = lastBytes;
  const tickMs = Math.max(20, Math.min(1000, Math.floor(timeouts.idleMs / 4)));
  const timer = setInterval(check, tickMs);
  timer.unref();
  const stop = () => clearInterval(timer);
  socket.once('close', stop);
  // A kept-alive socket serves many requests: its listeners for this one must go with it, or
  // every request stays reachable from the socket (and its memory with it) until the socket closes.
  const release = () => {
    stop();
    socket.off('close', stop);
    if (!request.complete) return;
    socket.off('close', endAbandonedRequest);
    // The body is in and nothing is left to guard: let go of everything here now, not when the
    // answer ends, which for an event stream may be hours away (each would keep this closure).
    if (lingering) return;
    response.off('finish', release);
    response.off('close', release);
    if (response.writeHead === writeHeadClosingEarly) response.writeHead = writeHead;
  };
  response.once('finish', release);
  response.once('close', release);

  function check() {
    if (request.complete) {
      release();
      return;
    }
    if (response.writableEnded || socket.destroyed) {
      stop();
      return;
    }
    const now = Date.now();
    const bytes = socket.bytesRead;
    if (bytes !== lastBytes) {
      lastBytes = bytes;
      lastProgressAt = now;
    }
    // Bytes waiting in the request stream mean the server is the one not reading: the client is
    // not stalling, so its clocks (but not the total) restart.
    if (request.readableLength > 0) {
      lastProgressAt = now;
      windowStartedAt = now;
      windowStartBytes = bytes;
    }
    let stalled = now - lastProgressAt >= timeouts.idleMs || now - startedAt >= timeouts.totalMs;
    if (!stalled && now - windowStartedAt >= timeouts.rateWindowMs) {
      const expected = (timeouts.minBytesPerSecond * (now - windowStartedAt)) / 1000;
      if (bytes - windowStartBytes < expected) stalled = true;
      windowStartedAt = now;
      windowStartBytes = bytes;
    }
    if (!stalled) return;
    stop();
    if (response.headersSent) {
      socket.destroy();
      return;
    }
    const error = new RequestTimeoutError({ idleMs: timeouts.idleMs, minBytesPerSecond: timeouts.minBytesPerSecond, totalMs: timeouts.totalMs });
    writeNodeRefusal(request, response, error, recorder && { recorder, startedAt: arrivedAt });
  }
}
