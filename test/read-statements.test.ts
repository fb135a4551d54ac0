import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Contact } from '../src/domain/contact/contact.entity.ts';
import { ContactGroup, ContactGroupMember } from '../src/domain/contact/contact-group.entity.ts';
import { Document } from '../src/domain/document/document.entity.ts';
import { Envelope } from '../src/domain/envelope/envelope.entity.ts';
import { Field } from '../src/domain/field/field.entity.ts';
import { FieldView } from '../src/domain/field/field-view.entity.ts';
import { Agent } from '../src/domain/recipient/agent.entity.ts';
import { Recipient } from '../src/domain/recipient/recipient.entity.ts';
import { Team } from '../src/domain/team/team.entity.ts';
import { TeamUser } from '../src/domain/team/team-user.entity.ts';
import { Template } from '../src/domain/template/template.entity.ts';
import { TemplateRecipient } from '../src/domain/template/template-recipient.entity.ts';
import { graphqlClient, restClient, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { buildEnvelope, SESSION_QUERY, signingClient, tokenFor } from './helpers/signing.ts';

let app: TestApp;
beforeAll(async () => {
  // The key cache on, as in production (on the embedded database too: no CLI shares it here).
  app = await startTestApp({ countStatements: true, apiKeyCache: {} });
});
afterAll(async () => {
  await app.close();
});

/** Writes `count` complete envelopes straight through the ORM (fast to seed; shape as the API makes them). */
async function seedEnvelopes(teamId: string, count: number) {
  const em = app.orm.em.fork();
  for (let index = 0; index < count; index += 1) {
    const envelope = em.create(Envelope, { team: em.getReference(Team, teamId), name: `Envelope ${index}`, expirationPeriodDays: 30 });
    const document = em.create(Document, {
      envelope,
      name: 'doc.pdf',
      order: 0,
      pageCount: 2,
      pages: [
        { width: 595, height: 842, rotation: 0 },
        { width: 595, height: 842, rotation: 0 },
      ],
      contentSha256: 'a'.repeat(64),
      byteSize: 1000,
    });
    for (const identifier of ['buyer', 'seller']) {
      const recipient = em.create(Recipient, { envelope, identifier, roleName: identifier, type: 'signer', color: '#2563EB' });
      em.create(Agent, { recipient, kind: 'info', info: { name: `${identifier} ${index}` }, position: 0 });
      em.create(Agent, { recipient, kind: 'info', info: { name: `${identifier} deputy ${index}` }, position: 1 });
      const field = em.create(Field, { envelope, recipient, identifier: `${identifier}-signature`, type: 'simple_signature', required: true, config: {} });
      em.create(FieldView, { field, document, page: 0, position: 0, x: 10, y: 10, width: 100, height: 30 });
      em.create(FieldView, { field, document, page: 1, position: 1, x: 10, y: 10, width: 100, height: 30 });
    }
  }
  await em.flush();
}

/**
 * Writes `count` complete templates straight through the ORM, each with two pages, two roles and
 * a field per role on both pages, half of them owned by `teamId` and half shared with it by
 * `sharedByTeamId`.
 */
async function seedTemplates(teamId: string, sharedByTeamId: string, count: number) {
  const em = app.orm.em.fork();
  for (let index = 0; index < count; index += 1) {
    const shared = index % 2 === 1;
    const template = em.create(Template, {
      team: em.getReference(Team, shared ? sharedByTeamId : teamId),
      name: `Template ${index}`,
      teamScope: shared ? [teamId] : [],
    });
    const document = em.create(Document, {
      template,
      name: 'doc.pdf',
      order: 0,
      pageCount: 2,
      pages: [
        { width: 595, height: 842, rotation: 0 },
        { width: 595, height: 842, rotation: 0 },
      ],
      contentSha256: 'b'.repeat(64),
      byteSize: 1000,
    });
    for (const identifier of ['buyer', 'seller']) {
      const role = em.create(TemplateRecipient, { template, identifier, roleName: identifier, type: 'signer', color: '#2563EB' });
      const field = em.create(Field, { template, templateRecipient: role, identifier: `${identifier}-signature`, type: 'simple_signature', required: true, config: {} });
      em.create(FieldView, { field, document, page: 0, position: 0, x: 10, y: 10, width: 100, height: 30 });
      em.create(FieldView, { field, document, page: 1, position: 1, x: 10, y: 10, width: 100, height: 30 });
    }
  }
  await em.flush();
}

/**
 * Writes an address book straight through the ORM: `groups` groups of `membersPerGroup` contacts
 * each (every contact in one group) and `users` team users, so a read per row would show.
 */
async function seedAddressBook(teamId: string, counts: { groups: number; membersPerGroup: number; users: number }) {
  const em = app.orm.em.fork();
  const team = em.getReference(Team, teamId);
  for (let groupIndex = 0; groupIndex < counts.groups; groupIndex += 1) {
    const group = em.create(ContactGroup, { team, name: `Group ${groupIndex}` });
    for (let memberIndex = 0; memberIndex < counts.membersPerGroup; memberIndex += 1) {
      const contact = em.create(Contact, { team, name: `Member ${groupIndex}.${memberIndex}`, email: `member-${groupIndex}-${memberIndex}@example.com` });
      em.create(ContactGroupMember, { group, contact });
    }
  }
  for (let userIndex = 0; userIndex < counts.users; userIndex += 1) {
    em.create(TeamUser, { team, name: `User ${userIndex}`, email: `user-${userIndex}@example.com`, locale: 'en-US' });
  }
  await em.flush();
}

const nestedQuery = `query($first: Int) {
  envelopes(first: $first) {
    nodes {
      id name status createdAt
      documents { id name pages { index width height } }
      recipients { id identifier agents { id kind info { name } } }
      fields { id identifier views { documentId page location { x y } } }
      auditEvents { seq type }
    }
    edges { cursor node { id documents { id } } }
    pageInfo { hasNextPage endCursor }
  }
}`;

/** Every SQL statement a request sends. Callers warm their key first: a warm key costs none. */
async function statementsFor(run: () => Promise<unknown>): Promise<string[]> {
  app.resetStatements();
  await run();
  return [...app.statements];
}

/** One request that verifies the key, so that the cache holds it for what is measured. */
async function warmKey(apiKey: string) {
  expect((await restClient(app, apiKey).get('/me')).status).toBe(200);
}

describe('one SQL statement per read, however deep', () => {
  it('answers a GraphQL page of 1, 20 or 100 envelopes with every nested list in one statement', async () => {
    const team = await seedTeam(app);
    await seedEnvelopes(team.teamId, 100);
    const graphql = graphqlClient(app, team.apiKey);
    await warmKey(team.apiKey);

    for (const first of [1, 20, 100]) {
      let result: any;
      const statements = await statementsFor(async () => (result = await graphql(nestedQuery, { first })));
      expect(result.errors).toBeUndefined();
      expect(result.data.envelopes.nodes).toHaveLength(first);
      for (const envelope of result.data.envelopes.nodes) {
        expect(envelope.documents).toHaveLength(1);
        expect(envelope.documents[0].pages.map((page: any) => page.index)).toEqual([0, 1]);
        expect(envelope.recipients.map((recipient: any) => recipient.identifier).sort()).toEqual(['buyer', 'seller']);
        expect(envelope.recipients[0].agents).toHaveLength(2);
        expect(envelope.fields).toHaveLength(2);
        expect(envelope.fields[0].views.map((view: any) => view.page)).toEqual([0, 1]);
      }
      expect(result.data.envelopes.edges[0].node.documents).toHaveLength(1);
      expect(statements).toHaveLength(1);
    }
  });

  it('reads the calling team (REST /me, GraphQL viewer) in one statement, in the same shape on both faces', async () => {
    const team = await seedTeam(app);
    await warmKey(team.apiKey);
    let rest: any;
    let graphql: any;
    expect(await statementsFor(async () => (rest = await restClient(app, team.apiKey).get('/me')))).toHaveLength(1);
    expect(await statementsFor(async () => (graphql = await graphqlClient(app, team.apiKey)('{ viewer { id name workspaceId createdAt } }')))).toHaveLength(1);
    expect(rest.body.payload.team).toEqual({ id: team.teamId, name: expect.any(String), workspaceId: team.workspaceId, createdAt: expect.stringMatching(/Z$/) });
    expect(graphql.data.viewer).toEqual(rest.body.payload.team);
  });

  it('reads only the columns a GraphQL query selects, however the selection is spelled', async () => {
    const team = await seedTeam(app);
    await seedEnvelopes(team.teamId, 2);
    const graphql = graphqlClient(app, team.apiKey);
    await warmKey(team.apiKey);
    const narrow = await statementsFor(() => graphql('{ envelopes(first: 2) { nodes { id documents { id name } } } }'));
    expect(narrow).toHaveLength(1);
    // Not selected, so neither read nor formatted: pages, context, the other timestamps.
    expect(narrow[0]).not.toContain('jsonb_array_elements');
    expect(narrow[0]).not.toContain('"context"');
    expect(narrow[0]).not.toContain('updated_at');
    // The same keys asked through a fragment, an alias and edges are read.
    let result: any;
    const wide = await statementsFor(
      async () =>
        (result = await graphql(`{ envelopes(first: 2) { edges { node { ...E } } } }
          fragment E on Envelope { when: updatedAt documents { pages { index } } }`)),
    );
    expect(result.errors).toBeUndefined();
    expect(result.data.envelopes.edges[0].node.when).toMatch(/Z$/);
    expect(result.data.envelopes.edges[0].node.documents[0].pages).toHaveLength(2);
    expect(wide[0]).toContain('jsonb_array_elements');
    expect(wide[0]).toContain('updated_at');
  });

  it('reads each other root field (document, recipient, field, envelope with everything) in one statement', async () => {
    const team = await seedTeam(app);
    await seedEnvelopes(team.teamId, 1);
    const graphql = graphqlClient(app, team.apiKey);
    await warmKey(team.apiKey);
    const listed = await graphql('{ envelopes(first: 1) { nodes { id documents { id } recipients { id } fields { id } } } }');
    const envelope = listed.data.envelopes.nodes[0];
    const reads: [string, Record<string, unknown>][] = [
      [`query($id: ID!) { envelope(id: $id) { id documents { id } recipients { agents { id } } fields { views { page } } auditEvents { seq } } }`, { id: envelope.id }],
      [`query($e: ID!, $d: ID!) { document(envelopeId: $e, documentId: $d) { id pages { width } } }`, { e: envelope.id, d: envelope.documents[0].id }],
      [`query($e: ID!, $r: ID!) { recipient(envelopeId: $e, recipientId: $r) { id agents { id } } }`, { e: envelope.id, r: envelope.recipients[0].id }],
      [`query($e: ID!, $f: ID!) { field(envelopeId: $e, fieldId: $f) { id views { page } } }`, { e: envelope.id, f: envelope.fields[0].id }],
      [`query($e: ID!) { verifyAuditChain(envelopeId: $e) { valid } }`, { e: envelope.id }],
    ];
    for (const [query, variables] of reads) {
      let result: any;
      const statements = await statementsFor(async () => (result = await graphql(query, variables)));
      expect(result.errors).toBeUndefined();
      expect(statements).toHaveLength(1);
    }
  });

  it('answers a filtered listing with each envelope’s progress in one statement per page, on both faces', async () => {
    const team = await seedTeam(app);
    await seedEnvelopes(team.teamId, 30);
    const rest = restClient(app, team.apiKey);
    await warmKey(team.apiKey);
    const filters =
      'q=envelope&status=draft,sent&recipientEmail=nobody@example.com&createdAfter=2000-01-01T00:00:00Z&createdBefore=2100-01-01T00:00:00Z&completedBefore=2100-01-01T00:00:00Z&context.k=v';
    for (const query of ['limit=20', 'limit=20&q=ENVELOPE&status=draft', filters]) {
      let page: any;
      expect(await statementsFor(async () => (page = await rest.get(`/envelopes?${query}`)))).toHaveLength(1);
      expect(page.status).toBe(200);
      for (const envelope of page.body.payload.envelopes) expect(envelope.progress).toEqual({ recipients: 2, completed: 0, pending: 2, waitingFor: [] });
      if (page.body.payload.nextCursor) {
        expect(await statementsFor(() => rest.get(`/envelopes?${query}&cursor=${page.body.payload.nextCursor}`))).toHaveLength(1);
      }
    }
    const graphql = graphqlClient(app, team.apiKey);
    let result: any;
    const statements = await statementsFor(
      async () =>
        (result = await graphql(
          '{ envelopes(first: 20, q: "envelope", statuses: [draft]) { nodes { id progress { recipients completed pending waitingFor { recipientId roleName names } } } } }',
        )),
    );
    expect(result.errors).toBeUndefined();
    expect(result.data.envelopes.nodes).toHaveLength(20);
    expect(statements).toHaveLength(1);
  });

  it('answers REST reads (pages of 1, 20, 100; one envelope with every include; each child list) in one statement each', async () => {
    const team = await seedTeam(app);
    await seedEnvelopes(team.teamId, 100);
    const rest = restClient(app, team.apiKey);
    await warmKey(team.apiKey);
    for (const limit of [1, 20, 100]) {
      let page: any;
      const statements = await statementsFor(async () => (page = await rest.get(`/envelopes?limit=${limit}`)));
      expect(page.body.payload.envelopes).toHaveLength(limit);
      expect(statements).toHaveLength(1);
    }
    const envelopeId = (await rest.get('/envelopes?limit=1')).body.payload.envelopes[0].id;
    for (const path of [
      `/envelopes/${envelopeId}?includeDocuments=true&includeRecipients=true&includeFields=true`,
      `/envelopes/${envelopeId}/documents`,
      `/envelopes/${envelopeId}/recipients`,
      `/envelopes/${envelopeId}/fields`,
      `/envelopes/${envelopeId}/audit`,
      `/envelopes/${envelopeId}/audit/verify`,
    ]) {
      let answer: any;
      const statements = await statementsFor(async () => (answer = await rest.get(path)));
      expect(answer.status).toBe(200);
      expect(statements).toHaveLength(1);
    }
    const full = await rest.get(`/envelopes/${envelopeId}?includeDocuments=true&includeRecipients=true&includeFields=true`);
    expect(full.body.payload.recipients[1].agents).toHaveLength(2);
    expect(full.body.payload.fields[0].views).toHaveLength(2);
  });

  it('reads the address book (contacts, groups with member counts and members, users) in one statement per read, on both faces', async () => {
    const team = await seedTeam(app);
    await seedAddressBook(team.teamId, { groups: 3, membersPerGroup: 3, users: 3 });
    const graphql = graphqlClient(app, team.apiKey);
    const rest = restClient(app, team.apiKey);

    const listed = await graphql('{ contacts(first: 1) { nodes { id } } contactGroups(first: 1) { nodes { id } } users(first: 1) { nodes { id } } }');
    const contactId = listed.data.contacts.nodes[0].id;
    const groupId = listed.data.contactGroups.nodes[0].id;
    const userId = listed.data.users.nodes[0].id;

    const graphqlReads: [string, Record<string, unknown>, (data: any) => void][] = [
      [
        `{ contacts(first: 20) { edges { cursor node { id } } nodes { id name email createdAt } pageInfo { hasNextPage endCursor } } }`,
        {},
        (data) => expect(data.contacts.nodes).toHaveLength(9),
      ],
      [`query($id: ID!) { contact(id: $id) { id name email phone locale createdAt updatedAt } }`, { id: contactId }, (data) => expect(data.contact.id).toBe(contactId)],
      [
        `{ contactGroups(first: 20) {
            nodes { id name memberCount members { id name email createdAt } }
            edges { cursor node { id memberCount members { id } } }
            pageInfo { hasNextPage } } }`,
        {},
        (data) => {
          expect(data.contactGroups.nodes).toHaveLength(3);
          for (const group of data.contactGroups.nodes) {
            expect(group.memberCount).toBe(3);
            expect(group.members).toHaveLength(3);
          }
          expect(data.contactGroups.edges[0].node.members).toHaveLength(3);
        },
      ],
      [
        `query($id: ID!) { contactGroup(id: $id) { id name memberCount members { id name } } }`,
        { id: groupId },
        (data) => expect(data.contactGroup).toMatchObject({ id: groupId, memberCount: 3, members: [{}, {}, {}] }),
      ],
      [`{ users(first: 20) { edges { cursor } nodes { id name email locale } pageInfo { endCursor } } }`, {}, (data) => expect(data.users.nodes).toHaveLength(3)],
      [`query($id: ID!) { user(id: $id) { id name email phone locale createdAt } }`, { id: userId }, (data) => expect(data.user.id).toBe(userId)],
    ];
    for (const [query, variables, check] of graphqlReads) {
      let result: any;
      const statements = await statementsFor(async () => (result = await graphql(query, variables)));
      expect(result.errors).toBeUndefined();
      check(result.data);
      expect(statements, query).toHaveLength(1);
    }

    const restReads: [string, (payload: any) => void][] = [
      ['/contacts', (payload) => expect(payload.contacts).toHaveLength(9)],
      ['/contacts?search=MEMBER-1&limit=2', (payload) => expect(payload.contacts).toHaveLength(2)],
      [`/contacts/${contactId}`, (payload) => expect(payload.contact.id).toBe(contactId)],
      ['/contact-groups', (payload) => expect(payload.contactGroups.map((group: any) => group.memberCount)).toEqual([3, 3, 3])],
      [`/contact-groups/${groupId}`, (payload) => expect(payload.contactGroup.memberCount).toBe(3)],
      [`/contact-groups/${groupId}/members`, (payload) => expect(payload.members).toHaveLength(3)],
      ['/users', (payload) => expect(payload.users).toHaveLength(3)],
      [`/users/${userId}`, (payload) => expect(payload.user.id).toBe(userId)],
    ];
    for (const [path, check] of restReads) {
      let answer: any;
      const statements = await statementsFor(async () => (answer = await rest.get(path)));
      expect(answer.status, path).toBe(200);
      check(answer.body.payload);
      expect(statements, path).toHaveLength(1);
    }
  });

  it('reads templates (pages of 1, 20, 100 with everything nested, one template, on both faces) in one statement each', async () => {
    const team = await seedTeam(app);
    const sibling = await seedTeam(app, { workspaceId: team.workspaceId });
    await seedTemplates(team.teamId, sibling.teamId, 100);
    const graphql = graphqlClient(app, team.apiKey);
    const rest = restClient(app, team.apiKey);
    await warmKey(team.apiKey);
    const nestedTemplates = `query($first: Int) { templates(first: $first) {
      nodes { id name teamScope documents { id pages { index } } recipients { id identifier fixed } fields { id views { documentId page } } }
      edges { cursor node { id } } pageInfo { hasNextPage endCursor } } }`;
    for (const first of [1, 20, 100]) {
      let result: any;
      const statements = await statementsFor(async () => (result = await graphql(nestedTemplates, { first })));
      expect(result.errors).toBeUndefined();
      expect(result.data.templates.nodes).toHaveLength(first);
      for (const template of result.data.templates.nodes) {
        expect(template.documents[0].pages).toHaveLength(2);
        expect(template.recipients).toHaveLength(2);
        expect(template.fields.map((field: any) => field.views.length)).toEqual([2, 2]);
      }
      expect(statements).toHaveLength(1);
      let page: any;
      const restStatements = await statementsFor(async () => (page = await rest.get(`/templates?limit=${first}`)));
      expect(page.body.payload.templates).toHaveLength(first);
      expect(restStatements).toHaveLength(1);
    }
    const templateId = (await rest.get('/templates?limit=1')).body.payload.templates[0].id;
    let one: any;
    expect(
      await statementsFor(async () => (one = await graphql('query($id: ID!) { template(id: $id) { id documents { id } recipients { id } fields { views { page } } } }', { id: templateId }))),
    ).toHaveLength(1);
    expect(one.data.template.fields).toHaveLength(2);
    let answer: any;
    expect(await statementsFor(async () => (answer = await rest.get(`/templates/${templateId}`)))).toHaveLength(1);
    expect(answer.body.payload.template.recipients).toHaveLength(2);
  });
});

describe('the signing session', () => {
  it('reads a link opened before with two statements (the token, then the whole session), however many fields and documents', async () => {
    const team = await seedTeam(app);
    const built = await buildEnvelope(app, team.apiKey, {
      recipients: [{ identifier: 'signer', fields: Array.from({ length: 10 }, (_, index) => ({ identifier: `f${index}`, type: 'text' })) }, { identifier: 'other' }],
    });
    expect((await restClient(app, team.apiKey).put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
    const client = signingClient(app, await tokenFor(app, built.envelopeId, built.recipients.signer));
    expect((await client(SESSION_QUERY)).errors).toBeUndefined();
    let result: any;
    const statements = await statementsFor(async () => (result = await client(SESSION_QUERY)));
    expect(result.errors).toBeUndefined();
    expect(result.data.signingSession.fields).toHaveLength(10);
    expect(result.data.signingSession.fields[0].views).toHaveLength(1);
    expect(result.data.signingSession.documents[0].pages).toHaveLength(2);
    expect(statements).toHaveLength(2);
  });
});
