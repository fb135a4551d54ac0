import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import fontkit from '@pdf-lib/fontkit';
import { degrees, PDFDocument, PDFString, StandardFonts } from 'pdf-lib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeDeepArraysAfterTagPdf } from './fixtures/pdfs.ts';
import { forceEnvelopeStatus, unknownId, uploadDocument } from './helpers/envelopes.ts';
import { firstErrorName, graphqlClient, restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { png } from './helpers/images.ts';
import { renderPageGrey, wordBoxes } from './helpers/pdf-tools.ts';
import { SESSION_QUERY, SUBMIT_MUTATION, signingClient, tokenFor, typedSignature } from './helpers/signing.ts';
import { uploadTemplateDocument } from './helpers/templates.ts';

/*
 * Fields placed from the PDF itself (docs/fields.md, "Placing fields from the PDF"): text tags in
 * real PDFs made by LibreOffice (test/fixtures/tags, scripts/make-tag-fixtures.sh) and in one
 * made here with a tag split across runs; the PDF's own form built with pdf-lib. Positions are
 * checked against poppler's `pdftotext -bbox`, hidden tags and drawn values against the text of
 * the sealed document.
 */

const require = createRequire(import.meta.url);

let app: TestApp;
let team: SeededTeam;
let other: SeededTeam;
let directory: string;
beforeAll(async () => {
  app = await startTestApp();
  team = await seedTeam(app);
  other = await seedTeam(app);
  directory = fs.mkdtempSync(path.join(os.tmpdir(), 'place-fields-'));
});
afterAll(async () => {
  fs.rmSync(directory, { recursive: true, force: true });
  await app.close();
});

const fixture = (name: string) => new Uint8Array(fs.readFileSync(path.join(import.meta.dirname, 'fixtures/tags', name)));

function save(bytes: Uint8Array, name: string): string {
  const file = path.join(directory, name);
  fs.writeFileSync(file, bytes);
  return file;
}

function textOf(file: string): string {
  return execFileSync('pdftotext', ['-layout', file, '-'], { encoding: 'utf8' });
}

/** A draft with the PDF and two signers, `buyer` and `seller`. */
async function draftWith(bytes: Uint8Array, apiKey = team.apiKey) {
  const rest = restClient(app, apiKey);
  const envelopeId = (await rest.post('/envelopes', { name: 'Tagged agreement' })).body.payload.envelopeId;
  const uploaded = await uploadDocument(app, apiKey, envelopeId, { bytes });
  expect(uploaded.status, JSON.stringify(uploaded.body)).toBe(200);
  const recipients: Record<string, string> = {};
  for (const [order, identifier] of ['buyer', 'seller'].entries()) {
    const answer = await rest.post(`/envelopes/${envelopeId}/recipients`, {
      recipient: {
        type: 'signer',
        identifier,
        roleName: identifier,
        order: 1 + order,
        required: true,
        agents: [{ info: { name: `${identifier} person`, email: `${identifier}@example.com` } }],
      },
    });
    recipients[identifier] = answer.body.payload.recipient.id;
  }
  return { envelopeId, documentId: uploaded.body.payload.document.id as string, recipients, sha256: uploaded.body.payload.document.sha256 as string };
}

/** The box pdftotext gives a tag: its words from the one starting `{{` to the one ending `}}`. */
function tagBox(file: string, page: number, start: string) {
  const words = wordBoxes(file)[page]!;
  const first = words.findIndex((word) => word.text.startsWith(start));
  expect(first, `${start} in ${file}`).toBeGreaterThanOrEqual(0);
  let last = first;
  while (!words[last]!.text.endsWith('}}')) last++;
  const members = words.slice(first, last + 1);
  return {
    xMin: Math.min(...members.map((word) => word.xMin)),
    yMin: Math.min(...members.map((word) => word.yMin)),
    xMax: Math.max(...members.map((word) => word.xMax)),
    yMax: Math.max(...members.map((word) => word.yMax)),
  };
}

const near = (actual: number, expected: number) => expect(Math.abs(actual - expected), `${actual} vs ${expected}`).toBeLessThanOrEqual(2);

const EXPECTED_TAGS = [
  { start: '{{sig;', identifier: 'buyer-signature', type: 'simple_signature', role: 'buyer', required: true },
  { start: '{{text;', identifier: 'buyer-name', type: 'text', role: 'buyer', required: true, label: 'Full name', width: 180 },
  { start: '{{check;', identifier: 'terms', type: 'checkbox', role: 'buyer', required: false },
  { start: '{{bio;', identifier: 'biometric-signature-seller', type: 'biometric_signature', role: 'seller', required: true, height: 40 },
  { start: '{{choice;', identifier: 'decision', type: 'binary_choice', role: 'seller', required: false },
];

describe('fields from text tags (REST)', () => {
  for (const name of ['tags-a4.pdf', 'tags-letter.pdf', 'tags-rotated.pdf']) {
    it(`${name}: every tag becomes its field at the tag's box (within 2 pt of pdftotext -bbox; text boxes tall enough for the document's text, checkboxes square at the tag's start); bad tags are listed`, async () => {
      const bytes = fixture(name);
      const file = save(bytes, name);
      const draft = await draftWith(bytes);
      const answer = await restClient(app, team.apiKey).post(`/envelopes/${draft.envelopeId}/documents/${draft.documentId}/place-fields`, { from: 'tags' });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      const { fields, unmatched } = answer.body.payload;
      expect(fields.map((field: any) => field.identifier)).toEqual(EXPECTED_TAGS.map((tag) => tag.identifier));
      const rotated = name === 'tags-rotated.pdf';
      for (const [index, expected] of EXPECTED_TAGS.entries()) {
        const field = fields[index];
        expect(field).toMatchObject({ type: expected.type, recipientId: draft.recipients[expected.role], required: expected.required });
        if (expected.label) expect(field.label).toBe(expected.label);
        expect(field.views).toHaveLength(1);
        const [view] = field.views;
        expect(view).toMatchObject({ documentId: draft.documentId, page: 0 });
        // Edges as the tag reads: on the page turned by 90° the line runs down the screen, so `w`
        // sizes the displayed height and `h` grows leftwards from the letters' tops.
        const box = tagBox(file, 0, expected.start);
        const edges = { left: box.xMin, top: box.yMin, right: box.xMax, bottom: box.yMax };
        // The tag's line across (its letters' height, as pdftotext measures it).
        const line = rotated ? box.xMax - box.xMin : box.yMax - box.yMin;
        const across = rotated ? view.size.width : view.size.height;
        if (expected.type === 'text') {
          // Tall enough to draw the value at the document's 12 pt (the renderer draws at 0.7 of the
          // box, at most 12 pt), never shorter than the line; it grows from the letters' tops.
          expect(across * 0.7).toBeGreaterThanOrEqual(11.5);
          expect(across).toBeGreaterThanOrEqual(line - 2);
          if (rotated) edges.left = edges.right - across;
          else edges.bottom = edges.top + across;
        }
        if (expected.type === 'checkbox') {
          // A square at the tag's start, as tall as its line (ascent to descent of 12 pt text:
          // pdf.js reads 1.1 em here where pdftotext's metrics give 1.3).
          expect(view.size.width).toBeCloseTo(view.size.height, 6);
          expect(across).toBeGreaterThanOrEqual(12);
          expect(across).toBeLessThanOrEqual(line + 2);
          if (rotated) {
            edges.left = edges.right - across;
            edges.bottom = edges.top + across;
          } else {
            edges.right = edges.left + across;
            edges.bottom = edges.top + across;
          }
        }
        if (expected.width !== undefined) {
          if (rotated) edges.bottom = edges.top + expected.width;
          else edges.right = edges.left + expected.width;
        }
        if (expected.height !== undefined) {
          if (rotated) edges.left = edges.right - expected.height;
          else edges.bottom = edges.top + expected.height;
        }
        near(view.location.x, edges.left);
        near(view.location.y, edges.top);
        near(view.location.x + view.size.width, edges.right);
        near(view.location.y + view.size.height, edges.bottom);
        if (expected.width !== undefined) expect(rotated ? view.size.height : view.size.width).toBeCloseTo(expected.width, 6);
        if (expected.height !== undefined) expect(rotated ? view.size.width : view.size.height).toBeCloseTo(expected.height, 6);
      }
      expect(unmatched).toEqual([
        { tag: '{{stamp;role=seller}}', page: 0, reason: 'unknown field type "stamp"' },
        { tag: '{{text;role=notary;id=notary-note}}', page: 0, reason: 'no recipient "notary" in this envelope' },
      ]);
      // Without hideTags the document is left as it was.
      const document = await restClient(app, team.apiKey).get(`/envelopes/${draft.envelopeId}/documents/${draft.documentId}`);
      expect(document.body.payload.document.sha256).toBe(draft.sha256);
    });
  }

  it("sizes text boxes to draw the value at the tag's text size (at least 8 pt) and checkboxes as a square at the tag's start; drawn so in the draft copy", async () => {
    const pdf = await PDFDocument.create();
    const page = pdf.addPage([612, 792]);
    const font = await pdf.embedFont(StandardFonts.Helvetica);
    page.drawText('Name: {{text;role=buyer;id=name10}}', { x: 72, y: 700, size: 10, font });
    page.drawText('Fine print: {{text;role=buyer;id=name6}}', { x: 72, y: 650, size: 6, font });
    page.drawText('{{check;role=buyer;id=agree}} I agree to every term written in this long sentence', { x: 72, y: 600, size: 10, font });
    const bytes = await pdf.save();
    const file = save(bytes, 'sizes.pdf');
    const draft = await draftWith(bytes);
    const answer = await restClient(app, team.apiKey).post(`/envelopes/${draft.envelopeId}/documents/${draft.documentId}/place-fields`, { from: 'tags' });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    const views = Object.fromEntries(answer.body.payload.fields.map((field: any) => [field.identifier, field.views[0]]));
    // 10 pt text: a box whose value is drawn at 10 pt (0.7 of its height); 6 pt text: at 8 pt, the floor.
    expect(views.name10.size.height * 0.7).toBeGreaterThanOrEqual(9.5);
    expect(views.name10.size.height * 0.7).toBeLessThanOrEqual(10.5);
    expect(views.name6.size.height * 0.7).toBeCloseTo(8, 6);
    for (const [identifier, start] of [
      ['name10', '{{text;'],
      ['name6', 'print:'],
    ] as const) {
      // Still from the top of the tag's letters, as wide as the tag.
      const box = identifier === 'name6' ? tagBox(file, 0, '{{text;role=buyer;id=name6}}') : tagBox(file, 0, start);
      near(views[identifier].location.y, box.yMin);
      near(views[identifier].location.x, box.xMin);
      near(views[identifier].location.x + views[identifier].size.width, box.xMax);
    }
    // The checkbox: a square at the tag's start, the height of its line, not the 200-pt-wide tag.
    const check = tagBox(file, 0, '{{check;');
    expect(views.agree.size.width).toBeCloseTo(views.agree.size.height, 6);
    expect(views.agree.size.height).toBeGreaterThanOrEqual(9);
    expect(views.agree.size.height).toBeLessThanOrEqual(13);
    near(views.agree.location.x, check.xMin);
    near(views.agree.location.y, check.yMin);

    // Drawn: the draft copy shows each value at the size its box was made for (pdftotext's word box).
    for (const [identifier, text] of [
      ['name10', 'Tenpoint'],
      ['name6', 'Sixpoint'],
    ] as const) {
      const fieldId = answer.body.payload.fields.find((field: any) => field.identifier === identifier).id;
      expect((await restClient(app, team.apiKey).patch(`/envelopes/${draft.envelopeId}/fields/${fieldId}`, { field: { value: { text } } })).status).toBe(200);
    }
    const copy = await fetch(`${app.url}/api/v1/key/envelopes/${draft.envelopeId}/documents/${draft.documentId}/pdf`, { headers: { 'x-service-api-key': team.apiKey } });
    expect(copy.status).toBe(200);
    const drawn = save(Buffer.from(await copy.arrayBuffer()), 'sizes-drawn.pdf');
    const words = wordBoxes(drawn)[0]!;
    const heightOf = (text: string) => {
      const word = words.find((candidate) => candidate.text === text);
      expect(word, text).toBeDefined();
      return word!.yMax - word!.yMin;
    };
    // pdftotext's word box is about 1.15 em of the sans font used for values.
    expect(heightOf('Tenpoint') / 1.15).toBeGreaterThanOrEqual(9);
    expect(heightOf('Sixpoint') / 1.15).toBeGreaterThanOrEqual(7.5);
  });

  it('a tag split across runs (two fonts, drawn apart) is found; `roles` maps a tag role to a recipient', async () => {
    const pdf = await PDFDocument.create();
    const page = pdf.addPage([612, 792]);
    const regular = await pdf.embedFont(StandardFonts.Helvetica);
    const bold = await pdf.embedFont(StandardFonts.HelveticaBold);
    const pieces: [string, typeof regular][] = [
      ['Sign: ', regular],
      ['{{sig;ro', regular],
      ['le=', bold],
      ['client}', regular],
      ['}', bold],
      [' thanks', regular],
    ];
    let x = 72;
    for (const [text, font] of pieces) {
      page.drawText(text, { x, y: 600, size: 14, font });
      x += font.widthOfTextAtSize(text, 14);
    }
    const bytes = await pdf.save();
    const file = save(bytes, 'split.pdf');
    const draft = await draftWith(bytes);
    const answer = await restClient(app, team.apiKey).post(`/envelopes/${draft.envelopeId}/documents/${draft.documentId}/place-fields`, {
      from: 'tags',
      roles: { client: draft.recipients.seller },
    });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body.payload.unmatched).toEqual([]);
    const [field] = answer.body.payload.fields;
    expect(field).toMatchObject({ type: 'simple_signature', identifier: 'simple-signature-client', recipientId: draft.recipients.seller });
    const box = tagBox(file, 0, '{{sig;');
    near(field.views[0].location.x, box.xMin);
    near(field.views[0].location.y, box.yMin);
    near(field.views[0].location.x + field.views[0].size.width, box.xMax);
  });

  it('a template takes the same request; its audit trail records one change', async () => {
    const rest = restClient(app, team.apiKey);
    const templateId = (await rest.post('/templates', { name: 'Tagged template', teamScope: [] })).body.payload.templateId;
    const uploaded = await uploadTemplateDocument(app, team.apiKey, templateId, { bytes: fixture('tags-a4.pdf') });
    const documentId = uploaded.body.payload.document.id;
    await rest.post(`/templates/${templateId}/recipients`, { recipient: { type: 'signer', identifier: 'buyer', roleName: 'Buyer', order: 1 } });
    await rest.post(`/templates/${templateId}/recipients`, { recipient: { type: 'signer', identifier: 'seller', roleName: 'Seller', order: 2 } });
    const answer = await rest.post(`/templates/${templateId}/documents/${documentId}/place-fields`, { from: 'tags' });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body.payload.fields.map((field: any) => field.identifier)).toEqual(EXPECTED_TAGS.map((tag) => tag.identifier));
    expect(answer.body.payload.unmatched[1].reason).toBe('no recipient "notary" in this template');
    const events = await app.orm.em
      .fork()
      .execute<{ type: string; details: any }[]>(`select type, details from audit_event where details->>'templateId' = ? and type like 'field.%'`, [templateId]);
    expect(events.map((event) => event.type)).toEqual(['field.added']);

    // The same through GraphQL, on a second copy of the document: identifiers already taken get a number.
    const again = await uploadTemplateDocument(app, team.apiKey, templateId, { bytes: fixture('tags-letter.pdf') });
    const placed = await graphqlClient(app, team.apiKey)(
      `mutation($t: ID!, $d: ID!, $roles: JSONObject) { placeTemplateFields(templateId: $t, documentId: $d, from: tags, roles: $roles) { fields { identifier views { documentId } } unmatched { tag } } }`,
      { t: templateId, d: again.body.payload.document.id, roles: { notary: answer.body.payload.fields[0].recipientId } },
    );
    expect(placed.errors, JSON.stringify(placed.errors)).toBeUndefined();
    expect(placed.data.placeTemplateFields.fields.map((field: any) => field.identifier)).toEqual([...EXPECTED_TAGS.map((tag) => `${tag.identifier}-2`), 'notary-note']);
    expect(placed.data.placeTemplateFields.unmatched).toEqual([{ tag: '{{stamp;role=seller}}' }]);
  });
});

/** Sends the draft, fills every field of both signers, and answers the sealed document's file. */
async function sealThroughTheWorkflow(draft: Awaited<ReturnType<typeof draftWith>>, name: string): Promise<string> {
  const rest = restClient(app, team.apiKey);
  const sent = await rest.put(`/envelopes/${draft.envelopeId}/send`);
  expect(sent.status, JSON.stringify(sent.body)).toBe(200);
  const image = `data:image/png;base64,${png(20, 10).toString('base64')}`;
  for (const identifier of ['buyer', 'seller']) {
    const client = signingClient(app, await tokenFor(app, draft.envelopeId, draft.recipients[identifier]!));
    const session = await client(SESSION_QUERY);
    expect(session.errors, JSON.stringify(session.errors)).toBeUndefined();
    const values = session.data.signingSession.fields
      .filter((field: any) => !field.readonly)
      .map((field: any) => {
        // A prefilled value is kept as the sender gave it.
        const value =
          field.value !== null
            ? field.value
            : field.type === 'simple_signature'
              ? typedSignature
              : field.type === 'biometric_signature'
                ? {
                    image,
                    strokes: [
                      [
                        { x: 1, y: 1, t: 0, p: 0.5 },
                        { x: 5, y: 4, t: 20, p: 0.5 },
                      ],
                    ],
                  }
                : field.type === 'text'
                  ? { text: 'Typed by the signer' }
                  : field.type === 'checkbox'
                    ? { checked: true }
                    : field.type === 'binary_choice'
                      ? { choice: 'accept' }
                      : field.value;
        return { fieldId: field.id, value };
      });
    const submitted = await client(SUBMIT_MUTATION, { values, complete: true });
    expect(submitted.errors, JSON.stringify(submitted.errors)).toBeUndefined();
  }
  const status = await rest.get(`/envelopes/${draft.envelopeId}`);
  expect(status.body.payload.envelope.status).toBe('finalized');
  const response = await fetch(`${app.url}/api/v1/key/envelopes/${draft.envelopeId}/documents/${draft.documentId}/pdf`, { headers: { 'x-service-api-key': team.apiKey } });
  expect(response.status).toBe(200);
  return save(new Uint8Array(await response.arrayBuffer()), name);
}

describe('hidden tags (GraphQL)', () => {
  it('placeFields with hideTags: the placed tags are gone from the sealed PDF, the page text and the unplaced tags stay', async () => {
    const draft = await draftWith(fixture('tags-a4.pdf'));
    const result = await graphqlClient(app, team.apiKey)(
      `mutation($envelopeId: ID!, $documentId: ID!) { placeFields(envelopeId: $envelopeId, documentId: $documentId, from: tags, hideTags: true) { fields { identifier type views { page location { x y } } } unmatched { tag page reason } } }`,
      { envelopeId: draft.envelopeId, documentId: draft.documentId },
    );
    expect(result.errors, JSON.stringify(result.errors)).toBeUndefined();
    expect(result.data.placeFields.fields).toHaveLength(5);
    expect(result.data.placeFields.unmatched.map((item: any) => item.tag)).toEqual(['{{stamp;role=seller}}', '{{text;role=notary;id=notary-note}}']);
    const events = await app.orm.em.fork().execute<{ type: string; details: any }[]>(`select type, details from audit_event where stream_id = ? and type like 'field.%'`, [draft.envelopeId]);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ type: 'field.added', details: { placedFrom: 'tags', documentId: draft.documentId, tagsHidden: 5, unmatched: 2 } });
    expect(events[0]!.details.fields).toHaveLength(5);

    const sealed = await sealThroughTheWorkflow(draft, 'hidden-sealed.pdf');
    const text = textOf(sealed);
    expect(text).toContain('Buyer signs here:');
    expect(text).toContain('I have read the terms');
    expect(text).toContain('and agree.');
    expect(text).toContain('Typed by the signer');
    expect(text).not.toContain('{{sig');
    expect(text).not.toContain('{{check');
    expect(text).not.toContain('buyer-name');
    expect(text).not.toContain('{{bio');
    expect(text).toContain('{{stamp;role=seller}}');
    expect(text).toContain('{{text;role=notary;id=notary-note}}');
    // What follows a hidden tag on its line did not move.
    const before = wordBoxes(save(fixture('tags-a4.pdf'), 'a4.pdf'))[0]!.find((word) => word.text === 'agree.')!;
    const after = wordBoxes(sealed)[0]!.find((word) => word.text === 'agree.')!;
    near(after.xMin, before.xMin);
    near(after.yMin, before.yMin);
  });
});

/** A form built with pdf-lib: text, checkbox, radio group, a signature widget, and one text field on two pages. */
async function formPdf(options: { witness?: boolean } = {}): Promise<Uint8Array> {
  const pdf = await PDFDocument.create();
  const first = pdf.addPage([595, 842]);
  const second = pdf.addPage([612, 792]);
  second.setRotation(degrees(90));
  const form = pdf.getForm();
  const name = form.createTextField('buyer.name');
  name.setText('Grace Hopper');
  name.addToPage(first, { x: 100, y: 700, width: 200, height: 24, borderWidth: 0 });
  const agree = form.createCheckBox('buyer.agree');
  agree.addToPage(first, { x: 100, y: 650, width: 16, height: 16, borderWidth: 0 });
  agree.check();
  const plan = form.createRadioGroup('buyer.plan');
  plan.addOptionToPage('monthly', first, { x: 100, y: 600, width: 14, height: 14, borderWidth: 0 });
  plan.addOptionToPage('yearly', first, { x: 140, y: 600, width: 14, height: 14, borderWidth: 0 });
  plan.select('yearly');
  const initials = form.createTextField('seller.initials');
  initials.setText('QX');
  initials.addToPage(first, { x: 400, y: 100, width: 60, height: 20, borderWidth: 0 });
  initials.addToPage(second, { x: 400, y: 100, width: 60, height: 20, borderWidth: 0 });
  if (options.witness) form.createTextField('witness.name').addToPage(first, { x: 300, y: 300, width: 100, height: 20, borderWidth: 0 });
  // pdf-lib makes no signature fields: one written by hand, its widget merged into the field.
  const signature = pdf.context.obj({
    FT: 'Sig',
    T: PDFString.of('buyer.sign'),
    Type: 'Annot',
    Subtype: 'Widget',
    Rect: [300, 500, 500, 540],
    F: 4,
    P: first.ref,
  });
  const signatureRef = pdf.context.register(signature);
  first.node.addAnnot(signatureRef);
  form.acroForm.addField(signatureRef);
  return pdf.save();
}

describe('hidden tags in an embedded (two-byte, Identity-H) font', () => {
  it('the tag is removed from the document the signer sees; the text around it stays in place', async () => {
    const pdf = await PDFDocument.create();
    pdf.registerFontkit(fontkit);
    const fontFile = path.join(path.dirname(require.resolve('@fontsource/noto-sans')), 'files', 'noto-sans-latin-400-normal.woff');
    const font = await pdf.embedFont(fs.readFileSync(fontFile), { subset: true });
    const page = pdf.addPage([595, 842]);
    page.drawText('Signature: {{sig;role=buyer}} (buyer)', { x: 60, y: 700, size: 12, font });
    const bytes = await pdf.save();
    const original = save(bytes, 'identity.pdf');
    const draft = await draftWith(bytes);
    const answer = await restClient(app, team.apiKey).post(`/envelopes/${draft.envelopeId}/documents/${draft.documentId}/place-fields`, { from: 'tags', hideTags: true });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body.payload).toMatchObject({ fields: [{ identifier: 'simple-signature-buyer' }], unmatched: [] });
    const box = tagBox(original, 0, '{{sig;');
    near(answer.body.payload.fields[0].views[0].location.x, box.xMin);
    near(answer.body.payload.fields[0].views[0].location.y, box.yMin);
    const response = await fetch(`${app.url}/api/v1/key/envelopes/${draft.envelopeId}/documents/${draft.documentId}/pdf`, { headers: { 'x-service-api-key': team.apiKey } });
    const copy = save(new Uint8Array(await response.arrayBuffer()), 'identity-draft.pdf');
    const text = textOf(copy);
    expect(text).toContain('Signature:');
    expect(text).toContain('(buyer)');
    expect(text).not.toContain('{{');
    const before = wordBoxes(original)[0]!.find((word) => word.text === '(buyer)')!;
    const after = wordBoxes(copy)[0]!.find((word) => word.text === '(buyer)')!;
    near(after.xMin, before.xMin);
  });
});

describe('fields from the PDF’s own form', () => {
  it('each form field becomes a field: types, widget boxes, names, prefills; the sealed PDF shows each value once and no form', async () => {
    const bytes = await formPdf();
    const draft = await draftWith(bytes);
    const answer = await restClient(app, team.apiKey).post(`/envelopes/${draft.envelopeId}/documents/${draft.documentId}/place-fields`, {
      from: 'acroform',
      roles: { 'buyer.': draft.recipients.buyer, '*': draft.recipients.seller },
    });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body.payload.unmatched).toEqual([]);
    const byIdentifier = Object.fromEntries(answer.body.payload.fields.map((field: any) => [field.identifier, field]));
    expect(Object.keys(byIdentifier).sort()).toEqual(['buyer.agree', 'buyer.name', 'buyer.plan', 'buyer.sign', 'seller.initials']);
    const view = (page: number, x: number, y: number, width: number, height: number) => ({ documentId: draft.documentId, page, location: { x, y }, size: { width, height } });
    expect(byIdentifier['buyer.name']).toMatchObject({ type: 'text', recipientId: draft.recipients.buyer, value: { text: 'Grace Hopper' }, views: [view(0, 100, 842 - 724, 200, 24)] });
    expect(byIdentifier['buyer.agree']).toMatchObject({ type: 'checkbox', value: { checked: true }, views: [view(0, 100, 842 - 666, 16, 16)] });
    expect(byIdentifier['buyer.plan']).toMatchObject({
      type: 'radio',
      value: { selected: 'yearly' },
      config: {
        options: [
          { value: 'monthly', label: 'monthly' },
          { value: 'yearly', label: 'yearly' },
        ],
      },
      views: [view(0, 100, 842 - 614, 14, 14), view(0, 140, 842 - 614, 14, 14)],
    });
    expect(byIdentifier['buyer.sign']).toMatchObject({ type: 'simple_signature', required: true, value: null, views: [view(0, 300, 842 - 540, 200, 40)] });
    // One field, two widgets: two views; the second page is turned by 90° (displayed 792 × 612).
    expect(byIdentifier['seller.initials']).toMatchObject({ type: 'text', recipientId: draft.recipients.seller, value: { text: 'QX' } });
    expect(byIdentifier['seller.initials'].views).toEqual([view(0, 400, 842 - 120, 60, 20), view(1, 100, 400, 20, 60)]);

    // The document no longer carries the imported form.
    const document = await restClient(app, team.apiKey).get(`/envelopes/${draft.envelopeId}/documents/${draft.documentId}`);
    expect(document.body.payload.document.sha256).not.toBe(draft.sha256);

    const sealed = await sealThroughTheWorkflow(draft, 'form-sealed.pdf');
    const pages = execFileSync('pdftotext', [sealed, '-'], { encoding: 'utf8' }).split('\f');
    expect(pages[0]!.match(/Grace Hopper/g)).toHaveLength(1);
    expect(pages[0]!.match(/QX/g)).toHaveLength(1);
    expect(pages[1]!.match(/QX/g)).toHaveLength(1);
    // A radio group's widgets are its options: only the selected one is marked, and once.
    expect(pages[0]).not.toContain('yearly');
    const grey = renderPageGrey(sealed, 0);
    const darkIn = (x: number, y: number, side: number) => {
      let dark = 0;
      for (let dy = 0; dy < side; dy++) for (let dx = 0; dx < side; dx++) if (grey.pixel(x + dx, y + dy) < 128) dark++;
      return dark;
    };
    expect(darkIn(140, 842 - 614, 14)).toBeGreaterThan(10);
    expect(darkIn(100, 842 - 614, 14)).toBe(0);
    const reloaded = await PDFDocument.load(fs.readFileSync(sealed));
    const formFields = reloaded
      .getForm()
      .getFields()
      .map((field) => field.getName());
    for (const imported of ['buyer.name', 'buyer.agree', 'buyer.plan', 'seller.initials']) expect(formFields).not.toContain(imported);
  });

  it('without a role for it, a form field is placed for the recipient its name starts with, or listed', async () => {
    const draft = await draftWith(await formPdf({ witness: true }));
    const answer = await restClient(app, team.apiKey).post(`/envelopes/${draft.envelopeId}/documents/${draft.documentId}/place-fields`, {
      from: 'acroform',
      roles: { 'seller.': draft.recipients.seller },
    });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    // `buyer` is a recipient's identifier: the name's first part names it; nobody is `witness`.
    const placed = answer.body.payload.fields.map((field: any) => [field.identifier, field.recipientId]);
    expect(placed.sort()).toEqual(
      [
        ['buyer.agree', draft.recipients.buyer],
        ['buyer.name', draft.recipients.buyer],
        ['buyer.plan', draft.recipients.buyer],
        ['buyer.sign', draft.recipients.buyer],
        ['seller.initials', draft.recipients.seller],
      ].sort(),
    );
    expect(answer.body.payload.unmatched).toEqual([{ tag: 'witness.name', page: 0, reason: 'no recipient for "witness.name" (map it in roles, by a prefix or "*")' }]);
    // The form field not imported stays in the document's form; the imported ones are gone.
    const stored = await fetch(`${app.url}/api/v1/key/envelopes/${draft.envelopeId}/documents/${draft.documentId}/pdf`, { headers: { 'x-service-api-key': team.apiKey } });
    const reloaded = await PDFDocument.load(new Uint8Array(await stored.arrayBuffer()));
    expect(
      reloaded
        .getForm()
        .getFields()
        .map((field) => field.getName()),
    ).toEqual(['witness.name']);
  });
});

describe('refusals', () => {
  it('not a draft, a role naming no recipient, a document not in the envelope, another team’s envelope; nothing changes', async () => {
    const rest = restClient(app, team.apiKey);
    const draft = await draftWith(fixture('tags-a4.pdf'));
    const url = `/envelopes/${draft.envelopeId}/documents/${draft.documentId}/place-fields`;

    const unknownRole = await rest.post(url, { from: 'tags', roles: { buyer: unknownId } });
    expect(unknownRole.status).toBe(400);
    expect(unknownRole.body.error).toMatchObject({ name: 'Request.Invalid', context: { issues: [{ path: 'roles.buyer' }] } });

    const invalid = await rest.post(url, { from: 'ocr' });
    expect(invalid.body.error.name).toBe('Request.Invalid');

    const second = await draftWith(fixture('tags-letter.pdf'));
    const elsewhere = await rest.post(`/envelopes/${draft.envelopeId}/documents/${second.documentId}/place-fields`, { from: 'tags' });
    expect(elsewhere.status).toBe(404);
    expect(elsewhere.body.error.name).toBe('Document.NotFound');
    expect((await rest.post(`/envelopes/${draft.envelopeId}/documents/${unknownId}/place-fields`, { from: 'tags' })).body.error.name).toBe('Document.NotFound');

    const foreign = await restClient(app, other.apiKey).post(url, { from: 'tags' });
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.name).toBe('Envelope.NotFound');
    const foreignGraphql = await graphqlClient(app, other.apiKey)(`mutation($e: ID!, $d: ID!) { placeFields(envelopeId: $e, documentId: $d, from: tags) { fields { id } } }`, {
      e: draft.envelopeId,
      d: draft.documentId,
    });
    expect(firstErrorName(foreignGraphql)).toBe('Envelope.NotFound');

    expect((await rest.get(`/envelopes/${draft.envelopeId}/fields`)).body.payload.fields).toEqual([]);
    // A sent envelope takes fields as a correction; a voided one takes none.
    await forceEnvelopeStatus(app, draft.envelopeId, 'voided');
    const notDraft = await rest.post(url, { from: 'tags' });
    expect(notDraft.status).toBe(409);
    expect(notDraft.body.error.name).toBe('Envelope.NotDraft');
    const notDraftGraphql = await graphqlClient(app, team.apiKey)(`mutation($e: ID!, $d: ID!) { placeFields(envelopeId: $e, documentId: $d, from: tags) { fields { id } } }`, {
      e: draft.envelopeId,
      d: draft.documentId,
    });
    expect(firstErrorName(notDraftGraphql)).toBe('Envelope.NotDraft');
  });

  it('two placements with hideTags at once place the tags once: the later one finds them gone or is told to retry', async () => {
    const draft = await draftWith(fixture('tags-a4.pdf'));
    const url = `/envelopes/${draft.envelopeId}/documents/${draft.documentId}/place-fields`;
    const rest = restClient(app, team.apiKey);
    const answers = await Promise.all([rest.post(url, { from: 'tags', hideTags: true }), rest.post(url, { from: 'tags', hideTags: true })]);
    for (const answer of answers) expect([200, 409], JSON.stringify(answer.body)).toContain(answer.status);
    expect(answers.filter((answer) => answer.status === 409).every((answer) => answer.body.error.name === 'Resource.Conflict')).toBe(true);
    const fields = (await rest.get(`/envelopes/${draft.envelopeId}/fields`)).body.payload.fields;
    expect(fields.map((field: any) => field.identifier).sort()).toEqual(EXPECTED_TAGS.map((tag) => tag.identifier).sort());
  });

  it('more than 500 tags in one document: Document.TooManyTags, nothing placed', async () => {
    const pdf = await PDFDocument.create();
    const font = await pdf.embedFont(StandardFonts.Helvetica);
    for (let pageIndex = 0; pageIndex < 11; pageIndex++) {
      const page = pdf.addPage([595, 842]);
      for (let line = 0; line < 50; line++) page.drawText(`{{check;role=buyer;id=c${pageIndex}-${line}}}`, { x: 40, y: 800 - line * 15, size: 9, font });
    }
    const draft = await draftWith(await pdf.save());
    const answer = await restClient(app, team.apiKey).post(`/envelopes/${draft.envelopeId}/documents/${draft.documentId}/place-fields`, { from: 'tags' });
    expect(answer.status).toBe(422);
    expect(answer.body.error).toMatchObject({ name: 'Document.TooManyTags', context: { limit: 500 } });
    expect((await restClient(app, team.apiKey).get(`/envelopes/${draft.envelopeId}/fields`)).body.payload.fields).toEqual([]);
  });
});

describe('text tags in turned text', () => {
  /** Where a line of `size` pt text at `angle`° from (x, y) ends, `width` points on (user space). */
  const along = (x: number, y: number, angle: number, width: number) => [x + width * Math.cos((angle * Math.PI) / 180), y + width * Math.sin((angle * Math.PI) / 180)] as const;

  it('places tags in text at 90°, 180° and 270°, and in text reading upright on pages turned by /Rotate 90 and 270; lists a tag at 45° as unmatched', async () => {
    const pdf = await PDFDocument.create();
    const font = await pdf.embedFont(StandardFonts.Helvetica);
    const size = 14;
    const width = (text: string) => font.widthOfTextAtSize(text, size);
    const upright = pdf.addPage([595, 842]);
    const turned = { r90: '{{sig;role=buyer;id=r90}}', r180: '{{text;role=buyer;id=r180}}', r270: '{{check;role=seller;id=r270}}', r45: '{{sig;role=seller;id=r45}}' };
    upright.drawText(turned.r90, { x: 100, y: 300, size, font, rotate: degrees(90) });
    upright.drawText(turned.r180, { x: 500, y: 100, size, font, rotate: degrees(180) });
    upright.drawText(turned.r270, { x: 400, y: 700, size, font, rotate: degrees(270) });
    upright.drawText(turned.r45, { x: 100, y: 100, size, font, rotate: degrees(45) });
    // Pages turned for display, their text turned back so it reads left to right as shown.
    const rotate90 = pdf.addPage([595, 842]);
    rotate90.setRotation(degrees(90));
    rotate90.drawText('{{sig;role=buyer;id=p90}}', { x: 300, y: 100, size, font, rotate: degrees(90) });
    const rotate270 = pdf.addPage([595, 842]);
    rotate270.setRotation(degrees(270));
    rotate270.drawText('{{sig;role=seller;id=p270}}', { x: 300, y: 700, size, font, rotate: degrees(270) });
    const draft = await draftWith(await pdf.save());
    const answer = await restClient(app, team.apiKey).post(`/envelopes/${draft.envelopeId}/documents/${draft.documentId}/place-fields`, { from: 'tags' });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    const byId = Object.fromEntries(answer.body.payload.fields.map((field: any) => [field.identifier, field.views[0]]));
    expect(Object.keys(byId).sort()).toEqual(['p270', 'p90', 'r180', 'r270', 'r90']);
    expect(answer.body.payload.unmatched).toEqual([{ tag: turned.r45, page: 0, reason: 'its text runs at 45°; a field is an upright box, so place this one by coordinates' }]);

    /** The view spans the line along its reading direction (within 2 pt) and holds the baseline across it. */
    const spans = (view: any, page: number, along: { from: number; to: number; axis: 'x' | 'y' }, baseline: number) => {
      expect(view.page).toBe(page);
      const [start, extent, crossStart, crossExtent] =
        along.axis === 'x' ? [view.location.x, view.size.width, view.location.y, view.size.height] : [view.location.y, view.size.height, view.location.x, view.size.width];
      near(start, Math.min(along.from, along.to));
      near(start + extent, Math.max(along.from, along.to));
      expect(crossStart).toBeLessThanOrEqual(baseline + 0.5);
      expect(crossStart + crossExtent).toBeGreaterThanOrEqual(baseline - 0.5);
      expect(crossExtent).toBeLessThanOrEqual(size * 1.5);
    };
    const H = 842;
    // Unturned page: displayed x = user x, displayed y = 842 − user y.
    spans(byId.r90, 0, { from: H - 300, to: H - along(100, 300, 90, width(turned.r90))[1], axis: 'y' }, 100);
    spans(byId.r180, 0, { from: 500, to: along(500, 100, 180, width(turned.r180))[0], axis: 'x' }, H - 100);
    // A checkbox is a square at the tag's start, as tall as its line (docs/fields.md), whichever way the tag reads.
    expect(H - along(400, 700, 270, width(turned.r270))[1]).toBeGreaterThan(H - 700 + size * 5);
    spans(byId.r270, 0, { from: H - 700, to: H - 700 + byId.r270.size.width, axis: 'y' }, 400);
    // /Rotate 90: displayed x = user y, displayed y = user x. /Rotate 270: x = 842 − user y, y = 595 − user x.
    spans(byId.p90, 1, { from: 100, to: along(300, 100, 90, width('{{sig;role=buyer;id=p90}}'))[1], axis: 'x' }, 300);
    spans(byId.p270, 2, { from: H - 700, to: H - along(300, 700, 270, width('{{sig;role=seller;id=p270}}'))[1], axis: 'x' }, 595 - 300);
  });
});

describe('role names that are Object.prototype’s', () => {
  /** One tag per awkward role, and a tag whose type is such a name. */
  async function prototypeTagsPdf() {
    const pdf = await PDFDocument.create();
    const font = await pdf.embedFont(StandardFonts.Helvetica);
    const page = pdf.addPage([595, 842]);
    ['{{sig;role=constructor}}', '{{text;role=__proto__}}', '{{check;role=toString}}', '{{constructor;role=buyer}}'].forEach((tag, line) =>
      page.drawText(tag, { x: 60, y: 760 - line * 40, size: 12, font }),
    );
    return pdf.save();
  }

  it('are tags like any other: unmatched without a mapping, placed for the recipients `roles` maps them to, on both faces', async () => {
    const draft = await draftWith(await prototypeTagsPdf());
    const url = `/envelopes/${draft.envelopeId}/documents/${draft.documentId}/place-fields`;
    const rest = restClient(app, team.apiKey);
    const unmapped = await rest.post(url, { from: 'tags' });
    expect(unmapped.status, JSON.stringify(unmapped.body)).toBe(200);
    expect(unmapped.body.payload).toEqual({
      fields: [],
      unmatched: [
        { tag: '{{sig;role=constructor}}', page: 0, reason: 'no recipient "constructor" in this envelope' },
        { tag: '{{text;role=__proto__}}', page: 0, reason: 'no recipient "__proto__" in this envelope' },
        { tag: '{{check;role=toString}}', page: 0, reason: 'no recipient "toString" in this envelope' },
        { tag: '{{constructor;role=buyer}}', page: 0, reason: 'unknown field type "constructor"' },
      ],
    });

    // JSON.parse makes `__proto__` an own key, as a caller's JSON body does.
    const roles = JSON.parse(`{"constructor": "${draft.recipients.buyer}", "__proto__": "${draft.recipients.seller}", "toString": "${draft.recipients.buyer}"}`);
    const mapped = await rest.post(url, { from: 'tags', roles });
    expect(mapped.status, JSON.stringify(mapped.body)).toBe(200);
    expect(mapped.body.payload.fields.map((field: any) => [field.identifier, field.recipientId])).toEqual([
      ['simple-signature-constructor', draft.recipients.buyer],
      ['text-__proto__', draft.recipients.seller],
      ['checkbox-toString', draft.recipients.buyer],
    ]);
    expect(mapped.body.payload.unmatched).toEqual([{ tag: '{{constructor;role=buyer}}', page: 0, reason: 'unknown field type "constructor"' }]);

    // GraphQL, on a second draft: the same mapping as a variable; a bad value is named at its own key.
    const second = await draftWith(await prototypeTagsPdf());
    const graphql = graphqlClient(app, team.apiKey);
    const mutation = `mutation($e: ID!, $d: ID!, $roles: JSONObject) { placeFields(envelopeId: $e, documentId: $d, from: tags, roles: $roles) { fields { identifier recipientId } unmatched { tag } } }`;
    const bad = await graphql(mutation, { e: second.envelopeId, d: second.documentId, roles: JSON.parse('{"__proto__": 7}') });
    expect(bad.errors?.[0]?.extensions).toMatchObject({ code: 'Request.Invalid', context: { issues: [{ path: 'roles.__proto__' }] } });
    const placed = await graphql(mutation, {
      e: second.envelopeId,
      d: second.documentId,
      roles: JSON.parse(`{"__proto__": "${second.recipients.buyer}", "constructor": "${second.recipients.seller}", "toString": "${second.recipients.seller}"}`),
    });
    expect(placed.errors, JSON.stringify(placed.errors)).toBeUndefined();
    expect(placed.data.placeFields.fields).toEqual([
      { identifier: 'simple-signature-constructor', recipientId: second.recipients.seller },
      { identifier: 'text-__proto__', recipientId: second.recipients.buyer },
      { identifier: 'checkbox-toString', recipientId: second.recipients.seller },
    ]);
  });
});

describe('a content stream nested past what the rewrite reads', () => {
  it('arrays 200 000 deep after a tag, with hideTags: Document.TooComplex (422) on both faces, nothing placed', async () => {
    // The inspector refuses such a file at upload now; one stored before it did is stood in for
    // by swapping a stored document's content for it.
    const draft = await draftWith(fixture('tags-a4.pdf'));
    const staged = await app.dependencies.blobStore.stage(Readable.from([Buffer.from(makeDeepArraysAfterTagPdf(200_000))]));
    const stored = await staged.commit();
    await app.orm.em.fork().execute('update document set content_sha256 = ?, byte_size = ? where id = ?', [stored.sha256, stored.byteSize, draft.documentId]);
    const url = `/envelopes/${draft.envelopeId}/documents/${draft.documentId}/place-fields`;
    const rest = await restClient(app, team.apiKey).post(url, { from: 'tags', hideTags: true });
    expect(rest.status, JSON.stringify(rest.body)).toBe(422);
    expect(rest.body.error).toMatchObject({ name: 'Document.TooComplex', context: { limit: 'content_nesting', maximum: 32 } });
    expect(rest.body.error.description).toContain('nothing was placed');
    const graphql = await graphqlClient(app, team.apiKey)(`mutation($e: ID!, $d: ID!) { placeFields(envelopeId: $e, documentId: $d, from: tags, hideTags: true) { fields { id } } }`, {
      e: draft.envelopeId,
      d: draft.documentId,
    });
    expect(graphql.errors?.[0]?.extensions).toMatchObject({ code: 'Document.TooComplex', context: { limit: 'content_nesting' } });
    expect((await restClient(app, team.apiKey).get(`/envelopes/${draft.envelopeId}/fields`)).body.payload.fields).toEqual([]);
    // Without hideTags nothing is rewritten: the tag is placed.
    const placed = await restClient(app, team.apiKey).post(url, { from: 'tags' });
    expect(placed.status, JSON.stringify(placed.body)).toBe(200);
    expect(placed.body.payload.fields.map((field: any) => field.identifier)).toEqual(['simple-signature-buyer']);
  });
});
