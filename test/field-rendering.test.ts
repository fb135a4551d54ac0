/**
 * The field types of issue 32 drawn into the sealed PDF (docs/artefacts.md): each value at its
 * views as a person reads it (dates in their format, numbers with decimals, prefix and suffix, a
 * dropdown's label, the service's date, name and email, a formula's result, initials like a
 * signature), text never below 8 pt, never outside its box and never cut (a value that cannot fit
 * is refused, Signing.ValueDoesNotFit and Request.Invalid), a hidden field not drawn; read back with
 * pdftotext, the seal checked with pdfsig.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { firstErrorName, graphqlClient, restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { pdfsig, renderPageGrey, wordBoxes } from './helpers/pdf-tools.ts';
import { buildEnvelope, SUBMIT_MUTATION, signingClient, tokenFor, typedSignature } from './helpers/signing.ts';

let app: TestApp;
let team: SeededTeam;
let directory: string;
beforeAll(async () => {
  app = await startTestApp();
  team = await seedTeam(app);
  directory = fs.mkdtempSync(path.join(os.tmpdir(), 'field-rendering-'));
});
afterAll(async () => {
  fs.rmSync(directory, { recursive: true, force: true });
  await app.close();
});

const LONG_NAME = 'Augusta Ada King Countess of Lovelace and Byron of Marylebone';
const box = (x: number, y: number, width = 200, height = 30) => ({ x, y, width, height });

describe('the new field types in the sealed PDF', () => {
  it('draws each value at its view as it reads, never below 8 pt nor outside its box, leaves hidden fields out, and the seal holds', async () => {
    const built = await buildEnvelope(app, team.apiKey, {
      recipients: [
        {
          identifier: 'buyer',
          agents: [{ info: { name: LONG_NAME, email: 'ada@example.com' } }],
          fields: [
            { identifier: 'signature', required: true, view: box(300, 700, 200, 40) },
            { identifier: 'start', type: 'date', required: true, config: { format: 'D MMMM YYYY' }, view: box(40, 40) },
            { identifier: 'quantity', type: 'number', required: true, view: box(40, 80) },
            { identifier: 'price', type: 'number', readonly: true, required: false, config: { decimals: 2, prefix: '€ ' }, value: { number: 1234.5 }, view: box(40, 120) },
            {
              identifier: 'plan',
              type: 'dropdown',
              required: true,
              config: {
                options: [
                  { value: 'm', label: 'Monthly plan' },
                  { value: 'y', label: 'Yearly plan' },
                ],
              },
              view: box(40, 160),
            },
            { identifier: 'total', type: 'formula', required: true, config: { expression: 'quantity * price', suffix: ' EUR' }, view: box(40, 200) },
            { identifier: 'signed-on', type: 'date_signed', required: false, config: { format: 'DD.MM.YYYY' }, view: box(40, 240) },
            { identifier: 'name', type: 'full_name', required: false, view: box(40, 280, 150, 40) },
            { identifier: 'email', type: 'email', required: false, view: box(40, 340) },
            // A text value wider than its box: wrapped inside it, whole, at 8 pt or more (it used to be clipped).
            { identifier: 'note', type: 'text', required: true, view: box(40, 500, 120, 40) },
            { identifier: 'initials', type: 'initials', required: true, view: box(500, 40, 50, 24) },
            { identifier: 'hide-extra', type: 'checkbox', required: false, view: box(40, 380, 20, 20) },
            {
              identifier: 'extra',
              type: 'text',
              readonly: true,
              required: false,
              value: { text: 'Hiddenclause' },
              visibleWhen: { all: [{ field: 'hide-extra', is: 'unchecked' }] },
              view: box(40, 420),
            },
            {
              identifier: 'extra-fee',
              type: 'number',
              readonly: true,
              required: false,
              value: { number: 987654 },
              visibleWhen: { all: [{ field: 'hide-extra', is: 'unchecked' }] },
              view: box(40, 460),
            },
          ],
        },
      ],
    });
    expect((await restClient(app, team.apiKey).put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
    const client = signingClient(app, await tokenFor(app, built.envelopeId, built.recipients.buyer));
    const completed = await client(SUBMIT_MUTATION, {
      complete: true,
      values: [
        { fieldId: built.fields.signature, value: typedSignature },
        { fieldId: built.fields.start, value: { date: '2027-03-04' } },
        { fieldId: built.fields.quantity, value: { number: 3 } },
        { fieldId: built.fields.plan, value: { selected: 'y' } },
        { fieldId: built.fields.initials, value: { kind: 'typed', text: 'AKL' } },
        { fieldId: built.fields['hide-extra'], value: { checked: true } },
        { fieldId: built.fields.note, value: { text: 'Deliver to the loading dock behind building C' } },
      ],
    });
    expect(completed.errors, JSON.stringify(completed.errors)).toBeUndefined();
    const completedAt = new Date(completed.data.submitSigning.recipient.completedAt);
    const response = await fetch(`${app.url}/api/v1/key/envelopes/${built.envelopeId}/documents/${built.documentId}/pdf`, { headers: { 'x-service-api-key': team.apiKey } });
    expect(response.status).toBe(200);
    const file = path.join(directory, 'sealed.pdf');
    fs.writeFileSync(file, Buffer.from(await response.arrayBuffer()));

    const report = pdfsig(file);
    expect(report).toContain('Signature Validation: Signature is Valid.');
    expect(report).toContain('Total document signed');

    const words = wordBoxes(file)[0]!;
    /** The words drawn inside a view's box (with a point of tolerance), in reading order. */
    const inBox = (view: { x: number; y: number; width: number; height: number }) =>
      words
        .filter((word) => word.xMin >= view.x - 1 && word.xMax <= view.x + view.width + 1 && word.yMin >= view.y - 1 && word.yMax <= view.y + view.height + 1)
        .map((word) => word.text)
        .join(' ');
    const utc = (date: Date) => [date.getUTCDate(), date.getUTCMonth() + 1].map((part) => String(part).padStart(2, '0')).join('.');
    expect(inBox(box(40, 40))).toBe('4 March 2027');
    expect(inBox(box(40, 80))).toBe('3');
    expect(inBox(box(40, 120))).toBe('€ 1,234.50');
    expect(inBox(box(40, 160))).toBe('Yearly plan');
    expect(inBox(box(40, 200))).toBe('3,703.50 EUR');
    expect(inBox(box(40, 240))).toBe(`${utc(completedAt)}.${completedAt.getUTCFullYear()}`);
    expect(inBox(box(40, 340))).toBe('ada@example.com');
    expect(inBox(box(500, 40, 50, 24))).toBe('AKL');
    // The long name wraps inside its 150 × 40 box, whole, at 8 pt or more.
    expect(inBox(box(40, 280, 150, 40))).toBe(LONG_NAME);
    const nameWords = words.filter((word) => word.yMin >= 279 && word.yMax <= 321 && word.xMin >= 39 && word.xMax <= 191);
    expect(new Set(nameWords.map((word) => Math.round(word.yMin))).size).toBeGreaterThan(1);
    // pdftotext's word box is the font's ascent to descent: about 1.07 × the size for Noto Sans.
    for (const word of nameWords) expect(word.yMax - word.yMin, word.text).toBeGreaterThanOrEqual(8);
    const note = words.filter((word) => word.yMin >= 499 && word.yMax <= 541 && word.xMin >= 39 && word.xMax <= 161);
    expect(note.map((word) => word.text).join(' ')).toBe('Deliver to the loading dock behind building C');
    expect(new Set(note.map((word) => Math.round(word.yMin))).size).toBeGreaterThan(1);
    for (const word of note) expect(word.yMax - word.yMin, word.text).toBeGreaterThanOrEqual(8);
    // Nothing of it outside the box (pdftotext reads clipped text too, so the page's ink is what a reader sees).
    const page = renderPageGrey(file, 0);
    let inkBelow = 0;
    for (let y = 541; y < 560; y += 1) for (let x = 40; x < 160; x += 1) if (page.pixel(x, y) < 128) inkBelow += 1;
    expect(inkBelow).toBe(0);
    // Hidden (its box is ticked): the readonly text the sender gave is not drawn.
    expect(words.map((word) => word.text)).not.toContain('Hiddenclause');
    expect(words.map((word) => word.text)).not.toContain('987,654');

    // The certificate of completion lists the values under the person who completed, in its own locale.
    for (const [locale, expected] of [
      ['en-US', ['Value (start): 4 March 2027', 'Value (price): € 1,234.50', 'Value (plan): Yearly plan', 'Value (total): 3,703.50 EUR', 'Value (email): ada@example.com']],
      ['tr-TR', ['Değer (start): 4 Mart 2027', 'Değer (price): € 1.234,50', 'Değer (total): 3.703,50 EUR']],
    ] as const) {
      const certificate = await fetch(`${app.url}/api/v1/key/envelopes/${built.envelopeId}/audit/pdf?locale=${locale}`, { headers: { 'x-service-api-key': team.apiKey } });
      expect(certificate.status).toBe(200);
      const certificateFile = path.join(directory, `certificate-${locale}.pdf`);
      fs.writeFileSync(certificateFile, Buffer.from(await certificate.arrayBuffer()));
      const text = execFileSync('pdftotext', ['-raw', certificateFile, '-'], { encoding: 'utf8' }).replace(/\s+/g, ' ');
      for (const line of expected) expect(text, locale).toContain(line);
      expect(text).toContain(locale === 'en-US' ? 'Signature (initials, typed)' : 'İmza (initials, yazılarak)');
      expect(text).not.toContain('Hiddenclause');
      expect(text).not.toMatch(/987[.,]654/);
    }
  });
  it('refuses a value too long for its box at 8 pt, from the signer and from the sender, through both faces, and saves nothing', async () => {
    const built = await buildEnvelope(app, team.apiKey, {
      recipients: [
        {
          identifier: 'tenant',
          agents: [{ info: { name: LONG_NAME, email: 'augusta.ada.king.lovelace@example.com' } }],
          fields: [
            { identifier: 'signature', required: true, view: box(300, 700, 200, 40) },
            { identifier: 'city', type: 'text', required: false, view: box(40, 40, 60, 12) },
            // Filled by the service at completion with the agent's address: the box is too small for it.
            { identifier: 'email', type: 'email', required: false, view: box(40, 80, 40, 10) },
          ],
        },
      ],
    });
    expect((await restClient(app, team.apiKey).put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
    const client = signingClient(app, await tokenFor(app, built.envelopeId, built.recipients.tenant));
    // The signer's own value: refused by name at submit, and nothing is saved.
    const typed = await client(SUBMIT_MUTATION, { values: [{ fieldId: built.fields.city, value: { text: 'Llanfairpwllgwyngyll-gogerychwyrndrobwll' } }] });
    expect(firstErrorName(typed)).toBe('Signing.ValueDoesNotFit');
    expect(typed.errors![0]!.extensions!.context.fields).toEqual([{ fieldId: built.fields.city, identifier: 'city', page: 0 }]);
    expect(typed.errors![0]!.message).toContain('city');
    const short = await client(SUBMIT_MUTATION, { values: [{ fieldId: built.fields.city, value: { text: 'Bangor' } }] });
    expect(short.errors, JSON.stringify(short.errors)).toBeUndefined();
    // Completing would draw the service's email into its 40 × 10 box: refused, the role not completed.
    const completing = await client(SUBMIT_MUTATION, { complete: true, values: [{ fieldId: built.fields.signature, value: typedSignature }] });
    expect(firstErrorName(completing)).toBe('Signing.ValueDoesNotFit');
    expect(completing.errors![0]!.extensions!.context.fields).toEqual([{ fieldId: built.fields.email, identifier: 'email', page: 0 }]);
    const envelope = await restClient(app, team.apiKey).get(`/envelopes/${built.envelopeId}`);
    expect(envelope.body.payload.envelope.status).toBe('sent');
    const [row] = await app.orm.em.fork().execute<{ completed_at: Date | null }[]>('select completed_at from recipient where id = ?', [built.recipients.tenant]);
    expect(row!.completed_at).toBeNull();

    // The sender's value on a readonly field: refused where it is written, through REST and GraphQL.
    const draft = await buildEnvelope(app, team.apiKey, { recipients: [{ identifier: 'signer' }] });
    const field = (type: string) => ({
      type,
      recipientId: draft.recipients.signer,
      identifier: `terms-${type}`,
      required: false,
      readonly: true,
      value: { text: 'The tenant keeps the garden, the hedges and the pond in good order throughout the term' },
      views: [{ documentId: draft.documentId, page: 0, location: { x: 40, y: 300 }, size: { width: 100, height: 12 } }],
    });
    const rest = await restClient(app, team.apiKey).post(`/envelopes/${draft.envelopeId}/fields`, { fields: [field('text')] });
    expect(rest.status).toBe(400);
    expect(rest.body.error.name).toBe('Request.Invalid');
    expect(JSON.stringify(rest.body.error.context)).toContain('fields[0].value');
    const graphql = await graphqlClient(app, team.apiKey)('mutation($envelopeId: ID!, $fields: [FieldInput!]!) { createFields(envelopeId: $envelopeId, fields: $fields) { id } }', {
      envelopeId: draft.envelopeId,
      fields: [field('text')],
    });
    expect(firstErrorName(graphql)).toBe('Request.Invalid');
    const fields = await restClient(app, team.apiKey).get(`/envelopes/${draft.envelopeId}/fields`);
    expect(fields.body.payload.fields.map((entry: { identifier: string }) => entry.identifier)).toEqual(['signer-signature']);
  });
});
