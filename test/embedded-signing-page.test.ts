import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Browser, chromium, type Frame, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STRINGS } from '../src/signing-page/strings.js';
import { CHROMIUM_PATH, screenshotPath } from './helpers/browser.ts';
import { restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { buildEnvelope } from './helpers/signing.ts';
import { mainWorkerFor } from './helpers/workers.ts';

/*
 * Embedded signing in Chromium (issue 21): an integrator's page on another origin
 * (http://localhost:<port>) loads /embed.js from the service and shows a one-use signing URL in
 * <envelope-signing>; the signer signs every field type inside the frame; the host page hears
 * `ready`, `field_saved` and `completed` as DOM events, the frame goes to the return URL, and the
 * envelope is finalized and sealed. The same kind of URL framed by a third origin is refused by
 * the browser (CSP frame-ancestors), and a URL opened a second time is the used-link page.
 */

type HostServer = { origin: string; requests: string[]; close(): Promise<void> };

/** A local web server standing for an integrator's application: `page(url)` answers the HTML for a path. */
async function startHost(page: (url: URL) => string): Promise<HostServer> {
  const requests: string[] = [];
  const server = http.createServer((request, response) => {
    requests.push(request.url ?? '');
    const url = new URL(request.url ?? '/', 'http://localhost');
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    response.end(page(url));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://localhost:${(server.address() as AddressInfo).port}`;
  return { origin, requests, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

const escape = (text: string) => text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);

let app: TestApp;
let browser: Browser;
let team: SeededTeam;
let host: HostServer;
let third: HostServer;
beforeAll(async () => {
  app = await startTestApp();
  team = await seedTeam(app);
  host = await startHost((url) =>
    url.pathname === '/done'
      ? '<!doctype html><title>Back in the app</title><p id="back">Back in the app</p>'
      : `<!doctype html><title>Integrator</title>
<h1>Your contract</h1>
<script type="module" src="${app.url}/embed.js"></script>
<envelope-signing id="signing" url="${escape(url.searchParams.get('url') ?? '')}" height="860"></envelope-signing>
<script>
  window.hostEvents = [];
  for (const name of ['ready', 'field_saved', 'completed', 'declined', 'delegated', 'error']) {
    document.getElementById('signing').addEventListener(name, (event) => window.hostEvents.push({ name, detail: event.detail }));
  }
</script>`,
  );
  // Another origin showing the URL with the drop-in, told to give up on `ready` after 2 s.
  third = await startHost(
    (url) => `<!doctype html><title>Elsewhere</title>
<script type="module" src="${app.url}/embed.js"></script>
<envelope-signing id="stolen" url="${escape(url.searchParams.get('url') ?? '')}" ready-timeout="2"></envelope-signing>
<script>
  window.hostEvents = [];
  for (const name of ['ready', 'error']) document.getElementById('stolen').addEventListener(name, (event) => window.hostEvents.push({ name, detail: event.detail }));
</script>`,
  );
  // The only origin this team's signing pages may be framed by.
  expect((await restClient(app, team.apiKey).patch('/team/settings', { embedding: { frameOrigins: [host.origin] } })).status).toBe(200);
  // Every host but this machine unreachable, as in the other browser tests; both local names reach it.
  browser = await chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost',
    ],
  });
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await host?.close();
  await third?.close();
  await app?.close();
});

/** A signing URL for the recipient, framed by the integrator's origin and returning there; as the test app serves it. */
async function signingUrl(envelopeId: string, recipientId: string): Promise<string> {
  const made = await restClient(app, team.apiKey).post(`/envelopes/${envelopeId}/recipients/${recipientId}/signing-url`, {
    frameOrigin: host.origin,
    returnUrl: `${host.origin}/done?ref=42`,
    locale: 'en-US',
  });
  expect(made.status, JSON.stringify(made.body)).toBe(200);
  return `${app.url}${new URL(made.body.payload.url).pathname}`;
}

async function signingFrame(page: Page): Promise<Frame> {
  await expect.poll(() => page.frames().some((frame) => frame.url().startsWith(`${app.url}/sign/`)), { timeout: 20_000 }).toBe(true);
  return page.frames().find((frame) => frame.url().startsWith(`${app.url}/sign/`))!;
}

async function closeDialog(frame: Frame) {
  await frame.locator('dialog').waitFor({ state: 'detached' });
}

describe('embedded signing in Chromium', () => {
  it('signs every field type inside <envelope-signing> on another origin: ready, field_saved and completed reach the host page, the frame returns to returnUrl, the envelope is finalized and sealed', async () => {
    const built = await buildEnvelope(app, team.apiKey, {
      name: 'Embedded lease',
      recipients: [
        {
          identifier: 'tenant',
          agents: [{ info: { name: 'Ada Embedded', email: 'ada-embedded@example.com', embedded: true } }],
          fields: [
            { identifier: 'postcode', type: 'text', required: true, config: { maxLength: 5 } },
            { identifier: 'agree', type: 'checkbox', required: true },
            {
              identifier: 'plan',
              type: 'radio',
              required: true,
              config: {
                options: [
                  { value: 'monthly', label: 'Monthly' },
                  { value: 'yearly', label: 'Yearly' },
                ],
              },
            },
            { identifier: 'terms', type: 'binary_choice', required: true },
            { identifier: 'drawn', type: 'simple_signature', required: true },
            { identifier: 'bio', type: 'biometric_signature', required: true, config: { minPoints: 3 } },
          ],
        },
      ],
    });
    expect((await restClient(app, team.apiKey).put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
    const url = await signingUrl(built.envelopeId, built.recipients.tenant);

    const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    page.on('console', (message) => {
      if (message.type() === 'error' && /content security policy|refused/i.test(message.text())) problems.push(`console: ${message.text()}`);
    });
    await page.goto(`${host.origin}/?url=${encodeURIComponent(url)}`);
    // The element made the frame with its sandbox and permissions.
    const attributes = await page.locator('envelope-signing').evaluate((element) => {
      const frame = element.shadowRoot!.querySelector('iframe')!;
      return { sandbox: frame.getAttribute('sandbox'), allow: frame.getAttribute('allow'), referrerpolicy: frame.getAttribute('referrerpolicy') };
    });
    expect(attributes).toEqual({ sandbox: 'allow-scripts allow-same-origin allow-downloads', allow: expect.stringContaining("camera 'none'"), referrerpolicy: 'no-referrer' });
    const frame = await signingFrame(page);
    await frame.waitForFunction(() => document.body.dataset.screen === 'signing', undefined, { timeout: 20_000 });
    await expect.poll(() => page.evaluate(() => (window as any).hostEvents.map((event: any) => event.name))).toContain('ready');
    const ready = (await page.evaluate(() => (window as any).hostEvents))[0];
    expect(ready).toEqual({ name: 'ready', detail: { type: 'envelope-signing', event: 'ready', envelopeId: built.envelopeId, recipientId: built.recipients.tenant } });
    // A reload in this tab asks for the used URL again (410) and resumes the session this tab holds.
    const reloaded = page.waitForResponse((response) => response.url() === url);
    await frame.evaluate(() => location.reload());
    expect((await reloaded).status()).toBe(410);
    await frame.waitForFunction(() => document.body.dataset.screen === 'signing', undefined, { timeout: 20_000 });
    await frame.waitForFunction(() => document.body.dataset.pagesDrawn === 'true', undefined, { timeout: 20_000 });

    await frame.click('[data-field="postcode"]');
    await frame.fill('#field-input', '75011');
    await frame.click('dialog .primary');
    await closeDialog(frame);
    await frame.click('[data-field="agree"]');
    await expect.poll(() => frame.locator('[data-field="agree"]').getAttribute('aria-checked')).toBe('true');
    await frame.click('[data-field="plan"]');
    await frame.getByLabel('Yearly').check();
    await frame.click('dialog .primary');
    await closeDialog(frame);
    await frame.click('[data-field="terms"]');
    await frame.click('dialog [data-choice="accept"]');
    await closeDialog(frame);
    for (const field of ['drawn', 'bio']) {
      await frame.click(`[data-field="${field}"]`);
      const pad = (await frame.locator('.signature-pad').boundingBox())!;
      await page.mouse.move(pad.x + 20, pad.y + 60);
      await page.mouse.down();
      await page.mouse.move(pad.x + 120, pad.y + 30, { steps: 8 });
      await page.mouse.move(pad.x + 200, pad.y + 90, { steps: 8 });
      await page.mouse.up();
      await frame.click('#save-signature');
      await closeDialog(frame);
    }
    await expect.poll(() => frame.locator('#progress').innerText()).toBe('6 of 6 required fields done');
    await page.screenshot({ path: screenshotPath('embedded-signing-filled.png') });
    await expect.poll(async () => (await page.evaluate(() => (window as any).hostEvents)).filter((event: any) => event.name === 'field_saved').length).toBeGreaterThanOrEqual(5);

    await frame.click('#finish');
    await frame.click('#confirm-signing');
    await expect.poll(() => page.evaluate(() => (window as any).hostEvents.map((event: any) => event.name))).toContain('completed');
    const completed = (await page.evaluate(() => (window as any).hostEvents)).find((event: any) => event.name === 'completed');
    expect(completed.detail).toEqual({ type: 'envelope-signing', event: 'completed', envelopeId: built.envelopeId, recipientId: built.recipients.tenant });
    // The frame goes to the return URL with what happened.
    await expect.poll(() => host.requests.find((request) => request.startsWith('/done'))).toBe(`/done?ref=42&event=signing_complete&envelopeId=${built.envelopeId}`);
    await expect.poll(() => page.frames().some((candidate) => candidate.url().startsWith(`${host.origin}/done`))).toBe(true);
    await page.screenshot({ path: screenshotPath('embedded-signing-returned.png') });

    const envelope = await restClient(app, team.apiKey).get(`/envelopes/${built.envelopeId}?includeFields=true`);
    expect(envelope.body.payload.envelope.status).toBe('finalized');
    const values = Object.fromEntries(envelope.body.payload.fields.map((field: any) => [field.identifier, field.value]));
    expect(values).toMatchObject({ postcode: { text: '75011' }, agree: { checked: true }, plan: { selected: 'yearly' }, terms: { choice: 'accept' }, drawn: { kind: 'drawn' } });
    expect(values.bio.strokes.flat().length).toBeGreaterThanOrEqual(3);
    await mainWorkerFor(app, team.teamId).drain();
    const sealed = await app.orm.em.fork().execute<{ n: number }[]>(`select count(*)::int as n from audit_event where envelope_id = ? and type = 'artefact.sealed'`, [built.envelopeId]);
    expect(sealed[0]!.n).toBe(1);
    expect(problems).toEqual([]);

    // The used URL, opened again on its own: the used-link page.
    const again = await browser.newPage();
    const response = await again.goto(url);
    expect(response?.status()).toBe(410);
    await again.waitForFunction(() => document.body.dataset.screen === 'used');
    expect(await again.locator('h1').innerText()).toBe(STRINGS['en-US'].usedTitle);
    await again.close();
    await page.close();
  }, 180_000);

  it("a signing URL framed by a third origin is refused by the browser (CSP frame-ancestors): <envelope-signing> reports error (ready_timeout) and the URL, never consumed, still opens in the integrator's page", async () => {
    const built = await buildEnvelope(app, team.apiKey, {
      name: 'Not here',
      recipients: [{ identifier: 'x', agents: [{ info: { name: 'X', email: 'x-embedded@example.com', embedded: true } }] }],
    });
    expect((await restClient(app, team.apiKey).put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
    const url = await signingUrl(built.envelopeId, built.recipients.x);
    const page = await browser.newPage();
    const refusals: string[] = [];
    page.on('console', (message) => {
      if (/frame-ancestors/.test(message.text())) refusals.push(message.text());
    });
    const answered = page.waitForResponse((response) => response.url() === url);
    await page.goto(`${third.origin}/?url=${encodeURIComponent(url)}`);
    expect((await answered).status()).toBe(200);
    await expect.poll(() => refusals.length, { timeout: 10_000 }).toBeGreaterThan(0);
    expect(refusals[0]).toContain(host.origin);
    // Nothing of the signing page ran in the third origin's frame.
    const inside = page.frames().find((frame) => frame !== page.mainFrame());
    expect(await inside?.evaluate(() => document.body?.dataset.screen ?? null).catch(() => null)).toBeFalsy();
    // The page could not say ready, so the element says error itself once ready-timeout passes.
    await expect
      .poll(() => page.evaluate(() => (window as any).hostEvents), { timeout: 15_000 })
      .toEqual([{ name: 'error', detail: { type: 'envelope-signing', event: 'error', reason: 'ready_timeout', envelopeId: null, recipientId: null } }]);
    await page.close();
    // The page never ran, so the URL was never consumed: no session, no `signing_url.opened`.
    const opened = await app.orm.em.fork().execute<{ n: number }[]>(`select count(*)::int as n from audit_event where envelope_id = ? and type = 'signing_url.opened'`, [built.envelopeId]);
    expect(opened[0]!.n).toBe(0);

    // The same URL in the integrator's page opens, and its page says ready (no error).
    const integrator = await browser.newPage();
    await integrator.goto(`${host.origin}/?url=${encodeURIComponent(url)}`);
    await expect.poll(() => integrator.evaluate(() => (window as any).hostEvents.map((event: any) => event.name)), { timeout: 20_000 }).toEqual(['ready']);
    await integrator.close();

    // Used now: opened again on its own, it is the used-link page.
    const again = await browser.newPage();
    const response = await again.goto(url);
    expect(response?.status()).toBe(410);
    await again.waitForFunction(() => document.body.dataset.screen === 'used');
    await again.screenshot({ path: screenshotPath('embedded-signing-used.png') });
    await again.close();
  }, 90_000);
});
