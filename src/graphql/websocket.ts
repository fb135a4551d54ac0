import type http from 'node:http';
import type { ExecutionArgs } from 'graphql';
import { useServer } from 'graphql-ws/use/ws';
import type { YogaServerInstance } from 'graphql-yoga';
import { type WebSocket, WebSocketServer } from 'ws';
import type { RequestContext } from '../context.ts';
import type { LiveConnection } from '../domain/live/live.service.ts';
import { type NodeAnswerRecorder, nodeRequestId } from '../http/body-guard.ts';
import type { NodeServerContext } from '../http/request-metadata.ts';
import { SpanKind } from '../shared/tracing.ts';
import { inOperationSpan } from './tracing.ts';

/** A WebSocket message larger than this closes the connection (the GraphQL POST body limit). */
const MAX_MESSAGE_BYTES = 1024 * 1024;

/**
 * The two parts of the GraphQL server this needs, named here rather than imported as app.ts's
 * `App`: a face never imports the composition root that wires it (docs/architecture.md).
 */
export type GraphQLServer = Pick<YogaServerInstance<NodeServerContext, RequestContext>, 'graphqlEndpoint' | 'getEnveloped'>;

/**
 * A connection with no operation running for this long is closed (4408, "Idle"). Credentials are
 * only checked per operation (so a missing key is answered by name, as on HTTP), which would
 * otherwise let anyone hold sockets open for free, kept alive by our own pings.
 */
export const WEBSOCKET_IDLE_MS = 60_000;

/** The credentials a client may put in `connectionParams`, read as the HTTP face reads its headers. */
const PARAM_HEADERS = ['x-service-api-key', 'x-signing-token'] as const;

type Enveloped = ReturnType<GraphQLServer['getEnveloped']>;

/**
 * The headers an operation on this connection is treated as having: the upgrade request's own
 * (user agent, forwarded addresses, request id), with the credentials from `connectionParams`
 * (a browser cannot set headers on a WebSocket). Keys are matched case-insensitively.
 */
/** What an HTTP header value may hold (RFC 9110 field-value, Latin-1 as Node reads headers). */
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

function headersOf(upgrade: http.IncomingMessage, connectionParams: Readonly<Record<string, unknown>> | undefined): Headers {
  const headers = new Headers();
  for (const name of ['user-agent', 'x-forwarded-for', 'x-request-id']) {
    const value = upgrade.headers[name];
    if (typeof value === 'string') headers.set(name, value);
  }
  for (const [key, value] of Object.entries(connectionParams ?? {})) {
    const name = key.toLowerCase();
    // A value no HTTP header could carry (a NUL, a line break, a character past U+00FF) would make
    // Headers throw, and the operation fail as a server error (close 4500): it is left out, as a
    // header the HTTP parser refused would be, and the credential is then missing.
    if ((PARAM_HEADERS as readonly string[]).includes(name) && typeof value === 'string' && HEADER_VALUE.test(value)) headers.set(name, value);
  }
  return headers;
}

/**
 * GraphQL over WebSocket (the `graphql-ws` protocol) on the app's GraphQL path, on the same HTTP
 * server: every operation runs through the same yoga plugins (limits, error mask, rate limits) as
 * over HTTP. Keep-alive pings every 12 s keep proxies from cutting idle connections.
 */
export function attachGraphQLWebSocket(server: http.Server, app: GraphQLServer, options: { idleMs?: number; recordUpgrade?: NodeAnswerRecorder } = {}): { close(): Promise<void> } {
  const wsServer = new WebSocketServer({ server, path: app.graphqlEndpoint, maxPayload: MAX_MESSAGE_BYTES });
  const connections = new WeakMap<object, LiveConnection>();
  const idleMs = options.idleMs ?? WEBSOCKET_IDLE_MS;
  const upgradeStartedAt = new WeakMap<http.IncomingMessage, bigint>();
  // What an operation's span says of how it came.
  const spanAttributes = { 'network.protocol.name': 'websocket', 'url.path': app.graphqlEndpoint };
  const activity = new WeakMap<object, { running: number; timer: NodeJS.Timeout | undefined }>();
  const stateOf = (socket: WebSocket) => {
    let state = activity.get(socket);
    if (!state) activity.set(socket, (state = { running: 0, timer: undefined }));
    return state;
  };
  const armIdleClose = (socket: WebSocket) => {
    const state = stateOf(socket);
    clearTimeout(state.timer);
    state.timer = setTimeout(() => socket.close(4408, 'Idle'), idleMs);
    state.timer.unref();
  };
  // The upgrade is timed from the request's head to the 101 written; first among the listeners,
  // before ws's own (which may answer within its listener).
  server.prependListener('upgrade', (request: http.IncomingMessage) => upgradeStartedAt.set(request, process.hrtime.bigint()));
  wsServer.on('connection', (socket, request) => {
    options.recordUpgrade?.(request, { status: 101, requestId: nodeRequestId(request), startedAt: upgradeStartedAt.get(request) ?? process.hrtime.bigint() });
    armIdleClose(socket);
    socket.once('close', () => clearTimeout(stateOf(socket).timer));
  });
  const disposable = useServer(
    {
      onComplete: (ctx) => {
        const state = stateOf(ctx.extra.socket);
        state.running = Math.max(0, state.running - 1);
        if (state.running === 0) armIdleClose(ctx.extra.socket);
      },
      // Each operation in a span of its own when tracing is on (a subscription's covers setting it up).
      execute: (args) => inOperationSpan(SpanKind.SERVER, spanAttributes, () => ((args as ExecutionArgs).rootValue as Enveloped).execute(args as ExecutionArgs)),
      subscribe: (args) => inOperationSpan(SpanKind.SERVER, spanAttributes, () => ((args as ExecutionArgs).rootValue as Enveloped).subscribe(args as ExecutionArgs)),
      onSubscribe: async (ctx, _id, payload) => {
        let liveConnection = connections.get(ctx.extra.socket);
        if (!liveConnection) connections.set(ctx.extra.socket, (liveConnection = { open: 0 }));
        const url = new URL(app.graphqlEndpoint, 'http://localhost');
        const request = new Request(url, { method: 'POST', headers: headersOf(ctx.extra.request, ctx.connectionParams) });
        const enveloped = app.getEnveloped({ request, req: ctx.extra.request, liveConnection, params: payload });
        const document = enveloped.parse(payload.query);
        const errors = enveloped.validate(enveloped.schema, document);
        if (errors.length > 0) return errors;
        // From here the operation runs until onComplete: the connection is not idle.
        const state = stateOf(ctx.extra.socket);
        state.running += 1;
        clearTimeout(state.timer);
        return {
          schema: enveloped.schema,
          operationName: payload.operationName,
          document,
          variableValues: payload.variables,
          contextValue: await enveloped.contextFactory(),
          rootValue: enveloped,
        };
      },
    },
    wsServer,
  );
  return {
    async close() {
      for (const client of wsServer.clients) client.close(1001, 'Going away');
      await disposable.dispose();
      await new Promise<void>((resolve) => wsServer.close(() => resolve()));
    },
  };
}
