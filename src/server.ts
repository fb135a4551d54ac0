import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { App } from './app.ts';
import { withGraphQLUploads } from './graphql/uploads.ts';

export type RunningServer = {
  server: http.Server;
  url: string;
  /** Stops accepting connections, lets in-flight requests finish (up to `graceMs`), then closes. */
  close(graceMs?: number): Promise<void>;
};

/** Puts the app behind a Node HTTP server. Port 0 picks a free port (tests). */
export async function listen(
  app: App,
  { port, host, maxUploadBytes }: { port: number; host?: string; maxUploadBytes: number },
): Promise<RunningServer> {
  const server = http.createServer(withGraphQLUploads(app, { graphqlPath: app.graphqlEndpoint, maxFileBytes: maxUploadBytes }));
  // Uploads of 48 MB on slow links must not be cut off by Node's default 5-minute request timeout.
  server.requestTimeout = 30 * 60 * 1000;
  server.headersTimeout = 60 * 1000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    server,
    url: `http://${shownHost === '[::]' || shownHost === '0.0.0.0' ? 'localhost' : shownHost}:${address.port}`,
    close(graceMs = 10_000) {
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
