import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { promisify } from 'node:util';
import { brotliCompress, gzip, constants as zlibConstants } from 'node:zlib';
import type { Plugin } from 'graphql-yoga';

const compress = promisify(gzip);
const compressBrotli = promisify(brotliCompress);

/** The content codings a request accepts (`q=0` refuses one), lower-case. */
function acceptedCodings(header: string | null): Set<string> {
  const codings = new Set<string>();
  for (const part of (header ?? '').split(',')) {
    const [coding, ...parameters] = part.trim().toLowerCase().split(';');
    const q = parameters.map((parameter) => /^\s*q=([0-9.]+)\s*$/.exec(parameter)?.[1]).find((value) => value !== undefined);
    if (coding && (q === undefined || Number(q) > 0)) codings.add(coding);
  }
  return codings;
}

export type StaticAsset = { type: string } & ({ file: string } | { content: string });

/**
 * Serves a fixed set of files of an installed package (GraphiQL's, Swagger UI's, pdf.js's) under a
 * versioned path prefix: cached for good by browsers (a new version gets a new path), compressed
 * when the browser accepts it (each file compressed once, off the event loop, and kept). Brotli
 * at its best quality when accepted: a fifth smaller than gzip for the signing page's pdf.js (its
 * worker 311 kB against 378, seconds on a slow phone line; docs/decisions.md, "The signing page on a
 * slow line"); it takes about two seconds for that file, so until a file's Brotli copy is made it
 * is answered gzipped, and nobody waits for it.
 * Anything else under the prefix is a plain 404; nothing outside the listed files is reachable.
 */
export function staticAssetsPlugin({ prefix, directory, assets }: { prefix: string; directory: string; assets: Record<string, StaticAsset> }): Plugin {
  const plain = new Map<string, Promise<Buffer>>();
  const compressed = new Map<string, Promise<Buffer>>();
  const brotli = new Map<string, { ready: Buffer | undefined }>();
  const read = (name: string) => {
    let bytes = plain.get(name);
    if (!bytes) {
      const asset = assets[name];
      bytes = 'content' in asset ? Promise.resolve(Buffer.from(asset.content, 'utf8')) : fs.promises.readFile(path.join(directory, asset.file));
      plain.set(name, bytes);
    }
    return bytes;
  };
  const readCompressed = (name: string) => {
    let bytes = compressed.get(name);
    if (!bytes) {
      bytes = read(name).then((content) => compress(content, { level: 9 }));
      compressed.set(name, bytes);
    }
    return bytes;
  };
  /** The file's Brotli copy when made; the first ask starts making it. */
  const brotliCopy = (name: string): Buffer | undefined => {
    let copy = brotli.get(name);
    if (!copy) {
      const made: { ready: Buffer | undefined } = { ready: undefined };
      brotli.set(name, made);
      copy = made;
      void read(name)
        .then((content) => compressBrotli(content, { params: { [zlibConstants.BROTLI_PARAM_QUALITY]: 11, [zlibConstants.BROTLI_PARAM_SIZE_HINT]: content.byteLength } }))
        .then(
          (bytes) => {
            made.ready = bytes;
          },
          // A copy that could not be made is not offered: gzip serves on.
          () => undefined,
        );
    }
    return copy.ready;
  };
  // The family of paths this plugin answers for: its own prefix without the version, so an old
  // version's URL gets a 404 here rather than falling through to other handlers.
  const family = prefix.replace(/[^/]+\/$/, '');
  return {
    async onRequest({ request, url, endResponse, fetchAPI }) {
      if (!url.pathname.startsWith(family)) return;
      const name = url.pathname.startsWith(prefix) ? url.pathname.slice(prefix.length) : '';
      const asset = Object.hasOwn(assets, name) ? assets[name] : undefined;
      if (!asset || (request.method !== 'GET' && request.method !== 'HEAD')) {
        endResponse(new fetchAPI.Response('Not found', { status: 404, headers: { 'content-type': 'text/plain; charset=utf-8' } }));
        return;
      }
      const codings = acceptedCodings(request.headers.get('accept-encoding'));
      const brotliBody = codings.has('br') ? brotliCopy(name) : undefined;
      const encoding = brotliBody ? 'br' : codings.has('gzip') ? 'gzip' : undefined;
      const body = brotliBody ?? (encoding === 'gzip' ? await readCompressed(name) : await read(name));
      const headers: Record<string, string> = {
        'content-type': asset.type,
        'content-length': String(body.byteLength),
        'cache-control': 'public, max-age=31536000, immutable',
        vary: 'accept-encoding',
      };
      if (encoding) headers['content-encoding'] = encoding;
      endResponse(new fetchAPI.Response(request.method === 'HEAD' ? null : new Uint8Array(body), { status: 200, headers }));
    },
  };
}

const require = createRequire(import.meta.url);

/** The directory and version of an installed package. */
export function installedPackage(name: string): { directory: string; version: string } {
  const file = require.resolve(`${name}/package.json`);
  return { directory: path.dirname(file), version: (JSON.parse(fs.readFileSync(file, 'utf8')) as { version: string }).version };
}
