import fs from 'node:fs';
import { createRequire } from 'node:module';
import type { Browser, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { STRINGS } from '../src/signing-page/strings.js';
import { screenshotPath, withAppBrowserAndTeam } from './helpers/browser.ts';
import { firstErrorName, restClient, type SeededTeam, type TestApp } from './helpers/harness.ts';
import { untilWatching } from './helpers/live.ts';
import { buildEnvelope, invitationsOf, type RecipientSpec, SESSION_QUERY, signAndComplete, signingClient, tokenFor, typedSignature } from './helpers/signing.ts';

let app: TestApp;
let browser: Browser;
let team: SeededTeam;
withAppBrowserAndTeam((started) => ({ app, browser, team } = started));

const SUBMIT_WITH_CONSENT = `mutation($values: [SigningValueInput!], $complete: Boolean, $consent: String) {
  submitSigning(values: $values, complete: $complete, consent: $consent) { recipient { completedAt } } }`;

const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1280, height: 900 };

/** Every request to another host, failed request and CSP refusal: the page must need none. */
function watch(page: Page) {
  const problems: string[] = [];
  const origin = new URL(app.url).origin;
  page.on('request', (request) => {
    const url = request.url();
    if (!url.startsWith(origin) && !url.startsWith('data:') && !url.startsWith('blob:')) problems.push(`foreign request ${url}`);
  });
  page.on('requestfailed', (request) => {
    // The page ends its live stream itself when it leaves a session (another signer, a final screen).
    if (request.headers().accept === 'text/event-stream' && request.failure()?.errorText === 'net::ERR_ABORTED') return;
    // A download (the final copy) ends its navigation as aborted: the file is saved instead.
    if (request.url().includes('/api/v1/key/final-copy/') && request.failure()?.errorText === 'net::ERR_ABORTED') return;
    problems.push(`failed ${request.url()}: ${request.failure()?.errorText}`);
  });
  page.on('console', (message) => {
    if (message.type() === 'error' && /content security policy|refused/i.test(message.text())) problems.push(`console: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  return problems;
}

async function sentEnvelope(recipients: RecipientSpec[]) {
  const built = await buildEnvelope(app, team.apiKey, { name: 'Kira sözleşmesi / Lease', recipients });
  const sent = await restClient(app, team.apiKey).put(`/envelopes/${built.envelopeId}/send`);
  expect(sent.status, JSON.stringify(sent.body)).toBe(200);
  return built;
}

async function openLink(page: Page, token: string, status = 200) {
  const response = await page.goto(`${app.url}/sign/${token}`);
  expect(response?.status()).toBe(status);
  return response!;
}

async function screenOf(page: Page): Promise<string> {
  return page.evaluate(() => document.body.dataset.screen ?? '');
}

async function waitForScreen(page: Page, screen: string, timeout = 20_000) {
  await page.waitForFunction((wanted) => document.body.dataset.screen === wanted, screen, { timeout });
}

/** The state on screen at a phone and a desktop size, in both languages (test-results/). */
async function screenshots(page: Page, name: string) {
  for (const locale of ['en-US', 'tr-TR']) {
    await page.selectOption('#locale', locale);
    for (const [label, size] of [
      ['phone', PHONE],
      ['desktop', DESKTOP],
    ] as const) {
      await page.setViewportSize(size);
      if ((await screenOf(page)) === 'signing') await page.waitForFunction(() => document.body.dataset.pagesDrawn === 'true', undefined, { timeout: 20_000 });
      await page.screenshot({ path: screenshotPath(`signing-page-${name}-${locale}-${label}.png`), fullPage: true });
    }
  }
  await page.selectOption('#locale', 'en-US');
  await page.setViewportSize(PHONE);
}

/** A dialog at a phone and a desktop size, in both languages: opened anew in each language, as its text is set when it opens. */
async function dialogScreenshots(page: Page, name: string, open: () => Promise<void>) {
  for (const locale of ['en-US', 'tr-TR']) {
    await page.selectOption('#locale', locale);
    await open();
    for (const [label, size] of [
      ['phone', PHONE],
      ['desktop', DESKTOP],
    ] as const) {
      await page.setViewportSize(size);
      await page.screenshot({ path: screenshotPath(`signing-page-${name}-${locale}-${label}.png`) });
    }
    await page.keyboard.press('Escape');
    await page.locator('dialog').waitFor({ state: 'detached' });
  }
  await page.selectOption('#locale', 'en-US');
  await page.setViewportSize(PHONE);
}

async function auditEvents(envelopeId: string): Promise<any[]> {
  return (await restClient(app, team.apiKey).get(`/envelopes/${envelopeId}/audit`)).body.payload.events;
}

/** Draws on the open pad with Pointer Events as a pen reports them: position, time and a varying pressure. */
async function drawWithPen(page: Page, selector: string, strokes: { x: number; y: number; p: number }[][]) {
  await page.locator(selector).evaluate(async (canvas, given) => {
    const box = canvas.getBoundingClientRect();
    const pause = () => new Promise((resolve) => setTimeout(resolve, 8));
    const fire = (type: string, point: { x: number; y: number; p: number }) =>
      canvas.dispatchEvent(
        new PointerEvent(type, {
          bubbles: true,
          cancelable: true,
          pointerId: 7,
          pointerType: 'pen',
          isPrimary: true,
          pressure: point.p,
          clientX: box.left + point.x,
          clientY: box.top + point.y,
          buttons: type === 'pointerup' ? 0 : 1,
        }),
      );
    for (const stroke of given) {
      fire('pointerdown', stroke[0]);
      for (const point of stroke.slice(1)) {
        await pause();
        fire('pointermove', point);
      }
      await pause();
      fire('pointerup', stroke.at(-1)!);
      await pause();
    }
  }, strokes);
}

describe('the signing page', () => {
  it('is served by the service with a strict policy, no referrer and no framing', async () => {
    const built = await sentEnvelope([{ identifier: 'ada' }]);
    const token = await tokenFor(app, built.envelopeId, built.recipients.ada);
    const response = await fetch(`${app.url}/sign/${token}`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const policy = response.headers.get('content-security-policy')!;
    expect(policy).toContain("script-src 'self'");
    expect(policy).not.toContain('unsafe-inline');
    expect(policy).toContain("frame-ancestors 'none'");
    expect(response.headers.get('referrer-policy')).toBe('no-referrer');
    expect(response.headers.get('x-frame-options')).toBe('DENY');
    expect(response.headers.get('cache-control')).toBe('no-store');
    const html = await response.text();
    // No inline script: every <script> has a src on this service.
    expect([...html.matchAll(/<script\b[^>]*>/g)].every((tag) => /src="\/sign-assets\//.test(tag[0]))).toBe(true);
    expect(html).not.toContain(token);
  });

  it('hands the original PDF to the link’s holder only', async () => {
    const built = await sentEnvelope([{ identifier: 'ada' }]);
    const token = await tokenFor(app, built.envelopeId, built.recipients.ada);
    const ok = await fetch(`${app.url}/signing/documents/${built.documentId}`, { headers: { 'x-signing-token': token } });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('content-type')).toBe('application/pdf');
    expect(
      Buffer.from(await ok.arrayBuffer())
        .subarray(0, 5)
        .toString(),
    ).toBe('%PDF-');
    const other = await sentEnvelope([{ identifier: 'bob' }]);
    const foreign = await fetch(`${app.url}/signing/documents/${other.documentId}`, { headers: { 'x-signing-token': token } });
    expect(foreign.status).toBe(404);
    expect((await foreign.json()).error.name).toBe('Document.NotFound');
    const missing = await fetch(`${app.url}/signing/documents/${built.documentId}`);
    expect(missing.status).toBe(401);
    expect((await missing.json()).error.name).toBe('Signing.MissingToken');
  });

  it('signs every field type in Chromium, a pen-drawn biometric signature included, and the envelope finalizes', async () => {
    const built = await sentEnvelope([
      {
        identifier: 'ada',
        fields: [
          { identifier: 'postcode', type: 'text', required: true, config: { placeholder: 'Postcode', maxLength: 5, pattern: '[0-9]{5}' } },
          { identifier: 'agree', type: 'checkbox', required: true },
          {
            identifier: 'plan',
            type: 'radio',
            required: true,
            config: {
              options: [
                { value: 'monthly', label: 'Aylık / Monthly' },
                { value: 'yearly', label: 'Yıllık / Yearly' },
              ],
            },
          },
          { identifier: 'terms', type: 'binary_choice', required: true, config: { acceptLabel: 'I agree', declineLabel: 'I do not agree' } },
          { identifier: 'drawn', type: 'simple_signature', required: true },
          { identifier: 'typed', type: 'simple_signature', required: false },
          { identifier: 'bio', type: 'biometric_signature', required: true, config: { minPoints: 5 } },
          { identifier: 'fixed', type: 'text', readonly: true, value: { text: 'Şartlar v2' } },
        ],
      },
    ]);
    const token = await tokenFor(app, built.envelopeId, built.recipients.ada);
    const page = await browser.newPage({ viewport: PHONE, locale: 'en-US' });
    const problems = watch(page);
    await openLink(page, token);
    await waitForScreen(page, 'signing');
    await page.waitForFunction(() => document.body.dataset.pagesDrawn === 'true', undefined, { timeout: 20_000 });
    await expect.poll(() => page.locator('#progress').innerText()).toBe('0 of 6 required fields done');
    // The readonly field shows the sender's value; every field sits over its box in the recipient's colour.
    await expect.poll(() => page.locator('[data-field="fixed"]').innerText()).toBe('Şartlar v2');
    const boxes = await page
      .locator('.field')
      .evaluateAll((elements) =>
        elements.map((element) => ({ field: (element as HTMLElement).dataset.field, color: getComputedStyle(element).borderTopColor, rect: element.getBoundingClientRect().toJSON() })),
      );
    expect(boxes).toHaveLength(8);
    for (let index = 1; index < boxes.length; index += 1) expect(boxes[index].rect.top).toBeGreaterThanOrEqual(boxes[index - 1].rect.bottom - 0.5);
    await screenshots(page, 'signing-empty');

    // Next field takes the signer to the first required field without a value, and opens its editor.
    await page.click('#next-field');
    await page.locator('dialog #field-input').waitFor();

    // Text: the pattern is checked before sending.
    await page.fill('#field-input', 'abc');
    await page.click('dialog .primary');
    await expect.poll(() => page.locator('dialog .error').innerText()).toBe(STRINGS['en-US'].patternMismatch);
    await page.fill('#field-input', '75011');
    await page.click('dialog .primary');
    await page.locator('dialog').waitFor({ state: 'detached' });

    await page.click('[data-field="agree"]');
    await expect.poll(() => page.locator('[data-field="agree"]').getAttribute('aria-checked')).toBe('true');

    await page.click('[data-field="plan"]');
    await page.getByLabel('Yıllık / Yearly').check();
    await page.click('dialog .primary');
    await page.locator('dialog').waitFor({ state: 'detached' });

    await page.click('[data-field="terms"]');
    await page.click('dialog [data-choice="accept"]');
    await page.locator('dialog').waitFor({ state: 'detached' });

    // A simple signature drawn with the mouse.
    await page.click('[data-field="drawn"]');
    const pad = await page.locator('.signature-pad').boundingBox();
    await page.mouse.move(pad!.x + 20, pad!.y + 60);
    await page.mouse.down();
    await page.mouse.move(pad!.x + 120, pad!.y + 30, { steps: 8 });
    await page.mouse.move(pad!.x + 200, pad!.y + 90, { steps: 8 });
    await page.mouse.up();
    await page.click('#save-signature');
    await page.locator('dialog').waitFor({ state: 'detached' });

    // A simple signature typed in a script font.
    await page.click('[data-field="typed"]');
    await page.click('[role="tab"][data-mode="type"]');
    await page.fill('#typed-signature', 'Ada Augusta King-Noel');
    await page.click('#save-signature');
    await page.locator('dialog').waitFor({ state: 'detached' });
    // A long typed name fits its box on a phone: scaled down, nothing cut off.
    const typedFit = async () =>
      page.locator('[data-box="typed"]').evaluate((box) => {
        const text = box.querySelector('.typed') as HTMLElement;
        const style = getComputedStyle(box);
        return {
          overflowsWidth: text.offsetWidth > box.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight) + 0.5,
          overflowsHeight: text.getBoundingClientRect().height > box.getBoundingClientRect().height + 0.5,
          fontSize: parseFloat(getComputedStyle(text).fontSize),
        };
      });
    const fitted = await typedFit();
    expect(fitted).toMatchObject({ overflowsWidth: false, overflowsHeight: false });
    expect(fitted.fontSize).toBeGreaterThan(5);
    await page.locator('[data-field="typed"]').scrollIntoViewIfNeeded();
    await page.screenshot({ path: screenshotPath('signing-page-typed-signature-en-US-phone.png') });

    // The biometric signature: two pen strokes with their pressure.
    await page.click('[data-field="bio"]');
    await drawWithPen(page, '.signature-pad', [
      [
        { x: 20, y: 80, p: 0.2 },
        { x: 60, y: 40, p: 0.45 },
        { x: 100, y: 70, p: 0.7 },
        { x: 140, y: 30, p: 0.9 },
      ],
      [
        { x: 160, y: 60, p: 0.3 },
        { x: 220, y: 62, p: 0.6 },
      ],
    ]);
    await page.screenshot({ path: screenshotPath('signing-page-biometric-en-US-phone.png') });
    await page.click('#save-signature');
    await page.locator('dialog').waitFor({ state: 'detached' });
    await expect.poll(() => page.locator('#progress').innerText()).toBe('6 of 6 required fields done');
    await screenshots(page, 'signing-filled');

    // The confirmation states what signing means; that text is what the audit log keeps.
    await page.click('#finish');
    await expect.poll(() => page.locator('#consent-text').innerText()).toBe(STRINGS['en-US'].consent);
    await page.screenshot({ path: screenshotPath('signing-page-confirm-en-US-phone.png') });
    await page.click('#confirm-signing');
    await waitForScreen(page, 'finalized');
    await screenshots(page, 'finalized');
    // The finalized screen hands the signer the sealed copy (the link itself is dead by now).
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#download-final-copy')]);
    expect(download.suggestedFilename()).toMatch(/\.pdf$/);
    expect(
      fs
        .readFileSync(await download.path())
        .subarray(0, 5)
        .toString(),
    ).toBe('%PDF-');
    const adaAgent = (await invitationsOf(app, built.envelopeId))[0]!.agentId;
    await expect
      .poll(async () => (await auditEvents(built.envelopeId)).filter((event) => event.type === 'artefact.downloaded').map((event) => event.actor))
      .toEqual([{ type: 'agent', id: adaAgent, name: 'Person ada' }]);

    const envelope = (await restClient(app, team.apiKey).get(`/envelopes/${built.envelopeId}?includeFields=true`)).body.payload;
    expect(envelope.envelope.status).toBe('finalized');
    const values = Object.fromEntries(envelope.fields.map((field: any) => [field.identifier, field.value]));
    expect(values.postcode).toEqual({ text: '75011' });
    expect(values.agree).toEqual({ checked: true });
    expect(values.plan).toEqual({ selected: 'yearly' });
    expect(values.terms).toEqual({ choice: 'accept' });
    expect(values.drawn).toEqual({ kind: 'drawn', image: expect.stringMatching(/^data:image\/png;base64,/) });
    expect(values.typed).toEqual({ kind: 'typed', text: 'Ada Augusta King-Noel', font: 'cursive' });
    expect(values.fixed).toEqual({ text: 'Şartlar v2' });
    expect(values.bio.image).toMatch(/^data:image\/png;base64,/);
    expect(values.bio.strokes.map((stroke: any[]) => stroke.length)).toEqual([4, 2]);
    expect(values.bio.strokes.flat().map((point: any) => point.p)).toEqual([0.2, 0.45, 0.7, 0.9, 0.3, 0.6]);
    expect(new Set(values.bio.strokes.flat().map((point: any) => point.pointerType))).toEqual(new Set(['pen']));
    // The simple signature's drawing was a mouse's; the biometric one a pen's: the evidence says which.
    const [first, second] = values.bio.strokes;
    expect(first[1].x - first[0].x).toBeCloseTo(40, 0);
    expect(second[0].t).toBeGreaterThanOrEqual(first[3].t);

    const events = await auditEvents(built.envelopeId);
    const completed = events.find((event) => event.type === 'recipient.completed');
    expect(completed.details.consent).toBe(STRINGS['en-US'].consent);
    const bioSummary = events
      .filter((event) => event.type === 'field.submitted')
      .flatMap((event) => event.details.fields)
      .find((field: any) => field.identifier === 'bio');
    expect(bioSummary.biometric).toEqual(expect.objectContaining({ strokeCount: 2, pointCount: 6, pressureCaptured: true }));
    expect(events.some((event) => event.type === 'envelope.finalized')).toBe(true);
    expect(problems).toEqual([]);
    await page.close();
  }, 180_000);

  it('speaks Turkish to a Turkish agent, declines with a reason and shows the declined screen', async () => {
    const built = await sentEnvelope([{ identifier: 'ayse', agents: [{ info: { name: 'Ayşe Yılmaz', email: 'ayse@example.com', locale: 'tr-TR' } }] }]);
    const token = await tokenFor(app, built.envelopeId, built.recipients.ayse);
    const page = await browser.newPage({ viewport: DESKTOP, locale: 'en-US' });
    const problems = watch(page);
    await openLink(page, token);
    await waitForScreen(page, 'signing');
    expect(await page.evaluate(() => document.documentElement.lang)).toBe('tr-TR');
    await expect.poll(() => page.locator('.signer').innerText()).toBe('Ayşe Yılmaz olarak imzalıyorsunuz');
    await dialogScreenshots(page, 'decline-dialog', async () => {
      await page.click('#decline');
      await page.fill('#decline-reason', 'Kira bedeli yanlış');
    });
    await page.selectOption('#locale', 'tr-TR');
    await page.click('#decline');
    await page.fill('#decline-reason', 'Kira bedeli yanlış');
    await page.click('#confirm-decline');
    await waitForScreen(page, 'declined');
    await expect.poll(() => page.locator('h1').innerText()).toBe(STRINGS['tr-TR'].declinedTitle);
    await screenshots(page, 'declined');
    const envelope = (await restClient(app, team.apiKey).get(`/envelopes/${built.envelopeId}`)).body.payload.envelope;
    expect(envelope.status).toBe('voided');
    expect(problems).toEqual([]);
    await page.close();
  }, 90_000);

  it('a later signer signs once invited; a signer who completed sees the done screen', async () => {
    const built = await sentEnvelope([
      { identifier: 'first', order: 1 },
      { identifier: 'second', order: 2 },
    ]);
    const firstToken = await tokenFor(app, built.envelopeId, built.recipients.first);
    expect((await signAndComplete(app, firstToken)).errors).toBeUndefined();
    const page = await browser.newPage({ viewport: PHONE, locale: 'tr-TR' });
    const problems = watch(page);
    await openLink(page, firstToken);
    await waitForScreen(page, 'done');
    // Picked from the browser's language when the sender gave none.
    await expect.poll(() => page.locator('h1').innerText()).toBe(STRINGS['tr-TR'].doneTitle);
    await screenshots(page, 'done');
    await openLink(page, await tokenFor(app, built.envelopeId, built.recipients.second));
    await waitForScreen(page, 'signing');
    await expect.poll(() => page.locator('#progress').innerText()).toBe(STRINGS['tr-TR'].progress(0, 1));
    expect(problems).toEqual([]);
    await page.close();
  }, 90_000);

  it('hosts two in-person signers on one device, with a hand-back screen between them', async () => {
    const built = await sentEnvelope([
      { identifier: 'host', type: 'host', order: 1 },
      { identifier: 'guest-one', type: 'in_person_signer', order: 1, hostedBy: 'host' },
      { identifier: 'guest-two', type: 'in_person_signer', order: 2, hostedBy: 'host' },
    ]);
    const hostToken = await tokenFor(app, built.envelopeId, built.recipients.host);
    const page = await browser.newPage({ viewport: PHONE, locale: 'en-US' });
    const problems = watch(page);
    // The host screen's module comes late, as on a slow line: `data-screen` must not say "host"
    // before the host screen is drawn (it once did, and the list below was read empty).
    await page.route('**/screens/host.js*', async (route) => {
      await new Promise((resolve) => setTimeout(resolve, 500));
      await route.continue();
    });
    await openLink(page, hostToken);
    await waitForScreen(page, 'host');
    // Only the signer whose turn it is can be handed the device.
    expect(await page.locator('[data-hosted]').evaluateAll((buttons) => buttons.map((button) => (button as HTMLElement).dataset.hosted))).toEqual([built.recipients['guest-one']]);
    await screenshots(page, 'host');

    for (const guest of ['guest-one', 'guest-two']) {
      await page.click(`[data-hosted="${built.recipients[guest]}"]`);
      await waitForScreen(page, 'signing');
      await expect.poll(() => page.locator('.signer').innerText()).toBe(STRINGS['en-US'].signingAs(`Person ${guest}`));
      await page.click(`[data-field="${guest}-signature"]`);
      await page.click('[role="tab"][data-mode="type"]');
      await page.fill('#typed-signature', `Guest ${guest}`);
      await page.click('#save-signature');
      await page.locator('dialog').waitFor({ state: 'detached' });
      await page.click('#finish');
      await page.click('#confirm-signing');
      await waitForScreen(page, 'hand-back');
      if (guest === 'guest-one') await screenshots(page, 'hand-back');
      await page.click('#back-to-host');
      await waitForScreen(page, guest === 'guest-one' ? 'host' : 'finalized');
    }

    const envelope = (await restClient(app, team.apiKey).get(`/envelopes/${built.envelopeId}?includeFields=true&includeRecipients=true`)).body.payload;
    expect(envelope.envelope.status).toBe('finalized');
    expect(Object.fromEntries(envelope.fields.map((field: any) => [field.identifier, field.value.text]))).toEqual({
      'guest-one-signature': 'Guest guest-one',
      'guest-two-signature': 'Guest guest-two',
    });
    expect((await auditEvents(built.envelopeId)).filter((event) => event.type === 'signing.hosted')).toHaveLength(2);
    expect(problems).toEqual([]);
    await page.close();
  }, 120_000);

  it('a delegator hands the role to another person, who is invited; the old link stops working', async () => {
    const built = await sentEnvelope([{ identifier: 'boss', type: 'delegator' }]);
    const token = await tokenFor(app, built.envelopeId, built.recipients.boss);
    const page = await browser.newPage({ viewport: PHONE, locale: 'tr-TR' });
    const problems = watch(page);
    await openLink(page, token);
    await waitForScreen(page, 'signing');
    await dialogScreenshots(page, 'delegate-dialog', async () => {
      await page.click('#delegate');
      await page.fill('#delegate-name', 'Zeynep Çelik');
      await page.fill('#delegate-email', 'zeynep@example.com');
    });
    // The person handed the role is invited in the page's language.
    await page.selectOption('#locale', 'tr-TR');
    await page.click('#delegate');
    await page.fill('#delegate-name', 'Zeynep Çelik');
    await page.fill('#delegate-email', 'zeynep@example.com');
    await page.click('#confirm-delegate');
    await waitForScreen(page, 'delegated');
    await screenshots(page, 'delegated');
    const invitations = await invitationsOf(app, built.envelopeId);
    expect(invitations.at(-1)!.to).toEqual(expect.objectContaining({ name: 'Zeynep Çelik', email: 'zeynep@example.com' }));
    // The old link no longer works: 410 (issue 24), and the page says so.
    await openLink(page, token, 410);
    await waitForScreen(page, 'invalid');
    await openLink(page, invitations.at(-1)!.token);
    await waitForScreen(page, 'signing');
    await expect.poll(() => page.locator('.signer').innerText()).toBe(STRINGS['tr-TR'].signingAs('Zeynep Çelik'));
    expect(problems).toEqual([]);
    await page.close();
  }, 90_000);

  it('has no serious accessibility violations (axe-core) while signing, in a dialog, and on the voided screen, which appears live when the sender voids', async () => {
    const axeSource = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
    const audit = async (page: Page) => {
      // Evaluated through the DevTools protocol: the page's own policy still allows no inline script.
      await page.evaluate(axeSource);
      const result = await page.evaluate(() => (window as any).axe.run(document, { resultTypes: ['violations'] }));
      return (result.violations as any[])
        .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
        .map((violation) => `${violation.id}: ${violation.nodes.map((node: any) => node.target.join(' ')).join(', ')}`);
    };
    const built = await sentEnvelope([
      {
        identifier: 'ada',
        fields: [
          { identifier: 'note', type: 'text', required: true },
          {
            identifier: 'plan',
            type: 'radio',
            config: {
              options: [
                { value: 'a', label: 'Seçenek A' },
                { value: 'b', label: 'Seçenek B' },
              ],
            },
          },
          { identifier: 'sig', type: 'simple_signature' },
        ],
      },
    ]);
    const token = await tokenFor(app, built.envelopeId, built.recipients.ada);
    const page = await browser.newPage({ viewport: PHONE, locale: 'tr-TR' });
    await openLink(page, token);
    await waitForScreen(page, 'signing');
    await page.waitForFunction(() => document.body.dataset.pagesDrawn === 'true', undefined, { timeout: 20_000 });
    expect(await audit(page)).toEqual([]);
    await page.click('[data-field="sig"]');
    expect(await audit(page)).toEqual([]);
    await page.keyboard.press('Escape');
    await page.locator('dialog').waitFor({ state: 'detached' });
    // Keyboard: the focus returns to the field; Tab reaches the fields in reading order.
    await expect.poll(() => page.evaluate(() => (document.activeElement as HTMLElement | null)?.dataset.field)).toBe('sig');

    // The sender voids the envelope while the page is open: the page shows it live (signingSessionChanged).
    await untilWatching(app, 1);
    const voided = await restClient(app, team.apiKey).post(`/envelopes/${built.envelopeId}/void`, { reason: 'Yanlış belge' });
    expect(voided.status).toBe(200);
    await waitForScreen(page, 'voided', 5_000);
    await expect.poll(() => page.locator('h1').innerText()).toBe(STRINGS['tr-TR'].voidedTitle);
    expect(await audit(page)).toEqual([]);
    await screenshots(page, 'voided');
    await page.close();
  }, 90_000);

  it('records the consent text with the completion; an over-long consent is refused by name and completes nothing', async () => {
    const built = await sentEnvelope([{ identifier: 'ada' }]);
    const token = await tokenFor(app, built.envelopeId, built.recipients.ada);
    const client = signingClient(app, token);
    const fieldId = built.fields['ada-signature'];
    const saved = await client(SUBMIT_WITH_CONSENT, { values: [{ fieldId, value: typedSignature }], complete: false });
    expect(saved.errors).toBeUndefined();
    const tooLong = await client(SUBMIT_WITH_CONSENT, { values: [], complete: true, consent: 'x'.repeat(2001) });
    expect(firstErrorName(tooLong)).toBe('Request.Invalid');
    expect(tooLong.errors![0].extensions.context.issues).toEqual([expect.objectContaining({ path: 'consent' })]);
    expect((await client(SESSION_QUERY)).data.signingSession.recipient.completedAt).toBeNull();
    const done = await client(SUBMIT_WITH_CONSENT, { values: [], complete: true, consent: 'Ben imzalıyorum.' });
    expect(done.errors).toBeUndefined();
    const completed = (await auditEvents(built.envelopeId)).find((event) => event.type === 'recipient.completed');
    expect(completed.details.consent).toBe('Ben imzalıyorum.');
  });
  it('a host waiting for the next hosted signer’s turn sees it come live, without a reload, when the signer in between completes', async () => {
    // A plain signer has no link before its turn (links are made when a turn comes), so the page
    // that waits for a turn is the host's: guest-two signs after bob, who signs after guest-one.
    const built = await sentEnvelope([
      { identifier: 'host', type: 'host', order: 1 },
      { identifier: 'guest-one', type: 'in_person_signer', order: 1, hostedBy: 'host' },
      { identifier: 'bob', order: 2 },
      { identifier: 'guest-two', type: 'in_person_signer', order: 3, hostedBy: 'host' },
    ]);
    const hostToken = await tokenFor(app, built.envelopeId, built.recipients.host);
    const hostClient = signingClient(app, hostToken);
    const hosted = await hostClient(`mutation($recipientId: ID!) { startHostedSigning(recipientId: $recipientId) { token } }`, { recipientId: built.recipients['guest-one'] });
    expect((await signAndComplete(app, hosted.data.startHostedSigning.token)).errors).toBeUndefined();

    const page = await browser.newPage({ viewport: PHONE, locale: 'en-US' });
    const problems = watch(page);
    await openLink(page, hostToken);
    await waitForScreen(page, 'host');
    expect(await page.locator('[data-hosted]').count()).toBe(0);
    await expect.poll(() => page.locator('.state-host').innerText()).toContain(STRINGS['en-US'].notYourTurnText);
    await screenshots(page, 'host-waiting');
    await page.evaluate(() => ((window as any).sameDocument = true));
    await untilWatching(app, 1);

    expect((await signAndComplete(app, await tokenFor(app, built.envelopeId, built.recipients.bob))).errors).toBeUndefined();
    await page.locator(`[data-hosted="${built.recipients['guest-two']}"]`).waitFor({ timeout: 20_000 });
    expect(await page.evaluate(() => (window as any).sameDocument)).toBe(true);
    await page.click(`[data-hosted="${built.recipients['guest-two']}"]`);
    await waitForScreen(page, 'signing');
    expect(problems).toEqual([]);
    await page.close();
  }, 90_000);

  it('tells a refused change in the page’s language (tr-TR), and shows the expired screen', async () => {
    // Ada and Bob sign side by side; Ada's role is completed elsewhere (another device) while her page is open.
    const built = await sentEnvelope([{ identifier: 'ada' }, { identifier: 'bob' }]);
    const token = await tokenFor(app, built.envelopeId, built.recipients.ada);
    const page = await browser.newPage({ viewport: PHONE, locale: 'tr-TR' });
    const problems = watch(page);
    await openLink(page, token);
    await waitForScreen(page, 'signing');
    expect((await signAndComplete(app, token)).errors).toBeUndefined();
    await page.click('[data-field="ada-signature"]');
    await page.click('[role="tab"][data-mode="type"]');
    await page.fill('#typed-signature', 'Ada Yılmaz');
    await page.click('#save-signature');
    await expect.poll(() => page.locator('dialog .error').innerText()).toBe(STRINGS['tr-TR'].errors['Signing.RecipientCompleted']);
    await page.screenshot({ path: screenshotPath('signing-page-refused-tr-TR-phone.png') });
    await page.keyboard.press('Escape');

    // An envelope past its expiry: the expired screen, even before the sweep closes it.
    const expiring = await buildEnvelope(app, team.apiKey, { name: 'Kısa süreli / Short-lived', expirationPeriodDays: 1, recipients: [{ identifier: 'eda' }] });
    expect((await restClient(app, team.apiKey).put(`/envelopes/${expiring.envelopeId}/send`)).status).toBe(200);
    const expiringToken = await tokenFor(app, expiring.envelopeId, expiring.recipients.eda);
    app.dependencies.clock.advance(2 * 24 * 3600);
    // A dead link answers 410 (issue 24), and its page still shows which screen it is.
    await openLink(page, expiringToken, 410);
    await waitForScreen(page, 'expired');
    await expect.poll(() => page.locator('h1').innerText()).toBe(STRINGS['tr-TR'].expiredTitle);
    await screenshots(page, 'expired');
    expect(problems).toEqual([]);
    await page.close();
  }, 90_000);

  it('shows an approver the documents with labelled Approve and Reject buttons, approves by keyboard, and tells a left-over approver it is no longer needed (410)', async () => {
    const axeSource = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
    const board = Array.from({ length: 3 }, (_, index) => ({ info: { name: `Board member ${index}`, email: `board${index}@example.com` } }));
    const built = await sentEnvelope([
      { identifier: 'board', type: 'approver', order: 1, quorum: 2, agents: board },
      { identifier: 'ceo', order: 2 },
    ]);
    const [first, second, third] = await invitationsOf(app, built.envelopeId);
    const page = await browser.newPage({ viewport: DESKTOP, locale: 'en-US' });
    const problems = watch(page);
    await openLink(page, first.token);
    await waitForScreen(page, 'signing');
    await page.waitForFunction(() => document.body.dataset.pagesDrawn === 'true', undefined, { timeout: 20_000 });
    await expect.poll(() => page.locator('.signer').innerText()).toBe('Approving as Board member 0');
    expect(await page.locator('.page').count()).toBe(2);
    // Only approve and reject: nothing to fill in, no finish.
    expect(await page.locator('.toolbar button').allInnerTexts()).toEqual([STRINGS['en-US'].reject, STRINGS['en-US'].approve]);
    expect(await page.locator('#finish').count()).toBe(0);
    await page.evaluate(axeSource);
    const violations = await page.evaluate(() => (window as any).axe.run(document, { resultTypes: ['violations'] }));
    expect((violations.violations as any[]).filter((violation) => violation.impact === 'serious' || violation.impact === 'critical').map((violation) => violation.id)).toEqual([]);
    await screenshots(page, 'approver');
    await dialogScreenshots(page, 'approve-dialog', async () => {
      await page.click('#approve');
    });

    // By keyboard: focus Approve, Enter opens the dialog with the comment focused, Tab reaches Approve in it.
    await page.focus('#approve');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.evaluate(() => document.activeElement?.id)).toBe('approve-comment');
    await page.keyboard.type('Budget checked');
    await page.focus('#confirm-approve');
    await page.keyboard.press('Enter');
    await waitForScreen(page, 'approved');
    await expect.poll(() => page.locator('h1').innerText()).toBe(STRINGS['en-US'].approvedTitle);
    await expect.poll(() => page.locator('.state p').last().innerText()).toContain('1 of the 2 approvals');
    const approved = (await auditEvents(built.envelopeId)).find((event) => event.type === 'recipient.approved');
    expect(approved.details).toMatchObject({ agentId: first.agentId, comment: 'Budget checked' });

    // The second approval makes the quorum; the third person's link now says it is no longer needed.
    const second_ = await signingClient(app, second.token)('mutation { approveSigning { recipient { completedAt } } }');
    expect(second_.errors).toBeUndefined();
    // The approver who made the quorum sees it was the last one needed (not "you have signed").
    const maker = await browser.newPage({ viewport: PHONE, locale: 'en-US' });
    await openLink(maker, second.token);
    await waitForScreen(maker, 'approved');
    await expect.poll(() => maker.locator('.state p').last().innerText()).toBe(STRINGS['en-US'].approvedAllText);
    await maker.close();
    const late = await browser.newPage({ viewport: PHONE, locale: 'en-US' });
    await openLink(late, third.token, 410);
    await expect.poll(() => late.locator('h1').innerText()).toBe(STRINGS['en-US'].roleCompletedTitle);
    await late.screenshot({ path: screenshotPath('signing-page-role-completed-en-US-phone.png'), fullPage: true });
    expect(problems).toEqual([]);
    await late.close();
    await page.close();
  }, 120_000);

  it('an approver rejects with a reason: the envelope is declined for everyone', async () => {
    const built = await sentEnvelope([
      { identifier: 'board', type: 'approver', order: 1, agents: [{ info: { name: 'Ayşe Yılmaz', email: 'ayse@example.com', locale: 'tr-TR' } }] },
      { identifier: 'ceo', order: 2 },
    ]);
    const [invitation] = await invitationsOf(app, built.envelopeId);
    const page = await browser.newPage({ viewport: PHONE, locale: 'en-US' });
    const problems = watch(page);
    await openLink(page, invitation.token);
    await waitForScreen(page, 'signing');
    await expect.poll(() => page.locator('#decline').innerText()).toBe(STRINGS['tr-TR'].reject);
    await page.click('#decline');
    await expect.poll(() => page.locator('dialog h2').innerText()).toBe(STRINGS['tr-TR'].rejectTitle);
    await page.fill('#decline-reason', 'Bütçe aşılıyor');
    await page.click('#confirm-decline');
    await waitForScreen(page, 'declined');
    expect((await restClient(app, team.apiKey).get(`/envelopes/${built.envelopeId}`)).body.payload.envelope.status).toBe('voided');
    expect(problems).toEqual([]);
    await page.close();
  }, 90_000);
});
