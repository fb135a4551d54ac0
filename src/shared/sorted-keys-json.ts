/**
 * JSON with every object's keys sorted (by UTF-16 code units, as `Array.prototype.sort` orders
 * strings), at every level: the same content always writes, and so hashes, the same. Dates are
 * written as `toISOString()` gives them; keys whose value is undefined are left out, as
 * `JSON.stringify` leaves them out. The audit chain's hashes, the evidence package's chain,
 * idempotency fingerprints and a data merge's data hash all rest on it.
 *
 * (Not to be confused with `canonical-json.ts`, which checks PostgreSQL's JSON text against what
 * `JSON.stringify` would write, without reordering anything.)
 */
export function sortedKeysJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value ?? null);
  if (value instanceof Date) return JSON.stringify(value.toISOString());
  if (Array.isArray(value)) return `[${value.map(sortedKeysJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, entry]) => entry !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([key, entry]) => `${JSON.stringify(key)}:${sortedKeysJson(entry)}`).join(',')}}`;
}
