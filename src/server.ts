import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { App } from './app.ts';
import { withGraphQLUploads } from './graphql/uploads.ts';
import { attachGraphQLWebSocket } from './graphql/websocket.ts';
import { BODY_TIMEOUTS, type BodyTimeouts, guardRequestBody } from './http/body-guard.ts';
import { traceHttpRequests } from './http/request-tracing.ts';
import { MCP_PATH } from './mcp/serve.ts';
import { isRestPath, requestUrl } from './rest/serve.ts';

export type RunningServer = {
  server: http.Server;
  url: string;
  /** Stops accepting connections, lets in-flight requests finish (up to `graceMs`), then closes. */
  close(graceMs?: number): Promise<void>;
};

/**
 * Puts the app behind a Node HTTP server. Port 0 picks a free port (tests). `bodyTimeouts`
 * defaults to BODY_TIMEOUTS; tests pass shorter ones (see body-guard.ts).
 */
export async function listen(
  app: App,
  { port, host, maxUploadBytes, bodyTimeouts, webSocketIdleMs }: { port: number; host?: string; maxUploadBytes: number; bodyTimeouts?: Partial<BodyTimeouts>; webSocketIdleMs?: number },
): Promise<RunningServer> {
  const timeouts: BodyTimeouts = { ...BODY_TIMEOUTS, ...bodyTimeouts };
  const handle = withGraphQLUploads(app, { graphqlPath: app.graphqlEndpoint, maxFileBytes: maxUploadBytes, recordAnswer: app.recordNodeAnswer });
  // Each request's span (when tracing is on) encloses the body guard, uploads and the app.
  const serve = (request: http.IncomingMessage, response: http.ServerResponse) => {
    guardRequestBody(request, response, timeouts, app.recordNodeAnswer);
    // REST, health and MCP beside yoga, straight on Node's request and response; GraphQL over SSE
    // through yoga, its event stream written straight to Node (graphql/live-sse.ts); the rest through yoga.
    const url = requestUrl(request.url);
    if (url && isRestPath(url.pathname)) app.rest.serve(request, response, url);
    else if (url && url.pathname === MCP_PATH) app.mcp.serve(request, response);
    else if (url && app.liveSse.accepts(request, url)) app.liveSse.serve(request, response);
    // Known pass-through operations (plain envelope pages) beside yoga, the rest through it (graphql/pass-through-http.ts).
    else if (url && app.passThrough?.accepts(request, url.pathname)) app.passThrough.serve(request, response, handle);
    else handle(request, response);
  };
  const server = http.createServer(
    traceHttpRequests((request, response) => {
      // A key known over its budget is refused before anything else (docs/decisions.md, "REST beside
      // yoga" and "Floods held"); served as usual if its window ends while its refusal is held.
      if (app.rest.refuseKnownOverBudget(request, response, () => serve(request, response))) return;
      serve(request, response);
    }),
  );
  // The body guard answers a slow body with a named 408 itself; Node's own request timeout (a bare
  // 408) is only the backstop behind it, so it is set a little longer. Uploads of 48 MB on slow
  // links must still get through (see BODY_TIMEOUTS.totalMs).
  server.requestTimeout = timeouts.totalMs + timeouts.headersMs + 5_000;
  server.headersTimeout = timeouts.headersMs;
  // An idle keep-alive connection is kept longer than the clients and proxies in front keep theirs
  // (undici about 4 s, load balancers 60 s): when the server closes first, a client may send its
  // next request on the closing socket and get ECONNRESET (a 502 behind a load balancer). Node's
  // default is 5 s. Idle connections cost a socket each and are closed at shutdown.
  server.keepAliveTimeout = 65_000;
  // Subscriptions (and any operation) over WebSocket on the same port and path.
  const webSocket = attachGraphQLWebSocket(server, app, { idleMs: webSocketIdleMs, recordUpgrade: app.recordNodeAnswer });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    server,
    url: `http://${shownHost === '[::]' || shownHost === '0.0.0.0' ? 'localhost' : shownHost}:${address.port}`,
    async close(graceMs = 10_000) {
      // Open WebSockets and event streams never finish by themselves: they are told to go first.
      await webSocket.close();
      return new Promise<void>((resolve) => {
        const forceTimer = setTimeout(() => server.closeAllConnections(), graceMs);
        forceTimer.unref();
        server.close(() => {
          clearTimeout(forceTimer);
          resolve();
        });
        // Idle keep-alive connections would otherwise hold close() open until they time out.
        server.closeIdleConnections();
      });
    },
  };
}
