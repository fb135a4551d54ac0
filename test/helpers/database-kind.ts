import net from 'node:net';

function canConnect(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port, timeout: 1000 });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

/**
 * Where the tests run: on a PostgreSQL server when one answers (DATABASE_URL's, else the local
 * 127.0.0.1:5432), otherwise, or with TEST_DATABASE=embedded, on the embedded PostgreSQL. Asked by
 * the global setup (which database to create) and by vitest.config.ts (how many files at once).
 */
export async function testDatabase(): Promise<{ kind: 'server' | 'embedded'; serverUrl: URL }> {
  const serverUrl = new URL(process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres');
  if (process.env.TEST_DATABASE === 'embedded') return { kind: 'embedded', serverUrl };
  return { kind: (await canConnect(serverUrl.hostname, Number(serverUrl.port || 5432))) ? 'server' : 'embedded', serverUrl };
}
