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

/**
 * PostgreSQL cannot store U+0000 in text or JSON, and a lone UTF-16 surrogate is not text at all;
 * both are refused as input rather than failing at the database as a server error.
 */
const unstorableText = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
/** Control characters (C0 and DEL) have no place in a one-line name or label. */
const controlCharacter = /[\u0000-\u001f\u007f]/;

export function isStorableText(value: string): boolean {
  return !unstorableText.test(value);
}

/** A one-line text (a name, a label): `min` to `max` characters, no control characters, valid Unicode. */
export function boundedText(min: number, max: number) {
  return z
    .string()
    .refine((value) => characterCount(value) >= min && characterCount(value) <= max, {
      message: min > 0 ? `must be ${min} to ${max} characters` : `must be at most ${max} characters`,
    })
    .refine((value) => isStorableText(value) && !controlCharacter.test(value), {
      message: 'must not contain control characters or broken Unicode',
    });
}

/**
 * Bidirectional controls (embeddings, overrides, isolates and the implicit marks): U+202E can
 * make "invoice\u202Efdp.exe" read as "invoiceexe.pdf". A signer must read what was written.
 */
const bidiControls = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/u;
/** Characters that show nothing by themselves: white space, zero-width and other ignorable ones, the blank Braille pattern. */
const invisibleOnly = /^[\p{White_Space}\p{Default_Ignorable_Code_Point}\u2800]+$/u;

function codePointLabel(character: string): string {
  return `U+${character.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
}

/**
 * Why a name a signer reads (an envelope, document or role name, a field label or tooltip, a
 * person's name) cannot be shown as it is, or undefined when it can. The empty string is left to
 * the length rule. The one rule for every such name, on both faces.
 */
export function unreadableNameProblem(value: string): string | undefined {
  if (value === '') return undefined;
  const bidi = bidiControls.exec(value);
  if (bidi) {
    return `must not contain bidirectional control characters (found ${codePointLabel(bidi[0])}): they change the order in which the text is shown`;
  }
  if (value.trim() === '' && invisibleOnly.test(value)) return 'must not be blank';
  if (invisibleOnly.test(value)) {
    const first = [...value].find((character) => !/^\p{White_Space}$/u.test(character)) ?? value;
    return `must contain a visible character (it has only invisible ones such as ${codePointLabel(first)})`;
  }
  return undefined;
}

/**
 * A name a signer reads: a one-line text (`boundedText`) that is also not blank, not made only of
 * invisible characters, and free of bidirectional controls (`unreadableNameProblem`).
 */
export function readableName(min: number, max: number) {
  return boundedText(min, max).superRefine((value, check) => {
    const problem = unreadableNameProblem(value);
    if (problem !== undefined) check.addIssue({ code: 'custom', message: problem });
  });
}

/** The most unstorable texts one input names in `Request.Invalid`'s issues: the first ones found. */
export const MAX_UNSTORABLE_TEXT_ISSUES = 20;
export const UNSTORABLE_TEXT_MESSAGE = 'must not contain NUL characters or broken Unicode';

/**
 * Every string and key inside a parsed input (a JSON body, GraphQL variables, a form's fields, a
 * query string) that no text column or JSON value can hold: U+0000 or a lone surrogate, as
 * `Request.Invalid` issues under `prefix`, at most MAX_UNSTORABLE_TEXT_ISSUES of them. The one
 * text check of every face, run where caller input is parsed, so that no field can be missed: a
 * NUL that reached PostgreSQL failed the request as a server error (500, or 503 when the failed
 * statement looked like a connection fault). Iterative, so any depth the parser allowed is walked.
 */
export function unstorableTextIssues(value: unknown, prefix = ''): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  const pending: { value: unknown; path: PropertyKey[] }[] = [{ value, path: [] }];
  while (pending.length > 0 && issues.length < MAX_UNSTORABLE_TEXT_ISSUES) {
    const current = pending.pop()!;
    if (typeof current.value === 'string') {
      if (!isStorableText(current.value)) issues.push({ path: formatPath(current.path, prefix), message: UNSTORABLE_TEXT_MESSAGE });
    } else if (Array.isArray(current.value)) {
      for (let index = current.value.length - 1; index >= 0; index -= 1) pending.push({ value: current.value[index], path: [...current.path, index] });
    } else if (isPlainObject(current.value)) {
      const entries = Object.entries(current.value);
      for (let index = entries.length - 1; index >= 0; index -= 1) {
        const [key, child] = entries[index]!;
        if (!isStorableText(key)) {
          // The key itself cannot be shown as it is: it is named by its parent and a readable form.
          issues.push({
            path: formatPath(current.path, prefix),
            message: `must not have a key containing NUL characters or broken Unicode (${JSON.stringify(key.replace(unstorableTextGlobal, '\ufffd'))})`,
          });
          if (issues.length >= MAX_UNSTORABLE_TEXT_ISSUES) break;
        } else {
          pending.push({ value: child, path: [...current.path, key] });
        }
      }
    }
  }
  return issues;
}

const unstorableTextGlobal = new RegExp(unstorableText.source, 'g');

/** Parsed input is made of plain objects; anything else (an upload's stream, a Date) is not caller text. */
function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object') return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/** Refuses a parsed input holding unstorable text (unstorableTextIssues) with `Request.Invalid`. */
export function refuseUnstorableText(value: unknown, prefix = ''): void {
  const issues = unstorableTextIssues(value, prefix);
  if (issues.length > 0) throw new InvalidRequestError(issues);
}

/** Whether any key or string inside a JSON value is unstorable (checked without recursion). */
function containsUnstorableText(value: unknown): boolean {
  return unstorableTextIssues(value).length > 0;
}

export function boundedInteger(min: number, max: number) {
  return z
    .int({ error: `must be an integer from ${min} to ${max}` })
    .min(min, `must be an integer from ${min} to ${max}`)
    .max(max, `must be an integer from ${min} to ${max}`);
}

const MAX_CONTEXT_BYTES = 16 * 1024;

function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Caller metadata (`context`): any JSON object up to 16 KB serialised, kept exactly as sent. The
 * object itself is the output (not a copy): `z.record` rebuilds objects by assignment, and
 * assigning a `__proto__` key sets the copy's prototype instead, so that key vanished silently.
 * JSON.parse keeps it as an own property; so do the entity's JSON column and the read model.
 */
export const jsonObject = z.custom<Record<string, unknown>>(isJsonObject, { error: 'must be a JSON object' }).superRefine((value, check) => {
  // Depth first: serialising a value nested thousands deep would itself overflow the stack.
  if (exceedsJsonDepth(value, MAX_JSON_DEPTH)) {
    check.addIssue({ code: 'custom', message: `must nest at most ${MAX_JSON_DEPTH} levels deep` });
  } else if (containsUnstorableText(value)) {
    check.addIssue({ code: 'custom', message: 'must not contain NUL characters or broken Unicode' });
  } else if (Buffer.byteLength(JSON.stringify(value)) > MAX_CONTEXT_BYTES) {
    check.addIssue({ code: 'custom', message: `must serialise to at most ${MAX_CONTEXT_BYTES} bytes of JSON` });
  }
});

export const identifierSlug = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, 'must be 1 to 64 letters, digits, "_", "-" or ".", starting with a letter or digit');

/** The keys a patch gives a value for (`undefined` means "not given"): what an update changes and records. */
export function givenKeys<Patch extends object>(patch: Patch): (keyof Patch & string)[] {
  return (Object.keys(patch) as (keyof Patch & string)[]).filter((key) => patch[key] !== undefined);
}
