import type { MikroORM } from '@mikro-orm/postgresql';
import type { Clock } from '../shared/clock.ts';
import type { Logger } from '../shared/logger.ts';
import { listenForNotifications, type NotificationListener } from './notification-listener.ts';

export const SANDBOX_CLOCK_CHANNEL = 'envelope_sandbox_clock';

/**
 * Makes the sandbox clock (SANDBOX_CLOCK=true) one clock for every instance on a database, and for
 * an instance after a restart. The offset lives in `sandbox_clock` (one row):
 * - a move adds to it in one statement, which also notifies the other instances;
 * - each instance takes the recorded offset at start, on every notification (its expiry sweep and
 *   reminder scheduler see the move within milliseconds), and before each request, so a request
 *   that lands on another instance right after a move already sees it (a one-row read, paid only
 *   on sandbox instances).
 * A failed read keeps the offset this instance knows; time never moves back.
 */
export async function shareSandboxClock(options: {
  orm: MikroORM;
  clock: Clock;
  /** The PostgreSQL server's URL, for the notification listener; absent on the embedded database (one process). */
  connectionString: string | undefined;
  logger: Logger;
}): Promise<{ close(): Promise<void> }> {
  const { orm, clock, logger } = options;
  const connection = () => orm.em.getConnection();

  async function refresh() {
    try {
      const [row] = await connection().execute<{ offset_ms: string }[]>(`select offset_ms from sandbox_clock where id = 1`);
      if (row) clock.adoptOffset(Number(row.offset_ms));
    } catch (error) {
      logger.warn({ err: { message: (error as Error)?.message } }, 'could not read the shared sandbox clock; keeping the offset this instance knows');
    }
  }

  clock.shared = {
    async advance(seconds: number) {
      const [row] = await connection().execute<{ offset_ms: string }[]>(
        `with moved as (
           insert into sandbox_clock (id, offset_ms, changed_at) values (1, ?, now())
           on conflict (id) do update set offset_ms = sandbox_clock.offset_ms + excluded.offset_ms, changed_at = now()
           returning offset_ms
         )
         select offset_ms, pg_notify('${SANDBOX_CLOCK_CHANNEL}', offset_ms::text) from moved`,
        [seconds * 1000],
      );
      clock.adoptOffset(Number(row!.offset_ms));
      return clock.now();
    },
    refresh,
  };
  await refresh();

  let listener: NotificationListener | undefined;
  if (options.connectionString !== undefined) {
    listener = await listenForNotifications({
      connectionString: options.connectionString,
      channels: [SANDBOX_CLOCK_CHANNEL],
      name: 'sandbox clock',
      messages: { up: 'listening for sandbox clock moves', down: 'sandbox clock listener lost its connection; requests still read the clock' },
      logger,
      onNotification: (_channel, payload) => clock.adoptOffset(Number(payload)),
      // A move missed while the listener was down is read back once it listens again.
      onUp: () => void refresh(),
      onDown: () => {},
    });
  }
  return {
    async close() {
      await listener?.close();
      delete clock.shared;
    },
  };
}
