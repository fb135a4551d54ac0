import { z } from 'zod';
import { InvalidRequestError } from '../shared/errors.ts';
import { isUuid } from '../shared/ids.ts';
import { boundedInteger, isStorableText } from './validation.ts';

/*
 * Keyset pagination shared by every newest-first listing (envelopes, contacts, groups, users):
 * ordered by (createdAt desc, id desc), continued from an opaque cursor naming the last row seen.
 * Stable under concurrent inserts, and each page is one index range scan however deep it goes.
 */

/** Every paged listing's page size when none is asked for, and the largest it gives (both faces). */
export const PAGE_SIZE = { default: 20, max: 100 } as const;

/** `limit` 1–100 (default 20), an opaque `cursor` from a previous page, and an optional `search`. */
export const keysetPageInput = z.strictObject({
  limit: boundedInteger(1, PAGE_SIZE.max).default(PAGE_SIZE.default),
  cursor: z.string().max(200).optional(),
  search: z.string().max(200, 'must be at most 200 characters').refine(isStorableText, 'must not contain NUL characters or broken Unicode').optional(),
});

type CursorPosition = { createdAt: Date; id: string };

/** The opaque position of a row in a newest-first listing; pass it as `cursor`/`after` to continue after it. */
export function createdAtCursor(row: { createdAt: Date | string; id: string }): string {
  const createdAt = typeof row.createdAt === 'string' ? row.createdAt : row.createdAt.toISOString();
  return Buffer.from(JSON.stringify([createdAt, row.id])).toString('base64url');
}

/** The row a cursor names; `Request.Invalid` for anything this service did not hand out. */
export function decodeCursorPosition(cursor: string): CursorPosition {
  try {
    const [createdAt, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as [string, string];
    const date = new Date(createdAt);
    // Only instants PostgreSQL can compare against: a forged date outside its range would fail there.
    const year = date.getUTCFullYear();
    if (!isUuid(id) || Number.isNaN(date.getTime()) || year < 1 || year > 9999) throw new Error('bad cursor');
    return { createdAt: date, id };
  } catch {
    throw new InvalidRequestError([{ path: 'cursor', message: 'is not a cursor this service returned' }]);
  }
}

/**
 * A case-insensitive "contains" pattern for `ilike`, or undefined for no search. `%`, `_` and
 * `\` in the caller's text match themselves, not as wildcards.
 */
export function containsPattern(search: string | undefined): string | undefined {
  const trimmed = search?.trim() ?? '';
  if (trimmed === '') return undefined;
  return `%${trimmed.replace(/[\\%_]/g, (character) => `\\${character}`)}%`;
}

/** Cuts the one extra row a listing fetched to learn whether another page follows. */
export function takePage<T extends { createdAt: Date | string; id: string }>(rows: T[], limit: number): { rows: T[]; nextCursor: string | null } {
  const hasMore = rows.length > limit;
  const page = hasMore ? rows.slice(0, limit) : rows;
  return { rows: page, nextCursor: hasMore ? createdAtCursor(page[page.length - 1]) : null };
}
