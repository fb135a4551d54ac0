import type { GraphiQLOptions, Plugin } from 'graphql-yoga';
import { installedPackage, type StaticAsset, staticAssetsPlugin } from '../http/static-assets.ts';
import { escapeHtml } from '../shared/html.ts';

/*
 * GraphiQL served by the service itself. yoga's built-in page fetches its script, styles and
 * editor workers from a public CDN at run time, so it never loads without internet access, behind
 * many corporate proxies, or under a strict Content-Security-Policy. The same build of the page
 * (`@graphql-yoga/graphiql`, installed by `npm install`) is served from this process instead, under
 * a versioned path so that browsers may cache it for good.
 */

const graphiqlPackage = installedPackage('@graphql-yoga/graphiql');

/** Where the page's assets live: versioned, so a new GraphiQL never meets a cached old file. */
export const GRAPHIQL_ASSET_PATH = `/graphiql/${graphiqlPackage.version}/`;

const JAVASCRIPT = 'text/javascript; charset=utf-8';
const GRAPHIQL_ASSETS: Record<string, StaticAsset> = {
  'graphiql.js': { file: 'dist/yoga-graphiql.umd.js', type: JAVASCRIPT },
  'graphiql.css': { file: 'dist/graphiql.css', type: 'text/css; charset=utf-8' },
  'editor.worker.js': { file: 'dist/monacoeditorwork/editor.worker.bundle.js', type: JAVASCRIPT },
  'json.worker.js': { file: 'dist/monacoeditorwork/json.worker.bundle.js', type: JAVASCRIPT },
  // The double dot is the package's own file name.
  'graphql.worker.js': { file: 'dist/monacoeditorwork/graphql.worker..bundle.js', type: JAVASCRIPT },
};

/** The Monaco editor's workers by the label it asks for. */
const EDITOR_WORKERS = {
  editorWorkerService: `${GRAPHIQL_ASSET_PATH}editor.worker.js`,
  json: `${GRAPHIQL_ASSET_PATH}json.worker.js`,
  graphql: `${GRAPHIQL_ASSET_PATH}graphql.worker.js`,
};

/** An envelope, drawn inline: the page needs no icon from anywhere. */
const FAVICON =
  "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 32 32'%3E%3Crect x='2' y='7' width='28' height='19' rx='3' fill='%232563EB'/%3E%3Cpath d='M3 9l13 9 13-9' fill='none' stroke='white' stroke-width='2.5'/%3E%3C/svg%3E";

/** What a new user sees in the first tab: a real question about their own team's data. */
export const GRAPHIQL_EXAMPLE_OPERATION = `# Your team's newest envelopes, with their documents and recipients.
# Put your team's API key in the Headers tab below, then press the run button.
#
# Live status: paste one of these into a new tab (+) and run it; events stream in as envelopes change.
#   subscription { envelopeStatusChanged { envelopeId sequence type status at } }
#   subscription { envelopeEvents(envelopeId: "<an envelope id>", afterSequence: 0) { sequence type status at } }
query NewestEnvelopes {
  envelopes(first: 5) {
    nodes {
      id
      name
      status
      createdAt
      documents {
        name
        pageCount
      }
      recipients {
        roleName
        type
        order
        agents {
          kind
          info {
            name
            email
          }
        }
      }
    }
  }
}
`;

/** JSON inside an inline `<script>`: nothing in it can close the element or start a comment. */
function scriptJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/>/g, '\\u003e')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

/**
 * What the page's script is given. Yoga's page opens `query` in the first tab (its `defaultQuery`
 * is overridden by that), and keeps the headers (the API key) in the browser's local storage
 * unless told not to: a key left in a shared browser's storage is a key given away.
 */
function pageOptions(options: GraphiQLOptions): GraphiQLOptions & { query?: string } {
  return { ...options, query: options.defaultQuery, shouldPersistHeaders: false };
}

/** The GraphiQL page: every script, style, worker and icon from this service. */
export function renderLocalGraphiQL(options: GraphiQLOptions): string {
  const title = escapeHtml(options.title ?? 'GraphiQL');
  return [
    '<!doctype html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${title}</title>`,
    `<link rel="icon" href="${FAVICON}">`,
    `<link rel="stylesheet" href="${GRAPHIQL_ASSET_PATH}graphiql.css">`,
    '</head>',
    '<body>',
    `<div id="root">Loading ${title}…</div>`,
    // Same-origin workers start from their URLs directly (the CDN page had to copy them into blob: URLs).
    `<script>self.MonacoEnvironment={globalAPI:false,getWorkerUrl:function(_,label){var workers=${scriptJson(EDITOR_WORKERS)};return workers[label]||workers.editorWorkerService}}</script>`,
    `<script src="${GRAPHIQL_ASSET_PATH}graphiql.js"></script>`,
    // A `?query=` in the address (a shared link) wins over the example, as on yoga's own page.
    `<script>var options=${scriptJson(pageOptions(options))};options.query=new URLSearchParams(location.search).get('query')||options.query;YogaGraphiQL.renderYogaGraphiQL(document.getElementById('root'),options)</script>`,
    '</body>',
    '</html>',
  ].join('');
}

/** The page's assets (see static-assets.ts): gzipped, cached for good, nothing else reachable. */
export function graphiqlAssetsPlugin(): Plugin {
  return staticAssetsPlugin({ prefix: GRAPHIQL_ASSET_PATH, directory: graphiqlPackage.directory, assets: GRAPHIQL_ASSETS });
}
