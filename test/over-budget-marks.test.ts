import { afterEach, describe, expect, it, vi } from 'vitest';
import { createOverBudgetMarks, type RateLimitDecision } from '../src/http/rate-limit.ts';

const refused = (windowEndsAtMs: number, scope: RateLimitDecision['scope'] = 'apiKey'): RateLimitDecision => ({
  allowed: false,
  limit: 600,
  remaining: 0,
  resetAt: Math.ceil(windowEndsAtMs / 1000),
  retryAfterSeconds: Math.max(1, Math.ceil((windowEndsAtMs - Date.now()) / 1000)),
  scope,
  windowEndsAtMs,
});

describe('over-budget marks (the listener refuses a key the limiter refused, until its window ends)', () => {
  afterEach(() => vi.useRealTimers());

  it('refuses a marked key with the refusal the limiter gave, and forgets it when the window ends', () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const marks = createOverBudgetMarks();
    expect(marks.refusal('esk_a')).toBeUndefined();
    marks.mark('esk_a', refused(1_000_000 + 42_500));
    expect(marks.refusal('esk_a')).toMatchObject({ allowed: false, limit: 600, remaining: 0, resetAt: 1043, retryAfterSeconds: 43, scope: 'apiKey' });
    expect(marks.refusal('esk_b')).toBeUndefined();
    vi.setSystemTime(1_000_000 + 42_000);
    expect(marks.refusal('esk_a')?.retryAfterSeconds).toBe(1);
    vi.setSystemTime(1_000_000 + 42_500);
    expect(marks.refusal('esk_a')).toBeUndefined();
  });

  it('marks only refusals in the apiKey scope', () => {
    const marks = createOverBudgetMarks();
    marks.mark('esk_a', { ...refused(Date.now() + 10_000), allowed: true });
    marks.mark('esk_b', refused(Date.now() + 10_000, 'client'));
    expect(marks.refusal('esk_a')).toBeUndefined();
    expect(marks.refusal('esk_b')).toBeUndefined();
  });
});
