import { z } from 'zod';
import { InvalidRequestError, type ValidationIssue } from '../shared/errors.ts';
import { exceedsJsonDepth, MAX_JSON_DEPTH } from '../shared/json-depth.ts';

/** `a.b[0].c` from zod's path array, optionally under a prefix. */
export function formatPath(path: readonly PropertyKey[], prefix = ''): string {
  let result = prefix;
  for (const segment of path) {
    if (typeof segment === 'number') result += `[${segment}]`;
    else result += result === '' ? String(segment) : `.${String(segment)}`;
  }
  return result;
}

export function issuesFromZod(error: z.ZodError, prefix = ''): ValidationIssue[] {
  return error.issues.map((issue) => ({ path: formatPath(issue.path, prefix), message: issue.message }));
}

/**
 * Parses caller input with a schema; every problem becomes one entry of `Request.Invalid`'s
 * `context.issues`, so a caller fixes all of them in one round trip.
 */
export function parseInput<Schema extends z.ZodType>(schema: Schema, input: unknown, prefix = ''): z.output<Schema> {
  const result = schema.safeParse(input);
  if (!result.success) throw new InvalidRequestError(issuesFromZod(result.error, prefix));
  return result.data;
}

/** Length in characters as people count them (code points), not UTF-16 units. */
export function characterCount(value: string): number {
  return [...value].length;
}

export function boundedText(min: number, max: number) {
  return z.string().refine((value) => characterCount(value) >= min && characterCount(value) <= max, {
    message: min > 0 ? `must be ${min} to ${max} characters` : `must be at most ${max} characters`,
  });
}

export function boundedInteger(min: number, max: number) {
  return z.int({ error: `must be an integer from ${min} to ${max}` }).min(min, `must be an integer from ${min} to ${max}`).max(max, `must be an integer from ${min} to ${max}`);
}

const MAX_CONTEXT_BYTES = 16 * 1024;

/** Caller metadata (`context`): any JSON object up to 16 KB serialised. */
export const jsonObject = z.record(z.string(), z.unknown(), { error: 'must be a JSON object' }).superRefine((value, check) => {
  // Depth first: serialising a value nested thousands deep would itself overflow the stack.
  if (exceedsJsonDepth(value, MAX_JSON_DEPTH)) {
    check.addIssue({ code: 'custom', message: `must nest at most ${MAX_JSON_DEPTH} levels deep` });
  } else if (Buffer.byteLength(JSON.stringify(value)) > MAX_CONTEXT_BYTES) {
    check.addIssue({ code: 'custom', message: `must serialise to at most ${MAX_CONTEXT_BYTES} bytes of JSON` });
  }
});

export const identifierSlug = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, 'must be 1 to 64 letters, digits, "_", "-" or ".", starting with a letter or digit');
