import type { Browser, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { makePdf } from './fixtures/pdfs.ts';
import { withAppBrowserAndTeam } from './helpers/browser.ts';
import { uploadDocument } from './helpers/envelopes.ts';
import { firstErrorName, graphqlClient, restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { SESSION_QUERY, tokenFor } from './helpers/signing.ts';

/*
 * The signing page streams a document's pages (issue 37, P11): each page is its own request
 * (`/signing/documents/{id}/pages/{index}`, a one-page PDF), made when the page comes near the
 * screen; the fields work without any page drawn. No timing is asserted (bench:signing-page
 * measures the slow line).
 */

let app: TestApp;
let browser: Browser;
let team: SeededTeam;
withAppBrowserAndTeam((started) => ({ app, browser, team } = started));

const PAGES = 12;
const PHONE = { width: 390, height: 844 };

/** A sent envelope of one 12-page document: a text field and a signature on page 1, a checkbox on the last page. */
async function manyPageEnvelope(target: { app: TestApp; team: SeededTeam } = { app, team }) {
  const { app, team } = target;
  const rest = restClient(app, team.apiKey);
  const created = await rest.post('/envelopes', { name: 'Long lease', expirationPeriodDays: 30 });
  expect(created.status).toBe(200);
  const envelopeId = created.body.payload.envelopeId as string;
  const uploaded = await uploadDocument(app, team.apiKey, envelopeId, { bytes: await makePdf({ pages: PAGES }) });
  expect(uploaded.status).toBe(200);
  const documentId = uploaded.body.payload.document.id as string;
  const added = await rest.post(`/envelopes/${envelopeId}/recipients`, {
    recipient: { type: 'signer', identifier: 'tenant', roleName: 'Tenant', order: 1, agents: [{ info: { name: 'Ada Tenant', email: 'ada@example.com' } }] },
  });
  expect(added.status).toBe(200);
  const recipientId = added.body.payload.recipient.id as string;
  const view = (page: number, y: number, width = 160, height = 30) => [{ documentId, page, location: { x: 60, y }, size: { width, height } }];
  const fields = await rest.post(`/envelopes/${envelopeId}/fields`, {
    fields: [
      { type: 'text', recipientId, identifier: 'city', required: true, views: view(0, 100) },
      { type: 'simple_signature', recipientId, identifier: 'signature', required: true, views: view(0, 200) },
      { type: 'checkbox', recipientId, identifier: 'annex', required: false, views: view(PAGES - 1, 100, 20, 20) },
    ],
  });
  expect(fields.status, JSON.stringify(fields.body)).toBe(200);
  expect((await rest.put(`/envelopes/${envelopeId}/send`)).status).toBe(200);
  return { envelopeId, documentId, token: await tokenFor(app, envelopeId, recipientId) };
}

/** The page indexes the page asked for, in order, and every request for the whole document. */
function pageRequests(page: Page, documentId: string) {
  const asked: number[] = [];
  const whole: string[] = [];
  page.on('request', (request) => {
    const path = new URL(request.url()).pathname;
    const match = new RegExp(`^/signing/documents/${documentId}/pages/(\\d+)$`).exec(path);
    if (match) asked.push(Number(match[1]));
    else if (path === `/signing/documents/${documentId}`) whole.push(path);
  });
  return { asked, whole };
}

describe('the signing page streams the document’s pages', () => {
  it('asks for the first pages at load, and for a later page only once it is scrolled to', async () => {
    const { documentId, token } = await manyPageEnvelope();
    const page = await browser.newPage({ viewport: PHONE, locale: 'en-US' });
    const requests = pageRequests(page, documentId);
    expect((await page.goto(`${app.url}/sign/${token}`))?.status()).toBe(200);
    await page.waitForFunction(() => document.body.dataset.screen === 'signing', undefined, { timeout: 20_000 });
    await page.waitForFunction(() => document.body.dataset.pagesDrawn === 'true', undefined, { timeout: 20_000 });
    // The first page is drawn, its sheet and the last one have their size before any drawing.
    await page.locator('.page[data-page="0"].rendered').waitFor();
    const atLoad = [...requests.asked];
    expect(atLoad[0]).toBe(0);
    expect(atLoad).not.toContain(PAGES - 1);
    expect(atLoad.length).toBeLessThan(PAGES / 2);
    expect(requests.whole).toEqual([]);
    const last = page.locator(`.page[data-page="${PAGES - 1}"]`);
    expect(await last.evaluate((sheet) => sheet.classList.contains('rendered'))).toBe(false);
    const { width, height } = (await last.boundingBox())!;
    expect(height / width).toBeCloseTo(842 / 595, 1);

    // Scrolled to the last page: it is asked for and drawn, where it was laid out (nothing above it moved).
    const topBefore = await last.evaluate((sheet) => sheet.getBoundingClientRect().top + window.scrollY);
    await last.scrollIntoViewIfNeeded();
    await page.locator(`.page[data-page="${PAGES - 1}"].rendered`).waitFor({ timeout: 20_000 });
    expect(requests.asked).toContain(PAGES - 1);
    expect(await last.evaluate((sheet) => sheet.getBoundingClientRect().top + window.scrollY)).toBeCloseTo(topBefore, 0);
    // Each page was asked for once, however often it came into view.
    expect(new Set(requests.asked).size).toBe(requests.asked.length);
    await page.close();
  }, 90_000);

  it('lets the signer sign page 1’s fields and finish when no page is ever drawn', async () => {
    const { envelopeId, documentId, token } = await manyPageEnvelope();
    const page = await browser.newPage({ viewport: PHONE, locale: 'en-US' });
    const requests = pageRequests(page, documentId);
    // No page's bytes ever arrive (a line that drops them).
    await page.route(`**/signing/documents/${documentId}/pages/*`, (route) => route.abort('connectionreset'));
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    expect((await page.goto(`${app.url}/sign/${token}`))?.status()).toBe(200);
    await page.waitForFunction(() => document.body.dataset.screen === 'signing', undefined, { timeout: 20_000 });
    await expect.poll(() => requests.asked.includes(0)).toBe(true);
    expect(await page.locator('.page.rendered').count()).toBe(0);

    await page.click('.field-control[data-field="city"]');
    await page.fill('dialog #field-input', 'İzmir');
    await page.click('dialog .primary');
    await page.locator('dialog').waitFor({ state: 'detached' });
    await expect.poll(() => page.locator('[data-box="city"] .field-value').innerText()).toBe('İzmir');
    await page.click('.field-control[data-field="signature"]');
    await page.click('[role="tab"][data-mode="type"]');
    await page.fill('#typed-signature', 'Ada Tenant');
    await page.click('#save-signature');
    await page.locator('dialog').waitFor({ state: 'detached' });
    await expect.poll(() => page.locator('#progress').innerText()).toBe('2 of 2 required fields done');
    await page.click('#finish');
    await page.click('#confirm-signing');
    await page.waitForFunction(() => ['done', 'finalized'].includes(document.body.dataset.screen ?? ''), undefined, { timeout: 20_000 });
    expect(errors).toEqual([]);
    // The service holds the signer's completion.
    const events = (await restClient(app, team.apiKey).get(`/envelopes/${envelopeId}/audit`)).body.payload.events as { type: string }[];
    expect(events.map((event) => event.type)).toContain('recipient.completed');
    await page.close();
  }, 90_000);

  it('answers a page the document does not have with Document.PageNotFound, and a page of another link’s document as not found', async () => {
    const { documentId, token } = await manyPageEnvelope();
    const other = await manyPageEnvelope();
    const get = (path: string, signingToken = token) => fetch(`${app.url}${path}`, { headers: { 'x-signing-token': signingToken } });
    const one = await get(`/signing/documents/${documentId}/pages/${PAGES - 1}`);
    expect(one.status).toBe(200);
    expect(one.headers.get('content-type')).toBe('application/pdf');
    expect(one.headers.get('cache-control')).toBe('private, no-store');
    expect(new TextDecoder().decode((await one.arrayBuffer()).slice(0, 5))).toBe('%PDF-');
    for (const index of [String(PAGES), '-1', '01', 'x', '1e3', '%E0%A4%A', '%31']) {
      const refused = await get(`/signing/documents/${documentId}/pages/${index}`);
      expect(refused.status, index).toBe(404);
      expect((await refused.json()).error.name, index).toBe('Document.PageNotFound');
    }
    const foreign = await get(`/signing/documents/${other.documentId}/pages/0`);
    expect(foreign.status).toBe(404);
    expect((await foreign.json()).error.name).toBe('Document.NotFound');
    expect((await fetch(`${app.url}/signing/documents/${documentId}/pages/0`)).status).toBe(401);
  }, 60_000);
});

describe('the pages’ own budget per link', () => {
  it('lets a signer scroll through more pages than the link’s budget of operations, which stays whole for signing; pages past theirs get Request.RateLimited', async () => {
    const limited = await startTestApp({ env: { RATE_LIMIT_SIGNING_PER_MINUTE: '4', RATE_LIMIT_SIGNING_PAGES_PER_MINUTE: '8' }, rateLimitsOwnCounters: true });
    try {
      const { documentId, token } = await manyPageEnvelope({ app: limited, team: await seedTeam(limited) });
      const page = (index: number) => fetch(`${limited.url}/signing/documents/${documentId}/pages/${index}`, { headers: { 'x-signing-token': token } });
      // Eight pages: twice what the link may ask otherwise in the window.
      for (let index = 0; index < 8; index += 1) {
        const answer = await page(index);
        expect(answer.status, `page ${index}`).toBe(200);
        // The pages' budget, also on the link's first request of the window (counted against its address too).
        expect(answer.headers.get('x-ratelimit-limit')).toBe('8');
        await answer.arrayBuffer();
      }
      const refused = await page(8);
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
      const body = await refused.json();
      expect(body.error.name).toBe('Request.RateLimited');
      expect(body.error.description).toContain('of document pages per signing link');
      // The operations' budget was not touched by the pages: all four of it are there.
      const signing = graphqlClient(limited, undefined, { 'x-signing-token': token });
      for (let request = 0; request < 4; request += 1) {
        const session = await signing(SESSION_QUERY);
        expect(session.status, `operation ${request}`).toBe(200);
        expect(session.errors, JSON.stringify(session.errors)).toBeUndefined();
      }
      // …and is its own: the fifth operation is refused.
      const fifth = await signing(SESSION_QUERY);
      expect(fifth.status).toBe(429);
      expect(firstErrorName(fifth)).toBe('Request.RateLimited');
    } finally {
      await limited.close();
    }
  }, 60_000);
});
