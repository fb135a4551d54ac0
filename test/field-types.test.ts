/**
 * The field types of issue 32 (initials, date_signed, full_name, email, date, number, dropdown,
 * formula): configs with their defaults and refusals, values, the references between formulas, on
 * both faces and for envelopes and templates alike; the service filling and computing values at
 * submit and completion.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makePdf } from './fixtures/pdfs.ts';
import { createDraftWithDocumentAndSigner } from './helpers/envelopes.ts';
import { firstErrorName, type GraphQLResult, graphqlClient, type RestResult, restClient, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { buildEnvelope, SESSION_QUERY, SUBMIT_MUTATION, signingClient, tokenFor } from './helpers/signing.ts';
import { uploadTemplateDocument } from './helpers/templates.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app.close();
});

const fieldSelection = 'id identifier type required readonly value config';
const createFieldsMutation = `mutation($envelopeId: ID!, $fields: [FieldInput!]!) { createFields(envelopeId: $envelopeId, fields: $fields) { ${fieldSelection} } }`;
const createTemplateFieldsMutation = `mutation($templateId: ID!, $fields: [FieldInput!]!) { createTemplateFields(templateId: $templateId, fields: $fields) { ${fieldSelection} } }`;
const updateFieldMutation = `mutation($envelopeId: ID!, $fieldId: ID!, $input: UpdateFieldInput!) { updateField(envelopeId: $envelopeId, fieldId: $fieldId, input: $input) { ${fieldSelection} } }`;
const deleteFieldMutation = 'mutation($envelopeId: ID!, $fieldId: ID!) { deleteField(envelopeId: $envelopeId, fieldId: $fieldId) { id deleted } }';

async function newDraft() {
  const team = await seedTeam(app);
  const draft = await createDraftWithDocumentAndSigner(app, team.apiKey);
  return { ...draft, team, rest: restClient(app, team.apiKey), graphql: graphqlClient(app, team.apiKey) };
}

function field(draft: { signerId: string; documentId: string }, type: string, identifier: string, extra: Record<string, unknown> = {}) {
  return { type, recipientId: draft.signerId, identifier, views: [{ documentId: draft.documentId, page: 0, location: { x: 50, y: 50 }, size: { width: 120, height: 30 } }], ...extra };
}

function restIssues(response: RestResult): { path: string; message: string }[] {
  expect(response.status, JSON.stringify(response.body)).toBe(400);
  expect(response.body.error.name).toBe('Request.Invalid');
  return response.body.error.context.issues;
}
function graphqlIssues(result: GraphQLResult): { path: string; message: string }[] {
  expect(firstErrorName(result)).toBe('Request.Invalid');
  return result.errors![0].extensions.context.issues;
}

/** One field of each new type, with configs (some left to their defaults) and values where a sender may give one. */
function newTypesInput(draft: { signerId: string; documentId: string }) {
  return [
    field(draft, 'initials', 'initials', { value: { kind: 'typed', text: 'AL' } }),
    field(draft, 'date_signed', 'signed-on', { config: { format: 'D MMMM YYYY', timeZone: 'Europe/Istanbul' } }),
    field(draft, 'full_name', 'name'),
    field(draft, 'email', 'email'),
    field(draft, 'date', 'start', { config: { format: 'DD.MM.YYYY', min: '2027-01-01', max: '2027-12-31' }, value: { date: '2027-03-01' } }),
    field(draft, 'number', 'quantity', { config: { min: 1, max: 100 }, value: { number: 3 } }),
    field(draft, 'number', 'price', { config: { decimals: 2, prefix: '€ ' }, value: { number: 19.99 } }),
    field(draft, 'dropdown', 'vat', {
      config: {
        options: [
          { value: '0', label: 'No VAT' },
          { value: '20', label: 'VAT 20%' },
        ],
        placeholder: 'Choose',
      },
      value: { selected: '20' },
    }),
    field(draft, 'formula', 'total', { config: { expression: 'quantity * price * (1 + vat / 100)', suffix: ' EUR' } }),
  ];
}

/** The configs as every read answers them: defaults filled in. */
const EXPECTED_CONFIGS: Record<string, Record<string, unknown>> = {
  initials: { allowTyped: true, allowDrawn: true },
  'signed-on': { format: 'D MMMM YYYY', timeZone: 'Europe/Istanbul' },
  name: {},
  email: {},
  start: { format: 'DD.MM.YYYY', min: '2027-01-01', max: '2027-12-31' },
  quantity: { min: 1, max: 100, decimals: 0 },
  price: { decimals: 2, prefix: '€ ' },
  vat: {
    options: [
      { value: '0', label: 'No VAT' },
      { value: '20', label: 'VAT 20%' },
    ],
    placeholder: 'Choose',
  },
  total: { expression: 'quantity * price * (1 + vat / 100)', decimals: 2, suffix: ' EUR' },
};

function expectNewTypes(fields: { identifier: string; type: string; config: unknown; value: unknown; readonly: boolean; required: boolean }[]) {
  const byIdentifier = new Map(fields.map((entry) => [entry.identifier, entry]));
  for (const [identifier, config] of Object.entries(EXPECTED_CONFIGS)) expect(byIdentifier.get(identifier)?.config, identifier).toEqual(config);
  expect(byIdentifier.get('initials')?.value).toEqual({ kind: 'typed', text: 'AL', font: 'cursive' });
  expect(byIdentifier.get('total')?.value).toBeNull();
  expect(byIdentifier.get('signed-on')?.value).toBeNull();
  expect(byIdentifier.get('vat')?.type).toBe('dropdown');
  expect([...byIdentifier.values()].every((entry) => entry.required === false)).toBe(true);
}

describe('the new field types, written', () => {
  it('are created through REST with their defaults filled in, and read the same on both faces', async () => {
    const draft = await newDraft();
    const created = await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, { fields: newTypesInput(draft) });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expectNewTypes(created.body.payload.fields);
    const read = await draft.rest.get(`/envelopes/${draft.envelopeId}?includeFields=true`);
    expectNewTypes(read.body.payload.fields);
    const graphqlRead = await draft.graphql(`query($id: ID!) { envelope(id: $id) { fields { ${fieldSelection} } } }`, { id: draft.envelopeId });
    expect(graphqlRead.errors).toBeUndefined();
    expectNewTypes(graphqlRead.data.envelope.fields);
  });

  it('are created through GraphQL createFields, the enum naming each type', async () => {
    const draft = await newDraft();
    const created = await draft.graphql(createFieldsMutation, { envelopeId: draft.envelopeId, fields: newTypesInput(draft) });
    expect(created.errors, JSON.stringify(created.errors)).toBeUndefined();
    expectNewTypes(created.data.createFields);
  });

  it('are template fields alike, on both faces', async () => {
    const team = await seedTeam(app);
    const rest = restClient(app, team.apiKey);
    const templateId = (await rest.post('/templates', { name: 'Order form' })).body.payload.templateId;
    const document = (await uploadTemplateDocument(app, team.apiKey, templateId, { bytes: await makePdf({ pages: 1 }) })).body.payload.document;
    const role = (await rest.post(`/templates/${templateId}/recipients`, { recipient: { type: 'signer', identifier: 'buyer', roleName: 'Buyer', order: 1 } })).body.payload.recipient;
    const target = { signerId: role.id, documentId: document.id };
    const created = await rest.post(`/templates/${templateId}/fields`, { fields: newTypesInput(target) });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expectNewTypes(created.body.payload.fields);
    // The same references are refused in a template as in an envelope.
    const broken = await graphqlClient(app, team.apiKey)(createTemplateFieldsMutation, { templateId, fields: [field(target, 'formula', 'bad', { config: { expression: 'nothing + 1' } })] });
    expect(graphqlIssues(broken)).toEqual([{ path: 'fields[0].config.expression', message: 'names "nothing", which is not a field of this template' }]);
    // A jumpstart copies them into the envelope as they are.
    const jumpstarted = await rest.post(`/envelopes/jumpstart/${templateId}`, { recipients: [{ identifier: 'buyer', agents: [{ info: { name: 'Ada Buyer', email: 'ada@example.com' } }] }] });
    expect(jumpstarted.status, JSON.stringify(jumpstarted.body)).toBe(200);
    expectNewTypes((await rest.get(`/envelopes/${jumpstarted.body.payload.envelopeId}?includeFields=true`)).body.payload.fields);
  });

  it('refuse bad configs with every problem at its path, unknown keys included, on both faces, writing nothing', async () => {
    const draft = await newDraft();
    const fields = [
      field(draft, 'initials', 'a', { config: { allowTyped: false, allowDrawn: false } }),
      field(draft, 'date_signed', 'b', { config: { format: 'DD/MM/YY', timeZone: 'Mars/Olympus', colour: 'red' } }),
      field(draft, 'full_name', 'c', { config: { uppercase: true } }),
      field(draft, 'date', 'd', { config: { min: '2027-02-30', max: '2026-01-01' } }),
      field(draft, 'number', 'e', { config: { min: 10, max: 1, decimals: 7 } }),
      field(draft, 'dropdown', 'f', { config: { options: [{ value: 'x', label: 'X' }] } }),
      field(draft, 'dropdown', 'g', {
        config: {
          options: [
            { value: 'x', label: 'X' },
            { value: 'x', label: 'Y' },
          ],
        },
      }),
      field(draft, 'formula', 'h', { config: {} }),
      field(draft, 'formula', 'i', { config: { expression: `${'('.repeat(65)}1${')'.repeat(65)}` } }),
      field(draft, 'number', 'j', { config: { min: 1, max: 9 } }),
    ];
    const expected = [
      { path: 'fields[0].config', message: 'allowTyped and allowDrawn cannot both be false: the signer would have no way to sign' },
      { path: 'fields[1].config.format', message: 'must be one of "YYYY-MM-DD", "DD.MM.YYYY", "MM/DD/YYYY", "D MMMM YYYY"' },
      { path: 'fields[1].config.timeZone', message: 'must be an IANA time zone name such as "Europe/Istanbul" or "UTC" (this one is unknown)' },
      { path: 'fields[1].config.colour', message: 'unknown key; allowed keys are format, timeZone' },
      { path: 'fields[2].config.uppercase', message: 'unknown key; full_name fields take no configuration (send {})' },
      { path: 'fields[3].config.min', message: 'must be a calendar date written YYYY-MM-DD' },
      { path: 'fields[4].config.decimals', message: 'must be at most 6' },
      { path: 'fields[4].config.max', message: 'must not be less than min (10)' },
      { path: 'fields[5].config.options', message: 'must have at least 2 items' },
      { path: 'fields[6].config.options[1].value', message: 'must be unique; options[0] already has the value "x"' },
      { path: 'fields[7].config.expression', message: 'is required' },
      { path: 'fields[8].config.expression', message: 'nests deeper than 64 levels' },
    ].sort((a, b) => a.path.localeCompare(b.path));
    const sorted = (issues: { path: string; message: string }[]) => [...issues].sort((a, b) => a.path.localeCompare(b.path));
    expect(sorted(restIssues(await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, { fields })))).toEqual(expected);
    expect(sorted(graphqlIssues(await draft.graphql(createFieldsMutation, { envelopeId: draft.envelopeId, fields })))).toEqual(expected);
    expect((await draft.rest.get(`/envelopes/${draft.envelopeId}/fields`)).body.payload.fields).toEqual([]);
  });

  it('refuse values that do not fit, and any value for the fields the service fills or computes', async () => {
    const draft = await newDraft();
    const fields = [
      field(draft, 'initials', 'a', { value: { kind: 'typed', text: 'ABCDEFGHI' } }),
      field(draft, 'date_signed', 'b', { value: { date: '2027-01-01' } }),
      field(draft, 'full_name', 'c', { value: { text: 'Someone Else' } }),
      field(draft, 'email', 'd', { value: { text: 'x@example.com' } }),
      field(draft, 'date', 'e', { config: { min: '2027-01-01' }, value: { date: '2026-12-31' } }),
      field(draft, 'date', 'f', { value: { date: '2027-02-29' } }),
      field(draft, 'number', 'g', { value: { number: 1.5 } }),
      field(draft, 'number', 'h', { config: { decimals: 2, max: 10 }, value: { number: 10.001 } }),
      field(draft, 'dropdown', 'i', {
        config: {
          options: [
            { value: 'x', label: 'X' },
            { value: 'y', label: 'Y' },
          ],
        },
        value: { selected: 'X' },
      }),
      field(draft, 'formula', 'j', { config: { expression: '1 + 1' }, value: { number: 2 } }),
      field(draft, 'number', 'k', { value: { number: '3' } }),
    ];
    const issues = restIssues(await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, { fields }));
    expect(issues).toEqual(
      expect.arrayContaining([
        { path: 'fields[0].value.text', message: 'must be at most 8 characters' },
        { path: 'fields[1].value', message: 'is filled by the service with the date the recipient completes; send no value' },
        { path: 'fields[2].value', message: 'is filled by the service with the name of the person who completes the role; send no value' },
        { path: 'fields[3].value', message: 'is filled by the service with the email address of the person who completes the role; send no value' },
        { path: 'fields[4].value.date', message: "must be on or after 2027-01-01 (the field's min)" },
        { path: 'fields[5].value.date', message: 'must be a calendar date written YYYY-MM-DD' },
        { path: 'fields[6].value.number', message: 'must be a whole number (the field has no decimals)' },
        { path: 'fields[7].value.number', message: "must have at most 2 decimals (the field's decimals; got 3)" },
        { path: 'fields[7].value.number', message: "must be at most 10 (the field's max)" },
        { path: 'fields[8].value.selected', message: 'must be one of the field\'s option values: "x", "y"' },
        { path: 'fields[9].value', message: "is computed from the field's expression; send no value" },
        { path: 'fields[10].value.number', message: 'must be a finite number, not a string' },
      ]),
    );
    expect(issues).toHaveLength(12);
  });

  it('a readonly field the service fills needs no value', async () => {
    const draft = await newDraft();
    const created = await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, {
      fields: [field(draft, 'date_signed', 'signed', { readonly: true }), field(draft, 'number', 'n', { readonly: true })],
    });
    expect(restIssues(created)).toEqual([{ path: 'fields[1].value', message: 'is required for a readonly field: the signer cannot fill it in' }]);
  });
});

describe('hostile input', () => {
  it('refuses 10,000 levels of nesting and __proto__ keys by name on both faces, writing nothing, never a 5xx', async () => {
    const draft = await newDraft();
    const deep = `${'('.repeat(10_000)}1${')'.repeat(10_000)}`;
    const fields = [
      field(draft, 'formula', 'deep', { config: { expression: deep } }),
      field(draft, 'formula', 'deep-calls', { config: { expression: `${'abs('.repeat(100)}1${')'.repeat(100)}` } }),
      // A JSON key __proto__ is an own key once parsed: refused as an unknown key, never a prototype.
      field(draft, 'number', 'proto', { config: JSON.parse('{"__proto__": {"decimals": 6}, "decimals": 1}') }),
      field(draft, 'text', 'shown', { visibleWhen: JSON.parse('{"all": [{"field": "__proto__", "is": "filled"}], "__proto__": {"any": []}}') }),
    ];
    const expected = [
      { path: 'fields[0].config.expression', message: 'is longer than 1,000 characters (got 20,001)' },
      { path: 'fields[1].config.expression', message: 'nests deeper than 64 levels' },
      { path: 'fields[2].config.__proto__', message: 'unknown key; allowed keys are min, max, decimals, prefix, suffix' },
      { path: 'fields[3].visibleWhen.all[0].field', message: 'must be the identifier of a field' },
      { path: 'fields[3].visibleWhen.__proto__', message: 'unknown key; allowed keys are all, any' },
    ];
    const sorted = (issues: { path: string; message: string }[]) => [...issues].sort((a, b) => a.path.localeCompare(b.path));
    expect(sorted(restIssues(await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, { fields })))).toEqual(sorted(expected));
    expect(sorted(graphqlIssues(await draft.graphql(createFieldsMutation, { envelopeId: draft.envelopeId, fields })))).toEqual(sorted(expected));
    expect((await draft.rest.get(`/envelopes/${draft.envelopeId}/fields`)).body.payload.fields).toEqual([]);
  });
});

describe('formula references', () => {
  it('refuse unknown identifiers, fields a formula cannot read and cycles, at config.expression, on both faces', async () => {
    const draft = await newDraft();
    const fields = [
      field(draft, 'text', 'note'),
      field(draft, 'formula', 'a', { config: { expression: 'missing + note + __proto__ + constructor' } }),
      field(draft, 'formula', 'b', { config: { expression: 'c * 2' } }),
      field(draft, 'formula', 'c', { config: { expression: 'b + 1' } }),
    ];
    const expected = [
      { path: 'fields[1].config.expression', message: 'names "missing", which is not a field of this envelope' },
      { path: 'fields[1].config.expression', message: 'names "note", a text field; a formula reads number, formula, checkbox, dropdown fields' },
      { path: 'fields[1].config.expression', message: 'names "__proto__", which is not a field of this envelope' },
      { path: 'fields[1].config.expression', message: 'names "constructor", which is not a field of this envelope' },
      { path: 'fields[2].config.expression', message: 'is circular: b → c → b' },
    ];
    expect(restIssues(await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, { fields }))).toEqual(expected);
    expect(graphqlIssues(await draft.graphql(createFieldsMutation, { envelopeId: draft.envelopeId, fields }))).toEqual(expected);
    expect((await draft.rest.get(`/envelopes/${draft.envelopeId}/fields`)).body.payload.fields).toEqual([]);
    // A formula naming itself is a cycle of one.
    const self = await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, { fields: [field(draft, 'formula', 'x', { config: { expression: 'x + 1' } })] });
    expect(restIssues(self)).toEqual([{ path: 'fields[0].config.expression', message: 'is circular: x → x' }]);
  });

  it('may name fields written earlier, and a field named constructor (an identifier cannot start with "_", so __proto__ names no field)', async () => {
    const draft = await newDraft();
    const first = await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, { fields: [field(draft, 'number', 'toString'), field(draft, 'checkbox', 'constructor')] });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    const second = await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, { fields: [field(draft, 'formula', 'sum', { config: { expression: 'toString + constructor' } })] });
    expect(second.status, JSON.stringify(second.body)).toBe(200);
  });

  it('an update may not break another formula, nor make a cycle; a named field is not removed (Field.InUse)', async () => {
    const draft = await newDraft();
    const created = await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, {
      fields: [field(draft, 'number', 'price'), field(draft, 'formula', 'total', { config: { expression: 'price * 2' } })],
    });
    const [price, total] = created.body.payload.fields;
    // Renaming the named field, or making it a text field, would leave the formula naming nothing it can read.
    const renamed = await draft.rest.patch(`/envelopes/${draft.envelopeId}/fields/${price.id}`, { field: { identifier: 'cost' } });
    expect(restIssues(renamed)).toEqual([{ path: 'field', message: 'would break field "total": its expression names "price", which is not a field of this envelope' }]);
    const retyped = await draft.graphql(updateFieldMutation, { envelopeId: draft.envelopeId, fieldId: price.id, input: { type: 'text' } });
    expect(graphqlIssues(retyped)).toEqual([
      { path: 'field', message: 'would break field "total": its expression names "price", a text field; a formula reads number, formula, checkbox, dropdown fields' },
    ]);
    const cyclic = await draft.rest.patch(`/envelopes/${draft.envelopeId}/fields/${price.id}`, { field: { type: 'formula', config: { expression: 'total / 2' } } });
    expect(restIssues(cyclic)).toEqual([{ path: 'field.config.expression', message: 'is circular: price → total → price' }]);
    const removed = await draft.rest.delete(`/envelopes/${draft.envelopeId}/fields/${price.id}`);
    expect(removed.status).toBe(409);
    expect(removed.body.error).toMatchObject({ name: 'Field.InUse', context: { identifier: 'price', namedBy: ['total'] } });
    const removedByGraphql = await draft.graphql(deleteFieldMutation, { envelopeId: draft.envelopeId, fieldId: price.id });
    expect(firstErrorName(removedByGraphql)).toBe('Field.InUse');
    const fields = (await draft.rest.get(`/envelopes/${draft.envelopeId}/fields`)).body.payload.fields;
    expect(fields.map((entry: any) => [entry.identifier, entry.type])).toEqual([
      ['price', 'number'],
      ['total', 'formula'],
    ]);
    // Nor by removing the only document it is placed on: the document stays, with both fields.
    const { uploadDocument } = await import('./helpers/envelopes.ts');
    const { makePdf } = await import('./fixtures/pdfs.ts');
    const annex = (await uploadDocument(app, draft.team.apiKey, draft.envelopeId, { bytes: await makePdf({ pages: 1 }) })).body.payload.document;
    const moved = await draft.rest.patch(`/envelopes/${draft.envelopeId}/fields/${price.id}`, {
      field: { views: [{ documentId: annex.id, page: 0, location: { x: 10, y: 10 }, size: { width: 50, height: 20 } }] },
    });
    expect(moved.status, JSON.stringify(moved.body)).toBe(200);
    const annexRemoved = await draft.rest.delete(`/envelopes/${draft.envelopeId}/documents/${annex.id}`);
    expect(annexRemoved.status).toBe(409);
    expect(annexRemoved.body.error).toMatchObject({ name: 'Field.InUse', context: { identifier: 'price', namedBy: ['total'] } });
    expect((await draft.rest.get(`/envelopes/${draft.envelopeId}/documents`)).body.payload.documents).toHaveLength(2);
    expect((await draft.rest.get(`/envelopes/${draft.envelopeId}/fields`)).body.payload.fields).toHaveLength(2);
    // The formula itself goes first, then the field it named.
    expect((await draft.rest.delete(`/envelopes/${draft.envelopeId}/fields/${total.id}`)).status).toBe(200);
    expect((await draft.rest.delete(`/envelopes/${draft.envelopeId}/fields/${price.id}`)).status).toBe(200);
  });
});

describe('at submit and completion', () => {
  async function sentOrderForm(team: Awaited<ReturnType<typeof seedTeam>>) {
    const built = await buildEnvelope(app, team.apiKey, {
      recipients: [
        {
          identifier: 'buyer',
          agents: [{ info: { name: 'Ada Buyer', email: 'ada@example.com' } }],
          fields: [
            { identifier: 'quantity', type: 'number', required: true },
            { identifier: 'price', type: 'number', required: false, config: { decimals: 2 }, value: { number: 19.99 }, readonly: true },
            {
              identifier: 'vat',
              type: 'dropdown',
              required: true,
              config: {
                options: [
                  { value: '0', label: 'None' },
                  { value: '20', label: '20%' },
                ],
              },
            },
            { identifier: 'total', type: 'formula', required: true, config: { expression: 'quantity * price * (1 + vat / 100)' } },
            { identifier: 'each', type: 'formula', required: false, config: { expression: 'total / (quantity - 3)' } },
            { identifier: 'signed-on', type: 'date_signed', required: true, config: { timeZone: 'Pacific/Kiritimati' } },
            { identifier: 'name', type: 'full_name', required: false },
            { identifier: 'email', type: 'email', required: false },
            { identifier: 'initials', type: 'initials', required: true },
          ],
        },
      ],
    });
    const sent = await restClient(app, team.apiKey).put(`/envelopes/${built.envelopeId}/send`);
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    return { ...built, token: await tokenFor(app, built.envelopeId, built.recipients.buyer) };
  }

  it('recompute formulas at every submit, leave a division by zero empty, fill date, name and email at completion', async () => {
    const team = await seedTeam(app);
    const envelope = await sentOrderForm(team);
    const client = signingClient(app, envelope.token);
    // A value for a field the service fills or computes is refused at its value, and nothing changes.
    const refused = await client(SUBMIT_MUTATION, {
      values: [
        { fieldId: envelope.fields['signed-on'], value: { date: '2020-01-01' } },
        { fieldId: envelope.fields.total, value: { number: 1 } },
      ],
    });
    expect(graphqlIssues(refused)).toEqual([
      { path: 'values[0].value', message: 'is filled by the service with the date the recipient completes; send no value' },
      { path: 'values[1].value', message: "is computed from the field's expression; send no value" },
    ]);
    const saved = await client(SUBMIT_MUTATION, {
      values: [
        { fieldId: envelope.fields.quantity, value: { number: 3 } },
        { fieldId: envelope.fields.vat, value: { selected: '20' } },
      ],
    });
    expect(saved.errors, JSON.stringify(saved.errors)).toBeUndefined();
    const valueOf = (session: any, identifier: string) => session.fields.find((entry: any) => entry.identifier === identifier).value;
    expect(valueOf(saved.data.submitSigning, 'total')).toEqual({ number: 71.96 });
    // 3 - 3 = 0: a division by zero leaves the formula empty.
    expect(valueOf(saved.data.submitSigning, 'each')).toBeNull();
    expect(valueOf(saved.data.submitSigning, 'signed-on')).toBeNull();
    // Left to give: the initials; not the date the service fills (required as it is), nor the total now computed.
    expect(saved.data.submitSigning.requiredFieldIds).toEqual([envelope.fields.initials]);
    const changed = await client(SUBMIT_MUTATION, { values: [{ fieldId: envelope.fields.quantity, value: { number: 5 } }] });
    expect(valueOf(changed.data.submitSigning, 'total')).toEqual({ number: 119.94 });
    expect(valueOf(changed.data.submitSigning, 'each')).toEqual({ number: 59.97 });
    // The date of completion in Kiritimati (UTC+14), as a signer there reads their calendar.
    const completed = await client(SUBMIT_MUTATION, { values: [{ fieldId: envelope.fields.initials, value: { kind: 'typed', text: 'AB' } }], complete: true });
    expect(completed.errors, JSON.stringify(completed.errors)).toBeUndefined();
    const now = new Date(completed.data.submitSigning.recipient.completedAt);
    const expectedDate = new Intl.DateTimeFormat('en-CA', { timeZone: 'Pacific/Kiritimati', year: 'numeric', month: '2-digit', day: '2-digit' }).format(now);
    const fields = (await restClient(app, team.apiKey).get(`/envelopes/${envelope.envelopeId}/fields`)).body.payload.fields;
    const stored = new Map(fields.map((entry: any) => [entry.identifier, entry.value]));
    expect(stored.get('signed-on')).toEqual({ date: expectedDate });
    expect(stored.get('name')).toEqual({ text: 'Ada Buyer' });
    expect(stored.get('email')).toEqual({ text: 'ada@example.com' });
    expect(stored.get('total')).toEqual({ number: 119.94 });
  });

  it('a required email field of a person without an email address stays empty and does not block completion', async () => {
    const team = await seedTeam(app);
    const built = await buildEnvelope(app, team.apiKey, {
      recipients: [
        {
          identifier: 'sam',
          agents: [{ info: { name: 'Sam Nomail', email: 'sam@example.com' } }],
          fields: [
            { identifier: 'signature', required: true },
            { identifier: 'email', type: 'email', required: true },
            { identifier: 'name', type: 'full_name', required: true },
          ],
        },
      ],
    });
    expect((await restClient(app, team.apiKey).put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
    const token = await tokenFor(app, built.envelopeId, built.recipients.sam);
    // The person as one reached some other way (by phone, embedded) is known: without an address.
    await app.orm.em
      .fork()
      .execute(`update agent set info = info - 'email', snapshot = (select jsonb_agg(person - 'email') from jsonb_array_elements(snapshot) person) where recipient_id = ?`, [
        built.recipients.sam,
      ]);
    const client = signingClient(app, token);
    const completed = await client(SUBMIT_MUTATION, { values: [{ fieldId: built.fields.signature, value: { kind: 'typed', text: 'Sam' } }], complete: true });
    expect(completed.errors, JSON.stringify(completed.errors)).toBeUndefined();
    const fields = (await restClient(app, team.apiKey).get(`/envelopes/${built.envelopeId}/fields`)).body.payload.fields;
    expect(new Map(fields.map((entry: any) => [entry.identifier, entry.value]))).toEqual(
      new Map<string, unknown>([
        ['signature', { kind: 'typed', text: 'Sam', font: 'cursive' }],
        ['email', null],
        ['name', { text: 'Sam Nomail' }],
      ]),
    );
  });

  it('a required formula left empty blocks completion by name', async () => {
    const team = await seedTeam(app);
    const envelope = await sentOrderForm(team);
    const client = signingClient(app, envelope.token);
    // No quantity: the total is empty, and it is required.
    const result = await client(SUBMIT_MUTATION, {
      values: [
        { fieldId: envelope.fields.vat, value: { selected: '0' } },
        { fieldId: envelope.fields.initials, value: { kind: 'typed', text: 'AB' } },
      ],
      complete: true,
    });
    expect(firstErrorName(result)).toBe('Signing.RequiredFieldsMissing');
    expect(result.errors![0].extensions.context.fieldIds).toEqual(expect.arrayContaining([envelope.fields.quantity, envelope.fields.total]));
    const session = await client(SESSION_QUERY);
    expect(session.data.signingSession.recipient.completedAt).toBeNull();
  });
});
