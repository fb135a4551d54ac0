/**
 * A subscriber that behaves as the docs tell clients to (docs/errors.md, Subscription.Interrupted):
 * it watches one envelope's events, and whenever its stream ends or is refused it subscribes
 * again with `afterSequence` = the last sequence it holds, until stopped. What it collected is
 * every event once, in order, if the service keeps its promise.
 */
import { ENVELOPE_EVENTS, subscribe, type Transport, type Watcher } from './live.ts';

export type ResumingWatcher = {
  /** The events received over every session, in arrival order. */
  events(): { sequence: number; type: string; status: string }[];
  /** The error names sessions ended or were refused with (Subscription.Interrupted, Subscription.Unavailable, …). */
  errors(): string[];
  /** How many sessions were opened. */
  sessions(): number;
  stop(): Promise<void>;
};

export function resumingWatcher(url: string, transport: Transport, apiKey: string, envelopeId: string, retryMs = 250): ResumingWatcher {
  const done: { sequence: number; type: string; status: string }[] = [];
  const errors: string[] = [];
  let current: Watcher | undefined;
  let currentCounted = 0;
  let sessions = 0;
  let stopped = false;
  const absorb = () => {
    if (!current) return;
    for (const result of current.results.slice(currentCounted)) {
      if (result.errors) errors.push(String(result.errors[0]?.extensions?.code ?? result.errors[0]?.message));
      else if (result.data?.envelopeEvents) done.push(result.data.envelopeEvents);
    }
    currentCounted = current.results.length;
  };
  const loop = (async () => {
    while (!stopped) {
      const after = done.at(-1)?.sequence ?? 0;
      current = subscribe({ url }, transport, { apiKey }, ENVELOPE_EVENTS, { envelopeId, afterSequence: after });
      currentCounted = 0;
      sessions += 1;
      while (!current.isEnded() && !stopped) {
        absorb();
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      if (stopped) break;
      await current.ended;
      absorb();
      await new Promise((resolve) => setTimeout(resolve, retryMs));
    }
  })();
  return {
    events: () => {
      absorb();
      return [...done];
    },
    errors: () => [...errors],
    sessions: () => sessions,
    async stop() {
      stopped = true;
      await current?.close();
      absorb();
      await loop;
    },
  };
}
