/**
 * The signing page when the sender corrects the envelope while it is open (issue 33, item 2), in
 * Chromium: a value saved on the older revision is refused by the service (Signing.EnvelopeChanged);
 * the page reloads the new revision, says so, and saves again what the signer typed into a field
 * that still exists; what was typed into a field the correction removed goes with it. The live
 * stream is held back here so the save really reaches the service on the older revision.
 */
import type { Browser, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { STRINGS } from '../src/signing-page/strings.js';
import { withAppBrowserAndTeam } from './helpers/browser.ts';
import { restClient, type SeededTeam, type TestApp } from './helpers/harness.ts';
import { buildEnvelope, tokenFor } from './helpers/signing.ts';

let app: TestApp;
let browser: Browser;
let team: SeededTeam;
withAppBrowserAndTeam((started) => ({ app, browser, team } = started));

const row = (index: number) => ({ x: 40, y: 30 + index * 40, width: 180, height: 28 });

async function storedValue(fieldId: string): Promise<unknown> {
  const [row] = await app.orm.em.fork().execute<{ value: unknown }[]>('select value from field where id = ?', [fieldId]);
  return row?.value ?? null;
}

async function typeInto(page: Page, identifier: string, text: string) {
  await page.locator(`[data-field="${identifier}"]`).click();
  await page.locator('dialog #field-input').waitFor();
  await page.fill('#field-input', text);
}

describe('the signing page and a correction', () => {
  it('keeps what the signer typed into fields that still exist when a save meets a newer revision, and says the envelope changed', async () => {
    const built = await buildEnvelope(app, team.apiKey, {
      recipients: [
        {
          identifier: 'ada',
          agents: [{ info: { name: 'Ada Lovelace', email: 'ada@example.com' } }],
          fields: [
            { identifier: 'company', type: 'text', required: true, view: row(0) },
            { identifier: 'note', type: 'text', required: false, view: row(1) },
            { identifier: 'signature', type: 'simple_signature', required: true, view: { x: 300, y: 30, width: 200, height: 40 } },
          ],
        },
      ],
    });
    const rest = restClient(app, team.apiKey);
    expect((await rest.put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
    const token = await tokenFor(app, built.envelopeId, built.recipients.ada);
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 }, locale: 'en-US' });
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    // The live stream (signingSessionChanged) is held open and silent: the page learns of the
    // correction only from the service's refusal of its save.
    await page.route('**/graphql', (route) => {
      if ((route.request().headers().accept ?? '').includes('text/event-stream')) return;
      return route.continue();
    });
    expect((await page.goto(`${app.url}/sign/${token}`))?.status()).toBe(200);
    await page.waitForFunction(() => document.body.dataset.screen === 'signing', undefined, { timeout: 20_000 });
    const t = STRINGS['en-US'];
    expect(await page.locator('#envelope-changed').count()).toBe(0);

    // Typed on revision 0; the sender corrects the note's label (revision 1) before it is saved.
    await typeInto(page, 'company', 'ACME Ltd');
    expect((await rest.patch(`/envelopes/${built.envelopeId}/fields/${built.fields.note}`, { field: { label: 'Anything to add?' } })).status).toBe(200);
    await page.keyboard.press('Enter');
    await page.locator('dialog').waitFor({ state: 'detached' });
    await expect.poll(() => page.locator('#envelope-changed').innerText()).toBe(t.envelopeChanged);
    await expect.poll(() => page.locator('[data-box="company"] .field-value').innerText()).toBe('ACME Ltd');
    await expect.poll(() => storedValue(built.fields.company)).toEqual({ text: 'ACME Ltd' });
    expect(await page.locator('[data-field="note"]').getAttribute('aria-label')).toContain('Anything to add?');

    // Typed into the note; the sender removes the note (revision 2): that value goes with its field.
    await typeInto(page, 'note', 'Gone with its field');
    expect((await rest.delete(`/envelopes/${built.envelopeId}/fields/${built.fields.note}`)).status).toBe(200);
    await page.keyboard.press('Enter');
    await page.locator('dialog').waitFor({ state: 'detached' });
    await expect.poll(() => page.locator('[data-box="note"]').count()).toBe(0);
    await expect.poll(() => page.locator('[data-box="company"] .field-value').innerText()).toBe('ACME Ltd');
    expect(await page.locator('#envelope-changed').isVisible()).toBe(true);
    // The page now works on revision 2: the next save goes through at once.
    await typeInto(page, 'company', 'ACME Limited');
    await page.keyboard.press('Enter');
    await page.locator('dialog').waitFor({ state: 'detached' });
    await expect.poll(() => storedValue(built.fields.company)).toEqual({ text: 'ACME Limited' });
    expect((await rest.get(`/envelopes/${built.envelopeId}`)).body.payload.envelope.revision).toBe(2);
    expect(errors).toEqual([]);
    await page.close();
  });
});
