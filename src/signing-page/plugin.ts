import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Readable } from 'node:stream';
import type { Plugin } from 'graphql-yoga';
import { createRequestContext, type ServingDependencies } from '../context.ts';
import { openSigningDocument } from '../domain/signing/signing.service.ts';
import { labelRoute } from '../http/metrics.ts';
import type { NodeServerContext, RequestMetadataReader } from '../http/request-metadata.ts';
import { answerCounted } from '../http/answer-counted.ts';
import { installedPackage, staticAssetsPlugin, type StaticAsset } from '../http/static-assets.ts';

/*
 * The signing page (issue 13): `GET /sign/{token}`, the link every invitation carries. One HTML
 * page with no inline script, plain ES modules (sign.js is the entry; docs/architecture.md lists
 * them) and pdf.js (pdfjs-dist, installed by `npm install`), every asset served by this process
 * under a versioned prefix, as it is on disk: nothing is built. The page talks to the recipient
 * side of the GraphQL API with the token from its own URL as X-Signing-Token.
 */

const here = path.dirname(fileURLToPath(import.meta.url));
const pdfjs = installedPackage('pdfjs-dist');
const JAVASCRIPT = 'text/javascript; charset=utf-8';

/**
 * The page's modules, served as they are (JavaScript checked by tsc through JSDoc: tsconfig.json
 * here). A module missing here is a 404 for the browser, and the page stops (a test loads every
 * import); a new one is added here.
 */
export const PAGE_MODULES = [
  'sign.js',
  'store.js',
  'strings.js',
  'dom.js',
  'api.js',
  'live.js',
  'flow.js',
  'dialogs.js',
  'documents.js',
  'signature-pad.js',
  'field-editors.js',
  'fields.js',
  'screens/messages.js',
  'screens/verify.js',
  'screens/host.js',
  'screens/signing.js',
] as const;

const OWN_FILES = [...PAGE_MODULES, 'sign.css'];

/** The prefix changes whenever the page's own files or pdf.js change, so browsers may cache for good. */
const version = createHash('sha256')
  .update(pdfjs.version)
  .update(OWN_FILES.map((name) => fs.readFileSync(path.join(here, name), 'utf8')).join('\0'))
  .digest('hex')
  .slice(0, 12);

export const SIGNING_ASSET_PATH = `/sign-assets/${version}/`;

const ASSETS: Record<string, StaticAsset> = {
  ...Object.fromEntries(PAGE_MODULES.map((name) => [name, { file: path.join(here, name), type: JAVASCRIPT }])),
  'sign.css': { file: path.join(here, 'sign.css'), type: 'text/css; charset=utf-8' },
  'pdf.mjs': { file: path.join(pdfjs.directory, 'build/pdf.min.mjs'), type: JAVASCRIPT },
  'pdf.worker.mjs': { file: path.join(pdfjs.directory, 'build/pdf.worker.min.mjs'), type: JAVASCRIPT },
};

/**
 * Scripts only from this service and none inline; styles only from its stylesheet (the script
 * sets positions through the CSSOM, which CSP allows); images drawn by the page (data: and blob:
 * for signatures and canvases); no form posts anywhere; framed by no page, or only by the
 * origins of SIGNING_FRAME_ANCESTORS (an application that embeds signing in its own pages).
 */
export function signingPagePolicy(frameAncestors: readonly string[] = []): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data: blob:",
    "font-src 'self'",
    "connect-src 'self'",
    "worker-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    `frame-ancestors ${frameAncestors.length > 0 ? frameAncestors.join(' ') : "'none'"}`,
  ].join('; ');
}

const PAGE = `<!doctype html>
<html lang="en-US">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta name="robots" content="noindex, nofollow">
<title>Sign</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${SIGNING_ASSET_PATH}sign.css">
<script type="module" src="${SIGNING_ASSET_PATH}sign.js"></script>
${[...PAGE_MODULES.slice(1), 'pdf.mjs'].map((name) => `<link rel="modulepreload" href="${SIGNING_ASSET_PATH}${name}">`).join('\n')}
</head>
<body>
<header class="bar">
  <span class="brand" id="brand">Envelope</span>
  <label class="locale"><span id="locale-label">Language</span>
    <select id="locale"><option value="en-US">English</option><option value="tr-TR">Türkçe</option></select>
  </label>
</header>
<main id="app" tabindex="-1"><p class="loading">…</p></main>
<noscript>This page needs JavaScript to sign. / İmzalamak için JavaScript gerekir.</noscript>
</body>
</html>
`;

/** Tokens are URL-safe random strings; anything else is answered by the page itself as an invalid link. */
const SIGN_PATH = /^\/sign\/([A-Za-z0-9_-]{1,200})\/?$/;

/** `GET /signing/documents/{documentId}` (X-Signing-Token): the original PDF, for pdf.js to draw. */
const DOCUMENT_PATH = /^\/signing\/documents\/([^/]+)$/;

/**
 * The document route of the signing page. Not part of the REST face (whose routes take a team
 * key; signing is GraphQL only, docs/reference/contract.md §7): it answers the page's one need GraphQL cannot, the
 * file's bytes, authorised by the link as GraphQL's recipient side is, with REST's error body and
 * the link's own rate-limit budget.
 */
function signingDocumentPlugin(dependencies: ServingDependencies, requestMetadataOf: RequestMetadataReader): Plugin<NodeServerContext> {
  return {
    async onRequest({ request, url, endResponse, serverContext, fetchAPI }) {
      const match = DOCUMENT_PATH.exec(url.pathname);
      if (!match || request.method !== 'GET') return;
      labelRoute(request, '/signing/documents/:documentId');
      const metadata = requestMetadataOf(request, serverContext as NodeServerContext);
      const context = createRequestContext(dependencies, { headers: request.headers, metadata });
      const counted = { rateLimiter: dependencies.rateLimiter, context, requestId: metadata.requestId, alwaysHttp200: false, endResponse, ResponseImpl: fetchAPI.Response };
      await answerCounted(counted, async () => {
        const document = await openSigningDocument(context, decodeURIComponent(match[1]!));
        return new fetchAPI.Response(Readable.toWeb(document.stream) as ReadableStream, {
          status: 200,
          headers: { 'content-type': 'application/pdf', 'content-length': String(document.byteSize), 'cache-control': 'private, no-store' },
        });
      });
    },
  };
}

export function signingPagePlugins(dependencies: ServingDependencies, requestMetadataOf: RequestMetadataReader): Plugin<NodeServerContext>[] {
  const policy = signingPagePolicy(dependencies.config.signingFrameAncestors);
  const page: Plugin = {
    onRequest({ request, url, endResponse, fetchAPI }) {
      if (!SIGN_PATH.test(url.pathname)) return;
      if (request.method !== 'GET' && request.method !== 'HEAD') return;
      labelRoute(request, '/sign/:token');
      endResponse(
        new fetchAPI.Response(request.method === 'HEAD' ? null : PAGE, {
          status: 200,
          headers: {
            'content-type': 'text/html; charset=utf-8',
            // (With frame ancestors named, X-Frame-Options is left out: it cannot name origins; security-headers.ts.)
            'content-security-policy': policy,
            // The token is in the URL: never cached by a shared cache, never sent on as a referrer.
            'cache-control': 'no-store',
            'referrer-policy': 'no-referrer',
          },
        }),
      );
    },
  };
  return [page, staticAssetsPlugin({ prefix: SIGNING_ASSET_PATH, directory: '/', assets: ASSETS }), signingDocumentPlugin(dependencies, requestMetadataOf)];
}
