import type { Plugin } from 'graphql-yoga';
import { openRequestContext, type RequestContext, type ServingDependencies } from '../context.ts';
import { type OpenPublicLink, type PublicLinkState, publicLinkState, startVisit, type Visitor, verifyVisit } from '../domain/public-link/visit.service.ts';
import { labelRoute } from '../http/metrics.ts';
import { type RateLimitDecision, rateLimitHeaders } from '../http/rate-limit.ts';
import type { NodeServerContext, RequestMetadataReader } from '../http/request-metadata.ts';
import { DomainError, httpStatusForError, InvalidRequestError, type ValidationIssue } from '../shared/errors.ts';
import { escapeHtml } from '../shared/html.ts';
import { hashSecret } from '../shared/ids.ts';
import { normalizeError } from '../shared/normalize-error.ts';
import { localeFromAcceptLanguage, SIGNING_ASSET_PATH } from '../signing-page/plugin.ts';
import { PUBLIC_LINK_STRINGS, type PublicLinkLocale } from './strings.ts';

/*
 * The visitor's page of a public link (issue 36): `GET /f/<slug>` the form (name, email, and a
 * phone when the role needs one), `POST /f/<slug>` its details (then the code form, or straight
 * to signing without `verifyEmail`), `POST /f/<slug>/verify` the code, then a 303 to the signing
 * page's one-use URL. Plain HTML forms, no script: the page works wherever a form does. The
 * language is the browser's (Accept-Language: en-US or tr-TR), then the visitor's. Every request
 * is counted against its client address and against the slug (known or not) before anything
 * else, so a flood on one link is refused before any database work and costs no other team.
 * The rules all live in the domain (visit.service.ts); this only translates forms and pages.
 */

const FORM_PATH = /^\/f\/([^/]{1,200})(\/verify)?\/?$/;

/** A form's body: a few fields of at most a few hundred characters. */
const MAX_FORM_BYTES = 16 * 1024;

const POLICY = ["default-src 'none'", "style-src 'self'", "img-src 'self' data:", "base-uri 'none'", "form-action 'self'", "frame-ancestors 'none'"].join('; ');

type Page = { status: number; body: string; headers?: Record<string, string> };

function words(locale: PublicLinkLocale) {
  return PUBLIC_LINK_STRINGS[locale];
}

function layout(locale: PublicLinkLocale, title: string, main: string, error?: string): string {
  return `<!doctype html>
<html lang="${locale}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta name="robots" content="noindex, nofollow">
<title>${escapeHtml(title)}</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${SIGNING_ASSET_PATH}sign.css">
</head>
<body data-screen="public-link"${error ? ` data-error="${escapeHtml(error)}"` : ''}>
<main id="app">${main}</main>
</body>
</html>
`;
}

function statePage(locale: PublicLinkLocale, state: Exclude<PublicLinkState['kind'], 'open'> | 'visit'): Page {
  const t = words(locale);
  const [title, text, status, name] =
    state === 'expired'
      ? [t.expiredTitle, t.expiredText, 410, 'PublicLink.Expired']
      : state === 'exhausted'
        ? [t.exhaustedTitle, t.exhaustedText, 410, 'PublicLink.Exhausted']
        : state === 'visit'
          ? [t.visitTitle, t.visitText, 404, 'PublicLink.VisitNotFound']
          : [t.unavailableTitle, t.unavailableText, 404, 'PublicLink.Unavailable'];
  return { status, body: layout(locale, title, `<section class="state"><h1>${escapeHtml(title)}</h1><p>${escapeHtml(text)}</p></section>`, name) };
}

function problemsHtml(locale: PublicLinkLocale, error: DomainError | undefined): string {
  if (!error) return '';
  const t = words(locale);
  if (error instanceof InvalidRequestError || error.name === 'Request.Invalid') {
    const issues = (error.context.issues as ValidationIssue[] | undefined) ?? [];
    const items = issues.map((issue) => `<li>${escapeHtml(t.fields[issue.path] ?? issue.path)}: ${escapeHtml(issue.message)}</li>`).join('');
    return `<div class="error" role="alert"><p>${escapeHtml(t.issues)}</p><ul>${items}</ul></div>`;
  }
  const text = error.name === 'Request.RateLimited' ? t.rateLimited : (t.errors[error.name] ?? t.failed);
  return `<div class="error" role="alert"><p>${escapeHtml(text)}</p></div>`;
}

function input(name: string, label: string, control: { type: string; value: string; attributes: string }): string {
  const { type, value, attributes: extra } = control;
  return `<p><label for="${name}">${escapeHtml(label)}</label><br><input id="${name}" name="${name}" type="${type}" value="${escapeHtml(value)}" ${extra}></p>`;
}

function formPage(locale: PublicLinkLocale, slug: string, form: { link: OpenPublicLink; given?: Partial<Visitor>; error?: DomainError }): Page {
  const { link, given = {}, error } = form;
  const t = words(locale);
  const main = `<section class="state"><h1>${escapeHtml(link.formName)}</h1><p>${escapeHtml(t.lead(link.roleName))}</p>
${problemsHtml(locale, error)}
<form method="post" action="/f/${escapeHtml(slug)}">
<input type="hidden" name="locale" value="${locale}">
${input('name', t.name, { type: 'text', value: given.name ?? '', attributes: 'required maxlength="200" autocomplete="name"' })}
${input('email', t.email, { type: 'email', value: given.email ?? '', attributes: 'required maxlength="320" autocomplete="email"' })}
${link.needsPhone ? input('phone', t.phone, { type: 'tel', value: given.phone ?? '', attributes: 'required maxlength="16" autocomplete="tel"' }) : ''}
<p><button class="primary" type="submit">${escapeHtml(t.continue)}</button></p>
</form></section>`;
  return { status: error ? httpStatusForError(error.name) : 200, body: layout(locale, link.formName, main, error?.name) };
}

function codePage(locale: PublicLinkLocale, slug: string, visit: { visitToken: string; visitor: Visitor; error?: DomainError }): Page {
  const { visitToken, visitor, error } = visit;
  const t = words(locale);
  const hidden = (name: string, value: string | null) => (value === null ? '' : `<input type="hidden" name="${name}" value="${escapeHtml(value)}">`);
  const main = `<section class="state"><h1>${escapeHtml(t.codeTitle)}</h1><p>${escapeHtml(t.codeLead(visitor.email))}</p>
${problemsHtml(locale, error)}
<form method="post" action="/f/${escapeHtml(slug)}/verify">
${hidden('visit', visitToken)}${hidden('locale', locale)}${hidden('name', visitor.name)}${hidden('email', visitor.email)}${hidden('phone', visitor.phone)}
${input('code', t.code, { type: 'text', value: '', attributes: 'required inputmode="numeric" autocomplete="one-time-code" maxlength="64"' })}
<p><button class="primary" type="submit">${escapeHtml(t.verify)}</button></p>
</form>
<form method="post" action="/f/${escapeHtml(slug)}">
${hidden('name', visitor.name)}${hidden('email', visitor.email)}${hidden('phone', visitor.phone)}${hidden('locale', locale)}
<p><button class="link" type="submit">${escapeHtml(t.resend)}</button></p>
</form></section>`;
  return { status: error ? httpStatusForError(error.name) : 200, body: layout(locale, t.codeTitle, main, error?.name) };
}

/** A form body, read up to MAX_FORM_BYTES (`Request.Invalid` past it): url-encoded fields, each once. */
async function readForm(request: Request): Promise<Record<string, string>> {
  const declared = Number(request.headers.get('content-length') ?? '0');
  if (declared > MAX_FORM_BYTES) throw new InvalidRequestError([{ path: 'body', message: `must be at most ${MAX_FORM_BYTES} bytes` }]);
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (request.body) {
    for await (const chunk of request.body as unknown as AsyncIterable<Uint8Array>) {
      size += chunk.byteLength;
      if (size > MAX_FORM_BYTES) throw new InvalidRequestError([{ path: 'body', message: `must be at most ${MAX_FORM_BYTES} bytes` }]);
      chunks.push(chunk);
    }
  }
  const fields: Record<string, string> = {};
  for (const [key, value] of new URLSearchParams(Buffer.concat(chunks).toString('utf8'))) {
    // Own keys only, the first of each: `__proto__` is a field name like any other here.
    if (!Object.hasOwn(fields, key)) Object.defineProperty(fields, key, { value, enumerable: true, writable: true, configurable: true });
  }
  return fields;
}

/** The visitor's details as the domain takes them: the known fields, an empty phone left out. */
function visitorFields(form: Record<string, string>, locale: PublicLinkLocale) {
  return { name: form.name ?? '', email: form.email ?? '', ...(form.phone ? { phone: form.phone.replace(/[\s()-]/g, '') } : {}), locale };
}

function localeOf(request: Request, form?: Record<string, string>): PublicLinkLocale {
  return form?.locale === 'tr-TR' || form?.locale === 'en-US' ? form.locale : localeFromAcceptLanguage(request.headers.get('accept-language'));
}

async function refusedByBudget(dependencies: ServingDependencies, context: RequestContext, slug: string): Promise<RateLimitDecision | undefined> {
  const limiter = dependencies.rateLimiter;
  if (!limiter) return undefined;
  const perAddress = await limiter.consume('publicLinkAddress', context.metadata.ip ?? 'unknown');
  if (perAddress && !perAddress.allowed) return perAddress;
  const perLink = await limiter.consume('publicLink', hashSecret(slug));
  if (perLink && !perLink.allowed) return perLink;
  return undefined;
}

/**
 * The signing URL as a path: the visitor is on this service already, so the redirect stays on the
 * origin they used (whatever PUBLIC_URL says, behind whichever proxy).
 */
function sameOriginPath(url: string): string {
  return new URL(url).pathname;
}

/** The answer to one request of a public link's page. */
async function answer(dependencies: ServingDependencies, context: RequestContext, request: Request, link: { slug: string; verify: boolean }): Promise<Page> {
  const { slug, verify } = link;
  const refusal = await refusedByBudget(dependencies, context, slug);
  if (refusal) {
    dependencies.metrics.rateLimited.inc({ scope: refusal.scope });
    const locale = localeOf(request);
    const t = words(locale);
    return {
      status: 429,
      headers: rateLimitHeaders(refusal),
      body: layout(locale, t.rateLimited, `<section class="state"><h1>${escapeHtml(t.rateLimited)}</h1></section>`, 'Request.RateLimited'),
    };
  }
  if (request.method === 'GET' || request.method === 'HEAD') {
    const locale = localeOf(request);
    const state = await publicLinkState(context, slug);
    return state.kind === 'open' ? formPage(locale, slug, { link: state.link }) : statePage(locale, state.kind);
  }
  let form: Record<string, string> = {};
  let locale = localeOf(request);
  try {
    form = await readForm(request);
    locale = localeOf(request, form);
    if (verify) {
      const done = await verifyVisit(context, { slug, input: { visit: form.visit ?? '', code: form.code ?? '' } });
      return { status: 303, headers: { location: sameOriginPath(done.url) }, body: '' };
    }
    const step = await startVisit(context, { slug, input: visitorFields(form, locale) });
    if (step.kind === 'signing') return { status: 303, headers: { location: sameOriginPath(step.url) }, body: '' };
    return codePage(locale, slug, { visitToken: step.visitToken, visitor: step.visitor });
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    if (error.name === 'PublicLink.Unavailable') return statePage(locale, 'unavailable');
    if (error.name === 'PublicLink.Expired') return statePage(locale, 'expired');
    if (error.name === 'PublicLink.Exhausted') return statePage(locale, 'exhausted');
    if (error.name === 'PublicLink.VisitNotFound') return statePage(locale, 'visit');
    const state = await publicLinkState(context, slug);
    if (state.kind !== 'open') return statePage(locale, state.kind);
    if (verify) {
      // The code form again with the problem; the details shown (and resent with "send a new code")
      // are the form's own hidden fields: the visit's row, not these, is what a right code uses.
      const visitor: Visitor = { name: form.name ?? '', email: form.email ?? '', phone: form.phone || null, locale };
      return codePage(locale, slug, { visitToken: form.visit ?? '', visitor, error });
    }
    return formPage(locale, slug, { link: state.link, given: { name: form.name, email: form.email, phone: form.phone }, error });
  }
}

export function publicLinkPagePlugin(dependencies: ServingDependencies, requestMetadataOf: RequestMetadataReader): Plugin<NodeServerContext> {
  return {
    async onRequest({ request, url, endResponse, fetchAPI, serverContext }) {
      const match = FORM_PATH.exec(url.pathname);
      if (!match) return;
      const verify = match[2] !== undefined;
      const allowed = verify ? ['POST'] : ['GET', 'HEAD', 'POST'];
      if (!allowed.includes(request.method)) return;
      labelRoute(request, verify ? '/f/:slug/verify' : '/f/:slug');
      const slug = decodeURIComponent(match[1]!);
      const metadata = requestMetadataOf(request, serverContext as NodeServerContext);
      const context = await openRequestContext(dependencies, { headers: request.headers, metadata });
      let page: Page;
      try {
        page = await answer(dependencies, context, request, { slug, verify });
      } catch (error) {
        // Logged as every unexpected error is (normalizeError), answered with a page saying so.
        const normalized = normalizeError(error, context.log);
        const locale = localeOf(request);
        page = {
          status: httpStatusForError(normalized.name),
          body: layout(locale, words(locale).failed, `<section class="state"><h1>${escapeHtml(words(locale).failed)}</h1></section>`, normalized.name),
        };
      }
      endResponse(
        new fetchAPI.Response(request.method === 'HEAD' || page.status === 303 ? null : page.body, {
          status: page.status,
          headers: {
            'content-type': 'text/html; charset=utf-8',
            'content-security-policy': POLICY,
            // The slug is in the URL: never cached by a shared cache, never sent on as a referrer.
            'cache-control': 'no-store',
            'referrer-policy': 'no-referrer',
            ...page.headers,
          },
        }),
      );
    },
  };
}
