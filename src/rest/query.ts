import { InvalidRequestError } from '../shared/errors.ts';

/** `?flag=true|false|1|0`; absent means false. Anything else is `Request.Invalid`. */
export function booleanQuery(url: URL, name: string): boolean {
  const raw = url.searchParams.get(name);
  if (raw === null || raw === '') return false;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new InvalidRequestError([{ path: name, message: 'must be true or false' }]);
}

/** `?limit=20`: a whole number, or `Request.Invalid`. Absent stays undefined. */
export function integerQuery(url: URL, name: string): number | undefined {
  const raw = url.searchParams.get(name);
  if (raw === null || raw === '') return undefined;
  if (!/^-?\d+$/.test(raw)) throw new InvalidRequestError([{ path: name, message: 'must be a whole number' }]);
  return Number(raw);
}
