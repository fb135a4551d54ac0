import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchOfflineChromium, screenshotPath } from './helpers/browser.ts';
import { eventually } from './helpers/eventually.ts';
import { restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { codeIn, publicLinkTemplate, slugOf } from './helpers/public-links.ts';
import { signingLinkIn, startSmtpServer, type TestSmtpServer } from './helpers/smtp.ts';
import { mainWorkerFor } from './helpers/workers.ts';

/*
 * A public link in Chromium on a phone (issue 36): a visitor with a Turkish browser fills the form,
 * gets the code from the real SMTP server, enters it, lands in the signing page for the link's
 * role, signs; only then is the company's countersigner invited. Screenshots go to test-results/.
 */

let app: TestApp;
let smtp: TestSmtpServer;
let browser: Browser;
let team: SeededTeam;
beforeAll(async () => {
  smtp = await startSmtpServer();
  app = await startTestApp({ env: { SMTP_URL: smtp.url } });
  browser = await launchOfflineChromium();
  team = await seedTeam(app);
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await app?.close();
  await smtp?.close();
});

describe('a public link on a phone', () => {
  it('the visitor fills, verifies with the mailed code and signs; the countersigner is invited afterwards', async () => {
    const rest = restClient(app, team.apiKey);
    const template = await publicLinkTemplate(app, team.apiKey, { countersignerEmail: 'cora.page@example.com' });
    const link = (await rest.post(`/templates/${template.templateId}/public-links`, { role: 'buyer', name: 'Üyelik formu' })).body.payload.publicLink;
    const worker = mainWorkerFor(app, team.teamId);
    const page = await browser.newPage({ viewport: { width: 390, height: 844 }, locale: 'tr-TR', isMobile: true, hasTouch: true });
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(error.message));
    try {
      const opened = await page.goto(`${app.url}/f/${slugOf(link.url)}`);
      expect(opened?.status()).toBe(200);
      expect(await page.evaluate(() => document.documentElement.lang)).toBe('tr-TR');
      await expect.poll(() => page.locator('h1').innerText()).toBe('Üyelik formu');
      // The form fits the phone's width: nothing scrolls sideways.
      expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
      await page.screenshot({ path: screenshotPath('public-link-form-tr-TR-390x844.png'), fullPage: true });
      await page.getByLabel('Ad soyad').fill('Şule Çağlar');
      await page.getByLabel('E-posta').fill('sule@example.com');
      await page.click('button.primary');
      await page.waitForURL(/\/f\/[^/]+$/);
      await expect.poll(() => page.locator('h1').innerText()).toBe('E-postanızı kontrol edin');
      // Nothing is made before the code is entered.
      expect((await rest.get(`/envelopes?publicLinkId=${link.id}`)).body.payload.envelopes).toEqual([]);

      await worker.drain();
      const code = codeIn((await eventually(() => smtp.to('sule@example.com')[0], { what: 'the code mail' })).mail.text);
      expect(code).toMatch(/^\d{6}$/);
      await page.getByLabel('Kod').fill(code!);
      await page.screenshot({ path: screenshotPath('public-link-code-tr-TR-390x844.png'), fullPage: true });
      await page.click('button.primary');

      // The signing page for the buyer's role, opened through its one-use URL.
      await page.waitForURL(/\/sign\/sgu_/);
      await page.waitForFunction(() => document.body.dataset.screen === 'signing', undefined, { timeout: 20_000 });
      await page.click('[data-field="buyer-signature"]');
      const pad = (await page.locator('.signature-pad').boundingBox())!;
      await page.mouse.move(pad.x + 20, pad.y + 60);
      await page.mouse.down();
      await page.mouse.move(pad.x + 120, pad.y + 30, { steps: 8 });
      await page.mouse.move(pad.x + 200, pad.y + 90, { steps: 8 });
      await page.mouse.up();
      await page.click('#save-signature');
      await page.locator('dialog').waitFor({ state: 'detached' });
      await page.click('#finish');
      await page.click('#confirm-signing');
      await page.waitForFunction(() => document.body.dataset.screen === 'done', undefined, { timeout: 20_000 });
      await page.screenshot({ path: screenshotPath('public-link-signed-tr-TR-390x844.png'), fullPage: true });
      expect(problems).toEqual([]);

      const [envelope] = (await rest.get(`/envelopes?publicLinkId=${link.id}`)).body.payload.envelopes;
      expect(envelope.status).toBe('sent');
      const full = (await rest.get(`/envelopes/${envelope.id}?includeRecipients=true`)).body.payload;
      const buyer = full.recipients.find((recipient: any) => recipient.identifier === 'buyer');
      expect(buyer.completedAt).not.toBeNull();
      expect(buyer.agents[0].info).toMatchObject({ name: 'Şule Çağlar', email: 'sule@example.com', locale: 'tr-TR' });
      const audit = (await rest.get(`/envelopes/${envelope.id}/audit`)).body.payload.events;
      expect(audit.find((event: any) => event.type === 'public_link.used').userAgent).toContain('Chrome');

      // The company's countersigner is invited now, after the visitor signed.
      await worker.drain();
      const invitation = await eventually(() => smtp.to('cora.page@example.com').find((entry) => signingLinkIn(entry)), { what: 'the countersigner’s invitation' });
      expect(invitation.mail.subject).toBeTruthy();
    } finally {
      await page.close();
      await worker.stop();
    }
  });
});
