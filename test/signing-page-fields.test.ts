/**
 * The signing page with issue 32's field types, in Chromium (phone and desktop): a control for each
 * type the signer fills, operable by keyboard and labelled; the service's fields shown as filled for
 * the signer; a conditional section appearing as its checkbox is ticked; a formula's result shown as
 * the inputs change; axe-core finds no serious violation with every type on the page or in a dialog.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import type { Browser, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { STRINGS } from '../src/signing-page/strings.js';
import { makePdf } from './fixtures/pdfs.ts';
import { screenshotPath, withAppBrowserAndTeam } from './helpers/browser.ts';
import { restClient, type SeededTeam, type TestApp } from './helpers/harness.ts';
import { png, pngClaiming } from './helpers/images.ts';
import { buildEnvelope, SUBMIT_MUTATION, signingClient, tokenFor, typedSignature } from './helpers/signing.ts';

let app: TestApp;
let browser: Browser;
let team: SeededTeam;
withAppBrowserAndTeam((started) => ({ app, browser, team } = started));

const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1280, height: 900 };
const axeSource = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** Serious and critical axe-core violations on the page as it stands. */
async function audit(page: Page): Promise<string[]> {
  // Evaluated through the DevTools protocol: the page's own policy still allows no inline script.
  await page.evaluate(axeSource);
  const result = await page.evaluate(() => (window as any).axe.run(document, { resultTypes: ['violations'] }));
  return (result.violations as any[])
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map((violation) => `${violation.id}: ${violation.nodes.map((node: any) => node.target.join(' ')).join(', ')}`);
}

const row = (index: number) => ({ x: 40, y: 30 + index * 36, width: 160, height: 28 });

describe('the signing page with the new field types', () => {
  it('fills each type by keyboard, shows a section when its box is ticked and the formula as its inputs change, with no serious axe violation', async () => {
    const built = await buildEnvelope(app, team.apiKey, {
      recipients: [
        {
          identifier: 'ada',
          agents: [{ info: { name: 'Ada Lovelace', email: 'ada@example.com' } }],
          fields: [
            { identifier: 'for-company', type: 'checkbox', required: false, view: { x: 40, y: 30, width: 20, height: 20 } },
            { identifier: 'company', type: 'text', required: true, visibleWhen: { all: [{ field: 'for-company', is: 'checked' }] }, view: row(1) },
            { identifier: 'quantity', type: 'number', required: true, config: { min: 1 }, view: row(2) },
            { identifier: 'price', type: 'number', readonly: true, required: false, config: { decimals: 2, prefix: '€ ' }, value: { number: 19.99 }, view: row(3) },
            {
              identifier: 'vat',
              type: 'dropdown',
              required: true,
              config: {
                options: [
                  { value: '0', label: 'No VAT' },
                  { value: '20', label: 'VAT 20%' },
                ],
              },
              view: row(4),
            },
            { identifier: 'total', type: 'formula', required: true, config: { expression: 'quantity * price * (1 + vat / 100)', prefix: '€ ' }, view: row(5) },
            { identifier: 'start', type: 'date', required: true, config: { format: 'DD.MM.YYYY', min: '2027-01-01' }, view: row(6) },
            { identifier: 'initials', type: 'initials', required: true, view: { x: 40, y: 30 + 7 * 36, width: 60, height: 28 } },
            { identifier: 'signed-on', type: 'date_signed', required: false, view: row(8) },
            { identifier: 'name', type: 'full_name', required: false, view: row(9) },
            { identifier: 'email', type: 'email', required: false, view: row(10) },
            { identifier: 'signature', type: 'simple_signature', required: true, view: { x: 300, y: 30, width: 200, height: 40 } },
          ],
        },
      ],
    });
    expect((await restClient(app, team.apiKey).put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
    const token = await tokenFor(app, built.envelopeId, built.recipients.ada);
    const page = await browser.newPage({ viewport: PHONE, locale: 'en-US' });
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    expect((await page.goto(`${app.url}/sign/${token}`))?.status()).toBe(200);
    await page.waitForFunction(() => document.body.dataset.screen === 'signing', undefined, { timeout: 20_000 });
    await page.waitForFunction(() => document.body.dataset.pagesDrawn === 'true', undefined, { timeout: 20_000 });
    const t = STRINGS['en-US'];

    // Hidden until its box is ticked; the formula and the service's fields are the signer's to read, not fill.
    await expect.poll(() => page.locator('[data-box="company"]').count()).toBe(0);
    await expect.poll(() => page.locator('#progress').innerText()).toBe(t.progress(0, 5));
    await expect.poll(() => page.locator('[data-box="signed-on"] .field-value').innerText()).toBe(t.fieldHint.date_signed);
    expect(await page.locator('[data-field="signed-on"]').getAttribute('role')).toBe('note');
    expect(await page.locator('[data-field="total"]').getAttribute('aria-label')).toContain(t.filledByService);
    await expect.poll(() => page.locator('[data-box="price"] .field-value').innerText()).toBe('€ 19.99');
    expect(await audit(page)).toEqual([]);

    /** Opens a field's editor from the keyboard: focus its control, press Enter. */
    const openByKeyboard = async (identifier: string) => {
      await page.locator(`[data-field="${identifier}"]`).focus();
      await page.keyboard.press('Enter');
      await page.locator('dialog').waitFor();
    };
    const closed = () => page.locator('dialog').waitFor({ state: 'detached' });

    // A number: refused here first when it has decimals the field does not take, then saved with Enter.
    await openByKeyboard('quantity');
    expect(await page.locator('#field-input').getAttribute('aria-labelledby')).toBe('dialog-title');
    expect(await audit(page)).toEqual([]);
    await page.keyboard.type('2.5');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.locator('dialog .error').innerText()).toBe(t.tooManyDecimals(0));
    await page.fill('#field-input', '3');
    await page.keyboard.press('Enter');
    await closed();
    await expect.poll(() => page.locator('[data-box="quantity"] .field-value').innerText()).toBe('3');
    // The total shows once every input has a value: VAT is still empty.
    await expect.poll(() => page.locator('[data-box="total"] .field-value').innerText()).toBe(t.fieldHint.formula);

    // A drop-down, chosen with the keyboard.
    await openByKeyboard('vat');
    expect(await audit(page)).toEqual([]);
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('ArrowDown');
    await expect.poll(() => page.locator('#field-input').inputValue()).toBe('20');
    await page.keyboard.press('Enter');
    await closed();
    await expect.poll(() => page.locator('[data-box="vat"] .field-value').innerText()).toBe('VAT 20%');
    await expect.poll(() => page.locator('[data-box="total"] .field-value').innerText()).toBe('€ 71.96');

    // The formula follows its inputs.
    await openByKeyboard('quantity');
    await page.fill('#field-input', '5');
    await page.keyboard.press('Enter');
    await closed();
    await expect.poll(() => page.locator('[data-box="total"] .field-value').innerText()).toBe('€ 119.94');

    // A date, checked against the field's range here first, shown in the field's format.
    await openByKeyboard('start');
    expect(await audit(page)).toEqual([]);
    await page.fill('#field-input', '2026-12-31');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.locator('dialog .error').innerText()).toBe(t.atLeast('2027-01-01'));
    await page.fill('#field-input', '2027-03-04');
    await page.keyboard.press('Enter');
    await closed();
    await expect.poll(() => page.locator('[data-box="start"] .field-value').innerText()).toBe('04.03.2027');

    // Initials: typed, offered as the signer's initials.
    await openByKeyboard('initials');
    await page.click('[role="tab"][data-mode="type"]');
    expect(await page.locator('#typed-signature').inputValue()).toBe('AL');
    expect(await page.locator('#typed-signature').getAttribute('maxlength')).toBe('8');
    await page.click('#save-signature');
    await closed();
    await expect.poll(() => page.locator('[data-box="initials"] .field-value').innerText()).toBe('AL');

    // Ticking the box shows the company section, which is required from then on.
    await page.locator('[data-field="for-company"]').focus();
    await page.keyboard.press('Space');
    await expect.poll(() => page.locator('[data-box="company"]').count()).toBe(1);
    await expect.poll(() => page.locator('#progress').innerText()).toBe(t.progress(4, 6));
    await page.locator('[data-field="for-company"]').focus();
    await page.keyboard.press('Space');
    await expect.poll(() => page.locator('[data-box="company"]').count()).toBe(0);
    await expect.poll(() => page.locator('#progress').innerText()).toBe(t.progress(4, 5));

    // Every type on the page, at a phone's and a desktop's width.
    for (const [label, size] of [
      ['phone', PHONE],
      ['desktop', DESKTOP],
    ] as const) {
      await page.setViewportSize(size);
      await page.waitForFunction(() => document.body.dataset.pagesDrawn === 'true', undefined, { timeout: 20_000 });
      expect(await audit(page), label).toEqual([]);
      await page.screenshot({ path: screenshotPath(`signing-page-new-types-${label}.png`), fullPage: true });
    }
    expect(errors).toEqual([]);
    await page.close();
  }, 120_000);

  it('a later signer does not see an earlier signer’s field that its conditions hid', async () => {
    const built = await buildEnvelope(app, team.apiKey, {
      recipients: [
        {
          identifier: 'buyer',
          order: 1,
          fields: [
            { identifier: 'buyer-signature', required: true, view: { x: 300, y: 30, width: 200, height: 40 } },
            { identifier: 'no-discount', type: 'checkbox', required: false, view: { x: 40, y: 30, width: 20, height: 20 } },
            { identifier: 'discount', type: 'text', readonly: true, value: { text: 'Tenpercent' }, visibleWhen: { all: [{ field: 'no-discount', is: 'unchecked' }] }, view: row(1) },
          ],
        },
        { identifier: 'seller', order: 2, fields: [{ identifier: 'seller-signature', required: true, view: { x: 300, y: 100, width: 200, height: 40 } }] },
      ],
    });
    expect((await restClient(app, team.apiKey).put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
    const buyer = signingClient(app, await tokenFor(app, built.envelopeId, built.recipients.buyer));
    const done = await buyer(SUBMIT_MUTATION, {
      values: [
        { fieldId: built.fields['buyer-signature'], value: typedSignature },
        { fieldId: built.fields['no-discount'], value: { checked: true } },
      ],
      complete: true,
    });
    expect(done.errors, JSON.stringify(done.errors)).toBeUndefined();
    const page = await browser.newPage({ viewport: DESKTOP, locale: 'en-US' });
    await page.goto(`${app.url}/sign/${await tokenFor(app, built.envelopeId, built.recipients.seller)}`);
    await page.waitForFunction(() => document.body.dataset.screen === 'signing', undefined, { timeout: 20_000 });
    await page.waitForFunction(() => document.body.dataset.pagesDrawn === 'true', undefined, { timeout: 20_000 });
    await expect.poll(() => page.locator('[data-earlier-field="no-discount"]').count()).toBe(1);
    expect(await page.locator('[data-earlier-field="discount"]').count()).toBe(0);
    expect(await audit(page)).toEqual([]);
    await page.close();
  }, 60_000);

  it('uploads an attachment from a labelled, keyboard-reached file input with progress, lists it, and shows the service’s refusal of a file by its description', async () => {
    const built = await buildEnvelope(app, team.apiKey, {
      recipients: [
        {
          identifier: 'ada',
          agents: [{ info: { name: 'Ada Lovelace', email: 'ada@example.com' } }],
          fields: [
            { identifier: 'signature', type: 'simple_signature', required: true, view: { x: 300, y: 30, width: 200, height: 40 } },
            { identifier: 'photos', type: 'attachment', required: true, config: { accept: ['image/png', 'image/jpeg'], maxFiles: 2 }, view: row(1) },
          ],
        },
      ],
    });
    expect((await restClient(app, team.apiKey).put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
    const token = await tokenFor(app, built.envelopeId, built.recipients.ada);
    const t = STRINGS['en-US'];
    for (const viewport of [PHONE, DESKTOP]) {
      const page = await browser.newPage({ viewport, locale: 'en-US' });
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(error.message));
      expect((await page.goto(`${app.url}/sign/${token}`))?.status()).toBe(200);
      await page.waitForFunction(() => document.body.dataset.pagesDrawn === 'true', undefined, { timeout: 20_000 });
      await page.locator('[data-field="photos"]').focus();
      await page.keyboard.press('Enter');
      await page.locator('dialog').waitFor();
      // The file input has the focus and its label; the dialog passes axe.
      expect(await page.evaluate(() => document.activeElement?.id)).toBe('field-input');
      expect(await page.locator('label[for="field-input"]').innerText()).toBe(t.attachmentPick);
      expect(await audit(page)).toEqual([]);
      if (viewport === DESKTOP) {
        // Uploaded on the phone: listed, and its place is one of the two.
        await expect.poll(() => page.locator('.attachment-list li').allInnerTexts()).toEqual([expect.stringContaining('photo.png')]);
        await page.keyboard.press('Escape');
        await page.close();
        continue;
      }
      // Progress is shown while the bytes go (recorded as the bar changes).
      await page.evaluate(() => {
        const seen: string[] = [];
        (window as any).progressSeen = seen;
        new MutationObserver(() => {
          const bar = document.querySelector('#attachment-progress') as HTMLProgressElement | null;
          if (bar && !bar.hidden) seen.push(String(bar.value));
        }).observe(document.body, { subtree: true, attributes: true, attributeFilter: ['hidden', 'value'] });
      });
      const image = png(200, 120);
      await page.locator('#field-input').setInputFiles({ name: 'photo.png', mimeType: 'image/png', buffer: image });
      await expect.poll(() => page.locator('.attachment-list li').allInnerTexts()).toEqual([expect.stringContaining('photo.png')]);
      expect(((await page.evaluate(() => (window as any).progressSeen)) as string[]).length).toBeGreaterThan(0);
      await expect.poll(() => page.locator('[data-box="photos"] .field-value').innerText()).toBe('photo.png');
      // A PDF named like a picture: refused by its bytes, the service's description shown.
      await page.locator('#field-input').setInputFiles({ name: 'holiday.png', mimeType: 'image/png', buffer: Buffer.from(await makePdf({ pages: 1 })) });
      await expect.poll(() => page.locator('dialog .error').innerText()).toContain(t.attachmentRefused);
      expect(await page.locator('dialog .error').innerText()).toContain('application/pdf');
      expect(await page.locator('dialog .error').getAttribute('role')).toBe('alert');
      // A picture claiming 100,000 × 100,000 pixels: refused from its header, said as the service says it.
      await page.locator('#field-input').setInputFiles({ name: 'huge.png', mimeType: 'image/png', buffer: pngClaiming(100_000, 100_000) });
      await expect.poll(() => page.locator('dialog .error').innerText()).toContain('100000 × 100000 pixels');
      expect(await audit(page)).toEqual([]);
      expect(await page.locator('.attachment-list li').count()).toBe(1);
      await page.screenshot({ path: screenshotPath('signing-page-attachment-phone.png'), fullPage: true });
      await page.getByRole('button', { name: t.attachmentDone }).click();
      await page.locator('dialog').waitFor({ state: 'detached' });
      expect(await audit(page)).toEqual([]);
      expect(errors).toEqual([]);
      await page.close();
    }
    const session = await signingClient(app, token)('{ signingSession { fields { identifier value } } }');
    expect(session.data.signingSession.fields.find((field: { identifier: string }) => field.identifier === 'photos').value.files).toMatchObject([
      { name: 'photo.png', contentType: 'image/png' },
    ]);
  }, 120_000);
});
