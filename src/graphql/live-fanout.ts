import { createSourceEventStream, execute, type ExecutionArgs, type ExecutionResult } from 'graphql';
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
    id = (nextDocumentId += 1);
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

/** Every open event stream, for the one keep-alive timer. */
const openStreams = new Set<ReadableStreamDefaultController<Uint8Array>>();
let keepAliveTimer: NodeJS.Timeout | undefined;
export const KEEP_ALIVE_MS = 12_000;

function keepAlive() {
  for (const controller of openStreams) {
    // null: errored; 0 or less: the reader is behind, the stream already has something to send.
    if (controller.desiredSize === null) openStreams.delete(controller);
    else if (controller.desiredSize > 0) controller.enqueue(PING);
  }
  if (openStreams.size === 0) {
    clearInterval(keepAliveTimer);
    keepAliveTimer = undefined;
  }
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
      keepAliveTimer ??= setInterval(keepAlive, KEEP_ALIVE_MS);
      keepAliveTimer.unref();
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

/** Puts `sseResponse` in place of yoga's SSE writer for subscriptions that stream (single results keep yoga's, with its statuses). */
export function liveSsePlugin(): Plugin {
  return {
    onResultProcess({ request, result, setResultProcessor }) {
      if (!isAsyncIterable(result)) return;
      if (!/\btext\/event-stream\b/.test(request.headers.get('accept') ?? '')) return;
      setResultProcessor((streamed, fetchAPI) => sseResponse(streamed as AsyncIterable<ExecutionResult>, fetchAPI as never), 'text/event-stream');
    },
  };
}
