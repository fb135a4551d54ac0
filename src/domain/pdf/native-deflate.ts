/**
 * pdf-lib compresses every stream it writes (the content streams drawn into, embedded fonts and
 * their ToUnicode maps, images) with pako, zlib ported to JavaScript, which sets up a fresh window
 * and hash tables in JavaScript for each stream: 80 µs for a 300-byte content stream where Node's
 * native zlib takes 11 µs, the same format at the same level. A certificate of completion writes
 * dozens of such streams, a render one per page drawn and one per font. Importing this module
 * makes the pako that pdf-lib itself requires deflate with Node's zlib (once per thread). The
 * bytes may differ from pako's where the two encoders choose differently; both are FlateDecode
 * of the same content, which is what a reader and a signature see.
 */
import { createRequire } from 'node:module';
import { deflateSync } from 'node:zlib';

type Pako = { deflate: (data: Uint8Array, options?: unknown) => Uint8Array; nativelyDeflating?: true };

// pdf-lib's own pako, resolved from where pdf-lib is (a nested copy would be another module object).
const pako = createRequire(createRequire(import.meta.url).resolve('pdf-lib'))('pako') as Pako;

if (!pako.nativelyDeflating) {
  const deflate = pako.deflate;
  // pdf-lib passes no options; a caller that does (none in this service) keeps pako's own.
  pako.deflate = (data, options) => (options === undefined ? deflateSync(data) : deflate(data, options));
  pako.nativelyDeflating = true;
}
