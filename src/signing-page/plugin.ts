import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import type { Plugin } from 'graphql-yoga';
import { createRequestContext, openRequestContext, type ServingDependencies } from '../context.ts';
import { handleTrustServiceCallback } from '../domain/artefact/signer-signature.service.ts';
import { openSigningDocument, type SigningLinkState, signingLinkState } from '../domain/signing/signing.service.ts';
import { type OpenedSigningUrl, openSigningUrl, type SigningUrlState, signingUrlState } from '../domain/signing/signing-url.service.ts';
import { TRUST_SERVICE_CALLBACK_PATH } from '../domain/signing/trust-signing.ts';
import { isTeamLogo } from '../domain/team/team-settings.ts';
import { answerCounted } from '../http/answer-counted.ts';
import { labelRoute } from '../http/metrics.ts';
import { consumeForRequest, rateLimitHeaders } from '../http/rate-limit.ts';
import type { NodeServerContext, RequestMetadataReader } from '../http/request-metadata.ts';
import { installedPackage, type StaticAsset, staticAssetsPlugin } from '../http/static-assets.ts';
import { escapeHtml } from '../shared/html.ts';
import { STRINGS } from './strings.js';

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
  'start.js',
  'store.js',
  'page-logic.js',
  'strings.js',
  'dom.js',
  'api.js',
  'live.js',
  'embedding.js',
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

/**
 * Modules the HTML does not preload: the screens few signers see first (a host's, the code step,
 * the messages), imported when shown and fetched in the background once the first screen is up,
 * so that on a slow line the first field does not wait for them (issue 37, P11); and documents.js,
 * imported with the first drawing of a page, which imports pdf.js (not preloaded either).
 */
export const LAZY_MODULES: readonly (typeof PAGE_MODULES)[number][] = ['screens/messages.js', 'screens/verify.js', 'screens/host.js', 'documents.js'];

/**
 * Modules the page shares with the service, served under the same prefix by name (the page imports
 * `./field-rules.js`): the rules of formulas and conditions (issue 32), which the field domain runs
 * at submit and the page runs live, one file for both. field-rules.d.ts here types the page's import.
 */
export const SHARED_MODULES: Record<string, string> = {
  'field-rules.js': path.join(here, '../domain/field/field-rules.js'),
};

const OWN_FILES = [...PAGE_MODULES.map((name) => path.join(here, name)), ...Object.values(SHARED_MODULES), path.join(here, 'sign.css')];

/** The prefix changes whenever the page's own files or pdf.js change, so browsers may cache for good. */
const version = createHash('sha256')
  .update(pdfjs.version)
  .update(OWN_FILES.map((file) => fs.readFileSync(file, 'utf8')).join('\0'))
  .digest('hex')
  .slice(0, 12);

export const SIGNING_ASSET_PATH = `/sign-assets/${version}/`;

const ASSETS: Record<string, StaticAsset> = {
  ...Object.fromEntries(PAGE_MODULES.map((name) => [name, { file: path.join(here, name), type: JAVASCRIPT }])),
  ...Object.fromEntries(Object.entries(SHARED_MODULES).map(([name, file]) => [name, { file, type: JAVASCRIPT }])),
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

type PageOptions = {
  /** `<meta name="signing-…">` for the page's script (embedded signing): values are escaped. */
  meta?: Record<string, string | null>;
  /** A message the service renders itself (a used or expired signing URL), readable without the script. */
  message?: { title: string; text: string };
  lang?: string;
};

function pageHtml(options: PageOptions = {}): string {
  const meta = Object.entries(options.meta ?? {})
    .filter((entry): entry is [string, string] => entry[1] !== null)
    .map(([name, value]) => `<meta name="signing-${name}" content="${escapeHtml(value)}">\n`)
    .join('');
  const main = options.message
    ? `<section class="state" aria-labelledby="state-title"><h1 id="state-title">${escapeHtml(options.message.title)}</h1><p>${escapeHtml(options.message.text)}</p></section>`
    : '<p class="loading">…</p>';
  return `<!doctype html>
<html lang="${escapeHtml(options.lang ?? 'en-US')}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta name="robots" content="noindex, nofollow">
${meta}<title>${escapeHtml(options.message?.title ?? 'Sign')}</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${SIGNING_ASSET_PATH}sign.css">
<script type="module" src="${SIGNING_ASSET_PATH}sign.js"></script>
${[...PAGE_MODULES.slice(1).filter((name) => !LAZY_MODULES.includes(name)), ...Object.keys(SHARED_MODULES)].map((name) => `<link rel="modulepreload" href="${SIGNING_ASSET_PATH}${name}">`).join('\n')}
</head>
<body>
<header class="bar">
  <span class="brand" id="brand">Envelope</span>
  <label class="locale"><span id="locale-label">Language</span>
    <select id="locale"><option value="en-US">English</option><option value="tr-TR">Türkçe</option></select>
  </label>
</header>
<main id="app" tabindex="-1">${main}</main>
<noscript>This page needs JavaScript to sign. / İmzalamak için JavaScript gerekir.</noscript>
</body>
</html>
`;
}

const PAGE = pageHtml();

/** The strings of a locale the page speaks (en-US otherwise). */
function stringsOf(locale: string | null) {
  return locale === 'tr-TR' ? STRINGS['tr-TR'] : STRINGS['en-US'];
}

/**
 * The page's language from `Accept-Language` when the person's is not known (an unknown link
 * names nobody): the first of en-US and tr-TR by preference (q), matched by the full tag or its
 * language alone; en-US when none matches.
 */
export function localeFromAcceptLanguage(header: string | null): 'en-US' | 'tr-TR' {
  const ranked = (header ?? '')
    .split(',')
    .map((part, index) => {
      const [tag = '', ...parameters] = part.trim().split(';');
      const q = parameters.map((parameter) => /^\s*q=([0-9.]+)\s*$/i.exec(parameter)).find(Boolean);
      return { tag: tag.trim().toLowerCase(), q: q ? Number(q[1]) : 1, index };
    })
    .filter((entry) => entry.tag !== '' && entry.q > 0)
    .sort((a, b) => b.q - a.q || a.index - b.index);
  for (const { tag } of ranked) {
    if (tag === 'tr' || tag.startsWith('tr-')) return 'tr-TR';
    if (tag === 'en' || tag.startsWith('en-')) return 'en-US';
  }
  return 'en-US';
}

/** The person's language where the link names one the page speaks, else the browser's. */
function pageLocale(known: string | null, request: Request): 'en-US' | 'tr-TR' {
  return known === 'tr-TR' || known === 'en-US' ? known : localeFromAcceptLanguage(request.headers.get('accept-language'));
}

/**
 * The answer to opening an invitation link (`sgn_`, issue 24). Unknown: 404 with the "link does
 * not work" page, whose script shows that at once. Gone (revoked, its envelope closed, expired,
 * or an approver's role completed by quorum without this agent: "no longer needed"):
 * 410 with its message rendered here (readable without the script) and the page's script, which
 * still reads the dead link's session to show its own screen: a finalized envelope's page offers
 * the final copy (signingFinalCopy takes the dead token), a delegated one says so. Open: the page.
 */
function invitationLinkPage(state: SigningLinkState, request: Request, defaultPolicy: string): { status: number; body: string; policy: string } {
  // A known link's page may be framed by its team's origins (teamFrameOrigins); nobody's link, by the service's.
  const policy = state.kind === 'unknown' ? defaultPolicy : signingPagePolicy(state.frameAncestors);
  if (state.kind === 'open') return { status: 200, body: PAGE, policy };
  const locale = pageLocale(state.kind === 'unknown' ? null : state.locale, request);
  const t = stringsOf(locale);
  if (state.kind === 'unknown') return { status: 404, policy, body: pageHtml({ lang: locale, message: { title: t.invalidTitle, text: t.invalidText }, meta: { link: 'unknown', locale } }) };
  const status = state.kind === 'closed' ? state.status : null;
  const message =
    state.kind === 'revoked'
      ? { title: t.invalidTitle, text: t.invalidText }
      : state.kind === 'role_completed'
        ? { title: t.roleCompletedTitle, text: t.roleCompletedText }
        : state.kind === 'expired' || status === 'expired'
          ? { title: t.expiredTitle, text: t.expiredText }
          : status === 'finalized'
            ? { title: t.finalizedTitle, text: t.finalizedText }
            : { title: t.voidedTitle, text: t.voidedText };
  return { status: 410, policy, body: pageHtml({ lang: locale, message, meta: { locale } }) };
}

/**
 * The page of a one-use signing URL (embedded signing, issue 21), served by GET and HEAD alike
 * without consuming anything. Unopened and in time: the page, 200, whose script opens the session
 * (`POST` to the same URL, signingUrlOpening) once it runs, so a page the browser refused to show
 * (framed by an origin frame-ancestors does not name) leaves the URL usable. Opened before: 410
 * with the "link used" message, and the page's script, which resumes the session only if this very
 * tab holds it (a reload). Never opened in time: 410; unknown: 404. The page's `frame-ancestors` is
 * the URL's frame origin alone when it has one, else its team's list (teamFrameOrigins: the team's
 * `embedding.frameOrigins` when set, else SIGNING_FRAME_ANCESTORS), as for its invitation links.
 */
function signingUrlPage(state: SigningUrlState, defaultPolicy: string, locale: 'en-US' | 'tr-TR'): { status: number; body: string; policy: string } {
  switch (state.kind) {
    case 'unopened':
      return {
        status: 200,
        policy: signingPagePolicy(state.frameAncestors),
        body: pageHtml({ lang: state.locale ?? 'en-US', meta: { link: 'open', 'frame-origin': state.frameOrigin, 'return-url': state.returnUrl, locale: state.locale } }),
      };
    case 'used': {
      const t = stringsOf(state.locale);
      return {
        status: 410,
        policy: signingPagePolicy(state.frameAncestors),
        body: pageHtml({
          lang: state.locale ?? 'en-US',
          message: { title: t.usedTitle, text: t.usedText },
          meta: { link: 'used', 'frame-origin': state.frameOrigin, 'return-url': state.returnUrl, locale: state.locale },
        }),
      };
    }
    case 'expired': {
      const t = stringsOf(state.locale);
      return {
        status: 410,
        policy: signingPagePolicy(state.frameAncestors),
        body: pageHtml({ lang: state.locale ?? 'en-US', message: { title: t.linkExpiredTitle, text: t.linkExpiredText }, meta: { link: 'expired', locale: state.locale } }),
      };
    }
    case 'unknown': {
      const t = stringsOf(locale);
      return { status: 404, policy: defaultPolicy, body: pageHtml({ lang: locale, message: { title: t.invalidTitle, text: t.invalidText }, meta: { link: 'unknown', locale } }) };
    }
  }
}

/**
 * The answer to the page's script opening its signing URL (`POST /sign/sgu_…`): the session
 * credential in a JSON body (never in a URL), 200; or which way the URL no longer opens, `used` or
 * `expired` (410), `unknown` (404). Never cached.
 */
function signingUrlOpening(opened: OpenedSigningUrl): { status: number; body: string } {
  if (opened.kind === 'opened') return { status: 200, body: JSON.stringify({ sessionToken: opened.sessionToken }) };
  return { status: opened.kind === 'unknown' ? 404 : 410, body: JSON.stringify({ link: opened.kind }) };
}

/** Tokens are URL-safe random strings; anything else is answered by the page itself as an invalid link. */
const SIGN_PATH = /^\/sign\/([A-Za-z0-9_-]{1,200})\/?$/;

/**
 * `GET /signing/documents/{documentId}` (X-Signing-Token): the escrowed copy (the original marked as
 * not executed); `…/pages/{index}`: one page of it as a one-page PDF, what the page's pdf.js draws
 * page by page as the signer scrolls (issue 37).
 */
const DOCUMENT_PATH = /^\/signing\/documents\/([^/]+)(?:\/pages\/([^/]+))?$/;

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
      // HEAD as GET without the bytes (reading a document records nothing).
      if (!match || (request.method !== 'GET' && request.method !== 'HEAD')) return;
      // As written in the path (not decoded: an index is digits, anything else is a page the document does not have).
      const page = match[2];
      labelRoute(request, page === undefined ? '/signing/documents/:documentId' : '/signing/documents/:documentId/pages/:index');
      const metadata = requestMetadataOf(request, serverContext as NodeServerContext);
      const context = createRequestContext(dependencies, { headers: request.headers, metadata });
      const counted = {
        rateLimiter: dependencies.rateLimiter,
        context,
        requestId: metadata.requestId,
        alwaysHttp200: false,
        // A page fetched as the signer scrolls spends the link's page budget, not the one its operations need.
        linkScope: page === undefined ? ('signingToken' as const) : ('signingPage' as const),
        endResponse,
        ResponseImpl: fetchAPI.Response,
      };
      await answerCounted(counted, async () => {
        const document = await openSigningDocument(context, decodeURIComponent(match[1]!), { fallbackLocale: pageLocale(null, request), page });
        if (request.method === 'HEAD') document.stream.destroy();
        return new fetchAPI.Response(request.method === 'HEAD' ? null : (Readable.toWeb(document.stream) as ReadableStream), {
          status: 200,
          headers: { 'content-type': 'application/pdf', 'content-length': String(document.byteSize), 'cache-control': 'private, no-store' },
        });
      });
    },
  };
}

/**
 * `GET /sign/trust-service/callback`: where a signer's trust service sends the browser back after
 * its authorization (issue 35, artefact/signer-signature.service.ts). Authorised by the OAuth
 * state alone (a 256-bit secret whose hash names the step); answers 303 to the provider's second
 * authorization or back to the signing link, whose page shows what happened. A session with no
 * page to go back to, or a state nobody issued, gets a page of its own saying so.
 */
function trustServiceCallbackPlugin(dependencies: ServingDependencies, requestMetadataOf: RequestMetadataReader, policy: string): Plugin<NodeServerContext> {
  return {
    async onRequest({ request, url, endResponse, serverContext, fetchAPI }) {
      if (url.pathname !== TRUST_SERVICE_CALLBACK_PATH || request.method !== 'GET') return;
      labelRoute(request, TRUST_SERVICE_CALLBACK_PATH);
      const metadata = requestMetadataOf(request, serverContext as NodeServerContext);
      const context = createRequestContext(dependencies, { headers: request.headers, metadata });
      const decision = dependencies.rateLimiter ? await consumeForRequest(dependencies.rateLimiter, context) : undefined;
      const t = stringsOf(pageLocale(null, request));
      const headers = { 'content-type': 'text/html; charset=utf-8', 'content-security-policy': policy, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' };
      if (decision && !decision.allowed) {
        endResponse(
          new fetchAPI.Response(pageHtml({ message: { title: t.errors['Request.RateLimited'], text: '' } }), { status: 429, headers: { ...headers, ...rateLimitHeaders(decision) } }),
        );
        return;
      }
      const query = url.searchParams;
      const answer = await handleTrustServiceCallback(context, {
        state: query.get('state'),
        code: query.get('code'),
        error: query.get('error'),
        errorDescription: query.get('error_description'),
      });
      if (answer.kind === 'provider') {
        endResponse(new fetchAPI.Response(null, { status: 303, headers: { location: answer.location, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' } }));
        return;
      }
      if (answer.kind === 'signing_page') {
        endResponse(new fetchAPI.Response(null, { status: 303, headers: { location: `/sign/${answer.token}`, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' } }));
        return;
      }
      const message =
        answer.outcome === 'signed'
          ? { title: t.trustSignedTitle, text: t.trustSignedText }
          : answer.outcome === 'failed'
            ? { title: t.trustFailedTitle, text: t.trustFailedText }
            : answer.outcome === 'pending'
              ? { title: t.trustPendingTitle, text: t.trustPendingText }
              : { title: t.invalidTitle, text: t.invalidText };
      endResponse(new fetchAPI.Response(pageHtml({ message }), { status: answer.outcome === 'unknown' ? 404 : 200, headers }));
    },
  };
}

export function signingPagePlugins(dependencies: ServingDependencies, requestMetadataOf: RequestMetadataReader): Plugin<NodeServerContext>[] {
  const policy = signingPagePolicy(dependencies.config.signingFrameAncestors);
  const answer = (fetchAPI: { Response: typeof Response }, request: Request, page: { status: number; body: string; policy: string }) =>
    new fetchAPI.Response(request.method === 'HEAD' ? null : page.body, {
      status: page.status,
      headers: {
        'content-type': 'text/html; charset=utf-8',
        // (With frame ancestors named, X-Frame-Options is left out: it cannot name origins; security-headers.ts.)
        'content-security-policy': page.policy,
        // The token is in the URL: never cached by a shared cache, never sent on as a referrer.
        'cache-control': 'no-store',
        'referrer-policy': 'no-referrer',
      },
    });
  const page: Plugin<NodeServerContext> = {
    async onRequest({ request, url, endResponse, fetchAPI, serverContext }) {
      const match = SIGN_PATH.exec(url.pathname);
      if (!match) return;
      const token = match[1]!;
      const isSigningUrl = token.startsWith('sgu_');
      // POST is the page's script opening its signing URL; any other page is GET or HEAD.
      const isOpening = isSigningUrl && request.method === 'POST';
      if (request.method !== 'GET' && request.method !== 'HEAD' && !isOpening) return;
      labelRoute(request, '/sign/:token');
      const isInvitationLink = token.startsWith('sgn_');
      if (isSigningUrl || isInvitationLink) {
        const metadata = requestMetadataOf(request, serverContext as NodeServerContext);
        // An invitation link is budgeted as the page's own calls with it are: the link's budget, and
        // the client address's only the first time a window sees the link (so inventing links
        // spends the address's budget while a reload does not). A signing URL's page and its opening
        // (which writes) spend the address's budget like every request without a key. Either is
        // refused past its budget before any database work.
        const headers = isInvitationLink ? { get: (name: string) => (name === 'x-signing-token' ? token : request.headers.get(name)) } : request.headers;
        const context = await openRequestContext(dependencies, { headers, metadata });
        const decision = dependencies.rateLimiter ? await consumeForRequest(dependencies.rateLimiter, context) : undefined;
        if (decision && !decision.allowed) {
          const t = stringsOf(pageLocale(null, request));
          const refused = answer(fetchAPI, request, { status: 429, body: pageHtml({ message: { title: t.errors['Request.RateLimited'], text: '' } }), policy });
          for (const [name, value] of Object.entries(rateLimitHeaders(decision))) refused.headers.set(name, value);
          endResponse(refused);
          return;
        }
        if (isOpening) {
          const opening = signingUrlOpening(await openSigningUrl(context, token));
          endResponse(
            new fetchAPI.Response(opening.body, {
              status: opening.status,
              headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' },
            }),
          );
        } else if (isSigningUrl) {
          // GET and HEAD read the URL's state only: a link checker or a refused frame consumes nothing.
          endResponse(answer(fetchAPI, request, signingUrlPage(await signingUrlState(context, token), policy, pageLocale(null, request))));
        } else {
          // An invitation link: 404 or 410 for a link that names nobody or no longer works (a read, no change).
          endResponse(answer(fetchAPI, request, invitationLinkPage(await signingLinkState(context, token), request, policy)));
        }
        return;
      }
      // Not a token this service makes: nobody's link.
      endResponse(answer(fetchAPI, request, invitationLinkPage({ kind: 'unknown' }, request, policy)));
    },
  };
  return [
    page,
    trustServiceCallbackPlugin(dependencies, requestMetadataOf, policy),
    embedScriptPlugin(),
    brandingLogoPlugin(dependencies, requestMetadataOf),
    staticAssetsPlugin({ prefix: SIGNING_ASSET_PATH, directory: '/', assets: ASSETS }),
    signingDocumentPlugin(dependencies, requestMetadataOf),
  ];
}

/** The drop-in for integrators' pages (`<envelope-signing url="…">`), read once at start. */
const EMBED_SCRIPT = fs.readFileSync(path.join(here, 'embed-element.js'), 'utf8');
const EMBED_ETAG = `"${createHash('sha256').update(EMBED_SCRIPT).digest('hex').slice(0, 16)}"`;

/**
 * `GET /embed.js`: served by this service (no outside host), for other origins' pages to load with
 * `<script type="module" src="https://sign.example.com/embed.js">`: hence CORS for any origin (it
 * holds no secret) and a short cache with a validator, since its name carries no version.
 */
function embedScriptPlugin(): Plugin {
  return {
    onRequest({ request, url, endResponse, fetchAPI }) {
      if (url.pathname !== '/embed.js' || (request.method !== 'GET' && request.method !== 'HEAD')) return;
      labelRoute(request, '/embed.js');
      const headers = {
        'content-type': JAVASCRIPT,
        'cache-control': 'public, max-age=300',
        etag: EMBED_ETAG,
        'access-control-allow-origin': '*',
        'cross-origin-resource-policy': 'cross-origin',
      };
      if (request.headers.get('if-none-match') === EMBED_ETAG) {
        endResponse(new fetchAPI.Response(null, { status: 304, headers }));
        return;
      }
      endResponse(new fetchAPI.Response(request.method === 'HEAD' ? null : EMBED_SCRIPT, { status: 200, headers }));
    },
  };
}

const LOGO_PATH = /^\/branding\/logos\/([0-9a-f]{64})\.(png|jpg)$/;

/**
 * `GET /branding/logos/<sha256>.<png|jpg>`: a team's logo, served by this service (mails and
 * signing pages never point at an outside host). Content-addressed, so the answer never changes:
 * cached for a year, immutable. Only a hash some team names as its logo is served; any other
 * object of the store (documents live there too) is a 404 like an unknown hash.
 */
function brandingLogoPlugin(dependencies: ServingDependencies, requestMetadataOf: RequestMetadataReader): Plugin<NodeServerContext> {
  return {
    async onRequest({ request, url, endResponse, fetchAPI, serverContext }) {
      const match = LOGO_PATH.exec(url.pathname);
      if (!match || (request.method !== 'GET' && request.method !== 'HEAD')) return;
      labelRoute(request, '/branding/logos/:logo');
      const sha256 = match[1]!;
      const context = createRequestContext(dependencies, { headers: request.headers, metadata: requestMetadataOf(request, serverContext as NodeServerContext) });
      const logo = await isTeamLogo(context, sha256);
      const extension = logo?.contentType === 'image/png' ? 'png' : 'jpg';
      if (!logo || extension !== match[2]) {
        endResponse(new fetchAPI.Response('Not found\n', { status: 404, headers: { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' } }));
        return;
      }
      const etag = `"${sha256}"`;
      const headers = {
        'content-type': logo.contentType,
        'cache-control': 'public, max-age=31536000, immutable',
        etag,
        // Mail clients' image proxies and other origins' pages may show it; it is no secret.
        'cross-origin-resource-policy': 'cross-origin',
        'content-security-policy': "default-src 'none'",
      };
      if (request.headers.get('if-none-match') === etag) {
        endResponse(new fetchAPI.Response(null, { status: 304, headers }));
        return;
      }
      const stream = request.method === 'HEAD' ? null : (Readable.toWeb(await context.blobStore.openRead(sha256)) as ReadableStream);
      endResponse(new fetchAPI.Response(stream, { status: 200, headers }));
    },
  };
}
