/*
 * Origins and return addresses a team may name for embedded signing (issue 21), checked alike by
 * the configuration (SIGNING_FRAME_ANCESTORS), the team settings and each signing URL: an exact
 * origin, https, or http on localhost for development. No path, wildcard, keyword or user name
 * can slip into a Content-Security-Policy's frame-ancestors through one of them.
 */

/** `https://host[:port]` or `http://localhost[:port]`, exactly as an origin reads (lower case, no path). */
export function isFrameOrigin(value: string): boolean {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  return url.origin === value.toLowerCase() && /^[a-z0-9.-]+$/.test(url.hostname) && (url.protocol === 'https:' || (url.protocol === 'http:' && url.hostname === 'localhost'));
}

/** An absolute https URL, or http on localhost (development), with no credentials or fragment. */
export function isReturnUrl(value: string): boolean {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  if (url.username || url.password || url.hash) return false;
  return url.protocol === 'https:' || (url.protocol === 'http:' && url.hostname === 'localhost');
}
