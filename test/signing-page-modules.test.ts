/**
 * The signing page's ES modules (src/signing-page/, docs/architecture.md): every module the page
 * imports, followed from its entry over HTTP, is served as JavaScript under the versioned prefix
 * with the other assets' caching; every module file on disk is one of them; the HTML still
 * carries no inline script.
 */
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LAZY_MODULES, PAGE_MODULES, SHARED_MODULES, SIGNING_ASSET_PATH } from '../src/signing-page/plugin.ts';
import { startTestApp, type TestApp } from './helpers/harness.ts';

const PAGE_DIRECTORY = path.resolve(import.meta.dirname, '../src/signing-page');

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

/** The .js files under the page's directory, as paths relative to it. */
function moduleFilesOnDisk(): string[] {
  return (
    (fs.readdirSync(PAGE_DIRECTORY, { recursive: true }) as string[])
      .map((name) => name.split(path.sep).join('/'))
      // The integrators' drop-in (served at /embed.js) lives here too, but is not a module of the page.
      .filter((name) => name.endsWith('.js') && name !== 'embed-element.js')
      .sort()
  );
}

async function expectJavaScript(url: string) {
  const response = await fetch(url);
  expect(response.status, url).toBe(200);
  expect(response.headers.get('content-type'), url).toBe('text/javascript; charset=utf-8');
  expect(response.headers.get('cache-control'), url).toBe('public, max-age=31536000, immutable');
  return response.text();
}

describe('the signing page’s modules', () => {
  it('are all served as JavaScript, each import of each module included, and are every module file there is', async () => {
    const origin = app.url;
    const entry = new URL(`${SIGNING_ASSET_PATH}sign.js`, origin).href;
    const seen = new Set<string>();
    const queue = [entry];
    while (queue.length > 0) {
      const url = queue.shift()!;
      if (seen.has(url)) continue;
      seen.add(url);
      const text = await expectJavaScript(url);
      // pdf.js is minified and imports nothing of the page's: its own imports are not followed.
      if (url.endsWith('/pdf.mjs')) continue;
      for (const { fileName } of ts.preProcessFile(text, true, true).importedFiles) {
        expect(fileName, `${url} imports ${fileName}`).toMatch(/^\.\.?\/.+\.m?js$/);
        queue.push(new URL(fileName, url).href);
      }
    }
    const served = [...seen].map((url) => new URL(url).pathname.slice(SIGNING_ASSET_PATH.length)).sort();
    // The modules the page shares with the service (field-rules.js, from the field domain) are served and imported too.
    expect(served).toEqual([...PAGE_MODULES, ...Object.keys(SHARED_MODULES), 'pdf.mjs'].sort());
    expect(moduleFilesOnDisk()).toEqual([...PAGE_MODULES].sort());
    // The worker pdf.js starts from documents.js.
    await expectJavaScript(new URL(`${SIGNING_ASSET_PATH}pdf.worker.mjs`, origin).href);
  });

  it('are loaded by the page through one module script and preload links, with no inline script', async () => {
    // A link that names nobody answers 404 (issue 24), with the same page and scripts as any other.
    const response = await fetch(`${app.url}/sign/sgn_anything`);
    expect(response.status).toBe(404);
    expect(response.headers.get('content-security-policy')).toContain("script-src 'self';");
    expect(response.headers.get('content-security-policy')).not.toContain('unsafe-inline');
    const html = await response.text();
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts.map((script) => script[1].trim())).toEqual([`type="module" src="${SIGNING_ASSET_PATH}sign.js"`]);
    expect(scripts.every((script) => script[2] === '')).toBe(true);
    expect(html).not.toMatch(/\son[a-z]+=/i);
    const preloaded = [...html.matchAll(/<link rel="modulepreload" href="([^"]+)">/g)].map((match) => match[1]);
    // Not preloaded: the screens few signers see first, documents.js and pdf.js (imported when first needed; issue 37, P11).
    expect(preloaded.sort()).toEqual(
      [...PAGE_MODULES.slice(1).filter((name) => !LAZY_MODULES.includes(name)), ...Object.keys(SHARED_MODULES)].map((name) => `${SIGNING_ASSET_PATH}${name}`).sort(),
    );
    expect(preloaded.some((href) => href.endsWith('pdf.mjs'))).toBe(false);
    for (const href of preloaded) await expectJavaScript(new URL(href, app.url).href);
  });

  it('answers a module that is not listed, or of an older version, with a 404', async () => {
    expect((await fetch(`${app.url}${SIGNING_ASSET_PATH}plugin.ts`)).status).toBe(404);
    expect((await fetch(`${app.url}${SIGNING_ASSET_PATH}types.d.ts`)).status).toBe(404);
    expect((await fetch(`${app.url}${SIGNING_ASSET_PATH}screens/nowhere.js`)).status).toBe(404);
    expect((await fetch(`${app.url}/sign-assets/000000000000/sign.js`)).status).toBe(404);
  });
});
