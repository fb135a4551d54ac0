import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GRAPHIQL_ASSET_PATH } from '../src/graphql/graphiql.ts';
import { launchOfflineChromium, screenshotPath } from './helpers/browser.ts';
import { restClient, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { buildEnvelope } from './helpers/signing.ts';

let app: TestApp;
let browser: Browser;
beforeAll(async () => {
  app = await startTestApp();
  browser = await launchOfflineChromium();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await app?.close();
});

/** Every request the page makes and every console error or CSP report, to prove it needs nothing else. */
function watch(page: Page) {
  const foreignRequests: string[] = [];
  const failedRequests: string[] = [];
  const consoleErrors: string[] = [];
  const origin = new URL(app.url).origin;
  page.on('request', (request) => {
    const url = request.url();
    if (!url.startsWith(origin) && !url.startsWith('data:') && !url.startsWith('blob:')) foreignRequests.push(url);
  });
  page.on('requestfailed', (request) => failedRequests.push(`${request.url()}: ${request.failure()?.errorText}`));
  page.on('console', (message) => {
    if (message.type() === 'error') consoleErrors.push(message.text());
  });
  page.on('pageerror', (error) => consoleErrors.push(error.message));
  return { foreignRequests, failedRequests, consoleErrors };
}

/** Opens the Headers tab and replaces its content with the key header, typed as a person would. */
async function typeKeyIntoHeaders(page: Page, apiKey: string, { expectPlaceholder = false } = {}) {
  await page
    .getByRole('button', { name: /headers/i })
    .first()
    .click();
  const headersEditor = page.locator('.monaco-editor[data-uri$="headers.json"]');
  await headersEditor.waitFor();
  // Monaco draws spaces as no-break spaces.
  if (expectPlaceholder) await expect.poll(async () => (await headersEditor.innerText()).replace(/\u00a0/g, ' ')).toContain('<your team key>');
  await headersEditor.click();
  await page.keyboard.press('ControlOrMeta+A');
  await page.keyboard.press('Delete');
  // Key by key (the editor types over the quotes and braces it closed itself).
  await page.keyboard.type(JSON.stringify({ 'X-Service-Api-Key': apiKey }));
}

describe('GraphiQL, served by the service', () => {
  it('renders with no other host reachable, runs the example operation with a real key and shows the team’s envelope', async () => {
    const team = await seedTeam(app);
    await restClient(app, team.apiKey).post('/envelopes', { name: 'Browser envelope' });
    const page = await browser.newPage();
    const seen = watch(page);
    const response = await page.goto(`${app.url}/graphql`);
    expect(response?.status()).toBe(200);
    expect(response?.headers()['content-security-policy']).toMatch(/default-src 'none'/);

    // The example operation is in the first tab; the key header is ready to fill in.
    await page.getByText('NewestEnvelopes').first().waitFor({ timeout: 30_000 });
    await typeKeyIntoHeaders(page, team.apiKey, { expectPlaceholder: true });

    await page.locator('.graphiql-execute-button').click();
    const result = page.locator('.graphiql-response');
    await expect.poll(async () => (await result.innerText()).replace(/\u00a0/g, ' '), { timeout: 20_000 }).toContain('"name": "Browser envelope"');
    await page.screenshot({ path: screenshotPath('graphiql.png'), fullPage: true });

    // The documentation explorer shows the schema's descriptions.
    await page.getByRole('button', { name: /show documentation explorer/i }).click();
    await page.getByText('Root Types').waitFor();

    expect(seen.foreignRequests).toEqual([]);
    expect(seen.failedRequests).toEqual([]);
    expect(seen.consoleErrors.filter((text) => /content security policy|refused/i.test(text))).toEqual([]);
    await page.close();
  }, 90_000);

  it('runs a subscription (over SSE): the stored events, then the live ones when the envelope is sent', async () => {
    const team = await seedTeam(app);
    const built = await buildEnvelope(app, team.apiKey, { recipients: [{ identifier: 'signer' }] });
    const page = await browser.newPage();
    const seen = watch(page);
    // From sequence 0: the stored events first, then live ones, so the send below is seen however
    // soon after the stream opens it happens.
    const subscription = `subscription Watch { envelopeEvents(envelopeId: "${built.envelopeId}", afterSequence: 0) { envelopeId sequence status type } }`;
    await page.goto(`${app.url}/graphql?query=${encodeURIComponent(subscription)}`);
    await page.getByText('envelopeEvents').first().waitFor({ timeout: 30_000 });
    await typeKeyIntoHeaders(page, team.apiKey);
    await page.locator('.graphiql-execute-button').click();
    const result = page.locator('.graphiql-response');
    await expect.poll(async () => (await result.innerText()).replace(/\u00a0/g, ' '), { timeout: 20_000 }).toContain('"status": "draft"');
    expect((await restClient(app, team.apiKey).put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
    await expect.poll(async () => (await result.innerText()).replace(/\u00a0/g, ' '), { timeout: 20_000 }).toContain('"status": "sent"');
    await page.screenshot({ path: screenshotPath('graphiql-subscription.png') });
    expect(seen.foreignRequests).toEqual([]);
    expect(seen.consoleErrors.filter((text) => /content security policy|refused/i.test(text))).toEqual([]);
    await page.close();
  }, 90_000);

  it('serves its assets versioned, compressed and cacheable; other paths under /graphiql/ are 404', async () => {
    const script = await fetch(`${app.url}${GRAPHIQL_ASSET_PATH}graphiql.js`, { headers: { 'accept-encoding': 'gzip' } });
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(script.headers.get('cache-control')).toContain('immutable');
    expect(script.headers.get('x-content-type-options')).toBe('nosniff');
    expect((await script.text()).length).toBeGreaterThan(1_000_000);
    for (const path of [`${GRAPHIQL_ASSET_PATH}../package.json`, `${GRAPHIQL_ASSET_PATH}dist/graphiql.css`, '/graphiql/0.0.0/graphiql.js', `${GRAPHIQL_ASSET_PATH}constructor`]) {
      expect((await fetch(`${app.url}${path}`)).status, path).toBe(404);
    }
  });
});
