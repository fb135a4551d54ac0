import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makePdf } from './fixtures/pdfs.ts';
import { createDraftWithDocumentAndSigner, unknownId, uploadDocument } from './helpers/envelopes.ts';
import { graphqlClient, restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { createReadyTemplate, uploadTemplateDocument } from './helpers/templates.ts';

let app: TestApp;
let owner: SeededTeam;
let intruder: SeededTeam;
let theirs: { envelopeId: string; documentId: string; signerId: string; fieldId: string };
let mine: { envelopeId: string; documentId: string; signerId: string; fieldId: string };
let snapshotBefore: unknown;

const unknownIds = {
  envelopeId: unknownId,
  documentId: '00000000-0000-4000-8000-000000000001',
  signerId: '00000000-0000-4000-8000-000000000002',
  fieldId: '00000000-0000-4000-8000-000000000003',
};

async function fullDraft(team: SeededTeam) {
  const draft = await createDraftWithDocumentAndSigner(app, team.apiKey);
  const fields = await restClient(app, team.apiKey).post(`/envelopes/${draft.envelopeId}/fields`, {
    fields: [
      {
        type: 'simple_signature',
        recipientId: draft.signerId,
        identifier: 'signature',
        views: [{ documentId: draft.documentId, page: 0, location: { x: 40, y: 40 }, size: { width: 160, height: 40 } }],
      },
    ],
  });
  return { envelopeId: draft.envelopeId, documentId: draft.documentId, signerId: draft.signerId, fieldId: fields.body.payload.fields[0].id as string };
}

async function ownerSnapshot() {
  return (await restClient(app, owner.apiKey).get(`/envelopes/${theirs.envelopeId}?includeDocuments=true&includeRecipients=true&includeFields=true`)).body.payload;
}

beforeAll(async () => {
  app = await startTestApp();
  owner = await seedTeam(app);
  // Same workspace: even a sibling team sees nothing of another team's envelopes.
  intruder = await seedTeam(app, { workspaceId: owner.workspaceId });
  theirs = await fullDraft(owner);
  mine = await fullDraft(intruder);
  snapshotBefore = await ownerSnapshot();
});
afterAll(async () => {
  await app.close();
});

function idsOf(ids: { envelopeId: string; documentId: string; signerId: string; fieldId: string }): string[] {
  return [ids.envelopeId, ids.documentId, ids.signerId, ids.fieldId];
}

/** An answer with the ids it echoes and its request id blanked, so two answers can be compared. */
function comparable(body: unknown, ids: string[]): string {
  let text = JSON.stringify(body).replace(/"requestId":"[^"]+"/g, '"requestId":"-"');
  for (const id of ids) text = text.replaceAll(id, '<id>');
  return text;
}

type Ids = typeof theirs;
type RestProbe = { name: string; call: (ids: Ids) => Promise<{ status: number; body: unknown }> };

const probeBody = {
  recipient: { recipient: { type: 'signer', identifier: 'probe', roleName: 'Probe' } },
  field: (ids: Ids) => ({
    fields: [
      {
        type: 'text',
        recipientId: ids.signerId,
        identifier: 'probe',
        views: [{ documentId: ids.documentId, page: 0, location: { x: 1, y: 1 }, size: { width: 10, height: 10 } }],
      },
    ],
  }),
};

function restProbes(): RestProbe[] {
  // Resolved per call: the probes are listed before beforeAll has seeded the teams.
  const rest = new Proxy({} as ReturnType<typeof restClient>, { get: (_target, method: string) => restClient(app, intruder.apiKey)[method as 'get'] });
  return [
    { name: 'GET envelope', call: (ids) => rest.get(`/envelopes/${ids.envelopeId}`) },
    { name: 'GET envelope with includes', call: (ids) => rest.get(`/envelopes/${ids.envelopeId}?includeDocuments=true&includeRecipients=true&includeFields=true`) },
    { name: 'PATCH envelope', call: (ids) => rest.patch(`/envelopes/${ids.envelopeId}`, { name: 'Hijacked' }) },
    { name: 'DELETE envelope', call: (ids) => rest.delete(`/envelopes/${ids.envelopeId}`) },
    { name: 'POST document', call: async (ids) => uploadDocument(app, intruder.apiKey, ids.envelopeId, { bytes: await makePdf({ pages: 1 }) }) },
    { name: 'GET documents', call: (ids) => rest.get(`/envelopes/${ids.envelopeId}/documents`) },
    { name: 'GET document', call: (ids) => rest.get(`/envelopes/${ids.envelopeId}/documents/${ids.documentId}`) },
    { name: 'PATCH document', call: (ids) => rest.patch(`/envelopes/${ids.envelopeId}/documents/${ids.documentId}`, { name: 'Hijacked' }) },
    { name: 'DELETE document', call: (ids) => rest.delete(`/envelopes/${ids.envelopeId}/documents/${ids.documentId}`) },
    { name: 'POST recipient', call: (ids) => rest.post(`/envelopes/${ids.envelopeId}/recipients`, probeBody.recipient) },
    { name: 'GET recipients', call: (ids) => rest.get(`/envelopes/${ids.envelopeId}/recipients`) },
    { name: 'GET recipient', call: (ids) => rest.get(`/envelopes/${ids.envelopeId}/recipients/${ids.signerId}`) },
    { name: 'PATCH recipient', call: (ids) => rest.patch(`/envelopes/${ids.envelopeId}/recipients/${ids.signerId}`, { recipient: { roleName: 'Hijacked' } }) },
    { name: 'DELETE recipient', call: (ids) => rest.delete(`/envelopes/${ids.envelopeId}/recipients/${ids.signerId}`) },
    { name: 'POST fields', call: (ids) => rest.post(`/envelopes/${ids.envelopeId}/fields`, probeBody.field(ids)) },
    { name: 'GET fields', call: (ids) => rest.get(`/envelopes/${ids.envelopeId}/fields`) },
    { name: 'GET field', call: (ids) => rest.get(`/envelopes/${ids.envelopeId}/fields/${ids.fieldId}`) },
    { name: 'PATCH field', call: (ids) => rest.patch(`/envelopes/${ids.envelopeId}/fields/${ids.fieldId}`, { field: { label: 'Hijacked' } }) },
    { name: 'DELETE field', call: (ids) => rest.delete(`/envelopes/${ids.envelopeId}/fields/${ids.fieldId}`) },
  ];
}

describe('another team’s data is indistinguishable from data that does not exist', () => {
  it.each(restProbes().map((probe) => [probe.name, probe] as const))('REST %s', async (_name, probe) => {
    const foreign = await probe.call(theirs);
    const missing = await probe.call(unknownIds);
    expect(foreign.status).toBeGreaterThanOrEqual(400);
    expect(foreign.status).toBe(missing.status);
    expect(comparable(foreign.body, idsOf(theirs))).toBe(comparable(missing.body, idsOf(unknownIds)));
  });

  it.each([
    ['document of another team in my envelope', (ids: Ids) => `/envelopes/${mine.envelopeId}/documents/${ids.documentId}`],
    ['recipient of another team in my envelope', (ids: Ids) => `/envelopes/${mine.envelopeId}/recipients/${ids.signerId}`],
    ['field of another team in my envelope', (ids: Ids) => `/envelopes/${mine.envelopeId}/fields/${ids.fieldId}`],
  ])('REST: a %s is not found', async (_name, pathFor) => {
    const rest = restClient(app, intruder.apiKey);
    for (const method of ['get', 'delete'] as const) {
      const foreign = await rest[method](pathFor(theirs));
      const missing = await rest[method](pathFor(unknownIds));
      expect(foreign.status).toBe(404);
      expect(comparable(foreign.body, idsOf(theirs))).toBe(comparable(missing.body, idsOf(unknownIds)));
    }
  });

  it('REST: placing a field on another team’s document or assigning it to another team’s recipient is refused like an unknown id', async () => {
    const rest = restClient(app, intruder.apiKey);
    const body = (ids: { documentId: string; signerId: string }) => ({
      fields: [
        {
          type: 'text',
          recipientId: ids.signerId,
          identifier: 'cross',
          views: [{ documentId: ids.documentId, page: 0, location: { x: 1, y: 1 }, size: { width: 10, height: 10 } }],
        },
      ],
    });
    const foreign = await rest.post(`/envelopes/${mine.envelopeId}/fields`, body(theirs));
    const missing = await rest.post(`/envelopes/${mine.envelopeId}/fields`, body(unknownIds));
    expect(foreign.status).toBe(400);
    expect(comparable(foreign.body, idsOf(theirs))).toBe(comparable(missing.body, idsOf(unknownIds)));
  });

  const graphqlOperations: [string, string, (ids: Ids) => Record<string, unknown>][] = [
    ['envelope', 'query($e: ID!) { envelope(id: $e) { id documents { id } recipients { id } fields { id } } }', (ids) => ({ e: ids.envelopeId })],
    ['document', 'query($e: ID!, $d: ID!) { document(envelopeId: $e, documentId: $d) { id } }', (ids) => ({ e: ids.envelopeId, d: ids.documentId })],
    ['recipient', 'query($e: ID!, $r: ID!) { recipient(envelopeId: $e, recipientId: $r) { id } }', (ids) => ({ e: ids.envelopeId, r: ids.signerId })],
    ['field', 'query($e: ID!, $f: ID!) { field(envelopeId: $e, fieldId: $f) { id } }', (ids) => ({ e: ids.envelopeId, f: ids.fieldId })],
    ['updateEnvelope', 'mutation($e: ID!) { updateEnvelope(id: $e, input: { name: "Hijacked" }) { id } }', (ids) => ({ e: ids.envelopeId })],
    ['deleteEnvelope', 'mutation($e: ID!) { deleteEnvelope(id: $e) { id } }', (ids) => ({ e: ids.envelopeId })],
    [
      'updateDocument',
      'mutation($e: ID!, $d: ID!) { updateDocument(envelopeId: $e, documentId: $d, input: { name: "Hijacked" }) { id } }',
      (ids) => ({ e: ids.envelopeId, d: ids.documentId }),
    ],
    ['deleteDocument', 'mutation($e: ID!, $d: ID!) { deleteDocument(envelopeId: $e, documentId: $d) { id } }', (ids) => ({ e: ids.envelopeId, d: ids.documentId })],
    ['addRecipient', 'mutation($e: ID!) { addRecipient(envelopeId: $e, input: { type: signer, identifier: "probe", roleName: "Probe" }) { id } }', (ids) => ({ e: ids.envelopeId })],
    [
      'updateRecipient',
      'mutation($e: ID!, $r: ID!) { updateRecipient(envelopeId: $e, recipientId: $r, input: { roleName: "Hijacked" }) { id } }',
      (ids) => ({ e: ids.envelopeId, r: ids.signerId }),
    ],
    ['deleteRecipient', 'mutation($e: ID!, $r: ID!) { deleteRecipient(envelopeId: $e, recipientId: $r) { id } }', (ids) => ({ e: ids.envelopeId, r: ids.signerId })],
    [
      'createFields',
      'mutation($e: ID!, $r: ID!, $d: ID!) { createFields(envelopeId: $e, fields: [{ type: text, recipientId: $r, identifier: "probe", views: [{ documentId: $d, page: 0, location: { x: 1, y: 1 }, size: { width: 10, height: 10 } }] }]) { id } }',
      (ids) => ({ e: ids.envelopeId, r: ids.signerId, d: ids.documentId }),
    ],
    ['updateField', 'mutation($e: ID!, $f: ID!) { updateField(envelopeId: $e, fieldId: $f, input: { label: "Hijacked" }) { id } }', (ids) => ({ e: ids.envelopeId, f: ids.fieldId })],
    ['deleteField', 'mutation($e: ID!, $f: ID!) { deleteField(envelopeId: $e, fieldId: $f) { id } }', (ids) => ({ e: ids.envelopeId, f: ids.fieldId })],
  ];

  it.each(graphqlOperations)('GraphQL %s', async (_name, document, variables) => {
    const graphql = graphqlClient(app, intruder.apiKey);
    const foreign = await graphql(document, variables(theirs));
    const missing = await graphql(document, variables(unknownIds));
    expect(foreign.errors?.[0]?.extensions?.code).toMatch(/\.NotFound$/);
    expect(foreign.status).toBe(missing.status);
    expect(comparable({ data: foreign.data, errors: foreign.errors }, idsOf(theirs))).toBe(comparable({ data: missing.data, errors: missing.errors }, idsOf(unknownIds)));
  });

  it('GraphQL: an upload to another team’s envelope is refused like one to an unknown envelope', async () => {
    const upload = async (envelopeId: string) => {
      const form = new FormData();
      form.append(
        'operations',
        JSON.stringify({
          query: 'mutation($e: ID!, $input: AddDocumentInput!) { addDocument(envelopeId: $e, input: $input) { id } }',
          variables: { e: envelopeId, input: { file: null } },
        }),
      );
      form.append('map', JSON.stringify({ 0: ['variables.input.file'] }));
      form.append('0', new Blob([(await makePdf({ pages: 1 })) as Uint8Array<ArrayBuffer>]), 'probe.pdf');
      const response = await fetch(`${app.url}/graphql`, { method: 'POST', headers: { 'x-service-api-key': intruder.apiKey }, body: form });
      return { status: response.status, body: await response.json() };
    };
    const foreign = await upload(theirs.envelopeId);
    const missing = await upload(unknownId);
    expect(foreign.body.errors[0].extensions.code).toBe('Envelope.NotFound');
    expect(comparable(foreign.body, [theirs.envelopeId])).toBe(comparable(missing.body, [unknownId]));
  });

  it('GraphQL: the envelope listing never shows another team’s envelopes', async () => {
    const listed = await graphqlClient(app, intruder.apiKey)('{ envelopes(first: 100) { nodes { id } } }');
    expect(listed.data.envelopes.nodes.map((node: { id: string }) => node.id)).toEqual([mine.envelopeId]);
  });

  it('left the owner’s envelope exactly as it was', async () => {
    expect(await ownerSnapshot()).toEqual(snapshotBefore);
  });
});

describe('another team’s template is indistinguishable from one that does not exist', () => {
  type TemplateIds = { templateId: string; documentId: string; signerId: string; fieldId: string };
  let theirTemplate: TemplateIds;
  let myTemplate: TemplateIds;
  let templateBefore: unknown;
  const unknownTemplateIds: TemplateIds = {
    templateId: unknownId,
    documentId: '00000000-0000-4000-8000-000000000001',
    signerId: '00000000-0000-4000-8000-000000000002',
    fieldId: '00000000-0000-4000-8000-000000000003',
  };
  const templateIdsOf = (ids: TemplateIds) => [ids.templateId, ids.documentId, ids.signerId, ids.fieldId];
  const ownerTemplate = async () => (await restClient(app, owner.apiKey).get(`/templates/${theirTemplate.templateId}`)).body.payload;

  beforeAll(async () => {
    // Not shared: the intruder is in the owner's workspace but not in the template's teamScope.
    const ready = await createReadyTemplate(app, owner.apiKey);
    theirTemplate = { templateId: ready.templateId, documentId: ready.documentId, signerId: ready.signerId, fieldId: ready.fieldId };
    const mine = await createReadyTemplate(app, intruder.apiKey);
    myTemplate = { templateId: mine.templateId, documentId: mine.documentId, signerId: mine.signerId, fieldId: mine.fieldId };
    templateBefore = await ownerTemplate();
  });

  const fieldBody = (ids: TemplateIds) => ({
    fields: [{ type: 'text', recipientId: ids.signerId, identifier: 'probe', views: [{ documentId: ids.documentId, page: 0, location: { x: 1, y: 1 }, size: { width: 10, height: 10 } }] }],
  });

  const templateProbes: [string, (ids: TemplateIds) => Promise<{ status: number; body: unknown }>][] = [
    ['GET template', (ids) => restClient(app, intruder.apiKey).get(`/templates/${ids.templateId}`)],
    ['PATCH template', (ids) => restClient(app, intruder.apiKey).patch(`/templates/${ids.templateId}`, { name: 'Hijacked' })],
    ['DELETE template', (ids) => restClient(app, intruder.apiKey).delete(`/templates/${ids.templateId}`)],
    ['POST template document', async (ids) => uploadTemplateDocument(app, intruder.apiKey, ids.templateId, { bytes: await makePdf({ pages: 1 }) })],
    ['PATCH template document', (ids) => restClient(app, intruder.apiKey).patch(`/templates/${ids.templateId}/documents/${ids.documentId}`, { name: 'Hijacked' })],
    ['DELETE template document', (ids) => restClient(app, intruder.apiKey).delete(`/templates/${ids.templateId}/documents/${ids.documentId}`)],
    ['POST template recipient', (ids) => restClient(app, intruder.apiKey).post(`/templates/${ids.templateId}/recipients`, probeBody.recipient)],
    ['PATCH template recipient', (ids) => restClient(app, intruder.apiKey).patch(`/templates/${ids.templateId}/recipients/${ids.signerId}`, { recipient: { roleName: 'Hijacked' } })],
    ['DELETE template recipient', (ids) => restClient(app, intruder.apiKey).delete(`/templates/${ids.templateId}/recipients/${ids.signerId}`)],
    ['POST template fields', (ids) => restClient(app, intruder.apiKey).post(`/templates/${ids.templateId}/fields`, fieldBody(ids))],
    ['PATCH template field', (ids) => restClient(app, intruder.apiKey).patch(`/templates/${ids.templateId}/fields/${ids.fieldId}`, { field: { label: 'Hijacked' } })],
    ['DELETE template field', (ids) => restClient(app, intruder.apiKey).delete(`/templates/${ids.templateId}/fields/${ids.fieldId}`)],
    ['POST jumpstart', (ids) => restClient(app, intruder.apiKey).post(`/envelopes/jumpstart/${ids.templateId}`, { recipients: [{ identifier: 'buyer' }] })],
  ];

  it.each(templateProbes)('REST %s', async (_name, call) => {
    const foreign = await call(theirTemplate);
    const missing = await call(unknownTemplateIds);
    expect(foreign.status).toBe(404);
    expect((foreign.body as any).error.name).toBe('Template.NotFound');
    expect(comparable(foreign.body, templateIdsOf(theirTemplate))).toBe(comparable(missing.body, templateIdsOf(unknownTemplateIds)));
  });

  it.each([
    ['document', (ids: TemplateIds) => `/templates/${myTemplate.templateId}/documents/${ids.documentId}`],
    ['recipient', (ids: TemplateIds) => `/templates/${myTemplate.templateId}/recipients/${ids.signerId}`],
    ['field', (ids: TemplateIds) => `/templates/${myTemplate.templateId}/fields/${ids.fieldId}`],
  ])('REST: a %s of another team’s template, named in my template, is not found', async (_name, pathFor) => {
    const rest = restClient(app, intruder.apiKey);
    const foreign = await rest.delete(pathFor(theirTemplate));
    const missing = await rest.delete(pathFor(unknownTemplateIds));
    expect(foreign.status).toBe(404);
    expect(comparable(foreign.body, templateIdsOf(theirTemplate))).toBe(comparable(missing.body, templateIdsOf(unknownTemplateIds)));
    const placed = await rest.post(`/templates/${myTemplate.templateId}/fields`, fieldBody({ ...myTemplate, documentId: theirTemplate.documentId, signerId: theirTemplate.signerId }));
    const placedMissing = await rest.post(
      `/templates/${myTemplate.templateId}/fields`,
      fieldBody({ ...myTemplate, documentId: unknownTemplateIds.documentId, signerId: unknownTemplateIds.signerId }),
    );
    expect(placed.status).toBe(400);
    expect(comparable(placed.body, templateIdsOf(theirTemplate))).toBe(comparable(placedMissing.body, templateIdsOf(unknownTemplateIds)));
  });

  const templateOperations: [string, string, (ids: TemplateIds) => Record<string, unknown>][] = [
    ['template', 'query($t: ID!) { template(id: $t) { id documents { id } recipients { id } fields { id } } }', (ids) => ({ t: ids.templateId })],
    ['updateTemplate', 'mutation($t: ID!) { updateTemplate(id: $t, input: { name: "Hijacked" }) { id } }', (ids) => ({ t: ids.templateId })],
    ['deleteTemplate', 'mutation($t: ID!) { deleteTemplate(id: $t) { id } }', (ids) => ({ t: ids.templateId })],
    [
      'updateTemplateDocument',
      'mutation($t: ID!, $d: ID!) { updateTemplateDocument(templateId: $t, documentId: $d, input: { name: "Hijacked" }) { id } }',
      (ids) => ({ t: ids.templateId, d: ids.documentId }),
    ],
    ['deleteTemplateDocument', 'mutation($t: ID!, $d: ID!) { deleteTemplateDocument(templateId: $t, documentId: $d) { id } }', (ids) => ({ t: ids.templateId, d: ids.documentId })],
    [
      'addTemplateRecipient',
      'mutation($t: ID!) { addTemplateRecipient(templateId: $t, input: { type: signer, identifier: "probe", roleName: "Probe" }) { id } }',
      (ids) => ({ t: ids.templateId }),
    ],
    [
      'updateTemplateRecipient',
      'mutation($t: ID!, $r: ID!) { updateTemplateRecipient(templateId: $t, recipientId: $r, input: { roleName: "Hijacked" }) { id } }',
      (ids) => ({ t: ids.templateId, r: ids.signerId }),
    ],
    ['deleteTemplateRecipient', 'mutation($t: ID!, $r: ID!) { deleteTemplateRecipient(templateId: $t, recipientId: $r) { id } }', (ids) => ({ t: ids.templateId, r: ids.signerId })],
    [
      'createTemplateFields',
      'mutation($t: ID!, $r: ID!, $d: ID!) { createTemplateFields(templateId: $t, fields: [{ type: text, recipientId: $r, identifier: "probe", views: [{ documentId: $d, page: 0, location: { x: 1, y: 1 }, size: { width: 10, height: 10 } }] }]) { id } }',
      (ids) => ({ t: ids.templateId, r: ids.signerId, d: ids.documentId }),
    ],
    [
      'updateTemplateField',
      'mutation($t: ID!, $f: ID!) { updateTemplateField(templateId: $t, fieldId: $f, input: { label: "Hijacked" }) { id } }',
      (ids) => ({ t: ids.templateId, f: ids.fieldId }),
    ],
    ['deleteTemplateField', 'mutation($t: ID!, $f: ID!) { deleteTemplateField(templateId: $t, fieldId: $f) { id } }', (ids) => ({ t: ids.templateId, f: ids.fieldId })],
    ['jumpstartEnvelope', 'mutation($t: ID!) { jumpstartEnvelope(templateId: $t, input: { recipients: [{ identifier: "buyer" }] }) { id } }', (ids) => ({ t: ids.templateId })],
  ];

  it.each(templateOperations)('GraphQL %s', async (_name, document, variables) => {
    const graphql = graphqlClient(app, intruder.apiKey);
    const foreign = await graphql(document, variables(theirTemplate));
    const missing = await graphql(document, variables(unknownTemplateIds));
    expect(foreign.errors?.[0]?.extensions?.code).toBe('Template.NotFound');
    expect(foreign.status).toBe(missing.status);
    expect(comparable({ data: foreign.data, errors: foreign.errors }, templateIdsOf(theirTemplate))).toBe(
      comparable({ data: missing.data, errors: missing.errors }, templateIdsOf(unknownTemplateIds)),
    );
  });

  it('GraphQL: the template listing never shows another team’s templates', async () => {
    const listed = await graphqlClient(app, intruder.apiKey)('{ templates(first: 100) { nodes { id } } }');
    expect(listed.data.templates.nodes.map((node: { id: string }) => node.id)).toEqual([myTemplate.templateId]);
  });

  it('left the owner’s template exactly as it was', async () => {
    expect(await ownerTemplate()).toEqual(templateBefore);
  });
});
