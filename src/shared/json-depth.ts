/**
 * How deeply arrays and objects nest in a JSON value, measured without recursion, and stopping
 * as soon as `limit` is passed. Caller-supplied JSON is stored and later hashed, serialised and
 * rendered by recursive code; a value nested thousands deep would overflow the stack there, so
 * it is refused at the door instead.
 */
export function exceedsJsonDepth(value: unknown, limit: number): boolean {
  const pending: [unknown, number][] = [[value, 0]];
  while (pending.length > 0) {
    const [current, depth] = pending.pop()!;
    if (current === null || typeof current !== 'object') continue;
    if (depth + 1 > limit) return true;
    for (const child of Array.isArray(current) ? current : Object.values(current)) {
      if (child !== null && typeof child === 'object') pending.push([child, depth + 1]);
    }
  }
  return false;
}

/** The nesting any caller-supplied JSON may have (a `context`, a field value or configuration). */
export const MAX_JSON_DEPTH = 32;
