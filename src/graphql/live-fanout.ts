import type { ServerResponse } from 'node:http';
import { createSourceEventStream, type ExecutionArgs, type ExecutionResult, execute } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { RequestContext } from '../context.ts';

/*
 * Fan-out of live events at the cost of one subscriber per distinct operation, not per subscriber.
 * graphql-yoga executes a subscription's selection and serialises the result once per subscriber;
 * with ten thousand watchers of one envelope, that is ten thousand identical executions and
 * JSON strings per event. Here:
 *
 * - the hub hands every watcher the same event object, so the event's result is executed once
 *   per (operation document, operation name, variables, team) and that one result object is
 *   given to every subscriber that shares them (events read back for one subscriber, and the
 *   error that ends one, are that subscriber's own and run as usual);
 * - the SSE writer serialises a result object once and writes the same bytes to every stream;
 * - one timer sends the keep-alive comment to every open stream, instead of a timer each.
 *
 * The selection's resolvers read only the event (never the subscriber's context), which is what
 * makes a result shareable between subscribers of one team.
 */

/** How often an event result was executed and serialised in this process (tests and the bench read it). */
export const fanoutCounters = { executions: 0, serialisations: 0 };

type SharedResults = Map<string, ExecutionResult | Promise<ExecutionResult>>;

/** The results already computed for an event object, by sharing key; gone with the event. */
const resultsByEvent = new WeakMap<object, SharedResults>();
const documentIds = new WeakMap<object, number>();
let nextDocumentId = 0;

function documentId(document: object): number {
  let id = documentIds.get(document);
  if (id === undefined) {
    id = nextDocumentId += 1;
    documentIds.set(document, id);
  }
  return id;
}

function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return typeof value === 'object' && value !== null && Symbol.asyncIterator in value;
}

/** Maps an async iterator, passing `return` on so the source releases what it holds when the client goes. */
function mapAsync<T, U>(source: AsyncIterable<T>, map: (value: T) => U | Promise<U>): AsyncIterableIterator<U> {
  const iterator = source[Symbol.asyncIterator]();
  const mapped: AsyncIterableIterator<U> = {
    async next() {
      const next = await iterator.next();
      if (next.done) return { value: undefined, done: true };
      return { value: await map(next.value), done: false };
    },
    async return() {
      await iterator.return?.();
      return { value: undefined, done: true };
    },
    async throw(error: unknown) {
      await iterator.return?.();
      throw error;
    },
    [Symbol.asyncIterator]() {
      return mapped;
    },
  };
  return mapped;
}

async function subscribeShared(args: ExecutionArgs): Promise<AsyncIterableIterator<ExecutionResult> | ExecutionResult> {
  const source = await createSourceEventStream(args);
  // A refusal (auth, not found, limits) with `data: null`, which graphql-sse's single connection
  // mode needs to tell a result from arguments (graphql-js leaves `data` out here).
  if (!isAsyncIterable(source)) return { data: null, ...(source as ExecutionResult) };
  const context = args.contextValue as RequestContext;
  // Authenticated already (subscribing asked for the caller); the team is part of the key.
  const teamId = await context.caller().then(
    (caller) => caller.teamId,
    () => undefined,
  );
  if (teamId === undefined) return mapAsync(source, (payload) => execute({ ...args, rootValue: payload }) as ExecutionResult | Promise<ExecutionResult>);
  const key = `${teamId}\u0000${documentId(args.document)}\u0000${args.operationName ?? ''}\u0000${JSON.stringify(args.variableValues ?? {})}`;
  return mapAsync(source, (payload) => {
    if (typeof payload !== 'object' || payload === null) return execute({ ...args, rootValue: payload }) as ExecutionResult | Promise<ExecutionResult>;
    let shared = resultsByEvent.get(payload);
    if (!shared) resultsByEvent.set(payload, (shared = new Map()));
    let result = shared.get(key);
    if (!result) {
      fanoutCounters.executions += 1;
      result = execute({ ...args, rootValue: payload }) as ExecutionResult | Promise<ExecutionResult>;
      shared.set(key, result);
    }
    return result;
  });
}

/** Subscriptions run through `subscribeShared` (after graphql-jit, which would otherwise compile one per subscriber). */
export function sharedSubscriptionPlugin(): Plugin {
  return {
    onSubscribe({ setSubscribeFn }) {
      setSubscribeFn(subscribeShared as Parameters<typeof setSubscribeFn>[0]);
    },
  };
}

const encoder = new TextEncoder();
const PING = encoder.encode(':\n\n');
const COMPLETE = encoder.encode('event: complete\ndata:\n\n');
/** The bytes of a result, made once however many streams write it. */
const bytesByResult = new WeakMap<object, Uint8Array>();

/** What yoga's own writer leaves out of a result: `extensions.http` (status and headers meant for this server). */
function withoutInternals(result: ExecutionResult): unknown {
  if (!result.errors?.length && !result.extensions?.http) return result;
  const { http: _http, ...extensions } = (result.extensions ?? {}) as Record<string, unknown>;
  return {
    ...result,
    errors: result.errors?.map((error) => {
      const json = error.toJSON();
      if (!json.extensions?.http) return json;
      const { http: _ignored, ...rest } = json.extensions;
      return { ...json, extensions: rest };
    }),
    extensions: Object.keys(extensions).length > 0 ? extensions : undefined,
  };
}

function eventBytes(result: ExecutionResult): Uint8Array {
  let bytes = bytesByResult.get(result);
  if (!bytes) {
    fanoutCounters.serialisations += 1;
    bytes = encoder.encode(`event: next\ndata: ${JSON.stringify(withoutInternals(result))}\n\n`);
    bytesByResult.set(result, bytes);
  }
  return bytes;
}

/** Every open event stream, for the one keep-alive timer: yoga's (a ReadableStream) and those written straight to Node. */
const openStreams = new Set<ReadableStreamDefaultController<Uint8Array>>();
const openResponses = new Set<ServerResponse>();
let keepAliveTimer: NodeJS.Timeout | undefined;
export const KEEP_ALIVE_MS = 12_000;

function keepAlive() {
  for (const controller of openStreams) {
    // null: errored; 0 or less: the reader is behind, the stream already has something to send.
    if (controller.desiredSize === null) openStreams.delete(controller);
    else if (controller.desiredSize > 0) controller.enqueue(PING);
  }
  // A response still draining already has something to send; writing more would only queue it.
  for (const response of openResponses) if (!response.writableNeedDrain) response.write(PING);
  if (openStreams.size === 0 && openResponses.size === 0) {
    clearInterval(keepAliveTimer);
    keepAliveTimer = undefined;
  }
}

function startKeepAlive() {
  keepAliveTimer ??= setInterval(keepAlive, KEEP_ALIVE_MS);
  keepAliveTimer.unref();
}

/** Event streams written straight to Node now (tests read it: a client that went away leaves none). */
export function openLiveResponseCount(): number {
  return openResponses.size;
}

/**
 * The SSE answer of a subscription (GraphQL over SSE, distinct connections): as yoga's own, but
 * each result's bytes are made once (`eventBytes`) and one timer keeps every stream alive. The
 * stream pulls the next result only when the client has taken the last one, so a slow client
 * leaves events in its subscription's bounded queue (which drops it when full).
 */
function sseResponse(result: AsyncIterable<ExecutionResult>, fetchAPI: { ReadableStream: typeof ReadableStream; Response: typeof Response }): Response {
  const iterator = result[Symbol.asyncIterator]();
  let own: ReadableStreamDefaultController<Uint8Array> | undefined;
  const finish = () => {
    if (own) openStreams.delete(own);
  };
  const stream = new fetchAPI.ReadableStream<Uint8Array>({
    start(controller) {
      own = controller;
      // Some browsers only hand the response over once a byte arrived.
      controller.enqueue(PING);
      openStreams.add(controller);
      startKeepAlive();
    },
    async pull(controller) {
      try {
        const next = await iterator.next();
        if (next.value) controller.enqueue(eventBytes(next.value));
        if (next.done) {
          controller.enqueue(COMPLETE);
          finish();
          controller.close();
        }
      } catch (error) {
        finish();
        controller.error(error);
      }
    },
    async cancel() {
      finish();
      await iterator.return?.();
    },
  });
  return new fetchAPI.Response(stream, {
    status: 200,
    headers: { 'Content-Type': 'text/event-stream', Connection: 'keep-alive', 'Cache-Control': 'no-cache', 'Content-Encoding': 'none' },
  });
}

/**
 * Where a request served by `live-sse.ts` takes its event stream: set by the result processor
 * below when the answer is a stream, written to Node's response by `writeLiveResponse` instead of
 * through a `ReadableStream` and yoga's Node adapter.
 */
export type LiveHandOver = { stream: AsyncIterable<ExecutionResult> | undefined };

/** The server context of a request served by `live-sse.ts`. */
export type LiveSseServerContext = { liveSseHandOver?: LiveHandOver };

const SSE_HEADERS = { 'Content-Type': 'text/event-stream', Connection: 'keep-alive', 'Cache-Control': 'no-cache', 'Content-Encoding': 'none' };

/**
 * Puts `sseResponse` in place of yoga's SSE writer for subscriptions that stream (single results
 * keep yoga's, with its statuses). For a request served by `live-sse.ts`, the answer yoga gets is
 * only the head (status and headers, to which every plugin adds its own as for any answer), and
 * the stream is handed over to be written straight to Node.
 */
export function liveSsePlugin(): Plugin {
  return {
    onResultProcess({ request, result, setResultProcessor, serverContext }) {
      if (!isAsyncIterable(result)) return;
      if (!/\btext\/event-stream\b/.test(request.headers.get('accept') ?? '')) return;
      const handOver = (serverContext as LiveSseServerContext | undefined)?.liveSseHandOver;
      if (handOver) {
        setResultProcessor((streamed, fetchAPI) => {
          handOver.stream = streamed as AsyncIterable<ExecutionResult>;
          // A fresh record each time: the plugins add their headers to the very object given here.
          return new (fetchAPI as { Response: typeof Response }).Response(null, { status: 200, headers: { ...SSE_HEADERS } });
        }, 'text/event-stream');
        return;
      }
      setResultProcessor((streamed, fetchAPI) => sseResponse(streamed as AsyncIterable<ExecutionResult>, fetchAPI as never), 'text/event-stream');
    },
  };
}

/**
 * One event stream written straight to Node's response: its whole state is this object, the
 * subscription's iterator and Node's own request and response. The next result is pulled only
 * once the socket took the last one (`drain`), so a slow client leaves events in its
 * subscription's bounded queue, which drops it when full, and never grows this process's buffers
 * by more than one event. The client going away returns the iterator (the hub forgets the
 * watcher, the key's count is released).
 */
class LiveResponse {
  readonly #response: ServerResponse;
  readonly #iterator: AsyncIterator<ExecutionResult>;
  #finished = false;

  constructor(response: ServerResponse, iterator: AsyncIterator<ExecutionResult>) {
    this.#response = response;
    this.#iterator = iterator;
    response.once('close', () => this.#finish(true));
  }

  pull = (): void => {
    this.#iterator.next().then(
      (next) => {
        if (this.#finished) return;
        const response = this.#response;
        if (next.value) response.write(eventBytes(next.value));
        if (next.done) {
          this.#finish(false);
          response.end(COMPLETE);
          return;
        }
        if (response.writableNeedDrain) response.once('drain', this.pull);
        else this.pull();
      },
      () => {
        // The stream failed (not an error a subscription ends with: those come as results); as
        // yoga's adapter does with a failed body, the response is cut off.
        this.#finish(true);
        this.#response.destroy();
      },
    );
  };

  #finish(returnIterator: boolean) {
    if (this.#finished) return;
    this.#finished = true;
    openResponses.delete(this.#response);
    if (returnIterator) void Promise.resolve(this.#iterator.return?.()).catch(() => {});
  }
}

/**
 * Writes the head yoga answered (its status and every header the plugins set) and then the event
 * stream to Node's response, in the bytes `sseResponse` writes: the first keep-alive comment at
 * once, `event: next` per result, `event: complete` at the end, and the shared keep-alive.
 */
export function writeLiveResponse(response: ServerResponse, head: Response, stream: AsyncIterable<ExecutionResult>): void {
  writeLiveStream(response, { status: head.status, headers: head.headers }, stream[Symbol.asyncIterator]());
}

/** writeLiveResponse with the head given as it is to be written (the lean path, live-lean.ts). */
export function writeLiveStream(response: ServerResponse, head: { status: number; headers: Headers | Record<string, string> }, iterator: AsyncIterator<ExecutionResult>): void {
  if (response.destroyed || response.writableEnded) {
    void Promise.resolve(iterator.return?.()).catch(() => {});
    return;
  }
  // yoga's headers are its fetch API's own class (Node takes those as they are); the lean path's a record.
  const { headers } = head;
  response.setHeaders(typeof headers.get === 'function' ? (headers as Headers) : new Map(Object.entries(headers as Record<string, string>)));
  response.writeHead(head.status);
  // Some browsers only hand the response over once a byte arrived.
  response.write(PING);
  openResponses.add(response);
  startKeepAlive();
  new LiveResponse(response, iterator).pull();
}

/**
 * The result an event gives every subscriber sharing `key` (team, document, variables): executed
 * once per event object, then the same object for all of them (so eventBytes serialises it once).
 */
export function sharedEventResult(payload: object, key: string, run: () => ExecutionResult | Promise<ExecutionResult>): ExecutionResult | Promise<ExecutionResult> {
  let shared = resultsByEvent.get(payload);
  if (!shared) resultsByEvent.set(payload, (shared = new Map()));
  let result = shared.get(key);
  if (!result) {
    fanoutCounters.executions += 1;
    result = run();
    shared.set(key, result);
  }
  return result;
}
