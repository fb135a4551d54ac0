import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listAuditEvents, verifyAuditChain } from '../src/domain/audit/audit.service.ts';
import { Template } from '../src/domain/template/template.entity.ts';
import { TemplateRecipient } from '../src/domain/template/template-recipient.entity.ts';
import { forceEnvelopeStatus, unknownId } from './helpers/envelopes.ts';
import { firstErrorName, type GraphQLResult, graphqlClient, restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ countStatements: true });
});
afterAll(async () => {
  await app.close();
});

const contactFields = 'id name email phone locale phoneContactMethod createdAt updatedAt';
const groupFields = `id name memberCount members { id name } createdAt updatedAt`;
const userFields = 'id name email phone locale createdAt updatedAt';

const gql = {
  createContact: `mutation($input: CreateContactInput!) { createContact(input: $input) { ${contactFields} } }`,
  updateContact: `mutation($id: ID!, $input: UpdateContactInput!) { updateContact(id: $id, input: $input) { ${contactFields} } }`,
  deleteContact: 'mutation($id: ID!) { deleteContact(id: $id) { id deleted } }',
  contact: `query($id: ID!) { contact(id: $id) { ${contactFields} } }`,
  contacts: `query($first: Int, $after: String, $search: String) {
    contacts(first: $first, after: $after, search: $search) { edges { cursor node { id } } nodes { ${contactFields} } pageInfo { hasNextPage endCursor } } }`,
  createContactGroup: `mutation($input: CreateContactGroupInput!) { createContactGroup(input: $input) { ${groupFields} } }`,
  updateContactGroup: `mutation($id: ID!, $input: UpdateContactGroupInput!) { updateContactGroup(id: $id, input: $input) { ${groupFields} } }`,
  deleteContactGroup: 'mutation($id: ID!) { deleteContactGroup(id: $id) { id deleted } }',
  contactGroup: `query($id: ID!) { contactGroup(id: $id) { ${groupFields} } }`,
  contactGroups: `query($first: Int, $after: String, $search: String) {
    contactGroups(first: $first, after: $after, search: $search) { edges { cursor } nodes { ${groupFields} } pageInfo { hasNextPage endCursor } } }`,
  addMember: `mutation($groupId: ID!, $contactId: ID!) { addContactGroupMember(groupId: $groupId, contactId: $contactId) { ${groupFields} } }`,
  removeMember: `mutation($groupId: ID!, $contactId: ID!) { removeContactGroupMember(groupId: $groupId, contactId: $contactId) { ${groupFields} } }`,
  createUser: `mutation($input: CreateUserInput!) { createUser(input: $input) { ${userFields} } }`,
  updateUser: `mutation($id: ID!, $input: UpdateUserInput!) { updateUser(id: $id, input: $input) { ${userFields} } }`,
  deleteUser: 'mutation($id: ID!) { deleteUser(id: $id) { id deleted } }',
  user: `query($id: ID!) { user(id: $id) { ${userFields} } }`,
  users: `query($first: Int, $after: String, $search: String) {
    users(first: $first, after: $after, search: $search) { nodes { ${userFields} } pageInfo { hasNextPage endCursor } } }`,
};

type Caller = {
  team: SeededTeam;
  rest: ReturnType<typeof restClient>;
  graphql: ReturnType<typeof graphqlClient>;
};

async function newCaller(team?: SeededTeam): Promise<Caller> {
  const seeded = team ?? (await seedTeam(app));
  return { team: seeded, rest: restClient(app, seeded.apiKey), graphql: graphqlClient(app, seeded.apiKey) };
}

/** GraphQL over HTTP with extra headers (the harness client sends none). */
async function graphqlWithHeaders(apiKey: string, document: string, variables: Record<string, unknown>, headers: Record<string, string>): Promise<GraphQLResult> {
  const response = await fetch(`${app.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-service-api-key': apiKey, ...headers },
    body: JSON.stringify({ query: document, variables }),
  });
  const json = (await response.json()) as { data?: unknown; errors?: any[] };
  return { status: response.status, data: json.data, errors: json.errors };
}

function ok(response: { status: number; body: any }) {
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return response.body.payload;
}

function data(result: GraphQLResult) {
  expect(result.errors, JSON.stringify(result.errors)).toBeUndefined();
  return result.data;
}

function expectError(response: { status: number; body: any }, status: number, name: string) {
  expect(response.status, JSON.stringify(response.body)).toBe(status);
  expect(response.body.success).toBe(false);
  expect(response.body.error.name).toBe(name);
  return response.body.error;
}

function expectGraphqlError(result: GraphQLResult, name: string) {
  expect(firstErrorName(result), JSON.stringify(result.errors)).toBe(name);
  return result.errors![0].extensions;
}

function expectInvalid(response: { status: number; body: any }, path: string) {
  const error = expectError(response, 400, 'Request.Invalid');
  expect(error.context.issues).toEqual(expect.arrayContaining([expect.objectContaining({ path })]));
}

function expectGraphqlInvalid(result: GraphQLResult, path: string) {
  const extensions = expectGraphqlError(result, 'Request.Invalid');
  expect(extensions.context.issues).toEqual(expect.arrayContaining([expect.objectContaining({ path })]));
}

async function createContact(caller: Caller, body: Record<string, unknown>) {
  return ok(await caller.rest.post('/contacts', body)).contact;
}

async function createGroup(caller: Caller, name = 'Board') {
  return ok(await caller.rest.post('/contact-groups', { name })).contactGroup;
}

async function createUser(caller: Caller, body: Record<string, unknown>) {
  return ok(await caller.rest.post('/users', body)).user;
}

async function newDraft(caller: Caller): Promise<string> {
  return ok(await caller.rest.post('/envelopes', { name: 'Board resolution' })).envelopeId;
}

async function addAgentRecipient(caller: Caller, envelopeId: string, agent: Record<string, string>, identifier = 'signer') {
  return ok(await caller.rest.post(`/envelopes/${envelopeId}/recipients`, { recipient: { type: 'signer', identifier, roleName: 'Signer', agents: [agent] } })).recipient;
}

async function teamEventTypes(teamId: string): Promise<string[]> {
  return (await listAuditEvents(app.orm.em.fork(), teamId)).map((event) => event.type);
}

const isoDate = expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/);

describe('contacts', () => {
  it('creates, reads, changes, lists and deletes a contact through REST', async () => {
    const caller = await newCaller();
    const created = await caller.rest.post('/contacts', {
      name: 'Ayşe Yılmaz',
      email: 'ayse@example.com',
      phone: '+905551234567',
      locale: 'tr-TR',
      phoneContactMethod: 'whatsapp',
    });
    expect(created.status).toBe(200);
    expect(created.body).toEqual({
      version: '1',
      success: true,
      payload: {
        contact: {
          id: expect.any(String),
          name: 'Ayşe Yılmaz',
          email: 'ayse@example.com',
          phone: '+905551234567',
          locale: 'tr-TR',
          phoneContactMethod: 'whatsapp',
          createdAt: isoDate,
          updatedAt: isoDate,
        },
      },
    });
    const contact = created.body.payload.contact;
    expect(ok(await caller.rest.get(`/contacts/${contact.id}`)).contact).toEqual(contact);

    // Only the given keys change; null clears (the method first, it needs the phone).
    const changed = ok(await caller.rest.patch(`/contacts/${contact.id}`, { email: 'ayse@example.org', phone: null, phoneContactMethod: null })).contact;
    expect(changed).toMatchObject({ id: contact.id, name: 'Ayşe Yılmaz', email: 'ayse@example.org', phone: null, phoneContactMethod: null, locale: 'tr-TR' });
    expect(ok(await caller.rest.get(`/contacts/${contact.id}`)).contact).toEqual(changed);

    const minimal = await createContact(caller, { name: 'Bo' });
    expect(minimal).toMatchObject({ name: 'Bo', email: null, phone: null, locale: null, phoneContactMethod: null });

    const listed = ok(await caller.rest.get('/contacts'));
    expect(listed.contacts.map((entry: any) => entry.id)).toEqual([minimal.id, contact.id]);
    expect(listed.nextCursor).toBeNull();

    expect(ok(await caller.rest.delete(`/contacts/${contact.id}`))).toEqual({ deleted: true });
    expectError(await caller.rest.get(`/contacts/${contact.id}`), 404, 'Contact.NotFound');
    expectError(await caller.rest.delete(`/contacts/${contact.id}`), 404, 'Contact.NotFound');
    expect(ok(await caller.rest.get('/contacts')).contacts.map((entry: any) => entry.id)).toEqual([minimal.id]);
  });

  it('does the same through GraphQL, and both faces see one record', async () => {
    const caller = await newCaller();
    const created = data(
      await caller.graphql(gql.createContact, { input: { name: 'Can Demir', email: 'can@example.com', phone: '+905559876543', locale: 'tr_TR', phoneContactMethod: 'sms' } }),
    ).createContact;
    expect(created).toEqual({
      id: expect.any(String),
      name: 'Can Demir',
      email: 'can@example.com',
      phone: '+905559876543',
      locale: 'tr_TR',
      phoneContactMethod: 'sms',
      createdAt: isoDate,
      updatedAt: isoDate,
    });
    expect(ok(await caller.rest.get(`/contacts/${created.id}`)).contact).toMatchObject({ name: 'Can Demir', locale: 'tr-TR', phoneContactMethod: 'sms' });
    expect(data(await caller.graphql(gql.contact, { id: created.id })).contact).toEqual(created);

    // null clears, an omitted key stays.
    const updated = data(await caller.graphql(gql.updateContact, { id: created.id, input: { name: 'Can D.', locale: null } })).updateContact;
    expect(updated).toMatchObject({ name: 'Can D.', locale: null, email: 'can@example.com', phone: '+905559876543' });

    const listed = data(await caller.graphql(gql.contacts, {})).contacts;
    expect(listed.nodes.map((node: any) => node.id)).toEqual([created.id]);
    expect(listed.edges[0].node.id).toBe(created.id);
    expect(listed.pageInfo).toEqual({ hasNextPage: false, endCursor: null });

    expect(data(await caller.graphql(gql.deleteContact, { id: created.id })).deleteContact).toEqual({ id: created.id, deleted: true });
    expectGraphqlError(await caller.graphql(gql.contact, { id: created.id }), 'Contact.NotFound');
    expectGraphqlError(await caller.graphql(gql.deleteContact, { id: created.id }), 'Contact.NotFound');
    expectGraphqlError(await caller.graphql(gql.updateContact, { id: created.id, input: { name: 'Gone' } }), 'Contact.NotFound');
    expectError(await caller.rest.get(`/contacts/${created.id}`), 404, 'Contact.NotFound');
  });

  it('checks the agent info rules on both faces, at and past the limits', async () => {
    const caller = await newCaller();
    const longest = 'n'.repeat(200);
    expect(await createContact(caller, { name: longest })).toMatchObject({ name: longest });
    // Characters as people count them: 200 emoji are 200 characters.
    expect(await createContact(caller, { name: '😀'.repeat(200) })).toMatchObject({ name: '😀'.repeat(200) });

    const rejected: Array<[Record<string, unknown>, string]> = [
      [{}, 'name'],
      [{ name: '' }, 'name'],
      [{ name: '   ' }, 'name'],
      [{ name: 'n'.repeat(201) }, 'name'],
      [{ name: 'Ok', email: 'not-an-email' }, 'email'],
      [{ name: 'Ok', phone: '05551234567' }, 'phone'],
      [{ name: 'Ok', phone: '+0123456789' }, 'phone'],
      [{ name: 'Ok', locale: 'de-DE' }, 'locale'],
      [{ name: 'Ok', phone: '+905551234567', phoneContactMethod: 'pigeon' }, 'phoneContactMethod'],
      [{ name: 'Ok', phoneContactMethod: 'sms' }, 'phoneContactMethod'],
      [{ name: 'Ok', nickname: 'x' }, ''],
    ];
    for (const [body, path] of rejected) expectInvalid(await caller.rest.post('/contacts', body), path);

    // Every problem at once.
    const several = expectError(await caller.rest.post('/contacts', { name: '', email: 'x', phone: 'y' }), 400, 'Request.Invalid');
    expect(several.context.issues.map((issue: any) => issue.path).sort()).toEqual(['email', 'name', 'phone']);

    expectGraphqlInvalid(await caller.graphql(gql.createContact, { input: { name: ' ' } }), 'name');
    expectGraphqlInvalid(await caller.graphql(gql.createContact, { input: { name: 'n'.repeat(201) } }), 'name');
    expectGraphqlInvalid(await caller.graphql(gql.createContact, { input: { name: 'Ok', phoneContactMethod: 'sms' } }), 'phoneContactMethod');
    expectGraphqlInvalid(await caller.graphql(gql.createContact, { input: { name: 'Ok', email: 'nope' } }), 'email');

    // The rules hold for the record a change leaves behind, not only for the keys it sends.
    const withPhone = await createContact(caller, { name: 'Pia', phone: '+14155550100', phoneContactMethod: 'sms' });
    expectInvalid(await caller.rest.patch(`/contacts/${withPhone.id}`, { phone: null }), 'phoneContactMethod');
    expectGraphqlInvalid(await caller.graphql(gql.updateContact, { id: withPhone.id, input: { phone: null } }), 'phoneContactMethod');
    expectInvalid(await caller.rest.patch(`/contacts/${withPhone.id}`, { name: null }), 'name');
    expectInvalid(await caller.rest.patch(`/contacts/${withPhone.id}`, { name: '' }), 'name');
    expectInvalid(await caller.rest.patch(`/contacts/${withPhone.id}`, { colour: 'red' }), '');
    const withoutPhone = await createContact(caller, { name: 'Quinn' });
    expectInvalid(await caller.rest.patch(`/contacts/${withoutPhone.id}`, { phoneContactMethod: 'whatsapp' }), 'phoneContactMethod');
    // Nothing changed.
    expect(ok(await caller.rest.get(`/contacts/${withPhone.id}`)).contact).toEqual(withPhone);
  });

  it('pages with limit and cursor on both faces, and refuses limits past the bounds', async () => {
    const caller = await newCaller();
    const ids: string[] = [];
    for (let index = 0; index < 5; index += 1) ids.unshift((await createContact(caller, { name: `Person ${index}` })).id);

    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: any = ok(await caller.rest.get(`/contacts?limit=2${cursor ? `&cursor=${cursor}` : ''}`));
      seen.push(...page.contacts.map((contact: any) => contact.id));
      cursor = page.nextCursor;
      pages += 1;
    } while (cursor);
    expect(seen).toEqual(ids);
    expect(pages).toBe(3);

    const first = data(await caller.graphql(gql.contacts, { first: 3 })).contacts;
    expect(first.nodes.map((node: any) => node.id)).toEqual(ids.slice(0, 3));
    expect(first.pageInfo.hasNextPage).toBe(true);
    expect(first.edges[2].cursor).toBe(first.pageInfo.endCursor);
    const second = data(await caller.graphql(gql.contacts, { first: 3, after: first.pageInfo.endCursor })).contacts;
    expect(second.nodes.map((node: any) => node.id)).toEqual(ids.slice(3));
    expect(second.pageInfo).toEqual({ hasNextPage: false, endCursor: null });

    expect(ok(await caller.rest.get('/contacts?limit=1')).contacts).toHaveLength(1);
    expect(ok(await caller.rest.get('/contacts?limit=100')).contacts).toHaveLength(5);
    expect(ok(await caller.rest.get('/contacts?limit=5')).nextCursor).toBeNull();
    for (const limit of ['0', '101', '-1', 'abc', '2.5']) expectInvalid(await caller.rest.get(`/contacts?limit=${limit}`), 'limit');
    expectInvalid(await caller.rest.get('/contacts?cursor=not-a-cursor'), 'cursor');
    expectGraphqlInvalid(await caller.graphql(gql.contacts, { first: 0 }), 'limit');
    expectGraphqlInvalid(await caller.graphql(gql.contacts, { first: 101 }), 'limit');
    expectGraphqlInvalid(await caller.graphql(gql.contacts, { after: 'garbage' }), 'cursor');
    expect(data(await caller.graphql(gql.contacts, { first: 100 })).contacts.nodes).toHaveLength(5);
  });

  it('searches name and email ignoring case; wildcard characters match themselves', async () => {
    const caller = await newCaller();
    const ada = await createContact(caller, { name: 'Ada Lovelace', email: 'ada@analytical.example' });
    const grace = await createContact(caller, { name: 'Grace Hopper', email: 'grace@navy.example' });
    const percent = await createContact(caller, { name: '100% Sure' });
    const search = async (text: string) => ok(await caller.rest.get(`/contacts?search=${encodeURIComponent(text)}`)).contacts.map((contact: any) => contact.id);
    expect(await search('LOVE')).toEqual([ada.id]);
    expect(await search('NAVY.example')).toEqual([grace.id]);
    expect(await search('a')).toEqual([grace.id, ada.id]);
    expect(await search('%')).toEqual([percent.id]);
    expect(await search('_')).toEqual([]);
    expect(await search('')).toHaveLength(3);
    expect(await search('nobody')).toEqual([]);
    expectInvalid(await caller.rest.get(`/contacts?search=${'x'.repeat(201)}`), 'search');
    const viaGraphql = data(await caller.graphql(gql.contacts, { search: 'hopper' })).contacts.nodes;
    expect(viaGraphql.map((node: any) => node.id)).toEqual([grace.id]);
  });

  it('honours the Idempotency-Key on create through both faces', async () => {
    const caller = await newCaller();
    const headers = { 'idempotency-key': 'contact-1' };
    const first = ok(await caller.rest.post('/contacts', { name: 'Once' }, headers)).contact;
    const again = ok(await caller.rest.post('/contacts', { name: 'Once' }, headers)).contact;
    expect(again).toEqual(first);
    expectError(await caller.rest.post('/contacts', { name: 'Twice' }, headers), 409, 'Request.IdempotencyKeyReused');
    expect(ok(await caller.rest.get('/contacts')).contacts).toHaveLength(1);

    const gqlFirst = data(await graphqlWithHeaders(caller.team.apiKey, gql.createContact, { input: { name: 'Via GraphQL' } }, { 'idempotency-key': 'contact-2' }));
    const gqlAgain = data(await graphqlWithHeaders(caller.team.apiKey, gql.createContact, { input: { name: 'Via GraphQL' } }, { 'idempotency-key': 'contact-2' }));
    expect(gqlAgain.createContact.id).toBe(gqlFirst.createContact.id);
    expect(ok(await caller.rest.get('/contacts')).contacts).toHaveLength(2);
    expect((await teamEventTypes(caller.team.teamId)).filter((type) => type === 'contact.created')).toHaveLength(2);
  });
});

describe('contact groups', () => {
  it('creates a group, adds and removes members, renames and deletes it through REST', async () => {
    const caller = await newCaller();
    const ada = await createContact(caller, { name: 'Ada', email: 'ada@example.com' });
    const bob = await createContact(caller, { name: 'Bob' });
    const created = await caller.rest.post('/contact-groups', { name: 'Board' });
    expect(created.body).toEqual({
      version: '1',
      success: true,
      payload: { contactGroup: { id: expect.any(String), name: 'Board', memberCount: 0, createdAt: isoDate, updatedAt: isoDate } },
    });
    const group = created.body.payload.contactGroup;

    expect(ok(await caller.rest.post(`/contact-groups/${group.id}/members/${ada.id}`)).contactGroup).toMatchObject({ id: group.id, memberCount: 1 });
    // Adding again: no error, no second membership.
    expect(ok(await caller.rest.post(`/contact-groups/${group.id}/members/${ada.id}`)).contactGroup).toMatchObject({ memberCount: 1 });
    expect(ok(await caller.rest.post(`/contact-groups/${group.id}/members/${bob.id}`)).contactGroup).toMatchObject({ memberCount: 2 });
    expect(ok(await caller.rest.get(`/contact-groups/${group.id}/members`))).toEqual({ members: [ada, bob] });
    expect(ok(await caller.rest.get(`/contact-groups/${group.id}`)).contactGroup).toMatchObject({ memberCount: 2 });

    expect(ok(await caller.rest.delete(`/contact-groups/${group.id}/members/${ada.id}`))).toEqual({ deleted: true });
    const notMember = expectError(await caller.rest.delete(`/contact-groups/${group.id}/members/${ada.id}`), 404, 'ContactGroup.MemberNotFound');
    expect(notMember.context).toMatchObject({ groupId: group.id, contactId: ada.id });
    expect(ok(await caller.rest.get(`/contact-groups/${group.id}/members`)).members.map((member: any) => member.id)).toEqual([bob.id]);
    // The contact itself stays.
    expect(ok(await caller.rest.get(`/contacts/${ada.id}`)).contact).toEqual(ada);

    expect(ok(await caller.rest.patch(`/contact-groups/${group.id}`, { name: 'Directors' })).contactGroup).toMatchObject({ name: 'Directors', memberCount: 1 });
    const listed = ok(await caller.rest.get('/contact-groups'));
    expect(listed).toEqual({ contactGroups: [expect.objectContaining({ id: group.id, name: 'Directors', memberCount: 1 })], nextCursor: null });

    expect(ok(await caller.rest.delete(`/contact-groups/${group.id}`))).toEqual({ deleted: true });
    expectError(await caller.rest.get(`/contact-groups/${group.id}`), 404, 'ContactGroup.NotFound');
    expectError(await caller.rest.get(`/contact-groups/${group.id}/members`), 404, 'ContactGroup.NotFound');
    // Deleting a group leaves its contacts.
    expect(ok(await caller.rest.get(`/contacts/${bob.id}`)).contact).toEqual(bob);
  });

  it('does the same through GraphQL, with members resolved on the group', async () => {
    const caller = await newCaller();
    const ada = await createContact(caller, { name: 'Ada' });
    const bob = await createContact(caller, { name: 'Bob' });
    const group = data(await caller.graphql(gql.createContactGroup, { input: { name: 'Signers' } })).createContactGroup;
    expect(group).toEqual({ id: expect.any(String), name: 'Signers', memberCount: 0, members: [], createdAt: isoDate, updatedAt: isoDate });

    expect(data(await caller.graphql(gql.addMember, { groupId: group.id, contactId: ada.id })).addContactGroupMember).toMatchObject({
      memberCount: 1,
      members: [{ id: ada.id, name: 'Ada' }],
    });
    expect(data(await caller.graphql(gql.addMember, { groupId: group.id, contactId: ada.id })).addContactGroupMember.memberCount).toBe(1);

    // Two mutations in one document: each answers what it left behind.
    const both = data(
      await caller.graphql(
        `mutation($groupId: ID!, $a: ID!, $b: ID!) {
        first: removeContactGroupMember(groupId: $groupId, contactId: $a) { memberCount members { id } }
        second: addContactGroupMember(groupId: $groupId, contactId: $b) { memberCount members { id } }
      }`,
        { groupId: group.id, a: ada.id, b: bob.id },
      ),
    );
    expect(both.first).toEqual({ memberCount: 0, members: [] });
    expect(both.second).toEqual({ memberCount: 1, members: [{ id: bob.id }] });

    expectGraphqlError(await caller.graphql(gql.removeMember, { groupId: group.id, contactId: ada.id }), 'ContactGroup.MemberNotFound');
    expect(data(await caller.graphql(gql.updateContactGroup, { id: group.id, input: { name: 'Renamed' } })).updateContactGroup.name).toBe('Renamed');
    expect(data(await caller.graphql(gql.contactGroup, { id: group.id })).contactGroup).toMatchObject({ name: 'Renamed', memberCount: 1 });
    const listed = data(await caller.graphql(gql.contactGroups, {})).contactGroups;
    expect(listed.nodes).toEqual([expect.objectContaining({ id: group.id, members: [{ id: bob.id, name: 'Bob' }] })]);
    expect(ok(await caller.rest.get(`/contact-groups/${group.id}/members`)).members.map((member: any) => member.id)).toEqual([bob.id]);

    expect(data(await caller.graphql(gql.deleteContactGroup, { id: group.id })).deleteContactGroup).toEqual({ id: group.id, deleted: true });
    expectGraphqlError(await caller.graphql(gql.contactGroup, { id: group.id }), 'ContactGroup.NotFound');
    expectGraphqlError(await caller.graphql(gql.addMember, { groupId: group.id, contactId: bob.id }), 'ContactGroup.NotFound');
  });

  it('names unknown groups and contacts in member operations', async () => {
    const caller = await newCaller();
    const group = await createGroup(caller);
    const contact = await createContact(caller, { name: 'Member' });
    expectError(await caller.rest.post(`/contact-groups/${group.id}/members/${unknownId}`), 404, 'Contact.NotFound');
    expectError(await caller.rest.post(`/contact-groups/${unknownId}/members/${contact.id}`), 404, 'ContactGroup.NotFound');
    expectError(await caller.rest.post(`/contact-groups/${group.id}/members/not-a-uuid`), 404, 'Contact.NotFound');
    expectError(await caller.rest.delete(`/contact-groups/${group.id}/members/${unknownId}`), 404, 'Contact.NotFound');
    expectError(await caller.rest.delete(`/contact-groups/${group.id}/members/${contact.id}`), 404, 'ContactGroup.MemberNotFound');
    expectGraphqlError(await caller.graphql(gql.addMember, { groupId: group.id, contactId: unknownId }), 'Contact.NotFound');
    expectGraphqlError(await caller.graphql(gql.removeMember, { groupId: unknownId, contactId: contact.id }), 'ContactGroup.NotFound');
  });

  it('checks the group name on both faces, at and past the limits', async () => {
    const caller = await newCaller();
    expect(await createGroup(caller, 'g'.repeat(200))).toMatchObject({ name: 'g'.repeat(200) });
    expect(await createGroup(caller, 'G')).toMatchObject({ name: 'G' });
    for (const body of [{}, { name: '' }, { name: '  ' }, { name: 'g'.repeat(201) }, { name: 7 }]) {
      expectInvalid(await caller.rest.post('/contact-groups', body), 'name');
    }
    expectInvalid(await caller.rest.post('/contact-groups', { name: 'Ok', members: [] }), '');
    const group = await createGroup(caller, 'Fine');
    expectInvalid(await caller.rest.patch(`/contact-groups/${group.id}`, { name: 'g'.repeat(201) }), 'name');
    expectGraphqlInvalid(await caller.graphql(gql.createContactGroup, { input: { name: '' } }), 'name');
    expectGraphqlInvalid(await caller.graphql(gql.updateContactGroup, { id: group.id, input: { name: ' ' } }), 'name');
  });

  it('pages groups and honours the Idempotency-Key', async () => {
    const caller = await newCaller();
    const ids: string[] = [];
    for (let index = 0; index < 3; index += 1) ids.unshift((await createGroup(caller, `Group ${index}`)).id);
    const first = ok(await caller.rest.get('/contact-groups?limit=2'));
    const second = ok(await caller.rest.get(`/contact-groups?limit=2&cursor=${first.nextCursor}`));
    expect([...first.contactGroups, ...second.contactGroups].map((group: any) => group.id)).toEqual(ids);
    expect(second.nextCursor).toBeNull();
    expectInvalid(await caller.rest.get('/contact-groups?limit=101'), 'limit');
    expectGraphqlInvalid(await caller.graphql(gql.contactGroups, { first: 0 }), 'limit');
    expect(ok(await caller.rest.get('/contact-groups?search=GROUP%201')).contactGroups.map((group: any) => group.id)).toEqual([ids[1]]);

    const headers = { 'idempotency-key': 'group-1' };
    const once = ok(await caller.rest.post('/contact-groups', { name: 'Once' }, headers)).contactGroup;
    expect(ok(await caller.rest.post('/contact-groups', { name: 'Once' }, headers)).contactGroup.id).toBe(once.id);
    expectError(await caller.rest.post('/contact-groups', { name: 'Other' }, headers), 409, 'Request.IdempotencyKeyReused');
  });

  it('resolves members for many groups with one batched statement', async () => {
    const caller = await newCaller();
    const contacts = [];
    for (let index = 0; index < 3; index += 1) contacts.push(await createContact(caller, { name: `Member ${index}` }));
    const groupIds: string[] = [];
    for (let index = 0; index < 10; index += 1) {
      const group = await createGroup(caller, `Team ${index}`);
      groupIds.push(group.id);
      for (const contact of contacts.slice(0, (index % 3) + 1)) ok(await caller.rest.post(`/contact-groups/${group.id}/members/${contact.id}`));
    }
    const query = `query($first: Int) { contactGroups(first: $first) { nodes { id memberCount members { id name } } } }`;
    app.resetStatements();
    const one = data(await caller.graphql(query, { first: 1 }));
    const forOne = app.statements.length;
    app.resetStatements();
    const ten = data(await caller.graphql(query, { first: 10 }));
    const forTen = app.statements.length;
    expect(one.contactGroups.nodes).toHaveLength(1);
    expect(ten.contactGroups.nodes).toHaveLength(10);
    for (const node of ten.contactGroups.nodes) expect(node.members).toHaveLength(node.memberCount);
    expect(ten.contactGroups.nodes.map((node: any) => node.memberCount).sort()).toEqual([1, 1, 1, 1, 2, 2, 2, 3, 3, 3]);
    expect(forTen).toBe(forOne);
    // Member counts and members are read with the page, in its one statement.
    expect(app.statements.filter((statement) => statement.includes('contact_group_member'))).toHaveLength(1);
  });

  it('loses a deleted contact from its groups', async () => {
    const caller = await newCaller();
    const group = await createGroup(caller);
    const stays = await createContact(caller, { name: 'Stays' });
    const leaves = await createContact(caller, { name: 'Leaves' });
    ok(await caller.rest.post(`/contact-groups/${group.id}/members/${stays.id}`));
    ok(await caller.rest.post(`/contact-groups/${group.id}/members/${leaves.id}`));
    ok(await caller.rest.delete(`/contacts/${leaves.id}`));
    expect(ok(await caller.rest.get(`/contact-groups/${group.id}`)).contactGroup.memberCount).toBe(1);
    expect(ok(await caller.rest.get(`/contact-groups/${group.id}/members`)).members.map((member: any) => member.id)).toEqual([stays.id]);
  });

  it('never fails unexpectedly when a contact is deleted while it is being added to groups', async () => {
    const caller = await newCaller();
    const groups = [await createGroup(caller, 'One'), await createGroup(caller, 'Two'), await createGroup(caller, 'Three')];
    const contact = await createContact(caller, { name: 'Short-lived' });
    const answers = await Promise.all([...groups.map((group) => caller.rest.post(`/contact-groups/${group.id}/members/${contact.id}`)), caller.rest.delete(`/contacts/${contact.id}`)]);
    for (const answer of answers.slice(0, groups.length)) {
      if (answer.status !== 200) expectError(answer, 404, 'Contact.NotFound');
    }
    expect(answers[groups.length].status).toBe(200);
    for (const group of groups) expect(ok(await caller.rest.get(`/contact-groups/${group.id}`)).contactGroup.memberCount).toBe(0);
  });

  it('lets a recipient name a group of the team as its agent', async () => {
    const caller = await newCaller();
    const group = await createGroup(caller, 'Approvers');
    const contact = await createContact(caller, { name: 'Approver', email: 'approver@example.com' });
    ok(await caller.rest.post(`/contact-groups/${group.id}/members/${contact.id}`));
    const envelopeId = await newDraft(caller);
    const recipient = await addAgentRecipient(caller, envelopeId, { groupId: group.id });
    expect(recipient.agents).toEqual([{ id: expect.any(String), kind: 'group', groupId: group.id }]);
    const user = await createUser(caller, { name: 'Uma', email: 'uma@example.com' });
    const byUser = await addAgentRecipient(caller, envelopeId, { userId: user.id }, 'internal');
    expect(byUser.agents).toEqual([{ id: expect.any(String), kind: 'user', userId: user.id }]);
    const byContact = await addAgentRecipient(caller, envelopeId, { contactId: contact.id }, 'external');
    expect(byContact.agents).toEqual([{ id: expect.any(String), kind: 'contact', contactId: contact.id }]);
  });
});

describe('team users', () => {
  it('creates, reads, changes, lists and deletes a user through REST', async () => {
    const caller = await newCaller();
    const created = await caller.rest.post('/users', { name: 'Uma User', email: 'uma@example.com' });
    expect(created.body).toEqual({
      version: '1',
      success: true,
      payload: {
        user: { id: expect.any(String), name: 'Uma User', email: 'uma@example.com', phone: null, locale: 'en-US', createdAt: isoDate, updatedAt: isoDate },
      },
    });
    const user = created.body.payload.user;
    expect(ok(await caller.rest.get(`/users/${user.id}`)).user).toEqual(user);
    const changed = ok(await caller.rest.patch(`/users/${user.id}`, { phone: '+905551112233', locale: 'tr-TR' })).user;
    expect(changed).toMatchObject({ name: 'Uma User', email: 'uma@example.com', phone: '+905551112233', locale: 'tr-TR' });
    // Changing the email to its own address (in another case) is not a clash.
    expect(ok(await caller.rest.patch(`/users/${user.id}`, { email: 'UMA@example.com' })).user.email).toBe('UMA@example.com');
    // null clears the phone and restores the default locale.
    expect(ok(await caller.rest.patch(`/users/${user.id}`, { phone: null, locale: null })).user).toMatchObject({ phone: null, locale: 'en-US' });

    const other = await createUser(caller, { name: 'Oz', email: 'oz@example.com', locale: 'tr-TR', phone: '+14155550100' });
    expect(other).toMatchObject({ locale: 'tr-TR', phone: '+14155550100' });
    expect(ok(await caller.rest.get('/users'))).toEqual({ users: [expect.objectContaining({ id: other.id }), expect.objectContaining({ id: user.id })], nextCursor: null });
    expect(ok(await caller.rest.get('/users?search=OZ@')).users.map((entry: any) => entry.id)).toEqual([other.id]);
    const firstPage = ok(await caller.rest.get('/users?limit=1'));
    expect(firstPage.users.map((entry: any) => entry.id)).toEqual([other.id]);
    expect(ok(await caller.rest.get(`/users?limit=1&cursor=${firstPage.nextCursor}`)).users.map((entry: any) => entry.id)).toEqual([user.id]);

    expect(ok(await caller.rest.delete(`/users/${user.id}`))).toEqual({ deleted: true });
    expectError(await caller.rest.get(`/users/${user.id}`), 404, 'User.NotFound');
    expectError(await caller.rest.patch(`/users/${user.id}`, { name: 'Gone' }), 404, 'User.NotFound');
  });

  it('does the same through GraphQL', async () => {
    const caller = await newCaller();
    const created = data(await caller.graphql(gql.createUser, { input: { name: 'Gül', email: 'gul@example.com', locale: 'tr_TR' } })).createUser;
    expect(created).toEqual({ id: expect.any(String), name: 'Gül', email: 'gul@example.com', phone: null, locale: 'tr_TR', createdAt: isoDate, updatedAt: isoDate });
    expect(ok(await caller.rest.get(`/users/${created.id}`)).user.locale).toBe('tr-TR');
    const updated = data(await caller.graphql(gql.updateUser, { id: created.id, input: { name: 'Gül Y.', phone: '+905550000000' } })).updateUser;
    expect(updated).toMatchObject({ name: 'Gül Y.', phone: '+905550000000', locale: 'tr_TR' });
    expect(data(await caller.graphql(gql.user, { id: created.id })).user).toEqual(updated);
    const listed = data(await caller.graphql(gql.users, { first: 100 })).users;
    expect(listed.nodes.map((node: any) => node.id)).toEqual([created.id]);
    expect(listed.pageInfo.hasNextPage).toBe(false);
    expectGraphqlInvalid(await caller.graphql(gql.users, { first: 101 }), 'limit');
    expect(data(await caller.graphql(gql.deleteUser, { id: created.id })).deleteUser).toEqual({ id: created.id, deleted: true });
    expectGraphqlError(await caller.graphql(gql.user, { id: created.id }), 'User.NotFound');
  });

  it('keeps emails unique within a team, ignoring case, on both faces', async () => {
    const caller = await newCaller();
    const first = await createUser(caller, { name: 'First', email: 'same@example.com' });
    const clash = expectError(await caller.rest.post('/users', { name: 'Second', email: 'SAME@example.com' }), 409, 'User.DuplicateEmail');
    expect(clash.context.email).toBe('SAME@example.com');
    expectGraphqlError(await caller.graphql(gql.createUser, { input: { name: 'Second', email: 'same@example.com' } }), 'User.DuplicateEmail');
    const second = await createUser(caller, { name: 'Second', email: 'second@example.com' });
    expectError(await caller.rest.patch(`/users/${second.id}`, { email: 'Same@Example.com' }), 409, 'User.DuplicateEmail');
    expectGraphqlError(await caller.graphql(gql.updateUser, { id: second.id, input: { email: 'same@example.com' } }), 'User.DuplicateEmail');
    expect(ok(await caller.rest.get(`/users/${second.id}`)).user.email).toBe('second@example.com');

    // Racing creates with the same address: exactly one wins.
    const racers = await Promise.all([0, 1, 2, 3].map((index) => caller.rest.post('/users', { name: `Racer ${index}`, email: 'race@example.com' })));
    expect(racers.filter((response) => response.status === 200)).toHaveLength(1);
    for (const response of racers.filter((entry) => entry.status !== 200)) expect(response.body.error.name).toBe('User.DuplicateEmail');

    // Another team may use the same address.
    const otherTeam = await newCaller();
    expect(await createUser(otherTeam, { name: 'Elsewhere', email: 'same@example.com' })).toMatchObject({ email: first.email });
  });

  it('checks user input on both faces, at and past the limits', async () => {
    const caller = await newCaller();
    expect(await createUser(caller, { name: 'u'.repeat(200), email: 'long@example.com' })).toMatchObject({ name: 'u'.repeat(200) });
    const rejected: Array<[Record<string, unknown>, string]> = [
      [{ name: 'No email' }, 'email'],
      [{ name: 'Bad', email: 'bad' }, 'email'],
      [{ email: 'nameless@example.com' }, 'name'],
      [{ name: ' ', email: 'blank@example.com' }, 'name'],
      [{ name: 'u'.repeat(201), email: 'x@example.com' }, 'name'],
      [{ name: 'Ok', email: 'ok@example.com', phone: '12345' }, 'phone'],
      [{ name: 'Ok', email: 'ok@example.com', locale: 'fr-FR' }, 'locale'],
      [{ name: 'Ok', email: 'ok@example.com', phoneContactMethod: 'sms' }, ''],
    ];
    for (const [body, path] of rejected) expectInvalid(await caller.rest.post('/users', body), path);
    expectGraphqlInvalid(await caller.graphql(gql.createUser, { input: { name: 'Ok', email: 'nope' } }), 'email');
    const user = await createUser(caller, { name: 'Valid', email: 'valid@example.com' });
    expectInvalid(await caller.rest.patch(`/users/${user.id}`, { email: null }), 'email');
    expectInvalid(await caller.rest.patch(`/users/${user.id}`, { phone: '+0' }), 'phone');
  });

  it('honours the Idempotency-Key on create', async () => {
    const caller = await newCaller();
    const headers = { 'idempotency-key': 'user-1' };
    const once = ok(await caller.rest.post('/users', { name: 'Ida', email: 'ida@example.com' }, headers)).user;
    expect(ok(await caller.rest.post('/users', { name: 'Ida', email: 'ida@example.com' }, headers)).user).toEqual(once);
    expectError(await caller.rest.post('/users', { name: 'Ida', email: 'other@example.com' }, headers), 409, 'Request.IdempotencyKeyReused');
    const viaGraphql = await graphqlWithHeaders(caller.team.apiKey, gql.createUser, { input: { name: 'Ida', email: 'ida2@example.com' } }, { 'idempotency-key': 'user-2' });
    const again = await graphqlWithHeaders(caller.team.apiKey, gql.createUser, { input: { name: 'Ida', email: 'ida2@example.com' } }, { 'idempotency-key': 'user-2' });
    expect(data(again).createUser.id).toBe(data(viaGraphql).createUser.id);
    expect(ok(await caller.rest.get('/users')).users).toHaveLength(2);
  });
});

describe('deleting what draft agents and templates name', () => {
  it('refuses while a draft agent names the contact, group or user, and allows it once the envelope is sent', async () => {
    const caller = await newCaller();
    const contact = await createContact(caller, { name: 'Referenced' });
    const group = await createGroup(caller, 'Referenced group');
    const user = await createUser(caller, { name: 'Referenced user', email: 'ref@example.com' });
    const envelopeId = await newDraft(caller);
    await addAgentRecipient(caller, envelopeId, { contactId: contact.id }, 'by-contact');
    await addAgentRecipient(caller, envelopeId, { groupId: group.id }, 'by-group');
    await addAgentRecipient(caller, envelopeId, { userId: user.id }, 'by-user');

    const cases = [
      { path: `/contacts/${contact.id}`, name: 'Contact.InUse', idKey: 'contactId', id: contact.id, mutation: gql.deleteContact },
      { path: `/contact-groups/${group.id}`, name: 'ContactGroup.InUse', idKey: 'groupId', id: group.id, mutation: gql.deleteContactGroup },
      { path: `/users/${user.id}`, name: 'User.InUse', idKey: 'userId', id: user.id, mutation: gql.deleteUser },
    ];
    for (const entry of cases) {
      const error = expectError(await caller.rest.delete(entry.path), 409, entry.name);
      expect(error.context).toMatchObject({ [entry.idKey]: entry.id, envelopeIds: [envelopeId], templateIds: [] });
      const extensions = expectGraphqlError(await caller.graphql(entry.mutation, { id: entry.id }), entry.name);
      expect(extensions.context.envelopeIds).toEqual([envelopeId]);
      expect(ok(await caller.rest.get(entry.path))).toBeTruthy();
    }
    // The agents still name them.
    const recipients = ok(await caller.rest.get(`/envelopes/${envelopeId}/recipients`)).recipients;
    expect(recipients.flatMap((recipient: any) => recipient.agents.map((agent: any) => agent.contactId ?? agent.groupId ?? agent.userId))).toEqual([contact.id, group.id, user.id]);

    await forceEnvelopeStatus(app, envelopeId, 'sent');
    expect(ok(await caller.rest.delete(`/contacts/${contact.id}`))).toEqual({ deleted: true });
    expect(data(await caller.graphql(gql.deleteContactGroup, { id: group.id })).deleteContactGroup.deleted).toBe(true);
    expect(ok(await caller.rest.delete(`/users/${user.id}`))).toEqual({ deleted: true });
  });

  it('allows the delete once the draft agent is changed to someone else', async () => {
    const caller = await newCaller();
    const contact = await createContact(caller, { name: 'Replaceable' });
    const envelopeId = await newDraft(caller);
    const recipient = await addAgentRecipient(caller, envelopeId, { contactId: contact.id });
    expectError(await caller.rest.delete(`/contacts/${contact.id}`), 409, 'Contact.InUse');
    ok(await caller.rest.patch(`/envelopes/${envelopeId}/recipients/${recipient.id}`, { recipient: { agents: [{ info: { name: 'Someone else' } }] } }));
    expect(ok(await caller.rest.delete(`/contacts/${contact.id}`))).toEqual({ deleted: true });
  });

  it('refuses while a template recipient names it, listing the template', async () => {
    const caller = await newCaller();
    const contact = await createContact(caller, { name: 'Template contact' });
    const group = await createGroup(caller, 'Template group');
    const user = await createUser(caller, { name: 'Template user', email: 'tpl@example.com' });
    const em = app.orm.em.fork();
    const template = em.create(Template, { team: caller.team.teamId, name: 'Standard NDA' });
    em.create(TemplateRecipient, { template, identifier: 'a', roleName: 'A', type: 'signer', color: '#2563EB', contact: contact.id });
    em.create(TemplateRecipient, { template, identifier: 'b', roleName: 'B', type: 'signer', color: '#DC2626', contactGroup: group.id });
    em.create(TemplateRecipient, { template, identifier: 'c', roleName: 'C', type: 'signer', color: '#059669', user: user.id });
    await em.flush();
    for (const [path, name] of [
      [`/contacts/${contact.id}`, 'Contact.InUse'],
      [`/contact-groups/${group.id}`, 'ContactGroup.InUse'],
      [`/users/${user.id}`, 'User.InUse'],
    ]) {
      expect(expectError(await caller.rest.delete(path), 409, name).context).toMatchObject({ envelopeIds: [], templateIds: [template.id] });
    }
  });
});

describe('another team’s contacts, groups and users are indistinguishable from ones that do not exist', () => {
  let owner: Caller;
  let intruder: Caller;
  let theirs: { contactId: string; groupId: string; userId: string };
  let mine: { contactId: string; groupId: string; userId: string };
  const unknown = { contactId: unknownId, groupId: '00000000-0000-4000-8000-000000000001', userId: '00000000-0000-4000-8000-000000000002' };
  let snapshotBefore: unknown;

  async function seedPeople(caller: Caller) {
    const contact = await createContact(caller, { name: 'Private contact', email: `private-${caller.team.teamId}@example.com` });
    const group = await createGroup(caller, 'Private group');
    ok(await caller.rest.post(`/contact-groups/${group.id}/members/${contact.id}`));
    const user = await createUser(caller, { name: 'Private user', email: 'private@example.com' });
    return { contactId: contact.id, groupId: group.id, userId: user.id };
  }

  async function ownerSnapshot() {
    return {
      contacts: ok(await owner.rest.get('/contacts')),
      groups: ok(await owner.rest.get('/contact-groups')),
      members: ok(await owner.rest.get(`/contact-groups/${theirs.groupId}/members`)),
      users: ok(await owner.rest.get('/users')),
    };
  }

  beforeAll(async () => {
    owner = await newCaller();
    // A sibling team of the same workspace sees nothing either.
    intruder = await newCaller(await seedTeam(app, { workspaceId: owner.team.workspaceId }));
    theirs = await seedPeople(owner);
    mine = await seedPeople(intruder);
    snapshotBefore = await ownerSnapshot();
  });

  type Ids = typeof theirs;
  function comparable(body: unknown, ids: Ids): string {
    let text = JSON.stringify(body).replace(/"requestId":"[^"]+"/g, '"requestId":"-"');
    for (const id of Object.values(ids)) text = text.replaceAll(id, '<id>');
    return text;
  }

  const restProbes: Array<[string, (ids: Ids) => Promise<{ status: number; body: unknown }>]> = [
    ['GET contact', (ids) => intruder.rest.get(`/contacts/${ids.contactId}`)],
    ['PATCH contact', (ids) => intruder.rest.patch(`/contacts/${ids.contactId}`, { name: 'Hijacked' })],
    ['DELETE contact', (ids) => intruder.rest.delete(`/contacts/${ids.contactId}`)],
    ['GET group', (ids) => intruder.rest.get(`/contact-groups/${ids.groupId}`)],
    ['PATCH group', (ids) => intruder.rest.patch(`/contact-groups/${ids.groupId}`, { name: 'Hijacked' })],
    ['DELETE group', (ids) => intruder.rest.delete(`/contact-groups/${ids.groupId}`)],
    ['GET members', (ids) => intruder.rest.get(`/contact-groups/${ids.groupId}/members`)],
    ['POST member into their group', (ids) => intruder.rest.post(`/contact-groups/${ids.groupId}/members/${mine.contactId}`)],
    ['POST their contact into my group', (ids) => intruder.rest.post(`/contact-groups/${mine.groupId}/members/${ids.contactId}`)],
    ['DELETE member of their group', (ids) => intruder.rest.delete(`/contact-groups/${ids.groupId}/members/${ids.contactId}`)],
    ['DELETE their contact from my group', (ids) => intruder.rest.delete(`/contact-groups/${mine.groupId}/members/${ids.contactId}`)],
    ['GET user', (ids) => intruder.rest.get(`/users/${ids.userId}`)],
    ['PATCH user', (ids) => intruder.rest.patch(`/users/${ids.userId}`, { name: 'Hijacked' })],
    ['DELETE user', (ids) => intruder.rest.delete(`/users/${ids.userId}`)],
    ['agent naming their contact', async (ids) => addAgentProbe({ contactId: ids.contactId })],
    ['agent naming their group', async (ids) => addAgentProbe({ groupId: ids.groupId })],
    ['agent naming their user', async (ids) => addAgentProbe({ userId: ids.userId })],
  ];

  async function addAgentProbe(agent: Record<string, string>) {
    const envelopeId = await newDraft(intruder);
    const response = await intruder.rest.post(`/envelopes/${envelopeId}/recipients`, { recipient: { type: 'signer', identifier: 'probe', roleName: 'Probe', agents: [agent] } });
    return response;
  }

  it.each(restProbes)('REST %s', async (_name, probe) => {
    const foreign = await probe(theirs);
    const missing = await probe(unknown);
    expect(foreign.status).toBe(404);
    expect(foreign.status).toBe(missing.status);
    expect(comparable(foreign.body, theirs)).toBe(comparable(missing.body, unknown));
  });

  const graphqlProbes: Array<[string, string, (ids: Ids) => Record<string, unknown>]> = [
    ['contact', gql.contact, (ids) => ({ id: ids.contactId })],
    ['updateContact', gql.updateContact, (ids) => ({ id: ids.contactId, input: { name: 'Hijacked' } })],
    ['deleteContact', gql.deleteContact, (ids) => ({ id: ids.contactId })],
    ['contactGroup', gql.contactGroup, (ids) => ({ id: ids.groupId })],
    ['updateContactGroup', gql.updateContactGroup, (ids) => ({ id: ids.groupId, input: { name: 'Hijacked' } })],
    ['deleteContactGroup', gql.deleteContactGroup, (ids) => ({ id: ids.groupId })],
    ['addContactGroupMember (their group)', gql.addMember, (ids) => ({ groupId: ids.groupId, contactId: mine.contactId })],
    ['addContactGroupMember (their contact)', gql.addMember, (ids) => ({ groupId: mine.groupId, contactId: ids.contactId })],
    ['removeContactGroupMember (their group)', gql.removeMember, (ids) => ({ groupId: ids.groupId, contactId: ids.contactId })],
    ['removeContactGroupMember (their contact)', gql.removeMember, (ids) => ({ groupId: mine.groupId, contactId: ids.contactId })],
    ['user', gql.user, (ids) => ({ id: ids.userId })],
    ['updateUser', gql.updateUser, (ids) => ({ id: ids.userId, input: { name: 'Hijacked' } })],
    ['deleteUser', gql.deleteUser, (ids) => ({ id: ids.userId })],
  ];

  it.each(graphqlProbes)('GraphQL %s', async (_name, document, variables) => {
    const foreign = await intruder.graphql(document, variables(theirs));
    const missing = await intruder.graphql(document, variables(unknown));
    expect(foreign.errors).toBeDefined();
    expect(foreign.errors![0].extensions.code).toMatch(/NotFound$/);
    expect(comparable({ data: foreign.data, errors: foreign.errors }, theirs)).toBe(comparable({ data: missing.data, errors: missing.errors }, unknown));
  });

  it('lists only the caller’s own, and the owner’s data is untouched by every probe', async () => {
    const contacts = ok(await intruder.rest.get('/contacts')).contacts.map((contact: any) => contact.id);
    expect(contacts).toEqual([mine.contactId]);
    expect(ok(await intruder.rest.get('/contact-groups')).contactGroups.map((group: any) => group.id)).toEqual([mine.groupId]);
    expect(ok(await intruder.rest.get('/users')).users.map((user: any) => user.id)).toEqual([mine.userId]);
    expect(data(await intruder.graphql(gql.contacts, { search: 'private' })).contacts.nodes.map((node: any) => node.id)).toEqual([mine.contactId]);
    // The intruder's own group still has exactly its own member.
    expect(ok(await intruder.rest.get(`/contact-groups/${mine.groupId}/members`)).members.map((member: any) => member.id)).toEqual([mine.contactId]);
    expect(await ownerSnapshot()).toEqual(snapshotBefore);
  });
});

describe('audit trail', () => {
  it('records every change in the team chain, not in any envelope chain', async () => {
    const caller = await newCaller();
    const contact = await createContact(caller, { name: 'Audited' });
    ok(await caller.rest.patch(`/contacts/${contact.id}`, { email: 'audited@example.com' }));
    const group = await createGroup(caller, 'Audited group');
    ok(await caller.rest.patch(`/contact-groups/${group.id}`, { name: 'Audited group 2' }));
    ok(await caller.rest.post(`/contact-groups/${group.id}/members/${contact.id}`));
    ok(await caller.rest.post(`/contact-groups/${group.id}/members/${contact.id}`));
    ok(await caller.rest.delete(`/contact-groups/${group.id}/members/${contact.id}`));
    ok(await caller.rest.delete(`/contact-groups/${group.id}`));
    ok(await caller.rest.delete(`/contacts/${contact.id}`));
    const user = data(await caller.graphql(gql.createUser, { input: { name: 'Audited user', email: 'au@example.com' } })).createUser;
    data(await caller.graphql(gql.updateUser, { id: user.id, input: { locale: 'tr_TR' } }));
    data(await caller.graphql(gql.deleteUser, { id: user.id }));
    // Refused changes leave no trace.
    expectError(await caller.rest.post('/users', { name: 'Bad', email: 'bad' }), 400, 'Request.Invalid');

    const events = await listAuditEvents(app.orm.em.fork(), caller.team.teamId);
    expect(events.map((event) => event.type)).toEqual([
      'contact.created',
      'contact.updated',
      'contact_group.created',
      'contact_group.updated',
      'contact_group.member_added',
      'contact_group.member_removed',
      'contact_group.removed',
      'contact.removed',
      'user.created',
      'user.updated',
      'user.removed',
    ]);
    for (const event of events) {
      expect(event.envelopeId).toBeNull();
      expect(event.actorType).toBe('api_key');
      expect(event.actorId).toBe(caller.team.keyId);
    }
    expect(events[1].details).toEqual({ contactId: contact.id, changed: ['email'] });
    expect(events[4].details).toEqual({ groupId: group.id, contactId: contact.id });
    expect(events[9].details).toEqual({ userId: user.id, changed: ['locale'] });
    expect(await verifyAuditChain(app.orm.em.fork(), app.dependencies.auditKey, caller.team.teamId)).toMatchObject({ valid: true, length: events.length });
  });
});

describe('deleting a contact while a recipient names it', () => {
  it('never leaves an agent pointing at nothing and never fails with a 500, however the race falls', async () => {
    const team = await seedTeam(app);
    const rest = restClient(app, team.apiKey);
    const envelopeId = (await rest.post('/envelopes', { name: 'Race' })).body.payload.envelopeId;
    for (let round = 0; round < 12; round += 1) {
      const contactId = (await rest.post('/contacts', { name: `Racer ${round}`, email: `racer${round}@example.com` })).body.payload.contact.id;
      const [deleted, added] = await Promise.all([
        rest.delete(`/contacts/${contactId}`),
        rest.post(`/envelopes/${envelopeId}/recipients`, {
          recipient: { type: 'signer', identifier: `racer-${round}`, roleName: 'Racer', agents: [{ contactId }] },
        }),
      ]);
      expect([deleted.status, added.status]).not.toContain(500);
      if (added.status === 200) {
        // The recipient won: the contact must still exist, refused as in use.
        expect(deleted.body.error.name).toBe('Contact.InUse');
        expect(added.body.payload.recipient.agents).toEqual([expect.objectContaining({ contactId })]);
      } else {
        expect(added.body.error.name).toBe('Contact.NotFound');
        expect(deleted.body.payload).toEqual({ deleted: true });
      }
    }
  });
});
