import type { Clock } from '../../src/shared/clock.ts';

/**
 * A clock that stands still at `at` until advanced: a worker or job given it computes schedules
 * (a paced step's next run, a lease's end) from a known instant, so a test asserts the schedule
 * itself rather than comparing it with the real time a loaded machine has moved on meanwhile.
 */
export function frozenClock(at: Date): Clock {
  let nowMs = at.getTime();
  return {
    now: () => new Date(nowMs),
    advance(seconds: number) {
      nowMs += seconds * 1000;
      return new Date(nowMs);
    },
    adoptOffset() {},
  };
}
