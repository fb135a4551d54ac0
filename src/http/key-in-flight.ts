/**
 * Reads in flight per API key (docs/decisions.md, "Reads in flight per key"): a key may have at
 * most `perKey` REST reads being worked on at once in this process; its further reads wait, in
 * the order they came, for one of its own to finish. Nothing is refused: a key that opens many
 * connections gets its answers one after another instead of all at once, and the cores it would
 * have taken stay with the other teams. The rate limit decides how much a key may ask in a minute;
 * this decides how much of the process it may hold at once, which the minute's budget spent in
 * its first seconds (600 pages on 8 connections) otherwise does.
 */
export type KeyInFlight = {
  /** Waits until the key may start one more read; answers its release (idempotent). */
  enter(key: string): Promise<() => void>;
  /** Reads of the key being worked on now, and waiting (tests read it). */
  state(key: string): { running: number; waiting: number };
};

type Slots = { running: number; waiting: (() => void)[] };

/** `perKey` 0: no cap (every read starts at once). */
export function createKeyInFlight(perKey: number): KeyInFlight {
  const byKey = new Map<string, Slots>();
  const released = Promise.resolve(() => {});

  function releaser(key: string, slots: Slots): () => void {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const next = slots.waiting.shift();
      // The slot goes straight to the next waiting read of the same key (running stays the same).
      if (next) next();
      else {
        slots.running -= 1;
        if (slots.running === 0 && byKey.get(key) === slots) byKey.delete(key);
      }
    };
  }

  return {
    enter(key) {
      if (perKey <= 0) return released;
      let slots = byKey.get(key);
      if (!slots) byKey.set(key, (slots = { running: 0, waiting: [] }));
      if (slots.running < perKey) {
        slots.running += 1;
        return Promise.resolve(releaser(key, slots));
      }
      const waitingOn = slots;
      return new Promise((resolve) => waitingOn.waiting.push(() => resolve(releaser(key, waitingOn))));
    },
    state(key) {
      const slots = byKey.get(key);
      return { running: slots?.running ?? 0, waiting: slots?.waiting.length ?? 0 };
    },
  };
}
