/**
 * Issue 32's types wherever fields come from besides a field request: text tags (long and short
 * forms, their keys), the PDF's own choice fields (combo box, single-selection list) as dropdowns,
 * and a bulk send's CSV prefill (`field.<identifier>`), on both faces where they exist.
 */
import { PDFDocument, StandardFonts } from 'pdf-lib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uploadDocument } from './helpers/envelopes.ts';
import { graphqlClient, restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { uploadTemplateDocument } from './helpers/templates.ts';

let app: TestApp;
let team: SeededTeam;
beforeAll(async () => {
  app = await startTestApp();
  team = await seedTeam(app);
});
afterAll(async () => {
  await app.close();
});

const TAGS = [
  '{{init;role=buyer}}',
  '{{date_signed;role=buyer;format=DD.MM.YYYY}}',
  '{{name;role=buyer}}',
  '{{email;role=buyer;id=buyer-mail}}',
  '{{date;role=buyer;format=D MMMM YYYY;required=true}}',
  '{{num;role=buyer;decimals=2;id=price}}',
  '{{list;role=buyer;options=a|b|c;id=plan}}',
  // Refused, listed in unmatched:
  '{{number;role=buyer;decimals=9}}',
  '{{dropdown;role=buyer}}',
  '{{date;role=buyer;decimals=2}}',
  '{{signed;role=buyer;format=YY}}',
];

/** A one-page PDF with each line of text drawn in Helvetica, top to bottom. */
async function pdfWithLines(lines: string[]): Promise<Uint8Array> {
  const pdf = await PDFDocument.create();
  const page = pdf.addPage([595, 842]);
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  lines.forEach((line, index) => page.drawText(line, { x: 40, y: 800 - index * 30, size: 10, font }));
  return pdf.save();
}

async function draftWith(bytes: Uint8Array) {
  const rest = restClient(app, team.apiKey);
  const envelopeId = (await rest.post('/envelopes', { name: 'Tagged order' })).body.payload.envelopeId;
  const uploaded = await uploadDocument(app, team.apiKey, envelopeId, { bytes });
  expect(uploaded.status, JSON.stringify(uploaded.body)).toBe(200);
  const buyer = await rest.post(`/envelopes/${envelopeId}/recipients`, {
    recipient: { type: 'signer', identifier: 'buyer', roleName: 'Buyer', order: 1, agents: [{ info: { name: 'Ada', email: 'ada@example.com' } }] },
  });
  return { envelopeId, documentId: uploaded.body.payload.document.id as string, buyerId: buyer.body.payload.recipient.id as string };
}

describe('text tags for the new types', () => {
  it('become fields with their config, long and short forms alike; bad keys are listed, not placed (REST and GraphQL)', async () => {
    const bytes = await pdfWithLines(TAGS);
    for (const face of ['rest', 'graphql'] as const) {
      const draft = await draftWith(bytes);
      let answer: { fields: any[]; unmatched: any[] };
      if (face === 'rest') {
        const response = await restClient(app, team.apiKey).post(`/envelopes/${draft.envelopeId}/documents/${draft.documentId}/place-fields`, { from: 'tags' });
        expect(response.status, JSON.stringify(response.body)).toBe(200);
        answer = response.body.payload;
      } else {
        const result = await graphqlClient(app, team.apiKey)(
          'mutation($e: ID!, $d: ID!) { placeFields(envelopeId: $e, documentId: $d, from: tags) { fields { identifier type required config } unmatched { tag reason } } }',
          { e: draft.envelopeId, d: draft.documentId },
        );
        expect(result.errors, JSON.stringify(result.errors)).toBeUndefined();
        answer = result.data.placeFields;
      }
      expect(answer.fields.map((field) => [field.identifier, field.type, field.required, field.config])).toEqual([
        ['initials-buyer', 'initials', false, { allowTyped: true, allowDrawn: true }],
        ['date-signed-buyer', 'date_signed', false, { format: 'DD.MM.YYYY', timeZone: 'UTC' }],
        ['full-name-buyer', 'full_name', false, {}],
        ['buyer-mail', 'email', false, {}],
        ['date-buyer', 'date', true, { format: 'D MMMM YYYY' }],
        ['price', 'number', false, { decimals: 2 }],
        [
          'plan',
          'dropdown',
          false,
          {
            options: [
              { value: 'a', label: 'a' },
              { value: 'b', label: 'b' },
              { value: 'c', label: 'c' },
            ],
          },
        ],
      ]);
      expect(answer.unmatched.map((entry) => [entry.tag, entry.reason])).toEqual([
        ['{{number;role=buyer;decimals=9}}', '"decimals" must be a whole number from 0 to 6'],
        ['{{dropdown;role=buyer}}', 'a dropdown tag needs options=A|B'],
        ['{{date;role=buyer;decimals=2}}', '"decimals" applies to number tags only'],
        ['{{signed;role=buyer;format=YY}}', '"format" must be one of YYYY-MM-DD, DD.MM.YYYY, MM/DD/YYYY, D MMMM YYYY'],
      ]);
    }
  });
});

describe('the PDF’s own choice fields', () => {
  it('a combo box and a single-selection list become dropdowns with their options and selection; a multiple-selection list is listed', async () => {
    const pdf = await PDFDocument.create();
    const page = pdf.addPage([595, 842]);
    const form = pdf.getForm();
    const plan = form.createDropdown('buyer.plan');
    plan.addOptions(['Monthly', 'Yearly']);
    plan.select('Yearly');
    plan.addToPage(page, { x: 100, y: 700, width: 150, height: 20 });
    const size = form.createOptionList('buyer.size');
    size.addOptions(['S', 'M', 'L']);
    size.addToPage(page, { x: 100, y: 600, width: 150, height: 60 });
    const extras = form.createOptionList('buyer.extras');
    extras.addOptions(['Wifi', 'Parking']);
    extras.enableMultiselect();
    extras.addToPage(page, { x: 100, y: 500, width: 150, height: 40 });
    const draft = await draftWith(await pdf.save());
    const response = await restClient(app, team.apiKey).post(`/envelopes/${draft.envelopeId}/documents/${draft.documentId}/place-fields`, {
      from: 'acroform',
      roles: { '*': draft.buyerId },
    });
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    const { fields, unmatched } = response.body.payload;
    const byIdentifier = new Map(fields.map((field: any) => [field.identifier, field]));
    expect(byIdentifier.get('buyer.plan')).toMatchObject({
      type: 'dropdown',
      config: {
        options: [
          { value: 'Monthly', label: 'Monthly' },
          { value: 'Yearly', label: 'Yearly' },
        ],
      },
      value: { selected: 'Yearly' },
    });
    expect(byIdentifier.get('buyer.size')).toMatchObject({
      type: 'dropdown',
      config: {
        options: [
          { value: 'S', label: 'S' },
          { value: 'M', label: 'M' },
          { value: 'L', label: 'L' },
        ],
      },
      value: null,
    });
    expect(unmatched).toEqual([{ tag: 'buyer.extras', page: 0, reason: 'not a text, checkbox, radio group, choice (single selection) or signature field' }]);
  });
});

describe('bulk send CSV prefill of the new types', () => {
  async function orderTemplate() {
    const rest = restClient(app, team.apiKey);
    const templateId = (await rest.post('/templates', { name: 'Order form' })).body.payload.templateId;
    const document = (await uploadTemplateDocument(app, team.apiKey, templateId, { bytes: await pdfWithLines(['Order']) })).body.payload.document;
    const role = (await rest.post(`/templates/${templateId}/recipients`, { recipient: { type: 'signer', identifier: 'buyer', roleName: 'Buyer', order: 1 } })).body.payload.recipient;
    const view = (y: number) => [{ documentId: document.id, page: 0, location: { x: 40, y }, size: { width: 120, height: 20 } }];
    const created = await rest.post(`/templates/${templateId}/fields`, {
      fields: [
        { type: 'simple_signature', recipientId: role.id, identifier: 'signature', views: view(40) },
        { type: 'number', recipientId: role.id, identifier: 'quantity', config: { decimals: 1 }, views: view(80) },
        { type: 'date', recipientId: role.id, identifier: 'start', views: view(120) },
        {
          type: 'dropdown',
          recipientId: role.id,
          identifier: 'plan',
          config: {
            options: [
              { value: 'm', label: 'Monthly' },
              { value: 'y', label: 'Yearly' },
            ],
          },
          views: view(160),
        },
        { type: 'initials', recipientId: role.id, identifier: 'initials', views: view(200) },
        { type: 'full_name', recipientId: role.id, identifier: 'name', views: view(240) },
      ],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    return templateId;
  }

  async function postCsv(templateId: string, text: string) {
    const form = new FormData();
    form.append('csv', new Blob([Buffer.from(text, 'utf8')], { type: 'text/csv' }), 'rows.csv');
    const response = await fetch(`${app.url}/api/v1/key/templates/${templateId}/bulk-sends`, { method: 'POST', headers: { 'x-service-api-key': team.apiKey }, body: form });
    return { status: response.status, body: (await response.json()) as any };
  }

  it('reads field.<identifier> cells as each type’s value, and refuses what does not fit by row and path', async () => {
    const templateId = await orderTemplate();
    const accepted = await postCsv(templateId, 'buyer.name,buyer.email,field.quantity,field.start,field.plan,field.initials\nAda,ada@example.com, 2.5 ,2027-03-04,y,AL\n');
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
    const [row] = await app.orm.em.fork().execute<{ input: any }[]>('select input from bulk_send_row where bulk_send_id = ?', [accepted.body.payload.bulkSendId]);
    expect(row!.input.values).toEqual({ quantity: { number: 2.5 }, start: { date: '2027-03-04' }, plan: { selected: 'y' }, initials: { kind: 'typed', text: 'AL', font: 'cursive' } });
    const refused = await postCsv(
      templateId,
      'buyer.name,buyer.email,field.quantity,field.start,field.plan,field.name\nAda,ada@example.com,2.25,2027-02-30,Yearly,Someone\nBo,bo@example.com,lots,,,\n',
    );
    expect(refused.status).toBe(400);
    const issues = refused.body.error.context.rows.map((entry: any) => [entry.index, entry.issues.map((issue: any) => [issue.path, issue.message])]);
    expect(issues).toEqual([
      [
        0,
        [
          ['values.quantity.number', "must have at most 1 decimal (the field's decimals; got 2)"],
          ['values.start.date', 'must be a calendar date written YYYY-MM-DD'],
          ['values.plan.selected', 'must be one of the field\'s option values: "m", "y"'],
          ['values.name', 'is filled by the service with the name of the person who completes the role; send no value'],
        ],
      ],
      [1, [['values.quantity.number', 'must be a finite number, not a string']]],
    ]);
  });
});
