import { createHash } from 'node:crypto';
import type { GraphiQLOptions, Plugin } from 'graphql-yoga';

/** Answers that are not pages (JSON, files) may run nothing and be framed nowhere. */
const NON_HTML_POLICY = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/** The base64 SHA-256 of each inline `<script>` of a page, for `script-src`. */
function inlineScriptHashes(html: string): string[] {
  const hashes: string[] = [];
  for (const match of html.matchAll(/<script(?:\s[^>]*)?>([\s\S]*?)<\/script>/gi)) {
    const opening = match[0].slice(0, match[0].indexOf('>') + 1);
    if (/\ssrc\s*=/i.test(opening)) continue;
    hashes.push(`'sha256-${createHash('sha256').update(match[1], 'utf8').digest('base64')}'`);
  }
  return hashes;
}

/**
 * A strict policy for the GraphiQL page: its own inline scripts (by hash) and this service's
 * assets (graphql/graphiql.ts), and no other host for anything.
 */
export function graphiqlContentSecurityPolicy(html: string): string {
  return [
    "default-src 'none'",
    `script-src 'self' ${inlineScriptHashes(html).join(' ')}`,
    // The editor sets styles inline as it lays itself out.
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self' data:",
    "connect-src 'self'",
    "worker-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/**
 * Security headers on every answer: `X-Content-Type-Options: nosniff` (a browser never guesses
 * another type than the one sent, e.g. runs an uploaded file as a page), no framing (but for the
 * signing page's SIGNING_FRAME_ANCESTORS), no referrer,
 * and a Content-Security-Policy: strict for the GraphiQL page, "nothing at all" for everything
 * else. The GraphiQL page is rendered through `renderGraphiQL` here (with the GraphQL face's
 * renderer, passed in), so the policy's script hashes are taken from exactly the page that is served.
 */
/** What applySecurityHeaders needs of a header list: a `Headers`, or a record (recordHeaders). */
export type HeaderList = { get(name: string): string | null; set(name: string, value: string): void; has(name: string): boolean; delete(name: string): void };

/** A lower-case record seen as a HeaderList (the answers written straight to Node, http/answer.ts). */
export function recordHeaders(record: Record<string, string>): HeaderList {
  return {
    get: (name) => record[name] ?? null,
    set: (name, value) => {
      record[name] = value;
    },
    has: (name) => name in record,
    delete: (name) => {
      delete record[name];
    },
  };
}

/** The headers every answer gets (see createSecurityHeaders); `htmlPolicy` is the GraphiQL page's, once rendered. */
export function applySecurityHeaders(headers: HeaderList, htmlPolicy?: string): void {
  headers.set('x-content-type-options', 'nosniff');
  headers.set('referrer-policy', 'no-referrer');
  const isHtml = /^text\/html\b/i.test(headers.get('content-type') ?? '');
  if (!headers.has('content-security-policy')) {
    headers.set('content-security-policy', isHtml && htmlPolicy ? htmlPolicy : NON_HTML_POLICY);
  }
  // X-Frame-Options (for browsers without CSP frame-ancestors) can only say "nowhere": a page
  // whose policy names origins that may frame it (the signing page with
  // SIGNING_FRAME_ANCESTORS) goes without it, as DENY would refuse those origins too.
  const ancestors = /(?:^|;)\s*frame-ancestors\s+([^;]*)/.exec(headers.get('content-security-policy') ?? '')?.[1]?.trim();
  if (ancestors !== undefined && ancestors !== "'none'") headers.delete('x-frame-options');
  else headers.set('x-frame-options', 'DENY');
}

export function createSecurityHeaders(options: { renderGraphiQL: (options: GraphiQLOptions) => string }) {
  let graphiqlPolicy: string | undefined;
  const plugin: Plugin = {
    onResponse({ response }) {
      applySecurityHeaders(response.headers, graphiqlPolicy);
    },
  };
  return {
    plugin,
    renderGraphiQL(graphiqlOptions: GraphiQLOptions): string {
      const html = options.renderGraphiQL(graphiqlOptions);
      graphiqlPolicy = graphiqlContentSecurityPolicy(html);
      return html;
    },
  };
}
