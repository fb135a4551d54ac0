import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.ts';
import { contentDisposition } from '../src/shared/content-disposition.ts';
import { makePdf } from './fixtures/pdfs.ts';
import { uploadDocument } from './helpers/envelopes.ts';
import { restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';

let app: TestApp;
let team: SeededTeam;
beforeAll(async () => {
  app = await startTestApp();
  team = await seedTeam(app);
});
afterAll(async () => {
  await app.close();
});

function expectBaseline(headers: Headers, what: string) {
  expect(headers.get('x-content-type-options'), what).toBe('nosniff');
  expect(headers.get('x-frame-options'), what).toBe('DENY');
  expect(headers.get('referrer-policy'), what).toBe('no-referrer');
  expect(headers.get('content-type'), what).toBeTruthy();
}

/** The directives of a Content-Security-Policy header, by name. */
function directives(policy: string | null): Map<string, string[]> {
  const map = new Map<string, string[]>();
  for (const part of (policy ?? '').split(';')) {
    const [name, ...values] = part.trim().split(/\s+/);
    if (name) map.set(name, values);
  }
  return map;
}

describe('security headers', () => {
  it('every kind of answer says nosniff, refuses framing, and runs nothing (REST, GraphQL, health, errors, uploads)', async () => {
    const rest = restClient(app, team.apiKey);
    const envelopeId = (await rest.post('/envelopes', { name: 'Headers' })).body.payload.envelopeId;
    const answers: [string, Response][] = [
      ['REST read', await fetch(`${app.url}/api/v1/key/envelopes/${envelopeId}`, { headers: { 'x-service-api-key': team.apiKey } })],
      ['REST error', await fetch(`${app.url}/api/v1/key/envelopes`, {})],
      ['REST unknown route', await fetch(`${app.url}/api/v1/key/nowhere`, { headers: { 'x-service-api-key': team.apiKey } })],
      [
        'GraphQL',
        await fetch(`${app.url}/graphql`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-service-api-key': team.apiKey },
          body: JSON.stringify({ query: '{ viewer { id } }' }),
        }),
      ],
      ['GraphQL malformed', await fetch(`${app.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{' })],
      ['GraphQL malformed upload', await fetch(`${app.url}/graphql`, { method: 'POST', headers: { 'content-type': 'multipart/form-data; boundary=x' }, body: '--x\r\nbroken' })],
      ['health', await fetch(`${app.url}/healthz`)],
      ['readiness', await fetch(`${app.url}/readyz`)],
    ];
    for (const [what, response] of answers) {
      await response.arrayBuffer();
      expect(response.headers.get('x-content-type-options'), what).toBe('nosniff');
      if (what === 'GraphQL malformed upload') continue; // answered before yoga, with nosniff
      expectBaseline(response.headers, what);
      const policy = directives(response.headers.get('content-security-policy'));
      expect(policy.get('default-src'), what).toEqual(["'none'"]);
      expect(policy.get('frame-ancestors'), what).toEqual(["'none'"]);
      expect(policy.has('script-src'), what).toBe(false);
    }
    const uploaded = await uploadDocument(app, team.apiKey, envelopeId, { bytes: await makePdf({ pages: 1 }) });
    expect(uploaded.status).toBe(200);
  });

  it('GraphiQL gets a strict policy that still allows exactly its own inline scripts and assets', async () => {
    const response = await fetch(`${app.url}/graphql`, { headers: { accept: 'text/html' } });
    const html = await response.text();
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    expect(html).toContain('YogaGraphiQL');
    expectBaseline(response.headers, 'GraphiQL');
    const policy = directives(response.headers.get('content-security-policy'));
    expect(policy.get('default-src')).toEqual(["'none'"]);
    const scriptSources = policy.get('script-src') ?? [];
    expect(scriptSources).not.toContain("'unsafe-inline'");
    expect(scriptSources).not.toContain("'unsafe-eval'");
    // Every inline script of the page is allowed by its hash, and nothing else inline is.
    const inline = [...html.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((match) => `'sha256-${createHash('sha256').update(match[1]).digest('base64')}'`);
    expect(inline.length).toBeGreaterThan(0);
    for (const hash of inline) expect(scriptSources).toContain(hash);
    expect(scriptSources.filter((source) => source.startsWith("'sha256-"))).toHaveLength(inline.length);
    // Every asset the page names is this service's own, and the policy names no other host at all
    // (test/graphiql.test.ts loads the page in Chromium under this policy with every other host unreachable).
    const assets = [...html.matchAll(/<(?:script|link)[^>]*(?:src|href)="([^"]+)"/g)].map((match) => match[1]).filter((url) => !url.startsWith('data:'));
    expect(assets.length).toBeGreaterThanOrEqual(2);
    for (const url of assets) expect(url, url).toMatch(/^\/graphiql\//);
    expect(scriptSources).toContain("'self'");
    expect(policy.get('style-src')).toContain("'self'");
    expect(policy.get('worker-src')).toEqual(["'self'"]);
    expect(policy.get('connect-src')).toEqual(["'self'"]);
    expect(response.headers.get('content-security-policy')).not.toMatch(/https?:|\*/);
  });

  it('downloads name their file exactly and safely (Content-Disposition, RFC 6266 and 8187)', () => {
    expect(contentDisposition('contract.pdf')).toBe(`attachment; filename="contract.pdf"; filename*=UTF-8''contract.pdf`);
    expect(contentDisposition('Sözleşme 😀.pdf')).toBe(`attachment; filename="S_zle_me __.pdf"; filename*=UTF-8''S%C3%B6zle%C5%9Fme%20%F0%9F%98%80.pdf`);
    // Quotes, line breaks and semicolons cannot end the header or add a parameter.
    const hostile = contentDisposition('a";\r\nSet-Cookie: x=1; b.pdf');
    expect(hostile).not.toMatch(/[\r\n]/);
    expect(hostile.split('"')).toHaveLength(3);
    // RFC 8187 attr-char only: encodeURIComponent's unreserved ' ( ) * are encoded too.
    expect(contentDisposition("O'Brien (v2)*.pdf")).toBe(`attachment; filename="O'Brien (v2)*.pdf"; filename*=UTF-8''O%27Brien%20%28v2%29%2A.pdf`);
    for (let code = 0; code < 0x80; code += 1) {
      const extended = /filename\*=UTF-8''(.*)$/.exec(contentDisposition(`a${String.fromCharCode(code)}b`))![1]!;
      expect(extended, `U+${code.toString(16)}`).toMatch(/^([A-Za-z0-9!#$&+\-.^_`|~]|%[0-9A-F]{2})+$/);
      expect(decodeURIComponent(extended)).toBe(`a${String.fromCharCode(code)}b`);
    }
    // A lone surrogate cannot make the header builder throw (encodeURIComponent would).
    expect(contentDisposition('a\ud800.pdf')).toContain("filename*=UTF-8''a%EF%BF%BD.pdf");
  });
});

describe('framing the signing page (SIGNING_FRAME_ANCESTORS)', () => {
  it('by default no page may frame it; with origins set, exactly those may, and X-Frame-Options is left out for it alone', async () => {
    const plain = await fetch(`${app.url}/sign/sgn_anything`);
    await plain.arrayBuffer();
    expect(directives(plain.headers.get('content-security-policy')).get('frame-ancestors')).toEqual(["'none'"]);
    expect(plain.headers.get('x-frame-options')).toBe('DENY');

    const embedding = await startTestApp({ env: { SIGNING_FRAME_ANCESTORS: 'https://crm.example.com, https://portal.example.org:8443 http://localhost:3000' } });
    try {
      const page = await fetch(`${embedding.url}/sign/sgn_anything`);
      await page.arrayBuffer();
      const policy = directives(page.headers.get('content-security-policy'));
      expect(policy.get('frame-ancestors')).toEqual(['https://crm.example.com', 'https://portal.example.org:8443', 'http://localhost:3000']);
      expect(policy.get('script-src')).toEqual(["'self'"]);
      expect(page.headers.get('x-frame-options')).toBeNull();
      // Everything else is still framed nowhere.
      for (const path of ['/healthz', '/api/v1/key/envelopes', '/graphql?query=%7B__typename%7D']) {
        const other = await fetch(`${embedding.url}${path}`);
        await other.arrayBuffer();
        expect(other.headers.get('x-frame-options'), path).toBe('DENY');
        expect(directives(other.headers.get('content-security-policy')).get('frame-ancestors'), path).toEqual(["'none'"]);
      }
    } finally {
      await embedding.close();
    }
  });

  it('takes only https origins (or http://localhost), nothing that would widen the policy', () => {
    expect(loadConfig({}).signingFrameAncestors).toEqual([]);
    expect(loadConfig({ SIGNING_FRAME_ANCESTORS: ' HTTPS://CRM.example.com ,http://localhost:5173 ' }).signingFrameAncestors).toEqual(['https://crm.example.com', 'http://localhost:5173']);
    for (const bad of ['http://crm.example.com', '*', 'https://*.example.com', 'https://crm.example.com/path', "'self'", 'crm.example.com', 'https://a.example; script-src *']) {
      expect(() => loadConfig({ SIGNING_FRAME_ANCESTORS: bad }), bad).toThrow(/^Invalid configuration: SIGNING_FRAME_ANCESTORS must be origins/);
    }
  });
});

describe('no secret in an answer or a log line', () => {
  it('a refused configuration names the variable but never repeats a secret or a URL with a password', () => {
    const refusal = (environment: Record<string, string>) => {
      try {
        loadConfig({ DATA_DIR: '/tmp/unused', ...environment });
      } catch (error) {
        expect(error).toBeInstanceOf(ConfigError);
        return (error as Error).message;
      }
      throw new Error('the configuration was accepted');
    };
    const hmac = refusal({ AUDIT_HMAC_KEY: 'hunter2-short-secret' });
    expect(hmac).toContain('AUDIT_HMAC_KEY');
    expect(hmac).not.toContain('hunter2');
    const database = refusal({ DATABASE_URL: 'mysql://app:hunter2@db.internal/app' });
    expect(database).toContain('DATABASE_URL');
    expect(database).not.toContain('hunter2');
    expect(refusal({ SMTP_URL: 'http://mailer:hunter2@mail.internal' })).not.toContain('hunter2');
    // Values that are not secrets are still shown, which helps fix them.
    expect(refusal({ PORT: 'eighty' })).toContain('eighty');
  });
});
