/**
 * Issue 35 end to end in Chromium: signers with an advanced and a qualified signature sign at their
 * trust service (test/helpers/csc-provider.ts, its real HTML authorize pages) from the signing
 * page, and the service's seal comes from a SoftHSM token (SEAL_SIGNER=pkcs11). Each signer opens
 * the invitation link, fills the signature, finishes, types username, PIN and consent at the
 * provider, the PIN again for the credential, and is back on the signing page with the outcome.
 * The API-level cases are in trust-signing.test.ts.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { openSeal, type SealCertificate } from '../src/domain/artefact/seal-certificate.ts';
import { STRINGS } from '../src/signing-page/strings.js';
import { launchOfflineChromium, screenshotPath } from './helpers/browser.ts';
import { type CscTestProvider, startCscProvider } from './helpers/csc-provider.ts';
import { restClient, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { pdfsig } from './helpers/pdf-tools.ts';
import { freePort } from './helpers/pg-cluster.ts';
import { downloadSealed, sealWorker } from './helpers/seal-jobs.ts';
import { buildEnvelope, type RecipientSpec, tokenFor } from './helpers/signing.ts';
import { createSoftHsmToken } from './helpers/softhsm.ts';

let app: TestApp;
let browser: Browser;
let provider: CscTestProvider;
let token: ReturnType<typeof createSoftHsmToken>;
let seal: SealCertificate;
let directory: string;

beforeAll(async () => {
  token = createSoftHsmToken({ label: 'envelope-seal', pin: '4821', keyLabel: 'seal-key', commonName: 'Token Seal' });
  // The module reads its configuration from the environment of the process that loads it.
  process.env.SOFTHSM2_CONF = token.confPath;
  directory = fs.mkdtempSync(path.join(os.tmpdir(), 'trust-signing-page-'));
  seal = await openSeal(loadConfig({ DATA_DIR: directory, ...token.serviceEnv() }));
  provider = await startCscProvider({ name: 'Test Qualified Trust Service CA' });
  const port = await freePort();
  // The provider sends the browser back to PUBLIC_URL: the app's own address.
  app = await startTestApp({ seal, env: { PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}` } });
  browser = await launchOfflineChromium();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await app?.close();
  await provider?.close();
  await seal?.signer.close();
  token?.remove();
  fs.rmSync(directory, { recursive: true, force: true });
});

const t = STRINGS['en-US'];

async function teamWithTrustService() {
  const team = await seedTeam(app);
  const saved = await restClient(app, team.apiKey).patch('/team/settings', {
    trustServices: [{ id: 'tsp', name: 'Test TSP', baseUrl: provider.baseUrl, clientId: provider.clientId, clientSecret: provider.clientSecret, levels: ['advanced', 'qualified'] }],
  });
  expect(saved.status, JSON.stringify(saved.body)).toBe(200);
  return team;
}

async function sentEnvelope(apiKey: string, recipients: RecipientSpec[]) {
  const built = await buildEnvelope(app, apiKey, { name: 'Trust', recipients });
  const sent = await restClient(app, apiKey).put(`/envelopes/${built.envelopeId}/send`);
  expect(sent.status, JSON.stringify(sent.body)).toBe(200);
  return built;
}

/** Every failed request and page error on the service's pages and the provider's. */
function watch(page: Page) {
  const problems: string[] = [];
  page.on('requestfailed', (request) => {
    // The page ends its live stream itself when it leaves for the provider or a final screen.
    if (request.headers().accept === 'text/event-stream' && request.failure()?.errorText === 'net::ERR_ABORTED') return;
    problems.push(`failed ${request.url()}: ${request.failure()?.errorText}`);
  });
  page.on('console', (message) => {
    if (message.type() === 'error' && /content security policy|refused/i.test(message.text())) problems.push(`console: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  return problems;
}

async function waitForScreen(page: Page, screen: string, timeout = 30_000) {
  await page.waitForFunction((wanted) => document.body.dataset.screen === wanted, screen, { timeout });
}

/** Opens the link, types the signature into `field` and finishes: the browser is at the provider's first page. */
async function fillAndFinish(page: Page, link: string, field: string, name: string) {
  await page.click(`[data-field="${field}"]`);
  await page.click('[role="tab"][data-mode="type"]');
  await page.fill('#typed-signature', name);
  await page.click('#save-signature');
  await page.locator('dialog').waitFor({ state: 'detached' });
  await page.click('#finish');
  await expect.poll(() => page.locator('#consent-text').innerText()).toBe(t.consent);
  await page.click('#confirm-signing');
  await page.waitForURL((url) => url.href.startsWith(`${provider.baseUrl}/oauth2/authorize`) && url.searchParams.get('scope') === 'service', { timeout: 30_000 });
  expect(page.url()).not.toContain(link);
}

/** The provider's first page (who, PIN, consent): submits it. */
async function serviceAuthorization(page: Page, email: string, pin: string) {
  await page.fill('input[name="username"]', email);
  await page.fill('input[name="pin"]', pin);
  await page.click('button[name="consent"][value="yes"]');
}

/** The provider's second page (the credential, for the document hashes): the PIN again and consent. */
async function credentialAuthorization(page: Page, signerName: string, pin: string) {
  await page.waitForURL((url) => url.href.startsWith(`${provider.baseUrl}/oauth2/authorize`) && url.searchParams.get('scope') === 'credential', { timeout: 30_000 });
  await expect.poll(() => page.locator('strong').innerText()).toBe(signerName);
  expect(await page.locator('input[name="username"]').count()).toBe(0);
  await page.fill('input[name="pin"]', pin);
  await page.click('button[name="consent"][value="yes"]');
}

async function backOnLink(page: Page, link: string) {
  await page.waitForURL(`${app.url}/sign/${link}`, { timeout: 30_000 });
}

describe('signing at a trust service from the signing page (Chromium)', () => {
  it('an advanced and then a qualified signer sign at their provider through its pages; the SoftHSM seal keeps all three signatures valid', async () => {
    const ada = provider.addUser({ name: 'Ada Advanced', email: 'ada@example.com', pin: '1111', level: 'advanced' });
    const quinn = provider.addUser({ name: 'Quinn Qualified', email: 'quinn@example.com', pin: '2222', level: 'qualified' });
    const team = await teamWithTrustService();
    const built = await sentEnvelope(team.apiKey, [
      { identifier: 'ada', order: 1, signatureLevel: 'advanced', agents: [{ info: { name: 'Ada Advanced', email: 'ada@example.com' } }] },
      { identifier: 'quinn', order: 2, signatureLevel: 'qualified', agents: [{ info: { name: 'Quinn Qualified', email: 'quinn@example.com' } }] },
    ]);

    const signers = [
      { identifier: 'ada', person: ada, name: 'Ada Advanced', email: 'ada@example.com', pin: '1111', level: 'advanced', after: 'done' },
      { identifier: 'quinn', person: quinn, name: 'Quinn Qualified', email: 'quinn@example.com', pin: '2222', level: 'qualified', after: 'finalized' },
    ] as const;
    for (const signer of signers) {
      const link = await tokenFor(app, built.envelopeId, built.recipients[signer.identifier]!);
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 }, locale: 'en-US' });
      const problems = watch(page);
      expect((await page.goto(`${app.url}/sign/${link}`))?.status()).toBe(200);
      await waitForScreen(page, 'signing');
      // Before Finish the page says what kind of signature this is and that the provider asks for a PIN.
      await expect.poll(() => page.locator('#trust-level').innerText()).toBe(t.trustLevelNote(signer.level));
      expect(await page.locator('#trust-failed').count()).toBe(0);
      await page.screenshot({ path: screenshotPath(`trust-signing-page-${signer.level}-note.png`) });

      await fillAndFinish(page, link, `${signer.identifier}-signature`, signer.name);
      await serviceAuthorization(page, signer.email, signer.pin);
      await credentialAuthorization(page, signer.name, signer.pin);
      await backOnLink(page, link);
      await waitForScreen(page, signer.after);
      await expect.poll(() => page.locator('h1').innerText()).toBe(signer.after === 'done' ? t.doneTitle : t.finalizedTitle);
      expect(provider.signedCount(signer.person.credentialId)).toBe(1);
      expect(problems).toEqual([]);
      await page.close();
    }

    expect(await sealWorker(app, team.teamId, []).drain()).toBe(1);
    const file = await downloadSealed(app, directory, team.apiKey, built.envelopeId, built.documentId, 'two-signers.pdf');
    const report = pdfsig(file);
    const signatures = report.split(/^Signature #\d+:$/m).slice(1);
    expect(signatures, report).toHaveLength(3);
    for (const signature of signatures) expect(signature, report).toContain('Signature Validation: Signature is Valid.');
    // In signing order: the two signers, then the service's seal from the token over the whole file.
    expect(signatures[0]).toContain('Signer Certificate Common Name: Ada Advanced');
    expect(signatures[1]).toContain('Signer Certificate Common Name: Quinn Qualified');
    expect(signatures[2]).toContain('Signer Certificate Common Name: Token Seal');
    expect(signatures[2]).toContain('Total document signed');
  }, 180_000);

  it('a wrong PIN brings the signer back to the signing page with the failure said; Finish again with the right PIN signs', async () => {
    const pat = provider.addUser({ name: 'Pat Pin', email: 'pat@example.com', pin: '5555', level: 'advanced' });
    const team = await teamWithTrustService();
    const built = await sentEnvelope(team.apiKey, [{ identifier: 'pat', signatureLevel: 'advanced', agents: [{ info: { name: 'Pat Pin', email: 'pat@example.com' } }] }]);
    const link = await tokenFor(app, built.envelopeId, built.recipients.pat!);
    const page = await browser.newPage({ viewport: { width: 390, height: 844 }, locale: 'en-US' });
    const problems = watch(page);
    await page.goto(`${app.url}/sign/${link}`);
    await waitForScreen(page, 'signing');

    await fillAndFinish(page, link, 'pat-signature', 'Pat Pin');
    await serviceAuthorization(page, 'pat@example.com', '0000');
    await backOnLink(page, link);
    await waitForScreen(page, 'signing');
    const banner = page.locator('#trust-failed');
    await expect.poll(() => banner.getAttribute('role')).toBe('alert');
    // In the page's words for the reason, with the provider's own words quoted.
    expect(await banner.innerText()).toBe(t.trustFailedBanner('declined', 'Invalid PIN'));
    // Looks like an error, not like the note beside it.
    const looks = await page.evaluate(() => {
      const style = (selector: string) => {
        const computed = getComputedStyle(document.querySelector(selector)!);
        return { border: computed.borderInlineStartColor, background: computed.backgroundColor };
      };
      return { failed: style('#trust-failed'), note: style('#trust-level') };
    });
    expect(looks.failed.border).not.toBe(looks.note.border);
    expect(looks.failed.background).not.toBe(looks.note.background);
    await page.screenshot({ path: screenshotPath('trust-signing-page-wrong-pin.png'), fullPage: true });
    expect(provider.signedCount(pat.credentialId)).toBe(0);

    // The value typed before is saved: Finish goes straight to the consent and the provider again.
    await expect.poll(() => page.locator('#progress').innerText()).toBe(t.progress(1, 1));
    await page.click('#finish');
    await page.click('#confirm-signing');
    await page.waitForURL((url) => url.href.startsWith(`${provider.baseUrl}/oauth2/authorize`), { timeout: 30_000 });
    await serviceAuthorization(page, 'pat@example.com', '5555');
    await credentialAuthorization(page, 'Pat Pin', '5555');
    await backOnLink(page, link);
    await waitForScreen(page, 'finalized');
    expect(provider.signedCount(pat.credentialId)).toBe(1);
    expect(problems).toEqual([]);
    await page.close();
  }, 120_000);
});
