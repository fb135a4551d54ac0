import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listAuditEvents } from '../src/domain/audit/audit.service.ts';
import { A4, LETTER, makePdf } from './fixtures/pdfs.ts';
import { createDraftWithDocumentAndSigner, forceEnvelopeStatus, unknownId, uploadDocument } from './helpers/envelopes.ts';
import { firstErrorName, type GraphQLResult, graphqlClient, type RestResult, restClient, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app.close();
});

/** A 1×1 PNG as a data URL; it passes field-values' structural PNG check. */
const PNG = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
const STROKES = [
  [
    { x: 10, y: 40, t: 0, p: 0.42 },
    { x: 12, y: 38, t: 16, p: 0.55 },
  ],
  [{ x: 30, y: 35, t: 410, p: 0.5 }],
];

const fieldSelection = 'id identifier type recipientId label tooltip required readonly value config visibleWhen submittedAt views { documentId page location { x y } size { width height } }';
const createFieldsMutation = `mutation($envelopeId: ID!, $fields: [FieldInput!]!) { createFields(envelopeId: $envelopeId, fields: $fields) { ${fieldSelection} } }`;
const updateFieldMutation = `mutation($envelopeId: ID!, $fieldId: ID!, $input: UpdateFieldInput!) { updateField(envelopeId: $envelopeId, fieldId: $fieldId, input: $input) { ${fieldSelection} } }`;
const deleteFieldMutation = 'mutation($envelopeId: ID!, $fieldId: ID!) { deleteField(envelopeId: $envelopeId, fieldId: $fieldId) { id deleted } }';

type View = { documentId: string; page: number; location: { x: number; y: number }; size: { width: number; height: number } };

function view(documentId: string, page = 0, box: Partial<{ x: number; y: number; width: number; height: number }> = {}): View {
  return { documentId, page, location: { x: box.x ?? 50, y: box.y ?? 50 }, size: { width: box.width ?? 120, height: box.height ?? 30 } };
}

/** A fresh team with a draft holding one 3-page A4 document and one signer. */
async function newDraft() {
  const team = await seedTeam(app);
  const draft = await createDraftWithDocumentAndSigner(app, team.apiKey);
  return { ...draft, team, rest: restClient(app, team.apiKey), graphql: graphqlClient(app, team.apiKey) };
}
type Draft = Awaited<ReturnType<typeof newDraft>>;

/** Another draft of the same team, with its own document and signer. */
async function siblingDraft(draft: Draft) {
  return createDraftWithDocumentAndSigner(app, draft.team.apiKey);
}

async function storedFields(draft: Pick<Draft, 'rest' | 'envelopeId'>): Promise<any[]> {
  const response = await draft.rest.get(`/envelopes/${draft.envelopeId}?includeFields=true`);
  expect(response.status).toBe(200);
  return response.body.payload.fields;
}

function textField(draft: Pick<Draft, 'signerId' | 'documentId'>, identifier: string, extra: Record<string, unknown> = {}) {
  return { type: 'text', recipientId: draft.signerId, identifier, views: [view(draft.documentId)], ...extra };
}

function restIssues(response: RestResult): { path: string; message: string }[] {
  expect(response.status).toBe(400);
  expect(response.body.error.name).toBe('Request.Invalid');
  return response.body.error.context.issues;
}

function graphqlIssues(result: GraphQLResult): { path: string; message: string }[] {
  expect(firstErrorName(result)).toBe('Request.Invalid');
  return result.errors![0].extensions.context.issues;
}

const paths = (issues: { path: string }[]) => issues.map((issue) => issue.path).sort();

/** Fields created in one request are listed by identifier. */
const byIdentifier = <T extends { identifier: string }>(fields: T[]) => [...fields].sort((a, b) => (a.identifier < b.identifier ? -1 : 1));

/** One field of every type, with configs and pre-filled values, as a sender would write them. */
function everyTypeInput(draft: Pick<Draft, 'signerId' | 'documentId'>) {
  const { signerId: recipientId, documentId } = draft;
  return [
    {
      type: 'simple_signature',
      recipientId,
      identifier: 'buyer-signature',
      label: 'Sign here',
      config: { allowTyped: false },
      value: { kind: 'drawn', image: PNG },
      views: [view(documentId, 2, { x: 50, y: 700, width: 200, height: 60 })],
    },
    {
      type: 'biometric_signature',
      recipientId,
      identifier: 'buyer-biometric',
      required: false,
      config: { minPoints: 2 },
      value: { image: PNG, strokes: STROKES },
      views: [view(documentId, 2, { x: 300, y: 700, width: 200, height: 60 })],
    },
    {
      type: 'text',
      recipientId,
      identifier: 'postcode',
      label: 'Postcode',
      tooltip: 'Five digits',
      config: { placeholder: 'Postcode', maxLength: 5, pattern: '[0-9]{5}' },
      value: { text: '75011' },
      views: [view(documentId, 0, { x: 50, y: 100, width: 80, height: 20 })],
    },
    {
      type: 'checkbox',
      recipientId,
      identifier: 'newsletter',
      required: true,
      value: { checked: false },
      views: [view(documentId, 0, { x: 50, y: 150, width: 12, height: 12 })],
    },
    {
      type: 'radio',
      recipientId,
      identifier: 'billing',
      config: {
        options: [
          { value: 'monthly', label: 'Pay monthly' },
          { value: 'yearly', label: 'Pay yearly' },
        ],
      },
      value: { selected: 'yearly' },
      views: [view(documentId, 1, { x: 50, y: 200, width: 150, height: 40 })],
    },
    {
      type: 'binary_choice',
      recipientId,
      identifier: 'terms',
      readonly: true,
      config: { acceptLabel: 'I agree', declineLabel: 'I do not agree' },
      value: { choice: 'accept' },
      views: [view(documentId, 1, { x: 50, y: 300, width: 150, height: 40 })],
    },
  ];
}

/** The full records the service answers for `everyTypeInput`: defaults filled in. */
function everyTypeExpected(draft: Pick<Draft, 'signerId' | 'documentId'>) {
  const inputs = everyTypeInput(draft);
  const common = { id: expect.any(String), recipientId: draft.signerId, label: null, tooltip: null, readonly: false, visibleWhen: null, submittedAt: null };
  return [
    {
      ...common,
      identifier: 'buyer-signature',
      type: 'simple_signature',
      label: 'Sign here',
      required: true,
      config: { allowTyped: false, allowDrawn: true },
      value: { kind: 'drawn', image: PNG },
      views: inputs[0].views,
    },
    { ...common, identifier: 'buyer-biometric', type: 'biometric_signature', required: false, config: { minPoints: 2 }, value: { image: PNG, strokes: STROKES }, views: inputs[1].views },
    {
      ...common,
      identifier: 'postcode',
      type: 'text',
      label: 'Postcode',
      tooltip: 'Five digits',
      required: false,
      config: { placeholder: 'Postcode', maxLength: 5, multiline: false, pattern: '[0-9]{5}' },
      value: { text: '75011' },
      views: inputs[2].views,
    },
    { ...common, identifier: 'newsletter', type: 'checkbox', required: true, config: {}, value: { checked: false }, views: inputs[3].views },
    { ...common, identifier: 'billing', type: 'radio', required: false, config: inputs[4].config, value: { selected: 'yearly' }, views: inputs[4].views },
    {
      ...common,
      identifier: 'terms',
      type: 'binary_choice',
      readonly: true,
      required: false,
      config: { acceptLabel: 'I agree', declineLabel: 'I do not agree' },
      value: { choice: 'accept' },
      views: inputs[5].views,
    },
  ];
}

describe('creating fields', () => {
  it('creates fields of every type at once through REST and answers the full records', async () => {
    const draft = await newDraft();
    const response = await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, { fields: everyTypeInput(draft) });
    expect(response.status).toBe(200);
    expect(response.body.success).toBe(true);
    expect(response.body.payload.fields).toEqual(everyTypeExpected(draft));
    const ids = response.body.payload.fields.map((field: { id: string }) => field.id);
    expect(new Set(ids).size).toBe(6);
    // The envelope shows exactly what the answer showed (listed by creation, then identifier).
    expect(await storedFields(draft)).toEqual(byIdentifier(response.body.payload.fields));
    const listed = await draft.rest.get(`/envelopes/${draft.envelopeId}/fields`);
    expect(listed.body.payload.fields).toEqual(byIdentifier(response.body.payload.fields));
    const one = await draft.rest.get(`/envelopes/${draft.envelopeId}/fields/${ids[2]}`);
    expect(one.body.payload.field).toEqual(response.body.payload.fields[2]);
    const viaGraphql = await draft.graphql(`query($envelopeId: ID!, $fieldId: ID!) { field(envelopeId: $envelopeId, fieldId: $fieldId) { ${fieldSelection} } }`, {
      envelopeId: draft.envelopeId,
      fieldId: ids[2],
    });
    expect(viaGraphql.data.field).toEqual(response.body.payload.fields[2]);
  });

  it('creates the same fields through GraphQL createFields, readable on both faces', async () => {
    const draft = await newDraft();
    const result = await draft.graphql(createFieldsMutation, { envelopeId: draft.envelopeId, fields: everyTypeInput(draft) });
    expect(result.errors).toBeUndefined();
    expect(result.data.createFields).toEqual(everyTypeExpected(draft));
    expect(await storedFields(draft)).toEqual(byIdentifier(result.data.createFields));
    const read = await draft.graphql(`query($id: ID!) { envelope(id: $id) { fields { ${fieldSelection} } } }`, { id: draft.envelopeId });
    expect(read.data.envelope.fields).toEqual(byIdentifier(result.data.createFields));
  });

  it('applies the defaults: required for signatures only, not readonly, config defaults, no value', async () => {
    const draft = await newDraft();
    const minimal = (type: string, identifier: string, extra: Record<string, unknown> = {}) => ({
      type,
      recipientId: draft.signerId,
      identifier,
      views: [view(draft.documentId)],
      ...extra,
    });
    const options = [
      { value: 'a', label: 'A' },
      { value: 'b', label: 'B' },
    ];
    const fields = [
      minimal('simple_signature', 'sig'),
      minimal('biometric_signature', 'bio'),
      minimal('text', 'text'),
      minimal('checkbox', 'box', { config: {} }),
      minimal('radio', 'radio', { config: { options } }),
      minimal('binary_choice', 'choice', { config: null, value: null }),
    ];
    const expected = [
      { type: 'simple_signature', required: true, config: { allowTyped: true, allowDrawn: true } },
      { type: 'biometric_signature', required: true, config: { minPoints: 1 } },
      { type: 'text', required: false, config: { maxLength: 1000, multiline: false } },
      { type: 'checkbox', required: false, config: {} },
      { type: 'radio', required: false, config: { options } },
      { type: 'binary_choice', required: false, config: { acceptLabel: 'Accept', declineLabel: 'Decline' } },
    ].map((defaults) => ({ ...defaults, readonly: false, value: null, label: null, tooltip: null, submittedAt: null }));

    const rest = await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, { fields });
    expect(rest.status).toBe(200);
    expect(rest.body.payload.fields).toEqual(expected.map((record) => expect.objectContaining(record)));

    const other = await siblingDraft(draft);
    const graphql = await draft.graphql(createFieldsMutation, {
      envelopeId: other.envelopeId,
      fields: fields.map((field) => ({ ...field, recipientId: other.signerId, views: [view(other.documentId)] })),
    });
    expect(graphql.errors).toBeUndefined();
    expect(graphql.data.createFields).toEqual(expected.map((record) => expect.objectContaining(record)));
  });

  it('normalises pre-filled values: a typed signature gets its default font', async () => {
    const draft = await newDraft();
    const response = await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, {
      fields: [{ type: 'simple_signature', recipientId: draft.signerId, identifier: 'typed', value: { kind: 'typed', text: 'Ada Buyer' }, views: [view(draft.documentId)] }],
    });
    expect(response.body.payload.fields[0].value).toEqual({ kind: 'typed', text: 'Ada Buyer', font: 'cursive' });
  });

  it('refuses an empty list, more than 500 fields and an unknown property', async () => {
    const draft = await newDraft();
    const empty = await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, { fields: [] });
    expect(paths(restIssues(empty))).toEqual(['fields']);
    const tooMany = await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, { fields: Array.from({ length: 501 }, (_, index) => textField(draft, `f${index}`)) });
    expect(restIssues(tooMany)).toEqual([{ path: 'fields', message: expect.stringContaining('500') }]);
    const unknownKey = await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, { fields: [textField(draft, 'a', { colour: 'red' })] });
    expect(paths(restIssues(unknownKey))).toEqual(['fields[0]']);
    expect(JSON.stringify(unknownKey.body.error.context.issues)).toContain('colour');
    expect(await storedFields(draft)).toEqual([]);
  });

  it('answers Envelope.NotFound for another team’s envelope', async () => {
    const draft = await newDraft();
    const stranger = await seedTeam(app);
    const response = await restClient(app, stranger.apiKey).post(`/envelopes/${draft.envelopeId}/fields`, { fields: [textField(draft, 'a')] });
    expect(response.status).toBe(404);
    expect(response.body.error.name).toBe('Envelope.NotFound');
    expect(await storedFields(draft)).toEqual([]);
  });
});

describe('all or nothing', () => {
  function mixedBatch(draft: Draft) {
    return [
      textField(draft, 'good-text'),
      textField(draft, 'bad-page', { views: [view(draft.documentId, draft.pageCount)] }),
      { type: 'radio', recipientId: draft.signerId, identifier: 'bad-radio', config: { options: [{ value: 'only', label: 'Only' }] }, views: [view(draft.documentId)] },
      { type: 'checkbox', recipientId: draft.signerId, identifier: 'good-box', views: [view(draft.documentId)] },
      textField(draft, 'too-long', { config: { maxLength: 3 }, value: { text: 'abcd' }, recipientId: unknownId }),
    ];
  }

  it('lists every problem of every field with exact paths and writes no field, through REST', async () => {
    const draft = await newDraft();
    const response = await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, { fields: mixedBatch(draft) });
    expect(paths(restIssues(response))).toEqual(['fields[1].views[0].page', 'fields[2].config.options', 'fields[4].recipientId', 'fields[4].value.text'].sort());
    expect(await storedFields(draft)).toEqual([]);
  });

  it('lists the same problems through GraphQL and writes nothing', async () => {
    const draft = await newDraft();
    const result = await draft.graphql(createFieldsMutation, { envelopeId: draft.envelopeId, fields: mixedBatch(draft) });
    expect(paths(graphqlIssues(result))).toEqual(['fields[1].views[0].page', 'fields[2].config.options', 'fields[4].recipientId', 'fields[4].value.text'].sort());
    expect(await storedFields(draft)).toEqual([]);
  });

  it('reports shape problems of one field together with the placement problems of another', async () => {
    const draft = await newDraft();
    const response = await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, {
      fields: [
        textField(draft, 'negative', { views: [view(draft.documentId, 0, { x: -1 })] }),
        textField(draft, 'off-page', { views: [view(draft.documentId, 0, { x: 500, width: 100 })] }),
        textField(draft, 'fine'),
      ],
    });
    expect(paths(restIssues(response))).toEqual(['fields[0].views[0].location.x', 'fields[1].views[0].size.width']);
    expect(await storedFields(draft)).toEqual([]);
  });
});

describe('identifiers', () => {
  it('refuses an identifier repeated within one request, on both faces', async () => {
    const draft = await newDraft();
    const fields = [textField(draft, 'name'), textField(draft, 'email'), textField(draft, 'name'), textField(draft, 'name')];
    const rest = await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, { fields });
    expect(restIssues(rest)).toEqual([
      { path: 'fields[2].identifier', message: expect.stringContaining('fields[0]') },
      { path: 'fields[3].identifier', message: expect.stringContaining('fields[0]') },
    ]);
    const graphql = await draft.graphql(createFieldsMutation, { envelopeId: draft.envelopeId, fields });
    expect(paths(graphqlIssues(graphql))).toEqual(['fields[2].identifier', 'fields[3].identifier']);
    expect(await storedFields(draft)).toEqual([]);
  });

  it('refuses an identifier already used in the envelope with Field.DuplicateIdentifier and writes nothing', async () => {
    const draft = await newDraft();
    await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, { fields: [textField(draft, 'name')] });
    const rest = await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, { fields: [textField(draft, 'email'), textField(draft, 'name')] });
    expect(rest.status).toBe(409);
    expect(rest.body.error).toMatchObject({ name: 'Field.DuplicateIdentifier', context: { identifiers: ['name'] } });
    const graphql = await draft.graphql(createFieldsMutation, { envelopeId: draft.envelopeId, fields: [textField(draft, 'email'), textField(draft, 'name')] });
    expect(firstErrorName(graphql)).toBe('Field.DuplicateIdentifier');
    expect((await storedFields(draft)).map((field) => field.identifier)).toEqual(['name']);
  });

  it('allows the same identifier in another envelope of the same team', async () => {
    const draft = await newDraft();
    const other = await siblingDraft(draft);
    expect((await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, { fields: [textField(draft, 'name')] })).status).toBe(200);
    const second = await draft.rest.post(`/envelopes/${other.envelopeId}/fields`, { fields: [textField(other, 'name')] });
    expect(second.status).toBe(200);
    expect(second.body.payload.fields[0].identifier).toBe('name');
  });

  it('refuses identifiers that are not slugs', async () => {
    const draft = await newDraft();
    const response = await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, {
      fields: [textField(draft, 'has space'), textField(draft, '-leading'), textField(draft, 'x'.repeat(65)), textField(draft, 'x'.repeat(64))],
    });
    expect(paths(restIssues(response))).toEqual(['fields[0].identifier', 'fields[1].identifier', 'fields[2].identifier']);
  });
});

describe('views', () => {
  it('places one field on every page of a document (initials), keeping the order, on both faces', async () => {
    const draft = await newDraft();
    const views = [0, 1, 2].map((page) => view(draft.documentId, page, { x: 520, y: 800, width: 60, height: 30 }));
    const rest = await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, {
      fields: [{ type: 'text', recipientId: draft.signerId, identifier: 'initials', label: 'Initials', views }],
    });
    expect(rest.body.payload.fields[0].views).toEqual(views);

    const other = await siblingDraft(draft);
    const reversed = [2, 1, 0].map((page) => view(other.documentId, page, { x: 520, y: 800, width: 60, height: 30 }));
    const graphql = await draft.graphql(createFieldsMutation, {
      envelopeId: other.envelopeId,
      fields: [{ type: 'text', recipientId: other.signerId, identifier: 'initials', views: reversed }],
    });
    expect(graphql.data.createFields[0].views).toEqual(reversed);
    expect((await storedFields({ rest: draft.rest, envelopeId: other.envelopeId }))[0].views).toEqual(reversed);
  });

  it('refuses a document of another envelope, an unknown one and a malformed id, on both faces', async () => {
    const draft = await newDraft();
    const other = await siblingDraft(draft);
    for (const documentId of [other.documentId, unknownId, 'not-a-uuid']) {
      const fields = [textField(draft, 'placed', { views: [view(documentId)] })];
      const rest = await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, { fields });
      expect(paths(restIssues(rest)), documentId).toEqual(['fields[0].views[0].documentId']);
      const graphql = await draft.graphql(createFieldsMutation, { envelopeId: draft.envelopeId, fields });
      expect(paths(graphqlIssues(graphql))).toEqual(['fields[0].views[0].documentId']);
    }
    expect(await storedFields(draft)).toEqual([]);
  });

  it('accepts page indexes 0 to pageCount-1 only', async () => {
    const draft = await newDraft();
    const post = (page: number, identifier: string) =>
      draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, { fields: [textField(draft, identifier, { views: [view(draft.documentId, page)] })] });
    expect((await post(draft.pageCount - 1, 'last')).status).toBe(200);
    expect((await post(0, 'first')).status).toBe(200);
    const past = await post(draft.pageCount, 'past');
    expect(restIssues(past)).toEqual([{ path: 'fields[0].views[0].page', message: expect.stringContaining('0 to 2') }]);
    expect(paths(restIssues(await post(-1, 'negative')))).toEqual(['fields[0].views[0].page']);
    expect(paths(restIssues(await post(1.5, 'fraction')))).toEqual(['fields[0].views[0].page']);
    const graphql = await draft.graphql(createFieldsMutation, {
      envelopeId: draft.envelopeId,
      fields: [textField(draft, 'past', { views: [view(draft.documentId, draft.pageCount)] })],
    });
    expect(paths(graphqlIssues(graphql))).toEqual(['fields[0].views[0].page']);
    expect((await storedFields(draft)).map((field) => field.identifier).sort()).toEqual(['first', 'last']);
  });

  it('accepts a box touching the page edges and refuses one a point past them (A4 and Letter)', async () => {
    const draft = await newDraft();
    const letter = await uploadDocument(app, draft.team.apiKey, draft.envelopeId, { bytes: await makePdf({ pages: 1, size: LETTER }), filename: 'letter.pdf' });
    const letterId = letter.body.payload.document.id;
    const post = (documentId: string, box: Parameters<typeof view>[2], identifier: string) =>
      draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, { fields: [textField(draft, identifier, { views: [view(documentId, 0, box)] })] });
    const [a4Width, a4Height] = A4;
    const [letterWidth, letterHeight] = LETTER;
    expect((await post(draft.documentId, { x: a4Width - 100, width: 100, y: a4Height - 30, height: 30 }, 'a4-corner')).status).toBe(200);
    expect((await post(draft.documentId, { x: 0, y: 0, width: a4Width, height: a4Height }, 'a4-whole-page')).status).toBe(200);
    expect(paths(restIssues(await post(draft.documentId, { x: a4Width - 99, width: 100 }, 'a4-right')))).toEqual(['fields[0].views[0].size.width']);
    expect(paths(restIssues(await post(draft.documentId, { y: a4Height - 29, height: 30 }, 'a4-bottom')))).toEqual(['fields[0].views[0].size.height']);
    expect((await post(letterId, { x: letterWidth - 100, width: 100, y: letterHeight - 30, height: 30 }, 'letter-corner')).status).toBe(200);
    expect(paths(restIssues(await post(letterId, { x: letterWidth - 99, width: 100 }, 'letter-right')))).toEqual(['fields[0].views[0].size.width']);
    // A box that fits A4's height is past a Letter page's bottom edge.
    expect(paths(restIssues(await post(letterId, { y: letterHeight, height: 1 }, 'letter-bottom')))).toEqual(['fields[0].views[0].size.height']);
    const graphql = await draft.graphql(createFieldsMutation, {
      envelopeId: draft.envelopeId,
      fields: [textField(draft, 'gql-right', { views: [view(draft.documentId, 0, { x: a4Width - 99, width: 100 })] })],
    });
    expect(paths(graphqlIssues(graphql))).toEqual(['fields[0].views[0].size.width']);
    expect((await storedFields(draft)).map((field) => field.identifier).sort()).toEqual(['a4-corner', 'a4-whole-page', 'letter-corner']);
  });

  it('refuses negative coordinates and empty sizes, each at its own path', async () => {
    const draft = await newDraft();
    const response = await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, {
      fields: [
        textField(draft, 'negative-x', { views: [view(draft.documentId, 0, { x: -1 })] }),
        textField(draft, 'negative-y', { views: [view(draft.documentId, 0, { y: -0.5 })] }),
        textField(draft, 'zero-width', { views: [view(draft.documentId, 0, { width: 0 })] }),
        textField(draft, 'negative-height', { views: [view(draft.documentId, 0, { height: -10 })] }),
        textField(draft, 'origin', { views: [view(draft.documentId, 0, { x: 0, y: 0 })] }),
      ],
    });
    expect(paths(restIssues(response))).toEqual(['fields[0].views[0].location.x', 'fields[1].views[0].location.y', 'fields[2].views[0].size.width', 'fields[3].views[0].size.height']);
    const graphql = await draft.graphql(createFieldsMutation, {
      envelopeId: draft.envelopeId,
      fields: [textField(draft, 'zero-width', { views: [view(draft.documentId, 0, { width: 0 })] })],
    });
    expect(paths(graphqlIssues(graphql))).toEqual(['fields[0].views[0].size.width']);
    expect(await storedFields(draft)).toEqual([]);
  });

  it('measures a landscape page by its own size', async () => {
    const draft = await newDraft();
    const landscape = await uploadDocument(app, draft.team.apiKey, draft.envelopeId, { bytes: await makePdf({ pages: 1, size: [842, 595] }), filename: 'landscape.pdf' });
    const documentId = landscape.body.payload.document.id;
    const post = (box: Parameters<typeof view>[2], identifier: string) =>
      draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, { fields: [textField(draft, identifier, { views: [view(documentId, 0, box)] })] });
    expect((await post({ x: 742, width: 100, y: 565, height: 30 }, 'wide')).status).toBe(200);
    expect(paths(restIssues(await post({ y: 566, height: 30 }, 'too-low')))).toEqual(['fields[0].views[0].size.height']);
  });

  it('measures a rotated page by its displayed size (A4 turned 90° is 842 × 595)', async () => {
    const draft = await newDraft();
    const rotated = await uploadDocument(app, draft.team.apiKey, draft.envelopeId, { bytes: await makePdf({ pages: 2, size: A4, rotate: 90 }), filename: 'rotated.pdf' });
    expect(rotated.status).toBe(200);
    const documentId = rotated.body.payload.document.id;
    const post = (box: Parameters<typeof view>[2], identifier: string) =>
      draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, { fields: [textField(draft, identifier, { views: [view(documentId, 1, box)] })] });
    // Wider than A4 portrait, but within the displayed width.
    expect((await post({ x: 700, width: 142, y: 565, height: 30 }, 'displayed-corner')).status).toBe(200);
    expect(paths(restIssues(await post({ x: 743, width: 100 }, 'past-right')))).toEqual(['fields[0].views[0].size.width']);
    // Within A4 portrait's height, but below the displayed bottom edge.
    expect(paths(restIssues(await post({ y: 700, height: 30 }, 'portrait-bottom')))).toEqual(['fields[0].views[0].size.height']);
    const graphql = await draft.graphql(createFieldsMutation, {
      envelopeId: draft.envelopeId,
      fields: [textField(draft, 'gql-portrait-bottom', { views: [view(documentId, 1, { y: 700, height: 30 })] })],
    });
    expect(paths(graphqlIssues(graphql))).toEqual(['fields[0].views[0].size.height']);
  });

  it('refuses a field without any view, on both faces', async () => {
    const draft = await newDraft();
    const fields = [textField(draft, 'nowhere', { views: [] })];
    expect(paths(restIssues(await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, { fields })))).toEqual(['fields[0].views']);
    expect(paths(graphqlIssues(await draft.graphql(createFieldsMutation, { envelopeId: draft.envelopeId, fields })))).toEqual(['fields[0].views']);
    expect(await storedFields(draft)).toEqual([]);
  });
});

describe('recipients of fields', () => {
  it('refuses an unknown recipient, another envelope’s recipient and a malformed id, on both faces', async () => {
    const draft = await newDraft();
    const other = await siblingDraft(draft);
    for (const recipientId of [unknownId, other.signerId, 'buyer']) {
      const fields = [textField(draft, 'assigned', { recipientId })];
      const rest = await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, { fields });
      expect(paths(restIssues(rest)), recipientId).toEqual(['fields[0].recipientId']);
      const graphql = await draft.graphql(createFieldsMutation, { envelopeId: draft.envelopeId, fields });
      expect(paths(graphqlIssues(graphql))).toEqual(['fields[0].recipientId']);
    }
    expect(await storedFields(draft)).toEqual([]);
  });

  it('refuses to give a viewer a field', async () => {
    const draft = await newDraft();
    const viewer = await draft.rest.post(`/envelopes/${draft.envelopeId}/recipients`, {
      recipient: { type: 'viewer', identifier: 'copy', roleName: 'Copy', order: 2, required: false, agents: [{ info: { name: 'Cora Copy', email: 'cora@example.com' } }] },
    });
    expect(viewer.status).toBe(200);
    const fields = [textField(draft, 'for-viewer', { recipientId: viewer.body.payload.recipient.id })];
    const rest = await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, { fields });
    expect(restIssues(rest)).toEqual([{ path: 'fields[0].recipientId', message: expect.stringContaining('viewer') }]);
    const graphql = await draft.graphql(createFieldsMutation, { envelopeId: draft.envelopeId, fields });
    expect(paths(graphqlIssues(graphql))).toEqual(['fields[0].recipientId']);
    expect(await storedFields(draft)).toEqual([]);
  });
});

describe('readonly fields and values', () => {
  it('refuses a readonly field without a value and accepts one with a valid value', async () => {
    const draft = await newDraft();
    const bare = await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, { fields: [textField(draft, 'fixed', { readonly: true })] });
    expect(paths(restIssues(bare))).toEqual(['fields[0].value']);
    const nullValue = await draft.graphql(createFieldsMutation, { envelopeId: draft.envelopeId, fields: [textField(draft, 'fixed', { readonly: true, value: null })] });
    expect(paths(graphqlIssues(nullValue))).toEqual(['fields[0].value']);
    const filled = await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, {
      fields: [textField(draft, 'fixed', { readonly: true, value: { text: 'ACME Ltd' } })],
    });
    expect(filled.status).toBe(200);
    expect(filled.body.payload.fields[0]).toMatchObject({ readonly: true, value: { text: 'ACME Ltd' } });
  });

  it('checks values against the type’s config, on both faces', async () => {
    const draft = await newDraft();
    const options = [
      { value: 'monthly', label: 'Monthly' },
      { value: 'yearly', label: 'Yearly' },
    ];
    const fields = [
      { type: 'radio', recipientId: draft.signerId, identifier: 'plan', config: { options }, value: { selected: 'Monthly' }, views: [view(draft.documentId)] },
      textField(draft, 'code', { config: { maxLength: 5 }, value: { text: '123456' } }),
      textField(draft, 'zip', { config: { pattern: '[0-9]{5}' }, value: { text: '7501a' } }),
      { type: 'checkbox', recipientId: draft.signerId, identifier: 'box', value: { checked: 'yes' }, views: [view(draft.documentId)] },
      { type: 'simple_signature', recipientId: draft.signerId, identifier: 'sig', config: { allowTyped: false }, value: { kind: 'typed', text: 'Ada' }, views: [view(draft.documentId)] },
      { type: 'binary_choice', recipientId: draft.signerId, identifier: 'terms', value: { choice: 'I agree' }, views: [view(draft.documentId)] },
    ];
    const expectedPaths = ['fields[0].value.selected', 'fields[1].value.text', 'fields[2].value.text', 'fields[3].value.checked', 'fields[4].value.kind', 'fields[5].value.choice'];
    const rest = await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, { fields });
    expect(paths(restIssues(rest))).toEqual(expectedPaths);
    expect(rest.body.error.context.issues.find((issue: { path: string }) => issue.path === 'fields[1].value.text').message).toContain('at most 5');
    const graphql = await draft.graphql(createFieldsMutation, { envelopeId: draft.envelopeId, fields });
    expect(paths(graphqlIssues(graphql))).toEqual(expectedPaths);
    expect(await storedFields(draft)).toEqual([]);
  });

  it('refuses bad configs: a radio without options, unknown keys, equal choice labels', async () => {
    const draft = await newDraft();
    const response = await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, {
      fields: [
        { type: 'radio', recipientId: draft.signerId, identifier: 'plan', views: [view(draft.documentId)] },
        textField(draft, 'text', { config: { maxlenght: 5 } }),
        { type: 'checkbox', recipientId: draft.signerId, identifier: 'box', config: { checked: true }, views: [view(draft.documentId)] },
        { type: 'binary_choice', recipientId: draft.signerId, identifier: 'choice', config: { acceptLabel: 'Yes', declineLabel: ' yes ' }, views: [view(draft.documentId)] },
      ],
    });
    expect(paths(restIssues(response))).toEqual(['fields[0].config.options', 'fields[1].config.maxlenght', 'fields[2].config.checked', 'fields[3].config.declineLabel']);
  });
});

describe('updating fields', () => {
  async function draftWithFields() {
    const draft = await newDraft();
    const created = await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, {
      fields: [
        textField(draft, 'company', { label: 'Company', tooltip: 'Legal name', config: { placeholder: 'ACME', maxLength: 40 }, value: { text: 'ACME Ltd' } }),
        {
          type: 'simple_signature',
          recipientId: draft.signerId,
          identifier: 'signature',
          value: { kind: 'typed', text: 'Ada Buyer', font: 'serif' },
          views: [view(draft.documentId, 2), view(draft.documentId, 1)],
        },
      ],
    });
    expect(created.status).toBe(200);
    const [company, signature] = created.body.payload.fields;
    return { ...draft, company, signature, patch: (fieldId: string, field: unknown) => draft.rest.patch(`/envelopes/${draft.envelopeId}/fields/${fieldId}`, { field }) };
  }

  it('changes only the given keys: a new label keeps the views and everything else', async () => {
    const draft = await draftWithFields();
    const response = await draft.patch(draft.signature.id, { label: 'Sign on behalf of the buyer' });
    expect(response.status).toBe(200);
    expect(response.body.payload.field).toEqual({ ...draft.signature, label: 'Sign on behalf of the buyer' });
    const cleared = await draft.patch(draft.company.id, { label: null, tooltip: null });
    expect(cleared.body.payload.field).toEqual({ ...draft.company, label: null, tooltip: null });
    expect(await storedFields(draft)).toEqual([cleared.body.payload.field, response.body.payload.field]);
  });

  it('replaces all views when views are given', async () => {
    const draft = await draftWithFields();
    const views = [view(draft.documentId, 0, { x: 10, y: 10, width: 200, height: 50 })];
    const response = await draft.patch(draft.signature.id, { views });
    expect(response.body.payload.field).toEqual({ ...draft.signature, views });
    expect((await storedFields(draft))[1].views).toEqual(views);
    const refused = await draft.patch(draft.signature.id, { views: [] });
    expect(paths(restIssues(refused))).toEqual(['field.views']);
    const offPage = await draft.patch(draft.signature.id, { views: [view(draft.documentId, 3)] });
    expect(paths(restIssues(offPage))).toEqual(['field.views[0].page']);
    expect((await storedFields(draft))[1].views).toEqual(views);
  });

  it('replaces config and value as wholes rather than merging them', async () => {
    const draft = await draftWithFields();
    const config = await draft.patch(draft.company.id, { config: { maxLength: 20 } });
    expect(config.body.payload.field.config).toEqual({ maxLength: 20, multiline: false });
    const drawn = await draft.patch(draft.signature.id, { value: { kind: 'drawn', image: PNG } });
    expect(drawn.body.payload.field.value).toEqual({ kind: 'drawn', image: PNG });
    const stored = await storedFields(draft);
    expect(stored[0].config).toEqual({ maxLength: 20, multiline: false });
    expect(stored[1].value).toEqual({ kind: 'drawn', image: PNG });
  });

  it('re-checks the kept value against a changed config', async () => {
    const draft = await draftWithFields();
    const tooShort = await draft.patch(draft.company.id, { config: { maxLength: 3 } });
    expect(paths(restIssues(tooShort))).toEqual(['field.value.text']);
    const readonlyWithout = await draft.patch(draft.company.id, { readonly: true, value: null });
    expect(paths(restIssues(readonlyWithout))).toEqual(['field.value']);
    expect((await storedFields(draft))[0]).toEqual(draft.company);
  });

  it('re-checks config and value when the type changes: a text value does not fit a checkbox', async () => {
    const draft = await draftWithFields();
    const kept = await draft.patch(draft.company.id, { type: 'checkbox' });
    expect(paths(restIssues(kept))).toEqual(['field.value.checked', 'field.value.text']);
    const badConfig = await draft.patch(draft.company.id, { type: 'checkbox', value: { checked: true }, config: { maxLength: 40 } });
    expect(paths(restIssues(badConfig))).toEqual(['field.config.maxLength']);
    expect((await storedFields(draft))[0]).toEqual(draft.company);

    const changed = await draft.patch(draft.company.id, { type: 'checkbox', value: { checked: true } });
    expect(changed.status).toBe(200);
    expect(changed.body.payload.field).toEqual({ ...draft.company, type: 'checkbox', config: {}, value: { checked: true } });

    const cleared = await draft.patch(draft.company.id, {
      type: 'radio',
      value: null,
      config: {
        options: [
          { value: 'a', label: 'A' },
          { value: 'b', label: 'B' },
        ],
      },
    });
    expect(cleared.body.payload.field).toMatchObject({
      type: 'radio',
      value: null,
      config: {
        options: [
          { value: 'a', label: 'A' },
          { value: 'b', label: 'B' },
        ],
      },
    });
    const noOptions = await draft.patch(draft.company.id, { type: 'radio' });
    expect(noOptions.status).toBe(200);
    const toText = await draft.patch(draft.company.id, { type: 'text' });
    expect(toText.body.payload.field).toMatchObject({ type: 'text', value: null, config: { maxLength: 1000, multiline: false } });
  });

  it('renames the identifier, but not to one another field has', async () => {
    const draft = await draftWithFields();
    const taken = await draft.patch(draft.company.id, { identifier: 'signature' });
    expect(taken.status).toBe(409);
    expect(taken.body.error).toMatchObject({ name: 'Field.DuplicateIdentifier', context: { identifiers: ['signature'] } });
    const graphql = await draft.graphql(updateFieldMutation, { envelopeId: draft.envelopeId, fieldId: draft.company.id, input: { identifier: 'signature' } });
    expect(firstErrorName(graphql)).toBe('Field.DuplicateIdentifier');
    expect((await draft.patch(draft.company.id, { identifier: 'company' })).status).toBe(200);
    const renamed = await draft.patch(draft.company.id, { identifier: 'company-name' });
    expect(renamed.body.payload.field.identifier).toBe('company-name');
    // The old identifier is free again.
    const reused = await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, { fields: [textField(draft, 'company')] });
    expect(reused.status).toBe(200);
  });

  it('moves a field to another recipient of the envelope, never to a viewer or a stranger', async () => {
    const draft = await draftWithFields();
    const second = await draft.rest.post(`/envelopes/${draft.envelopeId}/recipients`, {
      recipient: { type: 'signer', identifier: 'seller', roleName: 'Seller', order: 2, required: true, agents: [{ info: { name: 'Sam Seller', email: 'sam@example.com' } }] },
    });
    const viewer = await draft.rest.post(`/envelopes/${draft.envelopeId}/recipients`, {
      recipient: { type: 'viewer', identifier: 'copy', roleName: 'Copy', order: 3, required: false, agents: [{ info: { name: 'Cora Copy', email: 'cora@example.com' } }] },
    });
    const moved = await draft.patch(draft.company.id, { recipientId: second.body.payload.recipient.id });
    expect(moved.body.payload.field.recipientId).toBe(second.body.payload.recipient.id);
    expect(paths(restIssues(await draft.patch(draft.company.id, { recipientId: viewer.body.payload.recipient.id })))).toEqual(['field.recipientId']);
    expect(paths(restIssues(await draft.patch(draft.company.id, { recipientId: unknownId })))).toEqual(['field.recipientId']);
  });

  it('updates through GraphQL updateField with the same rules', async () => {
    const draft = await draftWithFields();
    const views = [view(draft.documentId, 1, { x: 100, y: 100 }), view(draft.documentId, 2, { x: 100, y: 100 })];
    const result = await draft.graphql(updateFieldMutation, {
      envelopeId: draft.envelopeId,
      fieldId: draft.company.id,
      input: { label: 'Company name', required: true, views },
    });
    expect(result.errors).toBeUndefined();
    expect(result.data.updateField).toEqual({ ...draft.company, label: 'Company name', required: true, views });
    expect((await storedFields(draft))[0]).toEqual(result.data.updateField);

    const typeChange = await draft.graphql(updateFieldMutation, { envelopeId: draft.envelopeId, fieldId: draft.company.id, input: { type: 'checkbox' } });
    expect(paths(graphqlIssues(typeChange))).toEqual(['field.value.checked', 'field.value.text']);
    const withValue = await draft.graphql(updateFieldMutation, {
      envelopeId: draft.envelopeId,
      fieldId: draft.company.id,
      input: { type: 'checkbox', value: { checked: false } },
    });
    expect(withValue.data.updateField).toMatchObject({ type: 'checkbox', config: {}, value: { checked: false } });
    const clearedLabel = await draft.graphql(updateFieldMutation, { envelopeId: draft.envelopeId, fieldId: draft.company.id, input: { label: null } });
    expect(clearedLabel.data.updateField.label).toBeNull();
  });

  it('refuses unknown keys and an empty patch body', async () => {
    const draft = await draftWithFields();
    const unknownKey = await draft.patch(draft.company.id, { colour: 'red' });
    expect(paths(restIssues(unknownKey))).toEqual(['field']);
    const noField = await draft.rest.patch(`/envelopes/${draft.envelopeId}/fields/${draft.company.id}`, { label: 'x' });
    expect(restIssues(noField).length).toBeGreaterThan(0);
  });
});

describe('deleting fields', () => {
  it('deletes through REST and GraphQL', async () => {
    const draft = await newDraft();
    const created = await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, { fields: [textField(draft, 'one'), textField(draft, 'two'), textField(draft, 'three')] });
    const [one, two, three] = created.body.payload.fields;
    const rest = await draft.rest.delete(`/envelopes/${draft.envelopeId}/fields/${one.id}`);
    expect(rest.body).toEqual({ version: '1', success: true, payload: { deleted: true } });
    const graphql = await draft.graphql(deleteFieldMutation, { envelopeId: draft.envelopeId, fieldId: two.id });
    expect(graphql.data.deleteField).toEqual({ id: two.id, deleted: true });
    expect(await storedFields(draft)).toEqual([three]);
    const gone = await draft.rest.get(`/envelopes/${draft.envelopeId}/fields/${one.id}`);
    expect(gone.status).toBe(404);
    expect(gone.body.error.name).toBe('Field.NotFound');
    // Deleting twice: the field is gone.
    expect((await draft.rest.delete(`/envelopes/${draft.envelopeId}/fields/${one.id}`)).body.error.name).toBe('Field.NotFound');
  });

  it('answers Field.NotFound for unknown, malformed and other envelopes’ field ids, on every operation and both faces', async () => {
    const draft = await newDraft();
    const other = await siblingDraft(draft);
    const foreign = (await draft.rest.post(`/envelopes/${other.envelopeId}/fields`, { fields: [textField(other, 'theirs')] })).body.payload.fields[0];
    for (const fieldId of [unknownId, 'not-a-uuid', foreign.id]) {
      const path = `/envelopes/${draft.envelopeId}/fields/${encodeURIComponent(fieldId)}`;
      for (const response of [await draft.rest.delete(path), await draft.rest.patch(path, { field: { label: 'x' } }), await draft.rest.get(path)]) {
        expect(response.status, fieldId).toBe(404);
        expect(response.body.error).toMatchObject({ name: 'Field.NotFound', context: { fieldId } });
      }
      const read = await draft.graphql('query($envelopeId: ID!, $fieldId: ID!) { field(envelopeId: $envelopeId, fieldId: $fieldId) { id } }', { envelopeId: draft.envelopeId, fieldId });
      expect(firstErrorName(read)).toBe('Field.NotFound');
      const deleted = await draft.graphql(deleteFieldMutation, { envelopeId: draft.envelopeId, fieldId });
      expect(firstErrorName(deleted)).toBe('Field.NotFound');
      const updated = await draft.graphql(updateFieldMutation, { envelopeId: draft.envelopeId, fieldId, input: { label: 'x' } });
      expect(firstErrorName(updated)).toBe('Field.NotFound');
    }
    // The other envelope's field is untouched.
    expect(await storedFields({ rest: draft.rest, envelopeId: other.envelopeId })).toEqual([foreign]);
  });
});

describe('removing a document', () => {
  it('removes the fields placed only on it and keeps a field also placed elsewhere, with its other view', async () => {
    const draft = await newDraft();
    const second = await uploadDocument(app, draft.team.apiKey, draft.envelopeId, { bytes: await makePdf({ pages: 1, size: LETTER }), filename: 'annex.pdf' });
    const annexId = second.body.payload.document.id;
    const created = await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, {
      fields: [
        textField(draft, 'only-main', { views: [view(draft.documentId, 0), view(draft.documentId, 1)] }),
        textField(draft, 'both', { views: [view(draft.documentId, 2), view(annexId, 0, { x: 1 }), view(draft.documentId, 0)] }),
        textField(draft, 'only-annex', { views: [view(annexId, 0)] }),
      ],
    });
    const [, both, onlyAnnex] = created.body.payload.fields;
    const removed = await draft.rest.delete(`/envelopes/${draft.envelopeId}/documents/${draft.documentId}`);
    expect(removed.body).toMatchObject({ success: true, payload: { deleted: true } });
    expect(await storedFields(draft)).toEqual([{ ...both, views: [view(annexId, 0, { x: 1 })] }, onlyAnnex]);
    const read = await draft.graphql(`query($id: ID!) { envelope(id: $id) { fields { identifier views { documentId } } } }`, { id: draft.envelopeId });
    expect(read.data.envelope.fields).toEqual([
      { identifier: 'both', views: [{ documentId: annexId }] },
      { identifier: 'only-annex', views: [{ documentId: annexId }] },
    ]);
  });
});

describe('draft only', () => {
  it('refuses to create, change or delete fields of a closed (voided) envelope with Envelope.NotDraft, on both faces, changing nothing (a sent one is corrected: envelope-corrections.test.ts)', async () => {
    const draft = await newDraft();
    const created = await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, { fields: [textField(draft, 'kept', { label: 'Kept' })] });
    const field = created.body.payload.fields[0];
    await forceEnvelopeStatus(app, draft.envelopeId, 'voided');

    const attempts: RestResult[] = [
      await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, { fields: [textField(draft, 'late')] }),
      await draft.rest.patch(`/envelopes/${draft.envelopeId}/fields/${field.id}`, { field: { label: 'Changed' } }),
      await draft.rest.delete(`/envelopes/${draft.envelopeId}/fields/${field.id}`),
    ];
    for (const attempt of attempts) {
      expect(attempt.status).toBe(409);
      expect(attempt.body.error).toMatchObject({ name: 'Envelope.NotDraft', context: { envelopeId: draft.envelopeId, status: 'voided' } });
    }
    const graphqlAttempts = [
      await draft.graphql(createFieldsMutation, { envelopeId: draft.envelopeId, fields: [textField(draft, 'late')] }),
      await draft.graphql(updateFieldMutation, { envelopeId: draft.envelopeId, fieldId: field.id, input: { label: 'Changed' } }),
      await draft.graphql(deleteFieldMutation, { envelopeId: draft.envelopeId, fieldId: field.id }),
    ];
    for (const attempt of graphqlAttempts) expect(firstErrorName(attempt)).toBe('Envelope.NotDraft');
    expect(await storedFields(draft)).toEqual([field]);
    const events = await listAuditEvents(app.orm.em.fork(), draft.envelopeId);
    expect(events.filter((event) => event.type.startsWith('field.')).map((event) => event.type)).toEqual(['field.added']);
  });
});

describe('audit', () => {
  it('records field.added with the new ids, field.updated and field.removed', async () => {
    const draft = await newDraft();
    const created = await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, { fields: [textField(draft, 'first'), textField(draft, 'second')] });
    const [first, second] = created.body.payload.fields;
    await draft.rest.patch(`/envelopes/${draft.envelopeId}/fields/${first.id}`, { field: { label: 'First', views: [view(draft.documentId, 1)] } });
    await draft.graphql(deleteFieldMutation, { envelopeId: draft.envelopeId, fieldId: second.id });
    // Refused requests leave no trace.
    await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, { fields: [textField(draft, 'first')] });
    await draft.rest.patch(`/envelopes/${draft.envelopeId}/fields/${first.id}`, { field: { views: [] } });

    const events = (await listAuditEvents(app.orm.em.fork(), draft.envelopeId)).filter((event) => event.type.startsWith('field.'));
    expect(events.map((event) => event.type)).toEqual(['field.added', 'field.updated', 'field.removed']);
    const [added, updated, removed] = events;
    expect(added.details).toEqual({
      fields: [
        { fieldId: first.id, identifier: 'first', type: 'text', recipientId: draft.signerId },
        { fieldId: second.id, identifier: 'second', type: 'text', recipientId: draft.signerId },
      ],
    });
    expect(updated.details).toMatchObject({ fieldId: first.id });
    expect([...(updated.details.changed as string[])].sort()).toEqual(['label', 'views']);
    expect(removed.details).toMatchObject({ fieldId: second.id, identifier: 'second' });
    expect(added.actorType).toBe('api_key');
  });
});

describe('Idempotency-Key', () => {
  it('returns the first fields for a repeated request and creates nothing new', async () => {
    const draft = await newDraft();
    const headers = { 'idempotency-key': 'fields-1' };
    const body = { fields: [textField(draft, 'one'), textField(draft, 'two')] };
    const first = await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, body, headers);
    const repeat = await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, body, headers);
    expect(repeat.status).toBe(200);
    expect(repeat.body.payload.fields).toEqual(first.body.payload.fields);
    const reused = await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, { fields: [textField(draft, 'three')] }, headers);
    expect(reused.body.error.name).toBe('Request.IdempotencyKeyReused');
    expect(await storedFields(draft)).toHaveLength(2);
  });
});
