import type { Browser, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { STRINGS } from '../src/signing-page/strings.js';
import { screenshotPath, withAppBrowserAndTeam } from './helpers/browser.ts';
import { restClient, type SeededTeam, type TestApp } from './helpers/harness.ts';
import { buildEnvelope, type RecipientSpec, signAndComplete, tokenFor } from './helpers/signing.ts';

/*
 * The signing page on a phone (issue 24): touch targets, a footer whose labels stay on one line,
 * "Next field" opening an editor, earlier signers' fields shown read only, in-person screens that
 * name the person, and dead or unknown links answered 404/410 in the person's language.
 * Screenshots go to test-results/ (gitignored; CI keeps it).
 */

let app: TestApp;
let browser: Browser;
let team: SeededTeam;
withAppBrowserAndTeam((started) => ({ app, browser, team } = started));

const PHONES = [
  { name: '360x740', viewport: { width: 360, height: 740 } },
  { name: '390x844', viewport: { width: 390, height: 844 } },
] as const;

async function sentEnvelope(recipients: RecipientSpec[]) {
  const built = await buildEnvelope(app, team.apiKey, { name: 'Kira sözleşmesi / Lease', recipients });
  const sent = await restClient(app, team.apiKey).put(`/envelopes/${built.envelopeId}/send`);
  expect(sent.status, JSON.stringify(sent.body)).toBe(200);
  return built;
}

async function waitForScreen(page: Page, screen: string) {
  await page.waitForFunction((wanted) => document.body.dataset.screen === wanted, screen, { timeout: 20_000 });
}

describe('invitation links that name nobody or no longer work', () => {
  it('answer 404 (unknown) or 410 (revoked by a resend, closed) in the person’s language, else Accept-Language’s; a live link 200', async () => {
    const unknown = await fetch(`${app.url}/sign/sgn_${'x'.repeat(43)}`, { headers: { 'accept-language': 'de-DE, tr;q=0.9, en;q=0.5' } });
    expect(unknown.status).toBe(404);
    const unknownHtml = await unknown.text();
    expect(unknownHtml).toContain('<html lang="tr-TR">');
    expect(unknownHtml).toContain(STRINGS['tr-TR'].invalidTitle);
    expect(unknown.headers.get('cache-control')).toBe('no-store');
    const garbage = await fetch(`${app.url}/sign/not-a-token`);
    expect(garbage.status).toBe(404);
    expect(await garbage.text()).toContain(STRINGS['en-US'].invalidTitle);

    const built = await sentEnvelope([
      { identifier: 'ayse', agents: [{ info: { name: 'Ayşe Yılmaz', email: 'ayse@example.com', locale: 'tr-TR' } }] },
      { identifier: 'bob', order: 2 },
    ]);
    const token = await tokenFor(app, built.envelopeId, built.recipients.ayse);
    expect((await fetch(`${app.url}/sign/${token}`)).status).toBe(200);
    // The sender's resend kills the old link: 410, in Ayşe's language whatever the browser asks.
    const rest = restClient(app, team.apiKey);
    expect((await rest.post(`/envelopes/${built.envelopeId}/recipients/${built.recipients.ayse}/resend`, {})).status).toBe(200);
    const revoked = await fetch(`${app.url}/sign/${token}`, { headers: { 'accept-language': 'en-US' } });
    expect(revoked.status).toBe(410);
    const revokedHtml = await revoked.text();
    expect(revokedHtml).toContain('<html lang="tr-TR">');
    expect(revokedHtml).toContain(STRINGS['tr-TR'].invalidTitle);
    // A closed envelope's link: 410 with its state (the page's script still offers what it can).
    const fresh = await tokenFor(app, built.envelopeId, built.recipients.ayse, 1);
    expect((await fetch(`${app.url}/sign/${fresh}`)).status).toBe(200);
    expect((await rest.post(`/envelopes/${built.envelopeId}/void`, { reason: 'test' })).status).toBe(200);
    const closed = await fetch(`${app.url}/sign/${fresh}`);
    expect(closed.status).toBe(410);
    expect(await closed.text()).toContain(STRINGS['tr-TR'].voidedTitle);
    // HEAD answers the same status.
    expect((await fetch(`${app.url}/sign/${fresh}`, { method: 'HEAD' })).status).toBe(410);
  });

  it('an unknown link in Chromium with a Turkish browser: a 404 page in tr-TR', async () => {
    const page = await browser.newPage({ viewport: PHONES[0].viewport, locale: 'tr-TR' });
    const response = await page.goto(`${app.url}/sign/sgn_${'y'.repeat(43)}`);
    expect(response?.status()).toBe(404);
    await waitForScreen(page, 'invalid');
    await expect.poll(() => page.locator('h1').innerText()).toBe(STRINGS['tr-TR'].invalidTitle);
    expect(await page.evaluate(() => document.documentElement.lang)).toBe('tr-TR');
    await page.screenshot({ path: screenshotPath('signing-page-phone-unknown-link-tr-TR-360x740.png'), fullPage: true });
    await page.close();
  });

  it('a screen whose module cannot be fetched (the line dropped) says so in the page’s language, and data-screen says error', async () => {
    const page = await browser.newPage({ viewport: PHONES[0].viewport, locale: 'tr-TR' });
    await page.route('**/screens/messages.js*', (route) => route.abort('connectionreset'));
    await page.goto(`${app.url}/sign/sgn_${'z'.repeat(43)}`);
    await waitForScreen(page, 'error');
    expect(await page.locator('[role="alert"] h1').innerText()).toBe(STRINGS['tr-TR'].errorTitle);
    await page.close();
  });
});

describe('the signing page on a phone', () => {
  it('touch targets ≥ 44×44, single-line footer labels, Next field opens an editor, an earlier signer’s signature shown read only', async () => {
    const built = await sentEnvelope([
      { identifier: 'landlord', order: 1, agents: [{ info: { name: 'Leyla Landlord', email: 'leyla@example.com' } }] },
      {
        identifier: 'tenant',
        type: 'delegator',
        order: 2,
        agents: [{ info: { name: 'Tom Tenant', email: 'tom@example.com' } }],
        fields: [
          { identifier: 'postcode', type: 'text', required: true, config: { maxLength: 5 } },
          { identifier: 'agree', type: 'checkbox', required: true },
          {
            identifier: 'plan',
            type: 'radio',
            required: true,
            config: {
              options: [
                { value: 'a', label: 'A' },
                { value: 'b', label: 'B' },
              ],
            },
          },
          { identifier: 'tenant-signature', type: 'simple_signature', required: true },
        ],
      },
    ]);
    const landlordToken = await tokenFor(app, built.envelopeId, built.recipients.landlord);
    const signed = await signAndComplete(app, landlordToken);
    expect(signed.errors, JSON.stringify(signed.errors)).toBeUndefined();
    const tenantToken = await tokenFor(app, built.envelopeId, built.recipients.tenant);

    for (const phone of PHONES) {
      for (const locale of ['en-US', 'tr-TR'] as const) {
        const page = await browser.newPage({ viewport: phone.viewport, locale, hasTouch: true, isMobile: true });
        const problems: string[] = [];
        page.on('pageerror', (error) => problems.push(error.message));
        expect((await page.goto(`${app.url}/sign/${tenantToken}`))?.status()).toBe(200);
        await waitForScreen(page, 'signing');
        await page.waitForFunction(() => document.body.dataset.pagesDrawn === 'true', undefined, { timeout: 20_000 });

        // Every control over a field is at least 44×44 CSS pixels, though the boxes drawn are smaller.
        const controls = await page.locator('.field-control').evaluateAll((elements) =>
          elements.map((element) => {
            const box = element.parentElement!.getBoundingClientRect();
            const rect = element.getBoundingClientRect();
            return { field: (element as HTMLElement).dataset.field, width: rect.width, height: rect.height, drawnHeight: box.height };
          }),
        );
        expect(controls.map((control) => control.field)).toEqual(['postcode', 'agree', 'plan', 'tenant-signature']);
        for (const control of controls) {
          expect(control.width, `${control.field} width`).toBeGreaterThanOrEqual(44);
          expect(control.height, `${control.field} height`).toBeGreaterThanOrEqual(44);
        }
        expect(controls.some((control) => control.drawnHeight < 44)).toBe(true);

        // The footer's buttons each keep their label on one line.
        const lines = await page.locator('.toolbar button').evaluateAll((buttons) =>
          buttons.map((button) => {
            const range = document.createRange();
            range.selectNodeContents(button);
            const tops = new Set([...range.getClientRects()].map((rect) => Math.round(rect.top)));
            return { label: button.textContent, lines: tops.size, overflows: button.scrollWidth > button.clientWidth + 1 };
          }),
        );
        expect(lines).toHaveLength(4);
        for (const button of lines) expect(button, String(button.label)).toMatchObject({ lines: 1, overflows: false });

        // The landlord's signature is on the page, read only, in the landlord's name.
        const earlier = page.locator('[data-earlier-field="landlord-signature"]');
        await expect.poll(() => earlier.isVisible()).toBe(true);
        expect(await earlier.getAttribute('role')).toBe('note');
        expect(await earlier.getAttribute('aria-label')).toBe(`Ada Lovelace – ${STRINGS[locale].signedBy('Leyla Landlord')}`);
        expect(await earlier.locator('button').count()).toBe(0);
        await earlier.scrollIntoViewIfNeeded();
        await page.screenshot({ path: screenshotPath(`signing-page-phone-signing-${locale}-${phone.name}.png`) });

        // Next field opens the first empty required field's editor, not only scrolls to it.
        await page.click('#next-field');
        await page.locator('dialog #field-input').waitFor();
        // Its title is not repeated as a label inside.
        expect(await page.locator('dialog label').count()).toBe(0);
        expect(await page.locator('#field-input').getAttribute('aria-labelledby')).toBe('dialog-title');
        await page.screenshot({ path: screenshotPath(`signing-page-phone-next-field-${locale}-${phone.name}.png`) });
        await page.keyboard.press('Escape');
        await page.locator('dialog').waitFor({ state: 'detached' });
        expect(problems).toEqual([]);
        await page.close();
      }
    }
  }, 120_000);

  it('in-person screens name the person, not only the role', async () => {
    const built = await sentEnvelope([
      { identifier: 'host', type: 'host', order: 1, agents: [{ info: { name: 'Hana Host', email: 'hana@example.com' } }] },
      { identifier: 'tenant', type: 'in_person_signer', order: 1, hostedBy: 'host', agents: [{ info: { name: 'Tom Tenant', email: 'tom.tenant@example.com' } }] },
    ]);
    const hostToken = await tokenFor(app, built.envelopeId, built.recipients.host);
    const page = await browser.newPage({ viewport: PHONES[0].viewport, locale: 'en-US' });
    await page.goto(`${app.url}/sign/${hostToken}`);
    await waitForScreen(page, 'host');
    await expect.poll(() => page.locator(`[data-hosted="${built.recipients.tenant}"]`).innerText()).toBe(STRINGS['en-US'].handTo('Tom Tenant (tenant)'));
    await page.screenshot({ path: screenshotPath('signing-page-phone-host-en-US-360x740.png') });
    await page.click(`[data-hosted="${built.recipients.tenant}"]`);
    await waitForScreen(page, 'signing');
    await expect.poll(() => page.locator('.signer').innerText()).toBe(STRINGS['en-US'].signingAs('Tom Tenant'));
    await page.close();
  }, 60_000);
});
