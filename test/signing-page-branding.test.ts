import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchOfflineChromium, screenshotPath } from './helpers/browser.ts';
import { restClient, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { png } from './helpers/images.ts';
import { buildEnvelope, tokenFor } from './helpers/signing.ts';

/*
 * The sending team's branding on the signing page (issue 24), as a signer's browser shows it: the
 * team's name (a hostile one shown as text), its logo loaded from this service, its accent colour
 * and its footer line.
 */
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

describe('the signing page of a branded team', () => {
  it('shows the team’s name as text, its logo served by this service, its accent colour and footer', async () => {
    const team = await seedTeam(app);
    const rest = restClient(app, team.apiKey);
    const hostile = 'Acme <img src=x onerror=alert(1)> Legal';
    const branded = await rest.patch('/team/settings', {
      displayName: hostile,
      branding: { logo: { data: png(48, 24).toString('base64') }, accentColor: '#aa3300', footer: 'Acme Legal <b>Istanbul</b>' },
    });
    expect(branded.status, JSON.stringify(branded.body)).toBe(200);
    const built = await buildEnvelope(app, team.apiKey, { name: 'Branded lease', recipients: [{ identifier: 'signer' }] });
    expect((await rest.put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
    const token = await tokenFor(app, built.envelopeId, built.recipients.signer);

    const page = await browser.newPage({ viewport: { width: 390, height: 844 } });
    try {
      const dialogs: string[] = [];
      page.on('dialog', (dialog) => {
        dialogs.push(dialog.message());
        void dialog.dismiss();
      });
      await page.goto(`${app.url}/sign/${token}`);
      const logo = page.locator('#brand-logo');
      await logo.waitFor({ state: 'attached', timeout: 20_000 });
      // The logo is this service's own URL and really loaded (an offline browser reaches nothing else).
      await page.waitForFunction(() => {
        const image = document.getElementById('brand-logo') as HTMLImageElement | null;
        return image !== null && image.complete && image.naturalWidth > 0;
      });
      const source = await logo.evaluate((image) => (image as HTMLImageElement).src);
      expect(new URL(source).origin).toBe(new URL(app.url).origin);
      expect(new URL(source).pathname).toMatch(/^\/branding\/logos\/[0-9a-f]{64}\.png$/);
      expect(await logo.evaluate((image) => [(image as HTMLImageElement).naturalWidth, (image as HTMLImageElement).naturalHeight])).toEqual([48, 24]);
      // The hostile name is text, not markup: no element was made of it and nothing ran.
      expect(await page.locator('#brand').textContent()).toBe(hostile);
      expect(await page.locator('img[src="x"]').count()).toBe(0);
      expect(dialogs).toEqual([]);
      expect(await page.evaluate(() => getComputedStyle(document.documentElement).getPropertyValue('--accent').trim())).toBe('#aa3300');
      expect(await page.locator('body').textContent()).toContain('Acme Legal <b>Istanbul</b>');
      // A long team name wraps beside the language choice; it never pushes it off the screen.
      const languageBox = await page.locator('#locale').boundingBox();
      expect(languageBox!.x + languageBox!.width).toBeLessThanOrEqual(390);
      await page.screenshot({ path: screenshotPath('signing-page-branded-390x844.png') });
    } finally {
      await page.close();
    }
  });
});
