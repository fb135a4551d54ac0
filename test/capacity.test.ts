import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONTACT_GROUP_CAPACITY, ENVELOPE_CAPACITY } from '../src/domain/capacity.ts';
import { Document } from '../src/domain/document/document.entity.ts';
import { Envelope } from '../src/domain/envelope/envelope.entity.ts';
import { Field } from '../src/domain/field/field.entity.ts';
import { FieldView } from '../src/domain/field/field-view.entity.ts';
import { Recipient } from '../src/domain/recipient/recipient.entity.ts';
import { makePdf } from './fixtures/pdfs.ts';
import { createDraftWithDocumentAndSigner, uploadDocument, uploadDocumentThroughGraphql } from './helpers/envelopes.ts';
import { firstErrorName, graphqlClient, restClient, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app.close();
});

/**
 * Fills an envelope up to a cap straight through the ORM (thousands of API calls would only slow
 * the suite down); the request that would pass the cap goes through the API.
 */
async function fill(envelopeId: string, fill: (em: ReturnType<TestApp['orm']['em']['fork']>, envelope: Envelope) => void) {
  const em = app.orm.em.fork();
  const envelope = await em.findOneOrFail(Envelope, { id: envelopeId });
  fill(em, envelope);
  await em.flush();
}

const view = (documentId: string) => ({ documentId, page: 0, location: { x: 10, y: 10 }, size: { width: 50, height: 20 } });

describe('capacity of an envelope and of a contact group', () => {
  it(`refuses a document past ${ENVELOPE_CAPACITY.documents} per envelope with Envelope.CapacityExceeded, on both faces`, async () => {
    const team = await seedTeam(app);
    const { envelopeId } = await createDraftWithDocumentAndSigner(app, team.apiKey);
    await fill(envelopeId, (em, envelope) => {
      for (let index = 1; index < ENVELOPE_CAPACITY.documents; index += 1) {
        em.create(Document, {
          envelope,
          name: `part ${index}.pdf`,
          order: index,
          pageCount: 1,
          pages: [{ width: 595, height: 842, rotation: 0 }],
          contentSha256: 'd'.repeat(64),
          byteSize: 1000,
        });
      }
    });
    const refused = await uploadDocument(app, team.apiKey, envelopeId, { bytes: await makePdf({ pages: 1 }) });
    expect(refused.status).toBe(422);
    expect(refused.body.error).toMatchObject({
      name: 'Envelope.CapacityExceeded',
      context: { what: 'documents', limit: ENVELOPE_CAPACITY.documents, current: ENVELOPE_CAPACITY.documents, adding: 1 },
    });
    const viaGraphql = await uploadDocumentThroughGraphql(app, team.apiKey, envelopeId, { bytes: await makePdf({ pages: 1 }) });
    expect(viaGraphql.body.errors[0].extensions).toMatchObject({ code: 'Envelope.CapacityExceeded', context: { what: 'documents', limit: ENVELOPE_CAPACITY.documents } });
    expect(viaGraphql.body.data).toEqual({ addDocument: null });
    const documents = await restClient(app, team.apiKey).get(`/envelopes/${envelopeId}/documents`);
    expect(documents.body.payload.documents).toHaveLength(ENVELOPE_CAPACITY.documents);
  });

  it(`refuses a recipient past ${ENVELOPE_CAPACITY.recipients} per envelope, on both faces`, async () => {
    const team = await seedTeam(app);
    const { envelopeId } = await createDraftWithDocumentAndSigner(app, team.apiKey);
    await fill(envelopeId, (em, envelope) => {
      for (let index = 1; index < ENVELOPE_CAPACITY.recipients; index += 1) {
        em.create(Recipient, { envelope, identifier: `role-${index}`, roleName: `Role ${index}`, type: 'signer', color: '#2563EB' });
      }
    });
    const recipient = { type: 'signer', identifier: 'one-too-many', roleName: 'Extra', agents: [{ info: { name: 'Ada' } }] };
    const rest = await restClient(app, team.apiKey).post(`/envelopes/${envelopeId}/recipients`, { recipient });
    expect(rest.status).toBe(422);
    expect(rest.body.error.name).toBe('Envelope.CapacityExceeded');
    const graphql = await graphqlClient(app, team.apiKey)('mutation($id: ID!, $input: AddRecipientInput!) { addRecipient(envelopeId: $id, input: $input) { id } }', {
      id: envelopeId,
      input: recipient,
    });
    expect(firstErrorName(graphql)).toBe('Envelope.CapacityExceeded');
    const listed = await restClient(app, team.apiKey).get(`/envelopes/${envelopeId}/recipients`);
    expect(listed.body.payload.recipients).toHaveLength(ENVELOPE_CAPACITY.recipients);
  });

  it(`refuses fields past ${ENVELOPE_CAPACITY.fields} per envelope, writing none of the batch`, async () => {
    const team = await seedTeam(app);
    const { envelopeId, documentId, signerId } = await createDraftWithDocumentAndSigner(app, team.apiKey);
    const rest = restClient(app, team.apiKey);
    await fill(envelopeId, (em, envelope) => {
      const recipient = em.getReference(Recipient, signerId);
      const document = em.getReference(Document, documentId);
      for (let index = 0; index < ENVELOPE_CAPACITY.fields - 1; index += 1) {
        const field = em.create(Field, { envelope, recipient, identifier: `f-${index}`, type: 'text', config: {} });
        em.create(FieldView, { field, document, page: 0, position: 0, x: 1, y: 1, width: 10, height: 10 });
      }
    });
    // One place left: a batch of two is refused whole.
    const two = await rest.post(`/envelopes/${envelopeId}/fields`, {
      fields: ['a', 'b'].map((identifier) => ({ type: 'text', recipientId: signerId, identifier, views: [view(documentId)] })),
    });
    expect(two.status).toBe(422);
    expect(two.body.error).toMatchObject({ name: 'Envelope.CapacityExceeded', context: { what: 'fields', current: ENVELOPE_CAPACITY.fields - 1, adding: 2 } });
    expect((await rest.get(`/envelopes/${envelopeId}/fields`)).body.payload.fields).toHaveLength(ENVELOPE_CAPACITY.fields - 1);

    // The last place is taken; the next field is refused.
    const last = await rest.post(`/envelopes/${envelopeId}/fields`, { fields: [{ type: 'text', recipientId: signerId, identifier: 'last', views: [view(documentId)] }] });
    expect(last.status).toBe(200);
    const beyond = await rest.post(`/envelopes/${envelopeId}/fields`, { fields: [{ type: 'text', recipientId: signerId, identifier: 'beyond', views: [view(documentId)] }] });
    expect(beyond.body.error.name).toBe('Envelope.CapacityExceeded');
  });

  it('counts views across the envelope when a field changes its views', async () => {
    const team = await seedTeam(app);
    const { envelopeId, documentId, signerId } = await createDraftWithDocumentAndSigner(app, team.apiKey);
    const rest = restClient(app, team.apiKey);
    await fill(envelopeId, (em, envelope) => {
      const recipient = em.getReference(Recipient, signerId);
      const document = em.getReference(Document, documentId);
      // 10 fields × 499 views: 4,990 of the 5,000.
      for (let index = 0; index < 10; index += 1) {
        const field = em.create(Field, { envelope, recipient, identifier: `wide-${index}`, type: 'text', config: {} });
        for (let position = 0; position < 499; position += 1) em.create(FieldView, { field, document, page: 0, position, x: 1, y: 1, width: 10, height: 10 });
      }
    });
    const created = await rest.post(`/envelopes/${envelopeId}/fields`, { fields: [{ type: 'text', recipientId: signerId, identifier: 'small', views: [view(documentId)] }] });
    const fieldId = created.body.payload.fields[0].id;
    // 4,991 now; this field may grow to 10 views, not 11.
    const fits = await rest.patch(`/envelopes/${envelopeId}/fields/${fieldId}`, { field: { views: Array.from({ length: 10 }, () => view(documentId)) } });
    expect(fits.status).toBe(200);
    const tooMany = await rest.patch(`/envelopes/${envelopeId}/fields/${fieldId}`, { field: { views: Array.from({ length: 11 }, () => view(documentId)) } });
    expect(tooMany.status).toBe(422);
    expect(tooMany.body.error).toMatchObject({ name: 'Envelope.CapacityExceeded', context: { what: 'field views', limit: ENVELOPE_CAPACITY.views } });
    const viaGraphql = await graphqlClient(app, team.apiKey)('mutation($e: ID!, $f: ID!, $input: UpdateFieldInput!) { updateField(envelopeId: $e, fieldId: $f, input: $input) { id } }', {
      e: envelopeId,
      f: fieldId,
      input: { views: Array.from({ length: 11 }, () => view(documentId)) },
    });
    expect(firstErrorName(viaGraphql)).toBe('Envelope.CapacityExceeded');
    expect((await rest.get(`/envelopes/${envelopeId}/fields/${fieldId}`)).body.payload.field.views).toHaveLength(10);
  });

  it(`refuses a member past ${CONTACT_GROUP_CAPACITY.members} per group, on both faces; adding a present member again still answers`, async () => {
    const team = await seedTeam(app);
    const rest = restClient(app, team.apiKey);
    const group = (await rest.post('/contact-groups', { name: 'Everyone' })).body.payload.contactGroup;
    const em = app.orm.em.fork();
    await em.execute(
      `with made as (
         insert into contact (id, created_at, updated_at, team_id, name)
         select gen_random_uuid(), now(), now(), ?, 'Member ' || n from generate_series(1, ?) n returning id)
       insert into contact_group_member (group_id, contact_id, created_at) select ?, id, now() from made`,
      [team.teamId, CONTACT_GROUP_CAPACITY.members, group.id],
    );
    const member = (await rest.get(`/contact-groups/${group.id}/members`)).body.payload.members[0];
    const again = await rest.post(`/contact-groups/${group.id}/members/${member.id}`);
    expect(again.status).toBe(200);
    expect(again.body.payload.contactGroup.memberCount).toBe(CONTACT_GROUP_CAPACITY.members);

    const newcomer = (await rest.post('/contacts', { name: 'Newcomer' })).body.payload.contact;
    const refused = await rest.post(`/contact-groups/${group.id}/members/${newcomer.id}`);
    expect(refused.status).toBe(422);
    expect(refused.body.error).toMatchObject({ name: 'ContactGroup.CapacityExceeded', context: { what: 'members', limit: CONTACT_GROUP_CAPACITY.members } });
    const viaGraphql = await graphqlClient(app, team.apiKey)('mutation($g: ID!, $c: ID!) { addContactGroupMember(groupId: $g, contactId: $c) { memberCount } }', {
      g: group.id,
      c: newcomer.id,
    });
    expect(firstErrorName(viaGraphql)).toBe('ContactGroup.CapacityExceeded');
    expect((await rest.get(`/contact-groups/${group.id}`)).body.payload.contactGroup.memberCount).toBe(CONTACT_GROUP_CAPACITY.members);
  });
});
