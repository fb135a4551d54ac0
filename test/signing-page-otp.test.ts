import fs from 'node:fs';
import { createRequire } from 'node:module';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STRINGS } from '../src/signing-page/strings.js';
import { launchOfflineChromium, screenshotPath } from './helpers/browser.ts';
import { restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { type RecordingServer, startRecordingServer } from './helpers/recording-server.ts';
import { buildEnvelope, tokenFor } from './helpers/signing.ts';
import { mainWorkerFor } from './helpers/workers.ts';

/*
 * The signing page's code step in Chromium: a signer with a phone asks for a code, reads it from
 * the message that reached the (local HTTP) SMS provider, types a wrong one, then the right one,
 * and signs.
 */

let app: TestApp;
let browser: Browser;
let provider: RecordingServer;

/** Every text the SMS provider received, oldest first. */
function texts(): { to: string; channel: string; text: string }[] {
  return provider.received.map((request) => request.json);
}

beforeAll(async () => {
  provider = await startRecordingServer(undefined, '/send');
  app = await startTestApp({ env: { SMS_PROVIDER_URL: provider.url } });
  browser = await launchOfflineChromium();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await app?.close();
  await provider?.close();
});

/** The main worker as main.ts runs it (the app's config and clock), kept to one team's rows. */
function workerFor(team: SeededTeam) {
  return mainWorkerFor(app, team.teamId);
}

/** Requests to other hosts, failed requests, CSP refusals and script errors: the step must cause none. */
function watch(page: Page) {
  const problems: string[] = [];
  const origin = new URL(app.url).origin;
  page.on('request', (request) => {
    const url = request.url();
    if (!url.startsWith(origin) && !url.startsWith('data:') && !url.startsWith('blob:')) problems.push(`foreign request ${url}`);
  });
  page.on('requestfailed', (request) => {
    if (request.headers().accept === 'text/event-stream' && request.failure()?.errorText === 'net::ERR_ABORTED') return;
    problems.push(`failed ${request.url()}: ${request.failure()?.errorText}`);
  });
  page.on('console', (message) => {
    if (message.type() === 'error' && /content security policy|refused/i.test(message.text())) problems.push(`console: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  return problems;
}

/** Serious or critical axe-core findings on the page as it is now. */
async function accessibilityViolations(page: Page): Promise<string[]> {
  // Evaluated through the DevTools protocol: the page's own policy still allows no inline script.
  await page.evaluate(fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8'));
  const result = await page.evaluate(() => (window as any).axe.run(document, { resultTypes: ['violations'] }));
  return (result.violations as any[])
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map((violation) => `${violation.id}: ${violation.nodes.map((node: any) => node.target.join(' ')).join(', ')}`);
}

async function waitForScreen(page: Page, screen: string, timeout = 20_000) {
  await page.waitForFunction((wanted) => document.body.dataset.screen === wanted, screen, { timeout });
}

describe('the signing page’s one-time code step', () => {
  it('asks for a code, explains a wrong one in the signer’s language, and signs after the right one', async () => {
    const team = await seedTeam(app);
    const phone = '+905551239912';
    const built = await buildEnvelope(app, team.apiKey, {
      name: 'Kira sözleşmesi',
      recipients: [{ identifier: 'zeynep', agents: [{ info: { name: 'Zeynep Kaya', phone, phoneContactMethod: 'whatsapp', locale: 'tr-TR' } }] }],
    });
    expect((await restClient(app, team.apiKey).put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
    const token = await tokenFor(app, built.envelopeId, built.recipients.zeynep!);
    const worker = workerFor(team);
    await worker.drain();
    const tr = STRINGS['tr-TR'];

    const page = await browser.newPage({ viewport: { width: 390, height: 844 }, locale: 'en-US' });
    const problems = watch(page);
    expect((await page.goto(`${app.url}/sign/${token}`))?.status()).toBe(200);
    await waitForScreen(page, 'verify');
    await expect.poll(() => page.locator('h1').innerText()).toBe(tr.otpTitle);
    expect(await page.locator('.state-verify').innerText()).toContain(tr.otpText('+90••••••••12', 'whatsapp'));
    // No code asked for yet: only the button that sends one.
    expect(await page.locator('#otp-code').isVisible()).toBe(false);
    await page.screenshot({ path: screenshotPath('signing-page-otp-start-tr-TR-phone.png') });
    expect(await accessibilityViolations(page)).toEqual([]);

    await page.click('#otp-send');
    await page.locator('#otp-code').waitFor({ state: 'visible' });
    await expect.poll(() => page.locator('#otp-status').innerText()).toBe(tr.otpSent('+90••••••••12'));
    const input = page.locator('#otp-code');
    expect(await input.getAttribute('autocomplete')).toBe('one-time-code');
    expect(await input.getAttribute('inputmode')).toBe('numeric');
    expect(await input.getAttribute('maxlength')).toBe('6');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('otp-code');
    expect(await page.evaluate(() => document.querySelector('label[for="otp-code"]')?.textContent)).toBe(tr.otpLabel);
    // The resend button counts down and cannot be used meanwhile.
    const resend = page.locator('#otp-send');
    expect(await resend.isDisabled()).toBe(true);
    expect(await resend.innerText()).toMatch(/^Yeni kod gönder \((\d+) sn\)$/);

    await worker.drain();
    const message = texts().filter((text) => text.to === phone && /^\d{6}/.test(text.text));
    expect(message).toHaveLength(1);
    expect(message[0]!.channel).toBe('whatsapp');
    const code = message[0]!.text.slice(0, 6);

    // Too short: said on the page, nothing sent.
    await input.fill('123');
    await page.click('#otp-verify');
    await expect.poll(() => page.locator('#otp-error').innerText()).toBe(tr.otpSixDigits);
    // Wrong: the service's refusal, in Turkish, with the tries left.
    await page.locator('#otp-code').fill(code === '000000' ? '000001' : '000000');
    await page.click('#otp-verify');
    await expect.poll(() => page.locator('#otp-error').innerText()).toBe(tr.otpErrors['Signing.OtpInvalid']({ attemptsLeft: 4 }));
    expect(await page.locator('#otp-code').getAttribute('aria-invalid')).toBe('true');
    await page.screenshot({ path: screenshotPath('signing-page-otp-wrong-tr-TR-phone.png') });
    expect(await accessibilityViolations(page)).toEqual([]);
    // In English too, when the signer switches.
    await page.selectOption('#locale', 'en-US');
    await expect.poll(() => page.locator('h1').innerText()).toBe(STRINGS['en-US'].otpTitle);
    await page.selectOption('#locale', 'tr-TR');

    await page.locator('#otp-code').fill(code);
    await page.locator('#otp-code').press('Enter');
    await waitForScreen(page, 'signing');

    // An hour later the verification has lapsed: saving a value brings the code step back.
    app.dependencies.clock.advance(60 * 60 + 1);
    await page.click('[data-field="zeynep-signature"]');
    await page.click('[role="tab"][data-mode="type"]');
    await page.fill('#typed-signature', 'Zeynep Kaya');
    await page.click('#save-signature');
    await waitForScreen(page, 'verify');
    await page.click('#otp-send');
    await page.locator('#otp-code').waitFor({ state: 'visible' });
    await worker.drain();
    const second = texts().filter((text) => text.to === phone && /^\d{6}/.test(text.text));
    expect(second).toHaveLength(2);
    await page.locator('#otp-code').fill(second[1]!.text.slice(0, 6));
    await page.click('#otp-verify');
    await waitForScreen(page, 'signing');

    // Now signing works as for anyone.
    await page.click('[data-field="zeynep-signature"]');
    await page.click('[role="tab"][data-mode="type"]');
    await page.fill('#typed-signature', 'Zeynep Kaya');
    await page.click('#save-signature');
    await page.locator('dialog').waitFor({ state: 'detached' });
    await page.click('#finish');
    await page.click('#confirm-signing');
    await waitForScreen(page, 'finalized');

    const events = await app.orm.em
      .fork()
      .execute<{ type: string; user_agent: string | null }[]>(`select type, user_agent from audit_event where envelope_id = ? and type like 'otp.%' order by seq`, [built.envelopeId]);
    expect(events.map((event) => event.type)).toEqual(['otp.requested', 'otp.sent', 'otp.failed', 'otp.verified', 'otp.requested', 'otp.sent', 'otp.verified']);
    expect(events.find((event) => event.type === 'otp.verified')!.user_agent).toMatch(/Chrome/);
    expect(problems).toEqual([]);
    await page.close();
  }, 120_000);
});
