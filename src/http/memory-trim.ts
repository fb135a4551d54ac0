import type http from 'node:http';
import type { Logger } from '../shared/logger.ts';

export type GarbageCollector = (options: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void;

export type IdleMemoryTrim = { stop(): void };

const MiB = 1024 * 1024;

/**
 * Gives memory back to the operating system once a burst of large answers is over.
 *
 * Why this exists: V8 keeps the pages a burst grew its heap by (and a pool of freed ones) until its
 * memory reducer runs, and the reducer waits to observe a low allocation rate. A server that goes
 * quiet allocates nothing, so the rate is never re-measured and the pages can stay for good
 * (`npm run bench:memory`: 60–90 MiB over the baseline, still there after 30 s idle). When the
 * server has had no request in flight for `idleMs` and its resident memory is more than
 * `growthBytes` above what it was after the last trim, one memory-reducing full collection (the one
 * V8 runs under memory pressure, which also releases pooled pages) returns it. It runs only on an
 * idle process, at most once per growth, and takes tens of milliseconds itself.
 *
 * Why 30 s of quiet and not a moment: the collection leaves the heap at its smallest (`--trace-gc`
 * shows the young generation back at 1 MiB and a full collection or two more in the next burst),
 * and the next burst pays for it: in each of seven processes measured, the REST reads right after a
 * trim cost 0.27–0.33 ms of CPU per request (medians) against 0.20–0.25 without one, about 2 s
 * over the 20,000 requests after it, of which its extra collections take a tenth
 * (docs/performance.md, "What the memory trim costs the burst after it"). Bursts that come back
 * within half a minute keep their heap; a process that has really gone quiet still gives it back.
 *
 * It needs Node's `--expose-gc` (the start script sets it); without it, it does nothing.
 */
export function startIdleMemoryTrim({
  server,
  logger,
  idleMs = 30_000,
  growthBytes = 32 * MiB,
  checkEveryMs = 1_000,
  collectGarbage = (globalThis as { gc?: GarbageCollector }).gc,
}: {
  server: http.Server;
  logger: Logger;
  idleMs?: number;
  growthBytes?: number;
  checkEveryMs?: number;
  /** V8's `gc`, present when node runs with `--expose-gc`; tests pass their own. */
  collectGarbage?: GarbageCollector;
}): IdleMemoryTrim {
  const collect = collectGarbage;
  if (!collect) {
    logger.debug('memory trim off: node was started without --expose-gc');
    return { stop() {} };
  }
  let inFlight = 0;
  let lastActivity = Date.now();
  let residentAfterTrim = process.memoryUsage.rss();
  const onRequest = (_request: http.IncomingMessage, response: http.ServerResponse) => {
    inFlight += 1;
    lastActivity = Date.now();
    response.once('close', () => {
      inFlight -= 1;
      lastActivity = Date.now();
    });
  };
  server.on('request', onRequest);
  const timer = setInterval(() => {
    const resident = process.memoryUsage.rss();
    // Memory the process gave back on its own lowers the mark, so later growth is measured from there.
    if (resident < residentAfterTrim) residentAfterTrim = resident;
    if (inFlight > 0 || Date.now() - lastActivity < idleMs || resident - residentAfterTrim < growthBytes) return;
    const started = performance.now();
    collect({ type: 'major', execution: 'sync', flavor: 'last-resort' });
    residentAfterTrim = process.memoryUsage.rss();
    logger.debug(
      { residentBeforeMiB: Math.round(resident / MiB), residentAfterMiB: Math.round(residentAfterTrim / MiB), ms: Math.round(performance.now() - started) },
      'memory trimmed after a burst',
    );
  }, checkEveryMs);
  timer.unref();
  return {
    stop() {
      clearInterval(timer);
      server.off('request', onRequest);
    },
  };
}
