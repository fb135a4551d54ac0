import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Waits for something the service does on its own (a job run, a message delivered, a file removed)
 * by asking again until it holds. The timeout only bounds a hang, never a latency: it is generous
 * (60 s by default) so that a loaded 2-core machine cannot fail a test that a quiet one passes.
 * Latency budgets belong in bench/ (bench/README.md), not here.
 *
 * `condition` answers truthy when done (its value is returned), or throws/answers falsy to be asked
 * again; at the timeout the last error (or a plain "not met") is thrown with `what` in it.
 */
export async function eventually<T>(condition: () => T | Promise<T>, options: { timeoutMs?: number; intervalMs?: number; what?: string } = {}): Promise<NonNullable<T>> {
  const timeoutMs = options.timeoutMs ?? 60_000;
  const intervalMs = options.intervalMs ?? 20;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await condition();
      if (value) return value as NonNullable<T>;
      lastError = undefined;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline) {
      const message = `${options.what ?? 'condition'} not met within ${timeoutMs} ms`;
      throw lastError instanceof Error ? Object.assign(lastError, { message: `${message}: ${lastError.message}` }) : new Error(message);
    }
    await sleep(intervalMs);
  }
}
