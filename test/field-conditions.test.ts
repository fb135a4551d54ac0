/**
 * Conditions on fields (issue 32, `visibleWhen`): checked on write (shape, what they name, the
 * signing order, cycles) on both faces and for templates alike; applied at submit (a hidden field
 * is not required, a value sent for it is dropped and the trail says so), including conditions on
 * an earlier recipient's field.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDraftWithDocumentAndSigner } from './helpers/envelopes.ts';
import { firstErrorName, type GraphQLResult, graphqlClient, type RestResult, restClient, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { buildEnvelope, SUBMIT_MUTATION, signingClient, tokenFor, typedSignature } from './helpers/signing.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app.close();
});

const fieldSelection = 'id identifier type required value visibleWhen';
const createFieldsMutation = `mutation($envelopeId: ID!, $fields: [FieldInput!]!) { createFields(envelopeId: $envelopeId, fields: $fields) { ${fieldSelection} } }`;
const updateFieldMutation = `mutation($envelopeId: ID!, $fieldId: ID!, $input: UpdateFieldInput!) { updateField(envelopeId: $envelopeId, fieldId: $fieldId, input: $input) { ${fieldSelection} } }`;

async function newDraft() {
  const team = await seedTeam(app);
  const draft = await createDraftWithDocumentAndSigner(app, team.apiKey);
  return { ...draft, team, rest: restClient(app, team.apiKey), graphql: graphqlClient(app, team.apiKey) };
}

function field(target: { signerId: string; documentId: string }, type: string, identifier: string, extra: Record<string, unknown> = {}) {
  return { type, recipientId: target.signerId, identifier, views: [{ documentId: target.documentId, page: 0, location: { x: 50, y: 50 }, size: { width: 120, height: 30 } }], ...extra };
}

function restIssues(response: RestResult) {
  expect(response.status, JSON.stringify(response.body)).toBe(400);
  expect(response.body.error.name).toBe('Request.Invalid');
  return response.body.error.context.issues as { path: string; message: string }[];
}
function graphqlIssues(result: GraphQLResult) {
  expect(firstErrorName(result)).toBe('Request.Invalid');
  return result.errors![0].extensions.context.issues as { path: string; message: string }[];
}

const COMPANY_SECTION = { all: [{ field: 'for-company', is: 'checked' }] };

describe('visibleWhen, written', () => {
  it('is stored and read on both faces; null clears it', async () => {
    const draft = await newDraft();
    const seatsVisibleWhen = { all: [{ field: 'company', is: 'filled' }], any: [{ field: 'for-company', is: 'equal', value: true }] };
    const fields = [
      field(draft, 'checkbox', 'for-company'),
      field(draft, 'text', 'company', { visibleWhen: COMPANY_SECTION }),
      field(draft, 'number', 'seats', { visibleWhen: seatsVisibleWhen }),
    ];
    const created = await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, { fields });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    // A batch is answered in request order and listed by identifier.
    expect(created.body.payload.fields.map((entry: any) => entry.visibleWhen)).toEqual([null, COMPANY_SECTION, seatsVisibleWhen]);
    const read = await draft.graphql(`query($id: ID!) { envelope(id: $id) { fields { ${fieldSelection} } } }`, { id: draft.envelopeId });
    expect(read.data.envelope.fields.map((entry: any) => [entry.identifier, entry.visibleWhen])).toEqual([
      ['company', COMPANY_SECTION],
      ['for-company', null],
      ['seats', seatsVisibleWhen],
    ]);
    const company = created.body.payload.fields[1];
    const cleared = await draft.graphql(updateFieldMutation, { envelopeId: draft.envelopeId, fieldId: company.id, input: { visibleWhen: null } });
    expect(cleared.errors, JSON.stringify(cleared.errors)).toBeUndefined();
    expect(cleared.data.updateField.visibleWhen).toBeNull();
    const again = await draft.rest.patch(`/envelopes/${draft.envelopeId}/fields/${company.id}`, { field: { visibleWhen: COMPANY_SECTION } });
    expect(again.body.payload.field.visibleWhen).toEqual(COMPANY_SECTION);
  });

  it('refuses a malformed visibleWhen, each problem at its path, on both faces', async () => {
    const draft = await newDraft();
    const many = Array.from({ length: 21 }, () => ({ field: 'box', is: 'checked' }));
    const fields = [
      field(draft, 'checkbox', 'box'),
      field(draft, 'text', 'a', { visibleWhen: {} }),
      field(draft, 'text', 'b', { visibleWhen: { all: [{ field: 'box', is: 'ticked' }], none: [] } }),
      field(draft, 'text', 'c', {
        visibleWhen: {
          any: [
            { field: 'box', is: 'equal' },
            { field: 'box', is: 'checked', value: true },
          ],
        },
      }),
      field(draft, 'text', 'd', { visibleWhen: { all: many } }),
      field(draft, 'text', 'e', { visibleWhen: { all: [] } }),
    ];
    const expected = [
      { path: 'fields[1].visibleWhen', message: 'must have all, any or both (or be null: always shown)' },
      { path: 'fields[2].visibleWhen.all[0].is', message: 'must be one of "checked", "unchecked", "filled", "empty", "equal", "not_equal", "greater", "less"' },
      { path: 'fields[2].visibleWhen.none', message: 'unknown key; allowed keys are all, any' },
      { path: 'fields[3].visibleWhen.any[0].value', message: 'is required: "equal" compares the field with it' },
      { path: 'fields[3].visibleWhen.any[1].value', message: 'must be left out: "checked" compares with nothing' },
      { path: 'fields[4].visibleWhen.all', message: 'must have at most 20 items' },
      { path: 'fields[5].visibleWhen.all', message: 'must have at least 1 item' },
    ];
    const sorted = (issues: { path: string; message: string }[]) => [...issues].sort((x, y) => x.path.localeCompare(y.path));
    expect(sorted(restIssues(await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, { fields })))).toEqual(expected);
    expect(sorted(graphqlIssues(await draft.graphql(createFieldsMutation, { envelopeId: draft.envelopeId, fields })))).toEqual(expected);
  });

  it('refuses unknown identifiers, tests and values that do not fit the named field, and cycles, on both faces, writing nothing', async () => {
    const draft = await newDraft();
    const fields = [
      field(draft, 'number', 'amount'),
      field(draft, 'date', 'start'),
      field(draft, 'text', 'a', {
        visibleWhen: {
          all: [
            { field: 'nothing', is: 'filled' },
            { field: 'constructor', is: 'filled' },
          ],
        },
      }),
      field(draft, 'text', 'b', { visibleWhen: { all: [{ field: 'amount', is: 'checked' }] } }),
      field(draft, 'text', 'c', {
        visibleWhen: {
          all: [
            { field: 'amount', is: 'greater', value: '100' },
            { field: 'start', is: 'less', value: '1 March' },
          ],
        },
      }),
      field(draft, 'text', 'd', { visibleWhen: { all: [{ field: 'e', is: 'filled' }] } }),
      field(draft, 'text', 'e', { visibleWhen: { any: [{ field: 'd', is: 'empty' }] } }),
    ];
    const expected = [
      { path: 'fields[2].visibleWhen.all[0].field', message: 'names "nothing", which is not a field of this envelope' },
      { path: 'fields[2].visibleWhen.all[1].field', message: 'names "constructor", which is not a field of this envelope' },
      { path: 'fields[3].visibleWhen.all[0].is', message: 'cannot test a number field with "checked"; it may test "filled", "empty", "equal", "not_equal", "greater", "less"' },
      { path: 'fields[4].visibleWhen.all[0].value', message: 'must be a number: the number field is compared as a number' },
      { path: 'fields[4].visibleWhen.all[1].value', message: 'must be a date written YYYY-MM-DD: the date field is compared as a date' },
      { path: 'fields[5].visibleWhen', message: 'is circular: d → e → d' },
    ];
    expect(restIssues(await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, { fields }))).toEqual(expected);
    expect(graphqlIssues(await draft.graphql(createFieldsMutation, { envelopeId: draft.envelopeId, fields }))).toEqual(expected);
    expect((await draft.rest.get(`/envelopes/${draft.envelopeId}/fields`)).body.payload.fields).toEqual([]);
  });

  it('may name a field of an earlier recipient, not of one who signs at the same time or later', async () => {
    const draft = await newDraft();
    const later = (
      await draft.rest.post(`/envelopes/${draft.envelopeId}/recipients`, {
        recipient: { type: 'signer', identifier: 'seller', roleName: 'Seller', order: 2, agents: [{ info: { name: 'Sam', email: 'sam@example.com' } }] },
      })
    ).body.payload.recipient;
    const same = (
      await draft.rest.post(`/envelopes/${draft.envelopeId}/recipients`, {
        recipient: { type: 'signer', identifier: 'witness', roleName: 'Witness', order: 1, agents: [{ info: { name: 'Wim', email: 'wim@example.com' } }] },
      })
    ).body.payload.recipient;
    const sellerTarget = { signerId: later.id, documentId: draft.documentId };
    const witnessTarget = { signerId: same.id, documentId: draft.documentId };
    const created = await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, {
      fields: [field(draft, 'checkbox', 'for-company'), field(sellerTarget, 'text', 'seller-company', { visibleWhen: COMPANY_SECTION })],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const refused = await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, {
      fields: [
        field(sellerTarget, 'checkbox', 'seller-box'),
        field(draft, 'text', 'x', { visibleWhen: { all: [{ field: 'seller-box', is: 'checked' }] } }),
        field(witnessTarget, 'text', 'y', { visibleWhen: COMPANY_SECTION }),
      ],
    });
    expect(restIssues(refused)).toEqual([
      { path: 'fields[1].visibleWhen.all[0].field', message: 'names "seller-box", a field of a recipient who does not sign before this field\'s recipient (order 2, not below 1)' },
      { path: 'fields[2].visibleWhen.all[0].field', message: 'names "for-company", a field of a recipient who does not sign before this field\'s recipient (order 1, not below 1)' },
    ]);
  });

  it('a recipient’s order may not change, nor the recipient go, so that a condition names what is not there first', async () => {
    const draft = await newDraft();
    const seller = (
      await draft.rest.post(`/envelopes/${draft.envelopeId}/recipients`, {
        recipient: { type: 'signer', identifier: 'seller', roleName: 'Seller', order: 2, agents: [{ info: { name: 'Sam', email: 'sam@example.com' } }] },
      })
    ).body.payload.recipient;
    const created = await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, {
      fields: [field(draft, 'checkbox', 'for-company'), field({ signerId: seller.id, documentId: draft.documentId }, 'text', 'seller-company', { visibleWhen: COMPANY_SECTION })],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const message =
      'would break field "seller-company": its visibleWhen.all[0].field names "for-company", a field of a recipient who does not sign before this field\'s recipient (order 3, not below 2)';
    const later = await draft.rest.patch(`/envelopes/${draft.envelopeId}/recipients/${draft.signerId}`, { recipient: { order: 3 } });
    expect(restIssues(later)).toEqual([{ path: 'recipient.order', message }]);
    const earlier = await draft.graphql('mutation($e: ID!, $r: ID!, $input: UpdateRecipientInput!) { updateRecipient(envelopeId: $e, recipientId: $r, input: $input) { id order } }', {
      e: draft.envelopeId,
      r: seller.id,
      input: { order: 1 },
    });
    expect(graphqlIssues(earlier)).toEqual([
      {
        path: 'recipient.order',
        message:
          'would break field "seller-company": its visibleWhen.all[0].field names "for-company", a field of a recipient who does not sign before this field\'s recipient (order 1, not below 1)',
      },
    ]);
    // An order that keeps the buyer first is fine.
    expect((await draft.rest.patch(`/envelopes/${draft.envelopeId}/recipients/${seller.id}`, { recipient: { order: 5 } })).status).toBe(200);
    const removed = await draft.rest.delete(`/envelopes/${draft.envelopeId}/recipients/${draft.signerId}`);
    expect(removed.status).toBe(409);
    expect(removed.body.error).toMatchObject({ name: 'Field.InUse', context: { identifier: 'for-company', namedBy: ['seller-company'] } });
    expect((await draft.rest.get(`/envelopes/${draft.envelopeId}/fields`)).body.payload.fields).toHaveLength(2);
  });

  it('keeps a field a condition names (Field.InUse), and applies to templates, copied by a jumpstart', async () => {
    const draft = await newDraft();
    const created = await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, {
      fields: [field(draft, 'checkbox', 'for-company'), field(draft, 'text', 'company', { visibleWhen: COMPANY_SECTION })],
    });
    const removed = await draft.rest.delete(`/envelopes/${draft.envelopeId}/fields/${created.body.payload.fields[0].id}`);
    expect(removed.status).toBe(409);
    expect(removed.body.error).toMatchObject({ name: 'Field.InUse', context: { identifier: 'for-company', namedBy: ['company'] } });
    // A template: the same rules, and a jumpstart copies the conditions.
    const rest = draft.rest;
    const templateId = (await rest.post('/templates', { name: 'NDA' })).body.payload.templateId;
    const { uploadTemplateDocument } = await import('./helpers/templates.ts');
    const { makePdf } = await import('./fixtures/pdfs.ts');
    const document = (await uploadTemplateDocument(app, draft.team.apiKey, templateId, { bytes: await makePdf({ pages: 1 }) })).body.payload.document;
    const role = (await rest.post(`/templates/${templateId}/recipients`, { recipient: { type: 'signer', identifier: 'buyer', roleName: 'Buyer', order: 1 } })).body.payload.recipient;
    const target = { signerId: role.id, documentId: document.id };
    const refused = await rest.post(`/templates/${templateId}/fields`, { fields: [field(target, 'text', 'company', { visibleWhen: COMPANY_SECTION })] });
    expect(restIssues(refused)).toEqual([{ path: 'fields[0].visibleWhen.all[0].field', message: 'names "for-company", which is not a field of this template' }]);
    const templateFields = await rest.post(`/templates/${templateId}/fields`, {
      fields: [field(target, 'checkbox', 'for-company'), field(target, 'text', 'company', { visibleWhen: COMPANY_SECTION })],
    });
    expect(templateFields.status, JSON.stringify(templateFields.body)).toBe(200);
    const jumpstarted = await rest.post(`/envelopes/jumpstart/${templateId}`, { recipients: [{ identifier: 'buyer', agents: [{ info: { name: 'Ada', email: 'ada@example.com' } }] }] });
    const copied = (await rest.get(`/envelopes/${jumpstarted.body.payload.envelopeId}/fields`)).body.payload.fields;
    expect(copied.map((entry: any) => [entry.identifier, entry.visibleWhen])).toEqual([
      ['company', COMPANY_SECTION],
      ['for-company', null],
    ]);
  });
});

describe('visibleWhen, at submit', () => {
  it('a hidden field is not required, a value sent for it is dropped and recorded; shown, it is required again', async () => {
    const team = await seedTeam(app);
    const built = await buildEnvelope(app, team.apiKey, {
      recipients: [
        {
          identifier: 'buyer',
          fields: [
            { identifier: 'signature', required: true },
            { identifier: 'for-company', type: 'checkbox', required: false },
            { identifier: 'company', type: 'text', required: true, visibleWhen: COMPANY_SECTION },
          ],
        },
      ],
    });
    expect((await restClient(app, team.apiKey).put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
    const client = signingClient(app, await tokenFor(app, built.envelopeId, built.recipients.buyer));
    const valueOf = (result: GraphQLResult, identifier: string) => result.data.submitSigning.fields.find((entry: any) => entry.identifier === identifier).value;
    // Not ticked: the company is hidden; a value sent for it is not kept.
    const sent = await client(SUBMIT_MUTATION, {
      values: [
        { fieldId: built.fields.company, value: { text: 'ACME' } },
        { fieldId: built.fields.signature, value: typedSignature },
      ],
    });
    expect(sent.errors, JSON.stringify(sent.errors)).toBeUndefined();
    expect(valueOf(sent, 'company')).toBeNull();
    // Hidden, the required company is not among what the signer still has to give.
    expect(sent.data.submitSigning.requiredFieldIds).toEqual([]);
    const events = (await restClient(app, team.apiKey).get(`/envelopes/${built.envelopeId}/audit`)).body.payload.events;
    const submitted = events.filter((event: any) => event.type === 'field.submitted').at(-1);
    expect(JSON.stringify(submitted)).toContain('droppedAsHidden');
    expect(submitted.details?.droppedAsHidden ?? submitted.data?.droppedAsHidden).toEqual([{ fieldId: built.fields.company, identifier: 'company', type: 'text' }]);
    // Ticked: the company shows, and being required it blocks completion until filled.
    const ticked = await client(SUBMIT_MUTATION, { values: [{ fieldId: built.fields['for-company'], value: { checked: true } }], complete: true });
    expect(firstErrorName(ticked)).toBe('Signing.RequiredFieldsMissing');
    expect(ticked.errors![0].extensions.context.fieldIds).toEqual([built.fields.company]);
    // Unticked again, the hidden required field no longer blocks completion.
    const done = await client(SUBMIT_MUTATION, { values: [{ fieldId: built.fields['for-company'], value: { checked: false } }], complete: true });
    expect(done.errors, JSON.stringify(done.errors)).toBeUndefined();
    expect(done.data.submitSigning.recipient.completedAt).not.toBeNull();
  });

  it('a condition on an earlier recipient’s field decides what the later recipient must fill', async () => {
    const team = await seedTeam(app);
    const built = await buildEnvelope(app, team.apiKey, {
      recipients: [
        {
          identifier: 'buyer',
          order: 1,
          fields: [
            { identifier: 'buyer-signature', required: true },
            { identifier: 'for-company', type: 'checkbox', required: false },
          ],
        },
        {
          identifier: 'seller',
          order: 2,
          fields: [
            { identifier: 'seller-signature', required: true },
            { identifier: 'vat-number', type: 'text', required: true, visibleWhen: COMPANY_SECTION },
          ],
        },
      ],
    });
    expect((await restClient(app, team.apiKey).put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
    const buyer = signingClient(app, await tokenFor(app, built.envelopeId, built.recipients.buyer));
    const bought = await buyer(SUBMIT_MUTATION, {
      values: [
        { fieldId: built.fields['buyer-signature'], value: typedSignature },
        { fieldId: built.fields['for-company'], value: { checked: true } },
      ],
      complete: true,
    });
    expect(bought.errors, JSON.stringify(bought.errors)).toBeUndefined();
    const seller = signingClient(app, await tokenFor(app, built.envelopeId, built.recipients.seller));
    const blocked = await seller(SUBMIT_MUTATION, { values: [{ fieldId: built.fields['seller-signature'], value: typedSignature }], complete: true });
    expect(firstErrorName(blocked)).toBe('Signing.RequiredFieldsMissing');
    expect(blocked.errors![0].extensions.context.fieldIds).toEqual([built.fields['vat-number']]);
    const sold = await seller(SUBMIT_MUTATION, {
      values: [
        { fieldId: built.fields['seller-signature'], value: typedSignature },
        { fieldId: built.fields['vat-number'], value: { text: 'TR123' } },
      ],
      complete: true,
    });
    expect(sold.errors, JSON.stringify(sold.errors)).toBeUndefined();
  });
});
