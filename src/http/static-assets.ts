import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import type { Plugin } from 'graphql-yoga';

const compress = promisify(gzip);

export type StaticAsset = { type: string } & ({ file: string } | { content: string });

/**
 * Serves a fixed set of files of an installed package (GraphiQL's, Swagger UI's) under a
 * versioned path prefix: cached for good by browsers (a new version gets a new path), gzipped
 * when the browser accepts it (each file compressed once, off the event loop, and kept).
 * Anything else under the prefix is a plain 404; nothing outside the listed files is reachable.
 */
export function staticAssetsPlugin({ prefix, directory, assets }: { prefix: string; directory: string; assets: Record<string, StaticAsset> }): Plugin {
  const plain = new Map<string, Promise<Buffer>>();
  const compressed = new Map<string, Promise<Buffer>>();
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
      const gzipped = /\bgzip\b/i.test(request.headers.get('accept-encoding') ?? '');
      const body = gzipped ? await readCompressed(name) : await read(name);
      const headers: Record<string, string> = {
        'content-type': asset.type,
        'content-length': String(body.byteLength),
        'cache-control': 'public, max-age=31536000, immutable',
        vary: 'accept-encoding',
      };
      if (gzipped) headers['content-encoding'] = 'gzip';
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
