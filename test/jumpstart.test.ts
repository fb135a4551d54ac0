import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Envelope } from '../src/domain/envelope/envelope.entity.ts';
import { makePdf } from './fixtures/pdfs.ts';
import { unknownId } from './helpers/envelopes.ts';
import { firstErrorName, graphqlClient, restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { createReadyTemplate, uploadTemplateDocument } from './helpers/templates.ts';

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
type Caller = ReturnType<typeof callerOf>;

const jumpstartMutation = `mutation($t: ID!, $input: JumpstartEnvelopeInput) {
  jumpstartEnvelope(templateId: $t, input: $input) {
    id name status templateId expirationPeriodDays
    documents { id sha256 }
    recipients { id identifier hostedById agents { kind info { name } contactId userId groupId } }
    fields { id identifier recipientId views { documentId page } }
    auditEvents { type details }
  }
}`;

async function fullEnvelope(caller: Caller, envelopeId: string) {
  return (await caller.rest.get(`/envelopes/${envelopeId}?includeDocuments=true&includeRecipients=true&includeFields=true`)).body.payload;
}

async function envelopeCount(teamId: string) {
  return app.orm.em.fork().count(Envelope, { team: teamId });
}

describe('jumpstart: a draft envelope from a template in one request', () => {
  it('REST: copies documents (same blob), roles and fields with new ids and remapped references; the name defaults to the template’s', async () => {
    const caller = callerOf(await seedTeam(app));
    const ready = await createReadyTemplate(app, caller.team.apiKey, { name: 'Sales template' });
    const host = (await caller.rest.post(`/templates/${ready.templateId}/recipients`, { recipient: { type: 'host', identifier: 'host', roleName: 'Host', order: 0 } })).body.payload
      .recipient;
    await caller.rest.post(`/templates/${ready.templateId}/recipients`, { recipient: { type: 'in_person_signer', identifier: 'guest', roleName: 'Guest', hostedById: host.id, order: 2 } });
    const answer = await caller.rest.post(`/envelopes/jumpstart/${ready.templateId}`, {
      expirationPeriodDays: 7,
      reminderInitialDelayDays: 2,
      context: { deal: 42 },
      recipients: [{ identifier: 'buyer', agents: [{ info: { name: 'Ada Buyer', email: 'ada@example.com' } }] }],
    });
    expect(answer.status).toBe(200);
    const envelopeId = answer.body.payload.envelopeId;
    expect(Object.keys(answer.body.payload)).toEqual(['envelopeId']);
    const full = await fullEnvelope(caller, envelopeId);
    expect(full.envelope).toMatchObject({
      name: 'Sales template',
      status: 'draft',
      expirationPeriodDays: 7,
      reminderInitialDelayDays: 2,
      context: { deal: 42 },
      templateId: ready.templateId,
    });
    expect(full.documents).toHaveLength(1);
    expect(full.documents[0].id).not.toBe(ready.documentId);
    expect(full.documents[0].sha256).toBe(ready.sha256);
    const byIdentifier = Object.fromEntries(full.recipients.map((recipient: any) => [recipient.identifier, recipient]));
    expect(Object.keys(byIdentifier).sort()).toEqual(['buyer', 'guest', 'host']);
    expect(byIdentifier.buyer.id).not.toBe(ready.signerId);
    expect(byIdentifier.buyer.agents).toMatchObject([{ kind: 'info', info: { name: 'Ada Buyer', email: 'ada@example.com' } }]);
    expect(byIdentifier.guest.hostedById).toBe(byIdentifier.host.id);
    expect(byIdentifier.host.agents).toEqual([]);
    expect(full.fields).toHaveLength(1);
    expect(full.fields[0]).toMatchObject({ identifier: 'buyer-signature', recipientId: byIdentifier.buyer.id, views: [{ documentId: full.documents[0].id, page: 1 }] });
    expect(full.fields[0].id).not.toBe(ready.fieldId);

    const audit = (await caller.rest.get(`/envelopes/${envelopeId}/audit`)).body.payload.events;
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({ type: 'envelope.created', details: { templateId: ready.templateId, name: 'Sales template', documents: 1, recipients: 3, fields: 1 } });
  });

  it('GraphQL: names roles by id and takes a name; the answer is the new envelope', async () => {
    const caller = callerOf(await seedTeam(app));
    const ready = await createReadyTemplate(app, caller.team.apiKey);
    const result = await caller.graphql(jumpstartMutation, {
      t: ready.templateId,
      input: { name: 'Deal 7', recipients: [{ id: ready.signerId.toUpperCase(), agents: [{ info: { name: 'Bo Buyer' } }] }] },
    });
    expect(result.errors).toBeUndefined();
    const envelope = result.data.jumpstartEnvelope;
    expect(envelope).toMatchObject({ name: 'Deal 7', status: 'draft', templateId: ready.templateId, expirationPeriodDays: 30 });
    expect(envelope.recipients[0].agents).toEqual([{ kind: 'info', info: { name: 'Bo Buyer' }, contactId: null, userId: null, groupId: null }]);
    expect(envelope.fields[0].recipientId).toBe(envelope.recipients[0].id);
    expect(envelope.fields[0].views[0].documentId).toBe(envelope.documents[0].id);
    expect(envelope.auditEvents.map((event: any) => [event.type, event.details.templateId])).toEqual([['envelope.created', ready.templateId]]);
  });

  it('lets a role without an entry have no agents in the draft', async () => {
    const caller = callerOf(await seedTeam(app));
    const ready = await createReadyTemplate(app, caller.team.apiKey);
    const envelopeId = (await caller.rest.post(`/envelopes/jumpstart/${ready.templateId}`, {})).body.payload.envelopeId;
    expect((await fullEnvelope(caller, envelopeId)).recipients[0].agents).toEqual([]);
  });
});

describe('fixed and variable roles', () => {
  let caller: Caller;
  let templateId: string;
  let people: { userId: string; contactId: string; groupId: string; members: string[] };

  const assignments = ['none', 'user', 'contact', 'group'] as const;
  const roleIdentifier = (fixed: boolean, assignment: string) => `${fixed ? 'fixed' : 'variable'}-${assignment}`;

  beforeAll(async () => {
    caller = callerOf(await seedTeam(app));
    const user = (await caller.rest.post('/users', { name: 'Uma User', email: 'uma@example.com' })).body.payload.user;
    const contact = (await caller.rest.post('/contacts', { name: 'Cem Contact', email: 'cem@example.com' })).body.payload.contact;
    const group = (await caller.rest.post('/contact-groups', { name: 'Board' })).body.payload.contactGroup;
    const members: string[] = [];
    for (const name of ['Member One', 'Member Two']) {
      const member = (await caller.rest.post('/contacts', { name, email: `${name.replace(' ', '.').toLowerCase()}@example.com` })).body.payload.contact;
      await caller.rest.post(`/contact-groups/${group.id}/members/${member.id}`);
      members.push(member.id);
    }
    people = { userId: user.id, contactId: contact.id, groupId: group.id, members };
    const ready = await createReadyTemplate(app, caller.team.apiKey);
    templateId = ready.templateId;
    for (const fixed of [false, true]) {
      for (const assignment of assignments) {
        const reference = { none: {}, user: { userId: user.id }, contact: { contactId: contact.id }, group: { contactGroupId: group.id } }[assignment];
        const added = await caller.rest.post(`/templates/${templateId}/recipients`, {
          recipient: { type: 'signer', identifier: roleIdentifier(fixed, assignment), roleName: roleIdentifier(fixed, assignment), fixed, ...reference },
        });
        expect(added.status).toBe(200);
      }
    }
  });

  function expectedPreAssigned(assignment: (typeof assignments)[number]) {
    if (assignment === 'none') return [];
    if (assignment === 'user') return [{ kind: 'user', userId: people.userId }];
    if (assignment === 'contact') return [{ kind: 'contact', contactId: people.contactId }];
    return people.members.map((contactId) => ({ kind: 'contact', contactId }));
  }

  function agentsOf(full: any, identifier: string) {
    return full.recipients.find((recipient: any) => recipient.identifier === identifier).agents.map(({ id: _id, ...agent }: any) => agent);
  }

  it.each([
    ['with an override for every role', true],
    ['without overrides', false],
  ])('REST and GraphQL agree %s', async (_name, withOverrides) => {
    const recipients = withOverrides
      ? [false, true].flatMap((fixed) =>
          assignments.map((assignment) => ({ identifier: roleIdentifier(fixed, assignment), agents: [{ info: { name: `Override ${roleIdentifier(fixed, assignment)}` } }] })),
        )
      : [];
    const restEnvelope = await fullEnvelope(caller, (await caller.rest.post(`/envelopes/jumpstart/${templateId}`, { recipients })).body.payload.envelopeId);
    const graphqlAnswer = await caller.graphql(jumpstartMutation, { t: templateId, input: { recipients } });
    expect(graphqlAnswer.errors).toBeUndefined();
    for (const fixed of [false, true]) {
      for (const assignment of assignments) {
        const identifier = roleIdentifier(fixed, assignment);
        const expected =
          withOverrides && !fixed
            ? [{ kind: 'info', info: { name: `Override ${identifier}`, email: null, phone: null, locale: null, phoneContactMethod: null } }]
            : expectedPreAssigned(assignment);
        expect({ identifier, agents: agentsOf(restEnvelope, identifier) }).toEqual({ identifier, agents: expected });
        const graphqlAgents = graphqlAnswer.data.jumpstartEnvelope.recipients.find((recipient: any) => recipient.identifier === identifier).agents;
        expect(graphqlAgents.map((agent: any) => agent.kind)).toEqual(expected.map((agent) => agent.kind));
      }
    }
  });

  it('a team the template is shared with gets the pre-assigned people copied inline, and its overrides checked against its own address book', async () => {
    await caller.rest.patch(`/templates/${templateId}`, { teamScope: [] });
    const sibling = callerOf(await seedTeam(app, { workspaceId: caller.team.workspaceId }));
    await caller.rest.patch(`/templates/${templateId}`, { teamScope: [sibling.team.teamId] });
    const own = (await sibling.rest.post('/contacts', { name: 'Sibling contact' })).body.payload.contact;
    const answer = await sibling.rest.post(`/envelopes/jumpstart/${templateId}`, { recipients: [{ identifier: 'variable-none', agents: [{ contactId: own.id }] }] });
    expect(answer.status).toBe(200);
    const full = await fullEnvelope(sibling, answer.body.payload.envelopeId);
    expect(agentsOf(full, 'variable-none')).toEqual([{ kind: 'contact', contactId: own.id }]);
    expect(agentsOf(full, 'fixed-user')).toEqual([{ kind: 'info', info: { name: 'Uma User', email: 'uma@example.com', phone: null, locale: 'en-US', phoneContactMethod: null } }]);
    expect(agentsOf(full, 'variable-group').map((agent: any) => agent.info.name)).toEqual(['Member One', 'Member Two']);
    // The owner's contact is not the sibling's to name.
    const refused = await sibling.rest.post(`/envelopes/jumpstart/${templateId}`, { recipients: [{ identifier: 'variable-none', agents: [{ contactId: people.contactId }] }] });
    expect(refused.body.error.name).toBe('Contact.NotFound');
    expect(refused.body.error.context.path).toBe('recipients[0].agents[0].contactId');
    // The envelope is the sibling's, not the owner's.
    expect((await caller.rest.get(`/envelopes/${answer.body.payload.envelopeId}`)).body.error.name).toBe('Envelope.NotFound');
  });
});

describe('refusals', () => {
  it('Template.NotFound for an unknown template and for one outside the caller’s scope, identical, on both faces', async () => {
    const owner = callerOf(await seedTeam(app));
    const stranger = callerOf(await seedTeam(app, { workspaceId: owner.team.workspaceId }));
    const ready = await createReadyTemplate(app, owner.team.apiKey);
    const blank = (body: unknown, id: string) =>
      JSON.stringify(body)
        .replaceAll(id, '<id>')
        .replace(/"requestId":"[^"]+"/g, '');
    const foreign = await stranger.rest.post(`/envelopes/jumpstart/${ready.templateId}`, {});
    const missing = await stranger.rest.post(`/envelopes/jumpstart/${unknownId}`, {});
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.name).toBe('Template.NotFound');
    expect(blank(foreign.body, ready.templateId)).toBe(blank(missing.body, unknownId));
    const gqlForeign = await stranger.graphql(jumpstartMutation, { t: ready.templateId });
    const gqlMissing = await stranger.graphql(jumpstartMutation, { t: 'nonsense' });
    expect(firstErrorName(gqlForeign)).toBe('Template.NotFound');
    expect(firstErrorName(gqlMissing)).toBe('Template.NotFound');
    expect(await envelopeCount(stranger.team.teamId)).toBe(0);
  });

  it('Template.NotReady lists everything missing, on both faces', async () => {
    const caller = callerOf(await seedTeam(app));
    const templateId = (await caller.rest.post('/templates', { name: 'Empty' })).body.payload.templateId;
    const empty = await caller.rest.post(`/envelopes/jumpstart/${templateId}`, {});
    expect(empty.status).toBe(409);
    expect(empty.body.error.name).toBe('Template.NotReady');
    expect(empty.body.error.context.issues.map((issue: { path: string }) => issue.path)).toEqual(['documents', 'recipients', 'fields']);
    await uploadTemplateDocument(app, caller.team.apiKey, templateId, { bytes: await makePdf({ pages: 1 }) });
    await caller.rest.post(`/templates/${templateId}/recipients`, { recipient: { type: 'signer', identifier: 'a', roleName: 'A' } });
    const noFields = await caller.graphql(jumpstartMutation, { t: templateId });
    expect(firstErrorName(noFields)).toBe('Template.NotReady');
    expect(noFields.errors?.[0].extensions.context.issues.map((issue: { path: string }) => issue.path)).toEqual(['fields']);
    expect(await envelopeCount(caller.team.teamId)).toBe(0);
  });

  it('Jumpstart.UnknownRecipient and Jumpstart.DuplicateRecipient list every offending entry, on both faces', async () => {
    const caller = callerOf(await seedTeam(app));
    const ready = await createReadyTemplate(app, caller.team.apiKey);
    const unknown = await caller.rest.post(`/envelopes/jumpstart/${ready.templateId}`, {
      recipients: [{ identifier: 'buyer' }, { identifier: 'BUYER' }, { id: unknownId }],
    });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.name).toBe('Jumpstart.UnknownRecipient');
    expect(unknown.body.error.context.entries).toEqual([
      { path: 'recipients[1]', identifier: 'BUYER' },
      { path: 'recipients[2]', id: unknownId },
    ]);
    const duplicate = await caller.rest.post(`/envelopes/jumpstart/${ready.templateId}`, { recipients: [{ identifier: 'buyer' }, { id: ready.signerId }] });
    expect(duplicate.status).toBe(409);
    expect(duplicate.body.error.name).toBe('Jumpstart.DuplicateRecipient');
    expect(duplicate.body.error.context.entries.map((entry: { path: string }) => entry.path)).toEqual(['recipients[0]', 'recipients[1]']);
    expect(firstErrorName(await caller.graphql(jumpstartMutation, { t: ready.templateId, input: { recipients: [{ identifier: 'nobody' }] } }))).toBe('Jumpstart.UnknownRecipient');
    expect(firstErrorName(await caller.graphql(jumpstartMutation, { t: ready.templateId, input: { recipients: [{ identifier: 'buyer' }, { identifier: 'buyer' }] } }))).toBe(
      'Jumpstart.DuplicateRecipient',
    );
    const both = await caller.rest.post(`/envelopes/jumpstart/${ready.templateId}`, { recipients: [{ identifier: 'buyer', id: ready.signerId }] });
    expect(both.body.error.name).toBe('Request.Invalid');
    const badName = await caller.rest.post(`/envelopes/jumpstart/${ready.templateId}`, { name: 'X' });
    expect(badName.body.error.context.issues[0].path).toBe('name');
    expect(await envelopeCount(caller.team.teamId)).toBe(0);
  });

  it('a jumpstart that fails half-way (after the envelope row is written) leaves nothing behind', async () => {
    const caller = callerOf(await seedTeam(app));
    const ready = await createReadyTemplate(app, caller.team.apiKey);
    await caller.rest.post(`/templates/${ready.templateId}/recipients`, { recipient: { type: 'signer', identifier: 'seller', roleName: 'Seller', order: 5 } });
    // This team's documents (templates' and envelopes'): other test files add theirs meanwhile.
    const teamDocuments = async () =>
      Number(
        (
          await app.orm.em
            .fork()
            .getConnection()
            .execute<{ count: string }[]>(
              `select count(*) from document d left join envelope e on e.id = d.envelope_id left join template t on t.id = d.template_id where coalesce(e.team_id, t.team_id) = ?`,
              [caller.team.teamId],
            )
        )[0].count,
      );
    const documentsBefore = await teamDocuments();
    expect(documentsBefore).toBeGreaterThan(0);
    const failed = await caller.rest.post(`/envelopes/jumpstart/${ready.templateId}`, {
      recipients: [
        { identifier: 'buyer', agents: [{ info: { name: 'Fine' } }] },
        { identifier: 'seller', agents: [{ contactId: unknownId }] },
      ],
    });
    expect(failed.body.error.name).toBe('Contact.NotFound');
    expect(await envelopeCount(caller.team.teamId)).toBe(0);
    expect(await teamDocuments()).toBe(documentsBefore);
    expect((await caller.rest.get('/envelopes')).body.payload.envelopes).toEqual([]);
  });
});

describe('idempotency, shared blobs and template deletion', () => {
  it('honours Idempotency-Key: the same body answers the first envelope; another body is refused', async () => {
    const caller = callerOf(await seedTeam(app));
    const ready = await createReadyTemplate(app, caller.team.apiKey);
    const headers = { 'idempotency-key': 'jumpstart-1' };
    const body = { name: 'Once', recipients: [{ identifier: 'buyer', agents: [{ info: { name: 'Ada' } }] }] };
    const first = await caller.rest.post(`/envelopes/jumpstart/${ready.templateId}`, body, headers);
    const again = await caller.rest.post(`/envelopes/jumpstart/${ready.templateId}`, body, headers);
    expect(again.body.payload.envelopeId).toBe(first.body.payload.envelopeId);
    expect(await envelopeCount(caller.team.teamId)).toBe(1);
    const other = await caller.rest.post(`/envelopes/jumpstart/${ready.templateId}`, { ...body, name: 'Twice' }, headers);
    expect(other.status).toBe(409);
    expect(other.body.error.name).toBe('Request.IdempotencyKeyReused');
    const gql = await fetch(`${app.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-service-api-key': caller.team.apiKey, 'idempotency-key': 'jumpstart-gql' },
      body: JSON.stringify({ query: 'mutation($t: ID!) { jumpstartEnvelope(templateId: $t) { id } }', variables: { t: ready.templateId } }),
    });
    const gqlAgain = await fetch(`${app.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-service-api-key': caller.team.apiKey, 'idempotency-key': 'jumpstart-gql' },
      body: JSON.stringify({ query: 'mutation($t: ID!) { jumpstartEnvelope(templateId: $t) { id } }', variables: { t: ready.templateId } }),
    });
    expect(((await gqlAgain.json()) as any).data.jumpstartEnvelope.id).toBe(((await gql.json()) as any).data.jumpstartEnvelope.id);
    expect(await envelopeCount(caller.team.teamId)).toBe(2);
  });

  it('two jumpstarts share one stored blob per document; deleting the template leaves the envelopes, their documents and the bytes intact', async () => {
    const caller = callerOf(await seedTeam(app));
    const ready = await createReadyTemplate(app, caller.team.apiKey);
    const first = (await caller.rest.post(`/envelopes/jumpstart/${ready.templateId}`, {})).body.payload.envelopeId;
    const second = (await caller.rest.post(`/envelopes/jumpstart/${ready.templateId}`, {})).body.payload.envelopeId;
    const firstDocuments = (await fullEnvelope(caller, first)).documents;
    const secondDocuments = (await fullEnvelope(caller, second)).documents;
    expect(firstDocuments[0].id).not.toBe(secondDocuments[0].id);
    expect(firstDocuments[0].sha256).toBe(ready.sha256);
    expect(secondDocuments[0].sha256).toBe(ready.sha256);
    const blobDirectory = path.join(app.dataDir, 'blobs', ready.sha256.slice(0, 2));
    expect(fs.readdirSync(blobDirectory).filter((name) => name === ready.sha256)).toHaveLength(1);

    // A template change after the jumpstart does not reach the envelopes: they hold copies.
    await caller.rest.patch(`/templates/${ready.templateId}/fields/${ready.fieldId}`, { field: { label: 'Changed later' } });
    expect((await fullEnvelope(caller, first)).fields[0].label).toBeNull();

    expect((await caller.rest.delete(`/templates/${ready.templateId}`)).body.payload).toEqual({ deleted: true });
    const after = await fullEnvelope(caller, first);
    expect(after.envelope.templateId).toBeNull();
    expect(after.documents).toEqual(firstDocuments);
    expect(after.fields).toHaveLength(1);
    expect(fs.existsSync(path.join(blobDirectory, ready.sha256))).toBe(true);
    const audit = (await caller.rest.get(`/envelopes/${first}/audit`)).body.payload.events;
    expect(audit[0].details.templateId).toBe(ready.templateId);
  });
});

describe('limits of a jumpstart', () => {
  it('refuses a pre-assigned group of more than 50 members as a role’s agents, and a team in scope may jumpstart through GraphQL', async () => {
    const owner = callerOf(await seedTeam(app));
    const sibling = callerOf(await seedTeam(app, { workspaceId: owner.team.workspaceId }));
    const ready = await createReadyTemplate(app, owner.team.apiKey, { teamScope: [sibling.team.teamId] });
    const shared = await sibling.graphql(jumpstartMutation, { t: ready.templateId, input: { recipients: [{ identifier: 'buyer', agents: [{ info: { name: 'Sib' } }] }] } });
    expect(shared.errors).toBeUndefined();
    expect(shared.data.jumpstartEnvelope.templateId).toBe(ready.templateId);
    expect(await envelopeCount(sibling.team.teamId)).toBe(1);

    const group = (await owner.rest.post('/contact-groups', { name: 'Everyone' })).body.payload.contactGroup;
    for (let index = 0; index < 51; index += 1) {
      const contact = (await owner.rest.post('/contacts', { name: `Person ${index}` })).body.payload.contact;
      await owner.rest.post(`/contact-groups/${group.id}/members/${contact.id}`);
    }
    await owner.rest.post(`/templates/${ready.templateId}/recipients`, { recipient: { type: 'viewer', identifier: 'everyone', roleName: 'Everyone', contactGroupId: group.id } });
    const refused = await owner.rest.post(`/envelopes/jumpstart/${ready.templateId}`, {});
    expect(refused.status).toBe(422);
    expect(refused.body.error).toMatchObject({ name: 'Envelope.CapacityExceeded', context: { limit: 50, adding: 51 } });
    expect(firstErrorName(await owner.graphql(jumpstartMutation, { t: ready.templateId }))).toBe('Envelope.CapacityExceeded');
    expect(await envelopeCount(owner.team.teamId)).toBe(0);
  });
});

describe('jumpstart racing template changes', () => {
  it('copies one whole state of the template: jumpstarts racing its deletion either copy everything or find no template', async () => {
    const caller = callerOf(await seedTeam(app));
    const ready = await createReadyTemplate(app, caller.team.apiKey);
    const jumpstarts = Array.from({ length: 6 }, () => caller.rest.post(`/envelopes/jumpstart/${ready.templateId}`, {}));
    const deletion = caller.rest.delete(`/templates/${ready.templateId}`);
    const answers = await Promise.all(jumpstarts);
    expect((await deletion).body.payload).toEqual({ deleted: true });
    for (const answer of answers) {
      if (answer.status === 200) {
        const full = await fullEnvelope(caller, answer.body.payload.envelopeId);
        expect([full.documents.length, full.recipients.length, full.fields.length, full.fields[0].views.length]).toEqual([1, 1, 1, 1]);
      } else {
        expect(answer.body.error.name).toBe('Template.NotFound');
      }
    }
    expect(await envelopeCount(caller.team.teamId)).toBe(answers.filter((answer) => answer.status === 200).length);
  });
});
