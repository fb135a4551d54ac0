/**
 * The service reads time through one clock so that tests and the sandbox (docs/reference/contract.md §8) can move
 * it forward. The offset is process-wide on purpose: every component must agree on "now".
 */
export type Clock = {
  now(): Date;
  advance(seconds: number): Date;
};

export function createClock(): Clock {
  let offsetMs = 0;
  return {
    now: () => new Date(Date.now() + offsetMs),
    advance(seconds: number) {
      offsetMs += seconds * 1000;
      return new Date(Date.now() + offsetMs);
    },
  };
}
