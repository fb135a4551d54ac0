import type http from 'node:http';
import type { ExecutionArgs } from 'graphql';
import { useServer } from 'graphql-ws/use/ws';
import { WebSocketServer } from 'ws';
import type { App } from '../app.ts';
import type { LiveConnection } from '../domain/live/live.service.ts';

/** A WebSocket message larger than this closes the connection (the GraphQL POST body limit). */
const MAX_MESSAGE_BYTES = 1024 * 1024;

/** The credentials a client may put in `connectionParams`, read as the HTTP face reads its headers. */
const PARAM_HEADERS = ['x-service-api-key', 'x-signing-token'] as const;

type Enveloped = ReturnType<App['getEnveloped']>;

/**
 * The headers an operation on this connection is treated as having: the upgrade request's own
 * (user agent, forwarded addresses, request id), with the credentials from `connectionParams`
 * (a browser cannot set headers on a WebSocket). Keys are matched case-insensitively.
 */
function headersOf(upgrade: http.IncomingMessage, connectionParams: Readonly<Record<string, unknown>> | undefined): Headers {
  const headers = new Headers();
  for (const name of ['user-agent', 'x-forwarded-for', 'x-request-id']) {
    const value = upgrade.headers[name];
    if (typeof value === 'string') headers.set(name, value);
  }
  for (const [key, value] of Object.entries(connectionParams ?? {})) {
    const name = key.toLowerCase();
    if ((PARAM_HEADERS as readonly string[]).includes(name) && typeof value === 'string') headers.set(name, value);
  }
  return headers;
}

/**
 * GraphQL over WebSocket (the `graphql-ws` protocol) on the app's GraphQL path, on the same HTTP
 * server: every operation runs through the same yoga plugins (limits, error mask, rate limits) as
 * over HTTP. Keep-alive pings every 12 s keep proxies from cutting idle connections.
 */
export function attachGraphQLWebSocket(server: http.Server, app: App): { close(): Promise<void> } {
  const wsServer = new WebSocketServer({ server, path: app.graphqlEndpoint, maxPayload: MAX_MESSAGE_BYTES });
  const connections = new WeakMap<object, LiveConnection>();
  const disposable = useServer(
    {
      execute: (args) => ((args as ExecutionArgs).rootValue as Enveloped).execute(args as ExecutionArgs),
      subscribe: (args) => ((args as ExecutionArgs).rootValue as Enveloped).subscribe(args as ExecutionArgs),
      onSubscribe: async (ctx, _id, payload) => {
        let liveConnection = connections.get(ctx.extra.socket);
        if (!liveConnection) connections.set(ctx.extra.socket, (liveConnection = { open: 0 }));
        const url = new URL(app.graphqlEndpoint, 'http://localhost');
        const request = new Request(url, { method: 'POST', headers: headersOf(ctx.extra.request, ctx.connectionParams) });
        const enveloped = app.getEnveloped({ request, req: ctx.extra.request, liveConnection, params: payload });
        const document = enveloped.parse(payload.query);
        const errors = enveloped.validate(enveloped.schema, document);
        if (errors.length > 0) return errors;
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
