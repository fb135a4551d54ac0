/**
 * GraphQL sends `null` for an optional argument a client wrote as null, and leaves it out when
 * the client omitted it. The domain's inputs mean "not given" by an absent key, so nulls are
 * dropped, except for keys where null means "clear it" (`keepNull`). Nested objects are cleaned
 * too; JSON values (`context`, `value`, `config`) are passed through untouched.
 */
export function withoutNulls(value: unknown, options: { keepNull?: string[]; opaque?: string[] } = {}): unknown {
  if (Array.isArray(value)) return value.map((item) => withoutNulls(item, options));
  if (value === null || typeof value !== 'object' || value instanceof Date) return value;
  const result: Record<string, unknown> = {};
  for (const [key, entry] of Object.entries(value)) {
    if (entry === undefined) continue;
    if (entry === null && !options.keepNull?.includes(key)) continue;
    result[key] = options.opaque?.includes(key) ? entry : withoutNulls(entry, options);
  }
  return result;
}

export const JSON_VALUE_KEYS = ['context', 'value', 'config', 'info'];
