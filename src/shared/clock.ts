/**
 * The service reads time through one clock so that tests and the sandbox (docs/reference/contract.md §8) can move
 * it forward. The offset is process-wide on purpose: every component must agree on "now".
 */
export type Clock = {
  now(): Date;
  advance(seconds: number): Date;
  /**
   * Takes an offset recorded elsewhere (another instance moved the shared sandbox clock). Time never
   * moves back: an offset behind this clock's is ignored.
   */
  adoptOffset(offsetMs: number): void;
  /**
   * Present when the sandbox clock is shared through the database (src/db/shared-sandbox-clock.ts):
   * `advance` moves it for every instance, `refresh` reads what another instance recorded.
   */
  shared?: { advance(seconds: number): Promise<Date>; refresh(): Promise<void> };
};

export function createClock(): Clock {
  let offsetMs = 0;
  return {
    now: () => new Date(Date.now() + offsetMs),
    advance(seconds: number) {
      offsetMs += seconds * 1000;
      return new Date(Date.now() + offsetMs);
    },
    adoptOffset(recordedMs: number) {
      if (Number.isFinite(recordedMs)) offsetMs = Math.max(offsetMs, recordedMs);
    },
  };
}
