/**
 * RFC 8187's attr-char: the only characters a `filename*` value may carry unencoded. Everything
 * else, `'`, `(`, `)` and `*` included (which encodeURIComponent leaves as they are), is written
 * as `%XX` of its UTF-8 bytes.
 */
const ATTR_CHAR = /^[A-Za-z0-9!#$&+\-.^_`|~]$/;

/** `filename*`'s value (RFC 8187 ext-value): `UTF-8''` and the name, percent-encoded byte by byte. */
export function extendedFilename(filename: string): string {
  let encoded = '';
  // Buffer.from writes a lone surrogate as U+FFFD where encodeURIComponent would throw.
  for (const byte of Buffer.from(filename, 'utf8')) {
    const character = String.fromCharCode(byte);
    encoded += byte < 0x80 && ATTR_CHAR.test(character) ? character : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return `UTF-8''${encoded}`;
}

/**
 * `Content-Disposition` for a file download (RFC 6266): the disposition, an ASCII fallback name
 * for old clients and the exact UTF-8 name in `filename*` (RFC 8187), so "Sözleşme (2).pdf"
 * arrives as sent and no name can break out of the header. The one builder of the header: every
 * download (REST, signed and final-copy URLs, the object store's presigned URLs) names its file
 * through it.
 */
export function contentDisposition(filename: string, disposition: 'attachment' | 'inline' = 'attachment'): string {
  const fallback = filename.replace(/[^\x20-\x7e]/g, '_').replace(/["\\%]/g, '_') || 'download';
  return `${disposition}; filename="${fallback}"; filename*=${extendedFilename(filename)}`;
}
