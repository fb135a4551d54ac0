import pg from 'pg';
import type { Logger } from '../shared/logger.ts';

export type NotificationListener = { close(): Promise<void> };

/**
 * Holds one dedicated connection (outside the ORM's pool) that LISTENs on `channels` of a
 * PostgreSQL server and hands each notification to `onNotification`. PostgreSQL delivers only
 * notifications of committed transactions, in commit order. Whenever the connection is not
 * listening, notifications may be missed: `onDown` is called (at the start too, and on close),
 * `onUp` once it listens again; it is re-made with backoff. Resolves after the first attempt,
 * successful or not. Only for a real server: the embedded database has a single backend whose
 * LISTEN state every connection shares.
 */
export async function listenForNotifications(options: {
  connectionString: string;
  channels: readonly string[];
  /** Shown in pg_stat_activity. */
  name: string;
  /** The log lines when it starts listening and when it lost its connection. */
  messages: { up: string; down: string };
  logger: Logger;
  onNotification(channel: string, payload: string): void;
  onUp(): void;
  onDown(): void;
  retryMs?: { first: number; max: number };
}): Promise<NotificationListener> {
  const { connectionString, logger } = options;
  const retry = options.retryMs ?? { first: 100, max: 5_000 };
  let delay = retry.first;
  let current: pg.Client | undefined;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;

  function lost(client: pg.Client, error?: unknown) {
    if (current !== client) return;
    current = undefined;
    options.onDown();
    client.end().catch(() => {});
    if (closed) return;
    logger.warn({ err: error, retryInMs: delay }, options.messages.down);
    timer = setTimeout(() => void connect(), delay);
    delay = Math.min(delay * 2, retry.max);
  }

  async function connect() {
    timer = undefined;
    const client = new pg.Client({ connectionString, keepAlive: true, connectionTimeoutMillis: 5_000, application_name: `envelope-service ${options.name}` });
    current = client;
    client.on('notification', (message) => {
      if (message.payload) options.onNotification(message.channel, message.payload);
    });
    client.on('error', (error) => lost(client, error));
    client.on('end', () => lost(client, new Error('connection ended')));
    try {
      await client.connect();
      await client.query(options.channels.map((channel) => `listen ${channel};`).join(' '));
    } catch (error) {
      lost(client, error);
      return;
    }
    if (current !== client) return;
    delay = retry.first;
    options.onUp();
    logger.info({ channels: options.channels }, options.messages.up);
  }

  options.onDown();
  await connect();
  return {
    async close() {
      closed = true;
      clearTimeout(timer);
      const client = current;
      current = undefined;
      options.onDown();
      await client?.end().catch(() => {});
    },
  };
}
