import type { Plugin } from 'graphql-yoga';
import { installedPackage, type StaticAsset, staticAssetsPlugin } from '../../http/static-assets.ts';
import { buildOpenApiDocument, type OpenApiDocument } from '../openapi.ts';
import type { RestRoute } from '../router.ts';

const swaggerUi = installedPackage('swagger-ui-dist');

/** Where the reference page's assets live: versioned, so browsers may keep them for good. */
export const REFERENCE_ASSET_PATH = `/api-reference/${swaggerUi.version}/`;

/**
 * Swagger UI's own files, and the page's one script of ours: no inline script, so the page's
 * policy needs no hash and no 'unsafe-inline' for scripts.
 */
const REFERENCE_ASSETS: Record<string, StaticAsset> = {
  'swagger-ui.css': { file: 'swagger-ui.css', type: 'text/css; charset=utf-8' },
  'swagger-ui-bundle.js': { file: 'swagger-ui-bundle.js', type: 'text/javascript; charset=utf-8' },
  'start.js': {
    type: 'text/javascript; charset=utf-8',
    // The document sits beside the page (…/api/v1/key/openapi.json); "Try it out" asks for the key
    // and keeps it for this tab only.
    content: `window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({ url: new URL('openapi.json', document.baseURI).href, dom_id: '#reference', deepLinking: true, persistAuthorization: false, tryItOutEnabled: false, validatorUrl: null });
});
`,
  },
};

/** The reference page's policy: this service's scripts, styles and document, nothing else. */
const REFERENCE_PAGE_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  // Swagger UI sets styles inline as it renders.
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'self'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const FAVICON =
  "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 32 32'%3E%3Crect x='2' y='7' width='28' height='19' rx='3' fill='%232563EB'/%3E%3Cpath d='M3 9l13 9 13-9' fill='none' stroke='white' stroke-width='2.5'/%3E%3C/svg%3E";

const REFERENCE_PAGE = [
  '<!doctype html>',
  '<html lang="en">',
  '<head>',
  '<meta charset="utf-8">',
  '<meta name="viewport" content="width=device-width, initial-scale=1">',
  '<title>Envelope service REST API</title>',
  `<link rel="icon" href="${FAVICON}">`,
  `<link rel="stylesheet" href="${REFERENCE_ASSET_PATH}swagger-ui.css">`,
  '</head>',
  '<body>',
  '<div id="reference"></div>',
  `<script src="${REFERENCE_ASSET_PATH}swagger-ui-bundle.js"></script>`,
  `<script src="${REFERENCE_ASSET_PATH}start.js"></script>`,
  '</body>',
  '</html>',
].join('');

/** Swagger UI's files for the reference page. */
export function referenceAssetsPlugin(): Plugin {
  return staticAssetsPlugin({ prefix: REFERENCE_ASSET_PATH, directory: swaggerUi.directory, assets: REFERENCE_ASSETS });
}

/**
 * `GET /openapi.json` and `GET /docs`, both without a key. `allRoutes` is read when first asked,
 * so the document covers the whole table, these two included.
 */
export function referenceRoutes(allRoutes: () => RestRoute[]): RestRoute[] {
  let built: { serverUrl: string; document: OpenApiDocument } | undefined;
  return [
    {
      method: 'GET',
      path: '/openapi.json',
      doc: { summary: 'This OpenAPI 3.1 document', isPublic: true, produces: 'application/json' },
      async handler({ context }) {
        const serverUrl = `${context.publicUrl}/api/v1/key`;
        if (built?.serverUrl !== serverUrl) built = { serverUrl, document: buildOpenApiDocument(allRoutes(), { serverUrl }) };
        // The document itself, not wrapped in { version, success, payload }: tools read it as is.
        return new Response(JSON.stringify(built.document), { status: 200, headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-cache' } });
      },
    },
    {
      method: 'GET',
      path: '/docs',
      doc: { summary: 'The API reference page (Swagger UI, served by this service)', isPublic: true, produces: 'text/html' },
      async handler() {
        return new Response(REFERENCE_PAGE, { status: 200, headers: { 'content-type': 'text/html; charset=utf-8', 'content-security-policy': REFERENCE_PAGE_POLICY } });
      },
    },
  ];
}
