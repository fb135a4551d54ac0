import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makePdf, notAPdf } from './fixtures/pdfs.ts';
import { unknownId } from './helpers/envelopes.ts';
import { firstErrorName, graphqlClient, restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { createReadyTemplate, uploadTemplateDocument, uploadTemplateDocumentByGraphql } from './helpers/templates.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app.close();
});

function callerOf(team: SeededTeam) {
  return { team, rest: restClient(app, team.apiKey), graphql: graphqlClient(app, team.apiKey) };
}

async function newTemplate(caller: ReturnType<typeof callerOf>, body: Record<string, unknown> = {}) {
  return (await caller.rest.post('/templates', { name: 'Content test', ...body })).body.payload.templateId as string;
}

const signatureAt = (recipientId: string, documentId: string, identifier = 'sig', page = 0) => ({
  type: 'simple_signature',
  recipientId,
  identifier,
  views: [{ documentId, page, location: { x: 40, y: 40 }, size: { width: 160, height: 40 } }],
});

describe('template documents', () => {
  it('REST: uploads, renames and deletes a document, with the envelope upload rules', async () => {
    const caller = callerOf(await seedTeam(app));
    const templateId = await newTemplate(caller);
    const uploaded = await uploadTemplateDocument(app, caller.team.apiKey, templateId, { bytes: await makePdf({ pages: 3 }), filename: 'terms.pdf' });
    expect(uploaded.status).toBe(200);
    const document = uploaded.body.payload.document;
    expect(document).toMatchObject({ name: 'terms.pdf', order: 0, pageCount: 3 });
    expect(document.pages).toHaveLength(3);
    const renamed = await caller.rest.patch(`/templates/${templateId}/documents/${document.id}`, { name: 'Terms' });
    expect(renamed.body.payload.document.name).toBe('Terms');
    const notPdf = await uploadTemplateDocument(app, caller.team.apiKey, templateId, { bytes: notAPdf(), filename: 'x.png', type: 'image/png' });
    expect(notPdf.status).toBe(415);
    expect(notPdf.body.error.name).toBe('Document.NotPdf');
    const read = await caller.rest.get(`/templates/${templateId}`);
    expect(read.body.payload.template.documents.map((d: { id: string }) => d.id)).toEqual([document.id]);
    expect((await caller.rest.delete(`/templates/${templateId}/documents/${document.id}`)).body.payload).toEqual({ deleted: true });
    const missing = await caller.rest.delete(`/templates/${templateId}/documents/${document.id}`);
    expect(missing.status).toBe(404);
    expect(missing.body.error.name).toBe('Document.NotFound');
    expect((await caller.rest.get(`/templates/${templateId}`)).body.payload.template.documents).toEqual([]);
  });

  it('GraphQL: uploads, updates and deletes a document; the same bytes as an envelope upload share one blob', async () => {
    const caller = callerOf(await seedTeam(app));
    const templateId = await newTemplate(caller);
    const bytes = await makePdf({ pages: 2 });
    const uploaded = await uploadTemplateDocumentByGraphql(app, caller.team.apiKey, templateId, bytes, 'Contract');
    expect(uploaded.body.errors).toBeUndefined();
    const document = uploaded.body.data.addTemplateDocument;
    expect(document).toMatchObject({ name: 'Contract', pageCount: 2 });
    const envelopeId = (await caller.rest.post('/envelopes', { name: 'Same file' })).body.payload.envelopeId;
    const form = new FormData();
    form.append('document', new Blob([bytes as Uint8Array<ArrayBuffer>], { type: 'application/pdf' }), 'same.pdf');
    const envelopeUpload = await (
      await fetch(`${app.url}/api/v1/key/envelopes/${envelopeId}/documents`, { method: 'POST', headers: { 'x-service-api-key': caller.team.apiKey }, body: form })
    ).json();
    expect(envelopeUpload.payload.document.sha256).toBe(document.sha256);
    const updated = await caller.graphql('mutation($t: ID!, $d: ID!) { updateTemplateDocument(templateId: $t, documentId: $d, input: { name: "Renamed", order: 3 }) { name order } }', {
      t: templateId,
      d: document.id,
    });
    expect(updated.data.updateTemplateDocument).toEqual({ name: 'Renamed', order: 3 });
    const deleted = await caller.graphql('mutation($t: ID!, $d: ID!) { deleteTemplateDocument(templateId: $t, documentId: $d) { id deleted } }', { t: templateId, d: document.id });
    expect(deleted.data.deleteTemplateDocument).toEqual({ id: document.id, deleted: true });
  });

  it('removing a document removes the template fields left without a placement', async () => {
    const caller = callerOf(await seedTeam(app));
    const ready = await createReadyTemplate(app, caller.team.apiKey);
    await caller.rest.delete(`/templates/${ready.templateId}/documents/${ready.documentId}`);
    expect((await caller.rest.get(`/templates/${ready.templateId}`)).body.payload.template.fields).toEqual([]);
  });
});

describe('template roles', () => {
  it('REST: adds a variable role, a fixed role with a pre-assigned user, and roles pre-assigned a contact and a group', async () => {
    const caller = callerOf(await seedTeam(app));
    const templateId = await newTemplate(caller);
    const user = (await caller.rest.post('/users', { name: 'Uma User', email: 'uma@example.com' })).body.payload.user;
    const contact = (await caller.rest.post('/contacts', { name: 'Cem Contact', email: 'cem@example.com' })).body.payload.contact;
    const group = (await caller.rest.post('/contact-groups', { name: 'Board' })).body.payload.contactGroup;
    const add = (recipient: Record<string, unknown>) => caller.rest.post(`/templates/${templateId}/recipients`, { recipient });
    const variable = await add({ type: 'signer', identifier: 'client', roleName: 'Client', order: 1 });
    expect(variable.status).toBe(200);
    expect(variable.body.payload.recipient).toMatchObject({ identifier: 'client', fixed: false, userId: null, contactId: null, contactGroupId: null, required: true });
    const fixed = await add({ type: 'signer', identifier: 'manager', roleName: 'Manager', order: 2, fixed: true, userId: user.id });
    expect(fixed.body.payload.recipient).toMatchObject({ fixed: true, userId: user.id });
    const withContact = await add({ type: 'viewer', identifier: 'copy', roleName: 'Copy', contactId: contact.id });
    expect(withContact.body.payload.recipient.contactId).toBe(contact.id);
    const withGroup = await add({ type: 'signer', identifier: 'board', roleName: 'Board', contactGroupId: group.id });
    expect(withGroup.body.payload.recipient.contactGroupId).toBe(group.id);
    const colors = new Set([variable, fixed, withContact, withGroup].map((answer) => answer.body.payload.recipient.color));
    expect(colors.size).toBe(4);

    const two = await add({ type: 'signer', identifier: 'two', roleName: 'Two', userId: user.id, contactId: contact.id });
    expect(two.status).toBe(400);
    expect(two.body.error.name).toBe('Request.Invalid');
    const duplicate = await add({ type: 'signer', identifier: 'client', roleName: 'Again' });
    expect(duplicate.status).toBe(409);
    expect(duplicate.body.error.name).toBe('Recipient.DuplicateIdentifier');

    const patched = await caller.rest.patch(`/templates/${templateId}/recipients/${variable.body.payload.recipient.id}`, { recipient: { contactId: contact.id, fixed: true } });
    expect(patched.body.payload.recipient).toMatchObject({ contactId: contact.id, userId: null, fixed: true });
    const cleared = await caller.rest.patch(`/templates/${templateId}/recipients/${variable.body.payload.recipient.id}`, { recipient: { contactId: null } });
    expect(cleared.body.payload.recipient).toMatchObject({ contactId: null, fixed: true });
  });

  it('refuses another team’s contact, group or user as a pre-assignment exactly like an unknown one', async () => {
    const caller = callerOf(await seedTeam(app));
    const other = callerOf(await seedTeam(app));
    const templateId = await newTemplate(caller);
    const theirContact = (await other.rest.post('/contacts', { name: 'Their contact' })).body.payload.contact;
    const foreign = await caller.rest.post(`/templates/${templateId}/recipients`, { recipient: { type: 'signer', identifier: 'x', roleName: 'X', contactId: theirContact.id } });
    const missing = await caller.rest.post(`/templates/${templateId}/recipients`, { recipient: { type: 'signer', identifier: 'x', roleName: 'X', contactId: unknownId } });
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.name).toBe('Contact.NotFound');
    expect(foreign.body.error.context.path).toBe('recipient.contactId');
    expect(
      JSON.stringify(foreign.body.error)
        .replace(theirContact.id, '<id>')
        .replace(/"requestId":"[^"]+"/, ''),
    ).toBe(
      JSON.stringify(missing.body.error)
        .replace(unknownId, '<id>')
        .replace(/"requestId":"[^"]+"/, ''),
    );
    const gqlMissing = await caller.graphql(
      'mutation($t: ID!, $g: ID!) { addTemplateRecipient(templateId: $t, input: { type: signer, identifier: "g", roleName: "G", contactGroupId: $g }) { id } }',
      {
        t: templateId,
        g: unknownId,
      },
    );
    expect(firstErrorName(gqlMissing)).toBe('ContactGroup.NotFound');
  });

  it('refuses removing a host or delegator role while bound, and an unknown role, on both faces; removing a role removes its fields', async () => {
    const caller = callerOf(await seedTeam(app));
    const ready = await createReadyTemplate(app, caller.team.apiKey);
    const add = async (recipient: Record<string, unknown>) => (await caller.rest.post(`/templates/${ready.templateId}/recipients`, { recipient })).body.payload.recipient;
    const host = await add({ type: 'host', identifier: 'host', roleName: 'Host' });
    const inPerson = await add({ type: 'in_person_signer', identifier: 'guest', roleName: 'Guest', hostedById: host.id });
    expect(inPerson.hostedById).toBe(host.id);
    const delegated = await add({ type: 'signer', identifier: 'deputy', roleName: 'Deputy', delegatedById: ready.signerId });
    expect(delegated.delegatedById).toBe(ready.signerId);
    const badHost = await caller.rest.post(`/templates/${ready.templateId}/recipients`, {
      recipient: { type: 'in_person_signer', identifier: 'bad', roleName: 'Bad', hostedById: ready.signerId },
    });
    expect(badHost.body.error.name).toBe('Request.Invalid');
    expect(badHost.body.error.context.issues[0]).toEqual({ path: 'recipient.hostedById', message: 'must be the id of a recipient of type host in this template' });

    const hostBound = await caller.rest.delete(`/templates/${ready.templateId}/recipients/${host.id}`);
    expect(hostBound.status).toBe(409);
    expect(hostBound.body.error.name).toBe('Recipient.HostRecipientBound');
    expect(hostBound.body.error.context.boundRecipientIds).toEqual([inPerson.id]);
    const gqlDelegator = await caller.graphql('mutation($t: ID!, $r: ID!) { deleteTemplateRecipient(templateId: $t, recipientId: $r) { id } }', {
      t: ready.templateId,
      r: ready.signerId,
    });
    expect(firstErrorName(gqlDelegator)).toBe('Recipient.DelegatorRecipientBound');
    const restDelegator = await caller.rest.delete(`/templates/${ready.templateId}/recipients/${ready.signerId}`);
    expect(restDelegator.body.error.name).toBe('Recipient.DelegatorRecipientBound');
    const gqlHost = await caller.graphql('mutation($t: ID!, $r: ID!) { deleteTemplateRecipient(templateId: $t, recipientId: $r) { id } }', { t: ready.templateId, r: host.id });
    expect(firstErrorName(gqlHost)).toBe('Recipient.HostRecipientBound');
    for (const id of [unknownId, 'nonsense']) {
      const missing = await caller.rest.delete(`/templates/${ready.templateId}/recipients/${id}`);
      expect(missing.status).toBe(404);
      expect(missing.body.error.name).toBe('Recipient.NotFound');
      expect(missing.body.error.description).toBe('No recipient with this id exists in this template.');
    }
    expect(
      firstErrorName(await caller.graphql('mutation($t: ID!, $r: ID!) { deleteTemplateRecipient(templateId: $t, recipientId: $r) { id } }', { t: ready.templateId, r: unknownId })),
    ).toBe('Recipient.NotFound');

    // Unbind, then remove the signer: its field goes with it.
    await caller.rest.delete(`/templates/${ready.templateId}/recipients/${delegated.id}`);
    expect((await caller.rest.delete(`/templates/${ready.templateId}/recipients/${ready.signerId}`)).body.payload).toEqual({ deleted: true });
    const read = (await caller.rest.get(`/templates/${ready.templateId}`)).body.payload.template;
    expect(read.fields).toEqual([]);
    expect(read.recipients.map((role: { identifier: string }) => role.identifier).sort()).toEqual(['guest', 'host']);
  });

  it('GraphQL: adds, updates and reads roles', async () => {
    const caller = callerOf(await seedTeam(app));
    const templateId = await newTemplate(caller);
    const added = await caller.graphql(
      'mutation($t: ID!) { addTemplateRecipient(templateId: $t, input: { type: signer, identifier: "tenant", roleName: "Tenant", fixed: true }) { id identifier fixed userId } }',
      { t: templateId },
    );
    expect(added.data.addTemplateRecipient).toMatchObject({ identifier: 'tenant', fixed: true, userId: null });
    const updated = await caller.graphql(
      'mutation($t: ID!, $r: ID!) { updateTemplateRecipient(templateId: $t, recipientId: $r, input: { roleName: "Lessee", fixed: false }) { roleName fixed } }',
      { t: templateId, r: added.data.addTemplateRecipient.id },
    );
    expect(updated.data.updateTemplateRecipient).toEqual({ roleName: 'Lessee', fixed: false });
    const read = await caller.graphql('query($t: ID!) { template(id: $t) { recipients { identifier roleName fixed } } }', { t: templateId });
    expect(read.data.template.recipients).toEqual([{ identifier: 'tenant', roleName: 'Lessee', fixed: false }]);
  });
});

describe('template fields', () => {
  it('REST: adds a batch all or nothing, patches and deletes fields', async () => {
    const caller = callerOf(await seedTeam(app));
    const ready = await createReadyTemplate(app, caller.team.apiKey);
    const bad = await caller.rest.post(`/templates/${ready.templateId}/fields`, {
      fields: [signatureAt(ready.signerId, ready.documentId, 'ok'), signatureAt(ready.signerId, ready.documentId, 'off-page', 7), signatureAt(unknownId, unknownId, 'nobody')],
    });
    expect(bad.status).toBe(400);
    const paths = bad.body.error.context.issues.map((issue: { path: string }) => issue.path);
    expect(paths).toEqual(['fields[1].views[0].page', 'fields[2].recipientId', 'fields[2].views[0].documentId']);
    expect(bad.body.error.context.issues[1].message).toBe('must be the id of a recipient in this template');
    expect((await caller.rest.get(`/templates/${ready.templateId}`)).body.payload.template.fields).toHaveLength(1);

    const added = await caller.rest.post(`/templates/${ready.templateId}/fields`, {
      fields: [{ ...signatureAt(ready.signerId, ready.documentId, 'initials'), type: 'text', config: { maxLength: 4 } }],
    });
    expect(added.status).toBe(200);
    const field = added.body.payload.fields[0];
    expect(field).toMatchObject({ identifier: 'initials', recipientId: ready.signerId, type: 'text', config: { maxLength: 4 } });
    const duplicate = await caller.rest.post(`/templates/${ready.templateId}/fields`, { fields: [signatureAt(ready.signerId, ready.documentId, 'initials')] });
    expect(duplicate.body.error.name).toBe('Field.DuplicateIdentifier');
    const patched = await caller.rest.patch(`/templates/${ready.templateId}/fields/${field.id}`, {
      field: { label: 'Initials', views: [{ documentId: ready.documentId, page: 1, location: { x: 1, y: 1 }, size: { width: 20, height: 10 } }] },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.payload.field).toMatchObject({ label: 'Initials', views: [{ documentId: ready.documentId, page: 1 }] });
    expect((await caller.rest.delete(`/templates/${ready.templateId}/fields/${field.id}`)).body.payload).toEqual({ deleted: true });
    const gone = await caller.rest.delete(`/templates/${ready.templateId}/fields/${field.id}`);
    expect(gone.status).toBe(404);
    expect(gone.body.error.name).toBe('Field.NotFound');
  });

  it('GraphQL: creates, updates and deletes fields', async () => {
    const caller = callerOf(await seedTeam(app));
    const ready = await createReadyTemplate(app, caller.team.apiKey);
    const created = await caller.graphql(
      `mutation($t: ID!, $r: ID!, $d: ID!) { createTemplateFields(templateId: $t, fields: [{ type: checkbox, recipientId: $r, identifier: "agree", views: [{ documentId: $d, page: 0, location: { x: 10, y: 10 }, size: { width: 12, height: 12 } }] }]) { id identifier recipientId views { page } } }`,
      { t: ready.templateId, r: ready.signerId, d: ready.documentId },
    );
    expect(created.errors).toBeUndefined();
    const field = created.data.createTemplateFields[0];
    expect(field).toMatchObject({ identifier: 'agree', recipientId: ready.signerId, views: [{ page: 0 }] });
    const updated = await caller.graphql('mutation($t: ID!, $f: ID!) { updateTemplateField(templateId: $t, fieldId: $f, input: { required: true }) { required } }', {
      t: ready.templateId,
      f: field.id,
    });
    expect(updated.data.updateTemplateField.required).toBe(true);
    const deleted = await caller.graphql('mutation($t: ID!, $f: ID!) { deleteTemplateField(templateId: $t, fieldId: $f) { deleted } }', { t: ready.templateId, f: field.id });
    expect(deleted.data.deleteTemplateField.deleted).toBe(true);
    const missing = await caller.graphql('mutation($t: ID!, $f: ID!) { deleteTemplateField(templateId: $t, fieldId: $f) { deleted } }', { t: ready.templateId, f: field.id });
    expect(firstErrorName(missing)).toBe('Field.NotFound');
  });

  it('refuses a field for a viewer role', async () => {
    const caller = callerOf(await seedTeam(app));
    const ready = await createReadyTemplate(app, caller.team.apiKey);
    const viewer = (await caller.rest.post(`/templates/${ready.templateId}/recipients`, { recipient: { type: 'viewer', identifier: 'cc', roleName: 'CC' } })).body.payload.recipient;
    const refused = await caller.rest.post(`/templates/${ready.templateId}/fields`, { fields: [signatureAt(viewer.id, ready.documentId)] });
    expect(refused.body.error.context.issues[0].path).toBe('fields[0].recipientId');
    const toViewer = await caller.rest.patch(`/templates/${ready.templateId}/recipients/${ready.signerId}`, { recipient: { type: 'viewer' } });
    expect(toViewer.status).toBe(409);
    expect(toViewer.body.error.name).toBe('Recipient.HasFields');
  });
});

describe('who may change a template’s content', () => {
  it('a team in scope gets Template.NotOwner on every change; another team gets Template.NotFound', async () => {
    const owner = callerOf(await seedTeam(app));
    const sibling = callerOf(await seedTeam(app, { workspaceId: owner.team.workspaceId }));
    const stranger = callerOf(await seedTeam(app, { workspaceId: owner.team.workspaceId }));
    const ready = await createReadyTemplate(app, owner.team.apiKey, { teamScope: [sibling.team.teamId] });
    const before = (await owner.rest.get(`/templates/${ready.templateId}`)).body.payload.template;
    for (const [caller, expected] of [
      [sibling, 'Template.NotOwner'],
      [stranger, 'Template.NotFound'],
    ] as const) {
      const answers = [
        await uploadTemplateDocument(app, caller.team.apiKey, ready.templateId, { bytes: await makePdf({ pages: 1 }) }),
        await caller.rest.patch(`/templates/${ready.templateId}/documents/${ready.documentId}`, { name: 'X' }),
        await caller.rest.delete(`/templates/${ready.templateId}/documents/${ready.documentId}`),
        await caller.rest.post(`/templates/${ready.templateId}/recipients`, { recipient: { type: 'signer', identifier: 'x', roleName: 'X' } }),
        await caller.rest.patch(`/templates/${ready.templateId}/recipients/${ready.signerId}`, { recipient: { roleName: 'X' } }),
        await caller.rest.delete(`/templates/${ready.templateId}/recipients/${ready.signerId}`),
        await caller.rest.post(`/templates/${ready.templateId}/fields`, { fields: [signatureAt(ready.signerId, ready.documentId, 'x')] }),
        await caller.rest.patch(`/templates/${ready.templateId}/fields/${ready.fieldId}`, { field: { label: 'X' } }),
        await caller.rest.delete(`/templates/${ready.templateId}/fields/${ready.fieldId}`),
      ];
      expect(answers.map((answer) => answer.body.error?.name)).toEqual(answers.map(() => expected));
      const upload = await uploadTemplateDocumentByGraphql(app, caller.team.apiKey, ready.templateId, await makePdf({ pages: 1 }));
      expect(upload.body.errors[0].extensions.code).toBe(expected);
      const role = await caller.graphql('mutation($t: ID!) { addTemplateRecipient(templateId: $t, input: { type: signer, identifier: "x", roleName: "X" }) { id } }', {
        t: ready.templateId,
      });
      expect(firstErrorName(role)).toBe(expected);
    }
    expect((await owner.rest.get(`/templates/${ready.templateId}`)).body.payload.template).toEqual(before);
  });

  it('fields of a template change at any time: a template has no status', async () => {
    const caller = callerOf(await seedTeam(app));
    const ready = await createReadyTemplate(app, caller.team.apiKey);
    const patched = await caller.rest.patch(`/templates/${ready.templateId}/fields/${ready.fieldId}`, { field: { label: 'Sign here' } });
    expect(patched.body.payload.field.label).toBe('Sign here');
  });
});

describe('template capacity and idempotency', () => {
  it('refuses a role past 50 per template with Template.CapacityExceeded, on both faces', async () => {
    const caller = callerOf(await seedTeam(app));
    const templateId = await newTemplate(caller);
    for (let index = 0; index < 50; index += 1) {
      const added = await caller.rest.post(`/templates/${templateId}/recipients`, { recipient: { type: 'viewer', identifier: `r${index}`, roleName: `Role ${index}` } });
      expect(added.status).toBe(200);
    }
    const refused = await caller.rest.post(`/templates/${templateId}/recipients`, { recipient: { type: 'viewer', identifier: 'r50', roleName: 'One too many' } });
    expect(refused.status).toBe(422);
    expect(refused.body.error).toMatchObject({ name: 'Template.CapacityExceeded', context: { what: 'recipients', limit: 50, current: 50, adding: 1 } });
    expect(refused.body.error.description).toBe('A template holds at most 50 recipients; it has 50 and this request adds 1.');
    const graphql = await caller.graphql('mutation($t: ID!) { addTemplateRecipient(templateId: $t, input: { type: viewer, identifier: "g50", roleName: "G" }) { id } }', { t: templateId });
    expect(firstErrorName(graphql)).toBe('Template.CapacityExceeded');
    expect((await caller.rest.get(`/templates/${templateId}`)).body.payload.template.recipients).toHaveLength(50);
  });

  it('honours Idempotency-Key when creating a template and its parts', async () => {
    const caller = callerOf(await seedTeam(app));
    const key = { 'idempotency-key': 'template-create-1' };
    const first = await caller.rest.post('/templates', { name: 'Once' }, key);
    const again = await caller.rest.post('/templates', { name: 'Once' }, key);
    expect(again.body.payload.templateId).toBe(first.body.payload.templateId);
    expect((await caller.rest.post('/templates', { name: 'Twice' }, key)).body.error.name).toBe('Request.IdempotencyKeyReused');
    const templateId = first.body.payload.templateId;
    const roleKey = { 'idempotency-key': 'template-role-1' };
    const role = await caller.rest.post(`/templates/${templateId}/recipients`, { recipient: { type: 'signer', identifier: 'a', roleName: 'A' } }, roleKey);
    await caller.rest.patch(`/templates/${templateId}/recipients/${role.body.payload.recipient.id}`, { recipient: { roleName: 'Changed' } });
    const replay = await caller.rest.post(`/templates/${templateId}/recipients`, { recipient: { type: 'signer', identifier: 'a', roleName: 'A' } }, roleKey);
    expect(replay.body.payload.recipient).toEqual(role.body.payload.recipient);
    const listed = (await caller.rest.get('/templates')).body.payload.templates;
    expect(listed.map((template: { id: string }) => template.id)).toEqual([templateId]);
    expect(listed[0].recipients).toHaveLength(1);
  });
});
