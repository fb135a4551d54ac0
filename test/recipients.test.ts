import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listAuditEvents } from '../src/domain/audit/audit.service.ts';
import { Contact } from '../src/domain/contact/contact.entity.ts';
import { ContactGroup, ContactGroupMember } from '../src/domain/contact/contact-group.entity.ts';
import { TeamUser } from '../src/domain/team/team-user.entity.ts';
import { createDraftWithDocumentAndSigner, forceEnvelopeStatus, unknownId } from './helpers/envelopes.ts';
import { firstErrorName, graphqlClient, restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app.close();
});

const agentFields = 'id kind info { name email phone locale phoneContactMethod } contactId groupId userId';
const recipientFields = `id identifier roleName type order required color hostedById delegatedById agents { ${agentFields} }`;
const addRecipientMutation = `mutation($envelopeId: ID!, $input: AddRecipientInput!) { addRecipient(envelopeId: $envelopeId, input: $input) { ${recipientFields} } }`;
const updateRecipientMutation = `mutation($envelopeId: ID!, $recipientId: ID!, $input: UpdateRecipientInput!) {
  updateRecipient(envelopeId: $envelopeId, recipientId: $recipientId, input: $input) { ${recipientFields} } }`;
const deleteRecipientMutation = 'mutation($envelopeId: ID!, $recipientId: ID!) { deleteRecipient(envelopeId: $envelopeId, recipientId: $recipientId) { id deleted } }';
const recipientQuery = `query($envelopeId: ID!, $recipientId: ID!) { recipient(envelopeId: $envelopeId, recipientId: $recipientId) { ${recipientFields} } }`;

type Caller = {
  team: SeededTeam;
  rest: ReturnType<typeof restClient>;
  graphql: ReturnType<typeof graphqlClient>;
};

async function newCaller(): Promise<Caller> {
  const team = await seedTeam(app);
  return { team, rest: restClient(app, team.apiKey), graphql: graphqlClient(app, team.apiKey) };
}

async function newDraft(caller: Caller, name = 'Purchase agreement'): Promise<string> {
  const created = await caller.rest.post('/envelopes', { name });
  expect(created.status).toBe(200);
  return created.body.payload.envelopeId;
}

const person = (name: string, extra: Record<string, unknown> = {}) => ({ info: { name, ...extra } });

/** Adds a recipient through REST and insists it worked; returns the answered recipient. */
async function addRecipient(caller: Caller, envelopeId: string, recipient: Record<string, unknown>) {
  const response = await caller.rest.post(`/envelopes/${envelopeId}/recipients`, { recipient });
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return response.body.payload.recipient;
}

async function listedRecipients(caller: Caller, envelopeId: string): Promise<any[]> {
  const response = await caller.rest.get(`/envelopes/${envelopeId}?includeRecipients=true`);
  expect(response.status).toBe(200);
  return response.body.payload.recipients;
}

/** GraphQL spells locales as enum names (tr_TR); everything else of an agent is the same. */
function graphqlAgent(agent: any): any {
  if (!agent?.info || typeof agent.info.locale !== 'string') return agent;
  return { ...agent, info: { ...agent.info, locale: agent.info.locale.replace('-', '_') } };
}

/** Contacts, groups and users are made directly in the database: these tests are about agents naming them. */
async function seedPeople(teamId: string) {
  const em = app.orm.em.fork();
  const suffix = Math.random().toString(36).slice(2, 8);
  const contact = em.create(Contact, { team: teamId, name: 'Cem Contact', email: `cem-${suffix}@example.com`, phone: null, locale: 'tr-TR', phoneContactMethod: null });
  const member = em.create(Contact, { team: teamId, name: 'Mia Member', email: `mia-${suffix}@example.com`, phone: null, locale: null, phoneContactMethod: null });
  const group = em.create(ContactGroup, { team: teamId, name: 'Board' });
  em.create(ContactGroupMember, { group, contact: member });
  const user = em.create(TeamUser, { team: teamId, name: 'Uma User', email: `uma-${suffix}@example.com`, phone: null });
  await em.flush();
  return { contactId: contact.id, groupId: group.id, userId: user.id };
}

function expectInvalid(response: { status: number; body: any }, path: string) {
  expect(response.status, JSON.stringify(response.body)).toBe(400);
  expect(response.body.error.name).toBe('Request.Invalid');
  expect(response.body.error.context.issues).toEqual(expect.arrayContaining([expect.objectContaining({ path })]));
}

function expectGraphqlInvalid(result: Awaited<ReturnType<Caller['graphql']>>, path: string) {
  expect(firstErrorName(result), JSON.stringify(result.errors)).toBe('Request.Invalid');
  expect(result.errors![0].extensions.context.issues).toEqual(expect.arrayContaining([expect.objectContaining({ path })]));
}

describe('adding recipients', () => {
  it('adds every recipient type through REST with the defaults, distinct colours and the agents echoed', async () => {
    const caller = await newCaller();
    const envelopeId = await newDraft(caller);
    const host = await caller.rest.post(`/envelopes/${envelopeId}/recipients`, {
      recipient: { type: 'host', identifier: 'notary', roleName: 'Notary', agents: [person('Hana Host', { email: 'hana@example.com' })] },
    });
    expect(host.status).toBe(200);
    expect(host.body).toEqual({
      version: '1',
      success: true,
      payload: {
        recipient: {
          id: expect.any(String),
          identifier: 'notary',
          roleName: 'Notary',
          type: 'host',
          order: 0,
          required: true,
          quorum: 1,
          signatureLevel: 'simple',
          trustServiceId: null,
          color: expect.stringMatching(/^#[0-9A-Fa-f]{6}$/),
          hostedById: null,
          delegatedById: null,
          agents: [
            {
              id: expect.any(String),
              kind: 'info',
              info: { name: 'Hana Host', email: 'hana@example.com', phone: null, locale: null, phoneContactMethod: null },
            },
          ],
          approvals: [],
          activatedAt: null,
          completedAt: null,
          delegatedAt: null,
          removedAt: null,
        },
      },
    });
    const hostId = host.body.payload.recipient.id;
    const signer = await addRecipient(caller, envelopeId, {
      type: 'signer',
      identifier: 'buyer',
      roleName: 'Buyer',
      agents: [person('Ada Buyer', { email: 'ada@example.com', phone: '+905551234567', locale: 'tr-TR', phoneContactMethod: 'whatsapp' })],
    });
    const inPerson = await addRecipient(caller, envelopeId, {
      type: 'in_person_signer',
      identifier: 'walk-in',
      roleName: 'Walk-in signer',
      hostedById: hostId,
      agents: [person('Ilker In-Person')],
    });
    const delegator = await addRecipient(caller, envelopeId, {
      type: 'delegator',
      identifier: 'manager',
      roleName: 'Manager',
      order: 2,
      required: false,
      agents: [person('Dora Delegator', { email: 'dora@example.com', locale: 'en-US' })],
    });
    const viewer = await addRecipient(caller, envelopeId, {
      type: 'viewer',
      identifier: 'archive',
      roleName: 'Archive',
      color: '#123ABC',
      agents: [person('Vic Viewer', { email: 'vic@example.com' }), person('Val Viewer', { phone: '+14155550100', phoneContactMethod: 'sms' })],
    });

    expect(signer).toMatchObject({
      type: 'signer',
      order: 0,
      required: true,
      hostedById: null,
      agents: [
        {
          kind: 'info',
          info: { name: 'Ada Buyer', email: 'ada@example.com', phone: '+905551234567', locale: 'tr-TR', phoneContactMethod: 'whatsapp' },
        },
      ],
    });
    expect(inPerson).toMatchObject({ type: 'in_person_signer', hostedById: hostId, order: 0, required: true });
    expect(delegator).toMatchObject({ type: 'delegator', order: 2, required: false, agents: [{ info: { name: 'Dora Delegator', locale: 'en-US' } }] });
    expect(viewer).toMatchObject({ type: 'viewer', color: '#123ABC' });
    expect(viewer.agents.map((agent: any) => agent.info.name)).toEqual(['Vic Viewer', 'Val Viewer']);

    const defaultColours = [host.body.payload.recipient.color, signer.color, inPerson.color, delegator.color];
    expect(new Set(defaultColours).size).toBe(4);

    // What was answered is what is stored.
    const fetched = await caller.rest.get(`/envelopes/${envelopeId}/recipients/${signer.id}`);
    expect(fetched.body.payload.recipient).toEqual(signer);
  });

  it('adds every recipient type through GraphQL with the same defaults, readable through REST', async () => {
    const caller = await newCaller();
    const envelopeId = await newDraft(caller);
    const add = (input: Record<string, unknown>) => caller.graphql(addRecipientMutation, { envelopeId, input });
    const host = await add({ type: 'host', identifier: 'host', roleName: 'Host', agents: [{ info: { name: 'Hana Host', locale: 'tr_TR' } }] });
    expect(host.errors).toBeUndefined();
    expect(host.data.addRecipient).toEqual({
      id: expect.any(String),
      identifier: 'host',
      roleName: 'Host',
      type: 'host',
      order: 0,
      required: true,
      color: expect.stringMatching(/^#[0-9A-Fa-f]{6}$/),
      hostedById: null,
      delegatedById: null,
      agents: [
        {
          id: expect.any(String),
          kind: 'info',
          info: { name: 'Hana Host', email: null, phone: null, locale: 'tr_TR', phoneContactMethod: null },
          contactId: null,
          groupId: null,
          userId: null,
        },
      ],
    });
    const hostId = host.data.addRecipient.id;
    const results = [
      await add({ type: 'signer', identifier: 'signer', roleName: 'Signer', agents: [{ info: { name: 'Sam', email: 'sam@example.com' } }] }),
      await add({ type: 'in_person_signer', identifier: 'guest', roleName: 'Guest', hostedById: hostId, agents: [{ info: { name: 'Gus' } }] }),
      await add({ type: 'delegator', identifier: 'boss', roleName: 'Boss', order: 3, required: false }),
      await add({ type: 'viewer', identifier: 'cc', roleName: 'Copy', color: '#ABCDEF', agents: [{ info: { name: 'Cy', phone: '+905551234567', phoneContactMethod: 'sms' } }] }),
    ];
    for (const result of results) expect(result.errors).toBeUndefined();
    const [signer, guest, boss, cc] = results.map((result) => result.data.addRecipient);
    expect(signer).toMatchObject({ type: 'signer', order: 0, required: true, agents: [{ kind: 'info', info: { name: 'Sam', email: 'sam@example.com' } }] });
    expect(guest).toMatchObject({ type: 'in_person_signer', hostedById: hostId });
    expect(boss).toMatchObject({ type: 'delegator', order: 3, required: false, agents: [] });
    expect(cc).toMatchObject({ type: 'viewer', color: '#ABCDEF', agents: [{ info: { phone: '+905551234567', phoneContactMethod: 'sms' } }] });
    expect(new Set([host.data.addRecipient.color, signer.color, guest.color, boss.color]).size).toBe(4);

    const viaRest = await caller.rest.get(`/envelopes/${envelopeId}/recipients/${guest.id}`);
    expect(viaRest.body.payload.recipient).toMatchObject({ id: guest.id, identifier: 'guest', type: 'in_person_signer', hostedById: hostId });
    const viaQuery = await caller.graphql(recipientQuery, { envelopeId, recipientId: cc.id });
    expect(viaQuery.data.recipient).toEqual(cc);
  });

  it('keeps default colours distinct from the colours already in the envelope, also after a removal', async () => {
    const caller = await newCaller();
    const envelopeId = await newDraft(caller);
    const first = await addRecipient(caller, envelopeId, { type: 'signer', identifier: 'a', roleName: 'A' });
    const second = await addRecipient(caller, envelopeId, { type: 'signer', identifier: 'b', roleName: 'B' });
    expect((await caller.rest.delete(`/envelopes/${envelopeId}/recipients/${first.id}`)).status).toBe(200);
    const third = await addRecipient(caller, envelopeId, { type: 'signer', identifier: 'c', roleName: 'C' });
    expect(third.color).not.toBe(second.color);
    // A default never repeats a colour the caller chose explicitly either (here: the palette's next one).
    const explicit = await addRecipient(caller, envelopeId, { type: 'signer', identifier: 'd', roleName: 'D', color: '#059669' });
    expect([second.color, third.color]).not.toContain('#059669');
    const fourth = await graphqlClient(app, caller.team.apiKey)(addRecipientMutation, { envelopeId, input: { type: 'viewer', identifier: 'e', roleName: 'E' } });
    const colours = [second.color, third.color, explicit.color, fourth.data.addRecipient.color].map((colour: string) => colour.toUpperCase());
    expect(new Set(colours).size).toBe(4);
  });

  it('refuses a bad colour, type, order or required, and an unknown property, listing each path', async () => {
    const caller = await newCaller();
    const envelopeId = await newDraft(caller);
    const response = await caller.rest.post(`/envelopes/${envelopeId}/recipients`, {
      recipient: { type: 'witness', identifier: 'w', roleName: '', order: -1, required: 'yes', color: 'red', nickname: 'x' },
    });
    expect(response.status).toBe(400);
    const paths = response.body.error.context.issues.map((issue: { path: string }) => issue.path).sort();
    expect(paths).toEqual(['recipient', 'recipient.color', 'recipient.order', 'recipient.required', 'recipient.roleName', 'recipient.type']);
    const missing = await caller.rest.post(`/envelopes/${envelopeId}/recipients`, { type: 'signer', identifier: 'x', roleName: 'X' });
    expectInvalid(missing, 'recipient');
    const graphql = await caller.graphql(addRecipientMutation, { envelopeId, input: { type: 'signer', identifier: 'x', roleName: 'X', color: '#12345' } });
    expectGraphqlInvalid(graphql, 'recipient.color');
    expect(await listedRecipients(caller, envelopeId)).toEqual([]);
  });

  it('returns the first answer for a repeated Idempotency-Key and adds the recipient once', async () => {
    const caller = await newCaller();
    const envelopeId = await newDraft(caller);
    const body = { recipient: { type: 'signer', identifier: 'once', roleName: 'Once' } };
    const headers = { 'idempotency-key': 'add-recipient-1' };
    const first = await caller.rest.post(`/envelopes/${envelopeId}/recipients`, body, headers);
    const repeat = await caller.rest.post(`/envelopes/${envelopeId}/recipients`, body, headers);
    expect(repeat.status).toBe(200);
    expect(repeat.body.payload.recipient.id).toBe(first.body.payload.recipient.id);
    expect(await listedRecipients(caller, envelopeId)).toHaveLength(1);
  });
});

describe('hosts and in-person signers', () => {
  it('requires hostedById for an in_person_signer, on both faces', async () => {
    const caller = await newCaller();
    const envelopeId = await newDraft(caller);
    const rest = await caller.rest.post(`/envelopes/${envelopeId}/recipients`, {
      recipient: { type: 'in_person_signer', identifier: 'guest', roleName: 'Guest' },
    });
    expectInvalid(rest, 'recipient.hostedById');
    const graphql = await caller.graphql(addRecipientMutation, { envelopeId, input: { type: 'in_person_signer', identifier: 'guest', roleName: 'Guest' } });
    expectGraphqlInvalid(graphql, 'recipient.hostedById');
    expect(await listedRecipients(caller, envelopeId)).toEqual([]);
  });

  it('accepts only a host of the same envelope as hostedById', async () => {
    const caller = await newCaller();
    const envelopeId = await newDraft(caller);
    const otherEnvelopeId = await newDraft(caller, 'Other envelope');
    const signer = await addRecipient(caller, envelopeId, { type: 'signer', identifier: 'signer', roleName: 'Signer' });
    const viewer = await addRecipient(caller, envelopeId, { type: 'viewer', identifier: 'viewer', roleName: 'Viewer' });
    const foreignHost = await addRecipient(caller, otherEnvelopeId, { type: 'host', identifier: 'host', roleName: 'Host' });
    const otherTeam = await newCaller();
    const otherTeamHost = await addRecipient(otherTeam, await newDraft(otherTeam), { type: 'host', identifier: 'host', roleName: 'Host' });
    for (const hostedById of [signer.id, viewer.id, foreignHost.id, otherTeamHost.id, unknownId, 'not-a-uuid', "1' or '1'='1"]) {
      const input = { type: 'in_person_signer', identifier: 'guest', roleName: 'Guest', hostedById };
      const rest = await caller.rest.post(`/envelopes/${envelopeId}/recipients`, { recipient: input });
      expectInvalid(rest, 'recipient.hostedById');
      const graphql = await caller.graphql(addRecipientMutation, { envelopeId, input });
      expectGraphqlInvalid(graphql, 'recipient.hostedById');
    }
    expect((await listedRecipients(caller, envelopeId)).map((recipient) => recipient.identifier).sort()).toEqual(['signer', 'viewer']);

    const host = await addRecipient(caller, envelopeId, { type: 'host', identifier: 'host', roleName: 'Host' });
    const guest = await addRecipient(caller, envelopeId, { type: 'in_person_signer', identifier: 'guest', roleName: 'Guest', hostedById: host.id });
    expect(guest.hostedById).toBe(host.id);
    // One host may run the session for several in-person signers.
    const second = await caller.graphql(addRecipientMutation, {
      envelopeId,
      input: { type: 'in_person_signer', identifier: 'guest-2', roleName: 'Guest 2', hostedById: host.id },
    });
    expect(second.data.addRecipient.hostedById).toBe(host.id);
  });

  it('refuses hostedById on every type other than in_person_signer', async () => {
    const caller = await newCaller();
    const envelopeId = await newDraft(caller);
    const host = await addRecipient(caller, envelopeId, { type: 'host', identifier: 'host', roleName: 'Host' });
    for (const type of ['signer', 'host', 'delegator', 'viewer']) {
      const input = { type, identifier: `r-${type}`, roleName: 'Role', hostedById: host.id };
      expectInvalid(await caller.rest.post(`/envelopes/${envelopeId}/recipients`, { recipient: input }), 'recipient.hostedById');
      expectGraphqlInvalid(await caller.graphql(addRecipientMutation, { envelopeId, input }), 'recipient.hostedById');
    }
    expect(await listedRecipients(caller, envelopeId)).toHaveLength(1);
  });

  it('refuses to make a recipient its own host', async () => {
    const caller = await newCaller();
    const envelopeId = await newDraft(caller);
    const host = await addRecipient(caller, envelopeId, { type: 'host', identifier: 'host', roleName: 'Host' });
    const rest = await caller.rest.patch(`/envelopes/${envelopeId}/recipients/${host.id}`, { recipient: { type: 'in_person_signer', hostedById: host.id } });
    expectInvalid(rest, 'recipient.hostedById');
    const graphql = await caller.graphql(updateRecipientMutation, {
      envelopeId,
      recipientId: host.id,
      input: { type: 'in_person_signer', hostedById: host.id },
    });
    expectGraphqlInvalid(graphql, 'recipient.hostedById');
    const fetched = await caller.rest.get(`/envelopes/${envelopeId}/recipients/${host.id}`);
    expect(fetched.body.payload.recipient).toMatchObject({ type: 'host', hostedById: null });
  });
});

describe('delegation links', () => {
  it('accepts delegatedById naming another recipient of the same envelope and nothing else', async () => {
    const caller = await newCaller();
    const envelopeId = await newDraft(caller);
    const otherEnvelopeId = await newDraft(caller, 'Other envelope');
    const delegator = await addRecipient(caller, envelopeId, { type: 'delegator', identifier: 'manager', roleName: 'Manager' });
    const elsewhere = await addRecipient(caller, otherEnvelopeId, { type: 'delegator', identifier: 'manager', roleName: 'Manager' });
    for (const delegatedById of [elsewhere.id, unknownId, 'not-a-uuid']) {
      const input = { type: 'signer', identifier: 'deputy', roleName: 'Deputy', delegatedById };
      expectInvalid(await caller.rest.post(`/envelopes/${envelopeId}/recipients`, { recipient: input }), 'recipient.delegatedById');
      expectGraphqlInvalid(await caller.graphql(addRecipientMutation, { envelopeId, input }), 'recipient.delegatedById');
    }
    const deputy = await addRecipient(caller, envelopeId, { type: 'signer', identifier: 'deputy', roleName: 'Deputy', delegatedById: delegator.id });
    expect(deputy.delegatedById).toBe(delegator.id);
    const viaGraphql = await caller.graphql(addRecipientMutation, {
      envelopeId,
      input: { type: 'signer', identifier: 'deputy-2', roleName: 'Deputy 2', delegatedById: delegator.id },
    });
    expect(viaGraphql.data.addRecipient.delegatedById).toBe(delegator.id);

    // A recipient cannot name itself; null clears the link.
    expectInvalid(await caller.rest.patch(`/envelopes/${envelopeId}/recipients/${deputy.id}`, { recipient: { delegatedById: deputy.id } }), 'recipient.delegatedById');
    const cleared = await caller.rest.patch(`/envelopes/${envelopeId}/recipients/${deputy.id}`, { recipient: { delegatedById: null } });
    expect(cleared.body.payload.recipient.delegatedById).toBeNull();
    const clearedViaGraphql = await caller.graphql(updateRecipientMutation, {
      envelopeId,
      recipientId: viaGraphql.data.addRecipient.id,
      input: { delegatedById: null },
    });
    expect(clearedViaGraphql.data.updateRecipient.delegatedById).toBeNull();
  });
});

describe('agents', () => {
  const cases: [string, Record<string, unknown>, string | null][] = [
    ['a name only', person('Ada'), null],
    ['an empty name', person(''), 'recipient.agents[0].info.name'],
    ['a blank name', person('   '), 'recipient.agents[0].info.name'],
    ['no name', { info: { email: 'ada@example.com' } }, 'recipient.agents[0].info.name'],
    ['an email', person('Ada', { email: 'ada@example.com' }), null],
    ['a malformed email', person('Ada', { email: 'ada-at-example' }), 'recipient.agents[0].info.email'],
    ['an E.164 phone', person('Ada', { phone: '+905551234567' }), null],
    ['a national phone', person('Ada', { phone: '05551234567' }), 'recipient.agents[0].info.phone'],
    ['a too short phone with a zero country code', person('Ada', { phone: '+0123' }), 'recipient.agents[0].info.phone'],
    ['locale en-US', person('Ada', { locale: 'en-US' }), null],
    ['locale tr-TR', person('Ada', { locale: 'tr-TR' }), null],
    ['locale de-DE', person('Ada', { locale: 'de-DE' }), 'recipient.agents[0].info.locale'],
    ['sms with a phone', person('Ada', { phone: '+905551234567', phoneContactMethod: 'sms' }), null],
    ['whatsapp with a phone', person('Ada', { phone: '+905551234567', phoneContactMethod: 'whatsapp' }), null],
    ['sms without a phone', person('Ada', { phoneContactMethod: 'sms' }), 'recipient.agents[0].info.phoneContactMethod'],
    ['an unknown contact method', person('Ada', { phone: '+905551234567', phoneContactMethod: 'telegram' }), 'recipient.agents[0].info.phoneContactMethod'],
    ['an unknown info property', person('Ada', { nickname: 'A' }), 'recipient.agents[0].info'],
    ['an empty agent', {}, 'recipient.agents[0]'],
    ['info and a contactId at once', { ...person('Ada'), contactId: unknownId }, 'recipient.agents[0]'],
    ['a contactId and a userId at once', { contactId: unknownId, userId: unknownId }, 'recipient.agents[0]'],
  ];

  it.each(cases)('REST and GraphQL agree on an agent with %s', async (_label, agent, refusedPath) => {
    const caller = await newCaller();
    const envelopeId = await newDraft(caller);
    const rest = await caller.rest.post(`/envelopes/${envelopeId}/recipients`, {
      recipient: { type: 'signer', identifier: 'rest', roleName: 'Signer', agents: [person('First'), agent] },
    });
    const graphql = await caller.graphql(addRecipientMutation, {
      envelopeId,
      input: { type: 'signer', identifier: 'graphql', roleName: 'Signer', agents: [agent].map(graphqlAgent) },
    });
    if (refusedPath === null) {
      expect(rest.status, JSON.stringify(rest.body)).toBe(200);
      expect(rest.body.payload.recipient.agents).toHaveLength(2);
      expect(rest.body.payload.recipient.agents[1].info).toMatchObject(agent.info as object);
      expect(graphql.errors).toBeUndefined();
      expect(graphql.data.addRecipient.agents[0].info.name).toBe((agent.info as { name: string }).name);
    } else {
      // The REST agent is the second of the list: the path names it exactly.
      expectInvalid(rest, refusedPath.replace('agents[0]', 'agents[1]'));
      // GraphQL either refuses the value's type itself or reports the same domain error.
      expect(graphql.errors).toBeDefined();
      if (firstErrorName(graphql) !== undefined) expectGraphqlInvalid(graphql, refusedPath);
      expect(await listedRecipients(caller, envelopeId)).toEqual([]);
    }
  });

  it('takes at most 50 agents per recipient', async () => {
    const caller = await newCaller();
    const envelopeId = await newDraft(caller);
    const agents = (count: number) => Array.from({ length: count }, (_, index) => person(`Agent ${index}`));
    expectInvalid(
      await caller.rest.post(`/envelopes/${envelopeId}/recipients`, { recipient: { type: 'viewer', identifier: 'many', roleName: 'Many', agents: agents(51) } }),
      'recipient.agents',
    );
    expectGraphqlInvalid(await caller.graphql(addRecipientMutation, { envelopeId, input: { type: 'viewer', identifier: 'many', roleName: 'Many', agents: agents(51) } }), 'recipient.agents');
    const fifty = await addRecipient(caller, envelopeId, { type: 'viewer', identifier: 'many', roleName: 'Many', agents: agents(50) });
    expect(fifty.agents.map((agent: any) => agent.info.name)).toEqual(agents(50).map((agent) => agent.info.name));
    expectInvalid(await caller.rest.patch(`/envelopes/${envelopeId}/recipients/${fifty.id}`, { recipient: { agents: agents(51) } }), 'recipient.agents');
    expect((await caller.rest.get(`/envelopes/${envelopeId}/recipients/${fifty.id}`)).body.payload.recipient.agents).toHaveLength(50);
  });

  it('names the team’s contacts, contact groups and users by id, on both faces', async () => {
    const caller = await newCaller();
    const people = await seedPeople(caller.team.teamId);
    const envelopeId = await newDraft(caller);
    const agents = [{ contactId: people.contactId }, { groupId: people.groupId }, { userId: people.userId }, person('Inline')];
    const viaRest = await addRecipient(caller, envelopeId, { type: 'signer', identifier: 'by-reference', roleName: 'Signer', agents });
    expect(viaRest.agents).toEqual([
      { id: expect.any(String), kind: 'contact', contactId: people.contactId },
      { id: expect.any(String), kind: 'group', groupId: people.groupId },
      { id: expect.any(String), kind: 'user', userId: people.userId },
      { id: expect.any(String), kind: 'info', info: expect.objectContaining({ name: 'Inline' }) },
    ]);
    const viaGraphql = await caller.graphql(addRecipientMutation, {
      envelopeId,
      input: { type: 'viewer', identifier: 'by-reference-2', roleName: 'Viewer', agents },
    });
    expect(viaGraphql.errors).toBeUndefined();
    expect(viaGraphql.data.addRecipient.agents).toEqual([
      { id: expect.any(String), kind: 'contact', info: null, contactId: people.contactId, groupId: null, userId: null },
      { id: expect.any(String), kind: 'group', info: null, contactId: null, groupId: people.groupId, userId: null },
      { id: expect.any(String), kind: 'user', info: null, contactId: null, groupId: null, userId: people.userId },
      expect.objectContaining({ kind: 'info', info: expect.objectContaining({ name: 'Inline' }) }),
    ]);
  });

  it('treats another team’s contact, group or user exactly like an unknown one', async () => {
    const caller = await newCaller();
    const envelopeId = await newDraft(caller);
    const otherTeam = await newCaller();
    const theirs = await seedPeople(otherTeam.team.teamId);
    const references: [string, string, string, string][] = [
      ['contactId', 'Contact.NotFound', theirs.contactId, 'contactId'],
      ['groupId', 'ContactGroup.NotFound', theirs.groupId, 'groupId'],
      ['userId', 'User.NotFound', theirs.userId, 'userId'],
    ];
    for (const [key, errorName, foreignId, contextKey] of references) {
      for (const id of [foreignId, unknownId, 'not-a-uuid']) {
        const agents = [person('Inline'), { [key]: id }];
        const rest = await caller.rest.post(`/envelopes/${envelopeId}/recipients`, { recipient: { type: 'signer', identifier: 'ref', roleName: 'Signer', agents } });
        expect(rest.status, `${key} ${id}`).toBe(404);
        expect(rest.body.error).toMatchObject({ name: errorName, context: { [contextKey]: id, path: `recipient.agents[1].${key}` } });
        const graphql = await caller.graphql(addRecipientMutation, { envelopeId, input: { type: 'signer', identifier: 'ref', roleName: 'Signer', agents } });
        expect(firstErrorName(graphql)).toBe(errorName);
        expect(graphql.errors![0].extensions.context).toMatchObject({ [contextKey]: id });
      }
    }
    // The answer does not tell a foreign id from an unknown one, and nothing was added.
    expect(await listedRecipients(caller, envelopeId)).toEqual([]);
    const signer = await addRecipient(caller, envelopeId, { type: 'signer', identifier: 'ok', roleName: 'Signer', agents: [person('Ok')] });
    const patched = await caller.rest.patch(`/envelopes/${envelopeId}/recipients/${signer.id}`, { recipient: { agents: [{ userId: theirs.userId }] } });
    expect(patched.status).toBe(404);
    expect(patched.body.error.name).toBe('User.NotFound');
    expect((await caller.rest.get(`/envelopes/${envelopeId}/recipients/${signer.id}`)).body.payload.recipient.agents).toMatchObject([{ info: { name: 'Ok' } }]);
  });
});

describe('identifiers', () => {
  const slugs: [string, boolean][] = [
    ['buyer', true],
    ['Buyer_2.lead-1', true],
    ['7', true],
    ['x'.repeat(64), true],
    ['x'.repeat(65), false],
    ['', false],
    ['-lead', false],
    ['.hidden', false],
    ['has space', false],
    ['käufer', false],
    ['a/b', false],
  ];

  it.each(slugs)('REST and GraphQL agree on the identifier %j (accepted: %s)', async (identifier, accepted) => {
    const caller = await newCaller();
    const envelopeId = await newDraft(caller);
    const rest = await caller.rest.post(`/envelopes/${envelopeId}/recipients`, { recipient: { type: 'signer', identifier, roleName: 'Signer' } });
    const otherEnvelopeId = await newDraft(caller);
    const graphql = await caller.graphql(addRecipientMutation, { envelopeId: otherEnvelopeId, input: { type: 'signer', identifier, roleName: 'Signer' } });
    if (accepted) {
      expect(rest.status).toBe(200);
      expect(rest.body.payload.recipient.identifier).toBe(identifier);
      expect(graphql.data.addRecipient.identifier).toBe(identifier);
    } else {
      expectInvalid(rest, 'recipient.identifier');
      expectGraphqlInvalid(graphql, 'recipient.identifier');
    }
  });

  it('refuses a duplicate identifier within an envelope with Recipient.DuplicateIdentifier, but not across envelopes', async () => {
    const caller = await newCaller();
    const envelopeId = await newDraft(caller);
    const first = await addRecipient(caller, envelopeId, { type: 'signer', identifier: 'buyer', roleName: 'Buyer' });
    const duplicate = await caller.rest.post(`/envelopes/${envelopeId}/recipients`, { recipient: { type: 'viewer', identifier: 'buyer', roleName: 'Other' } });
    expect(duplicate.status).toBe(409);
    expect(duplicate.body.error).toMatchObject({ name: 'Recipient.DuplicateIdentifier', context: { identifier: 'buyer' } });
    const graphql = await caller.graphql(addRecipientMutation, { envelopeId, input: { type: 'viewer', identifier: 'buyer', roleName: 'Other' } });
    expect(firstErrorName(graphql)).toBe('Recipient.DuplicateIdentifier');
    expect(await listedRecipients(caller, envelopeId)).toHaveLength(1);

    const otherEnvelopeId = await newDraft(caller, 'Second');
    await addRecipient(caller, otherEnvelopeId, { type: 'signer', identifier: 'buyer', roleName: 'Buyer' });
    const otherTeam = await newCaller();
    await addRecipient(otherTeam, await newDraft(otherTeam), { type: 'signer', identifier: 'buyer', roleName: 'Buyer' });

    // Renaming onto a taken identifier is refused too; keeping one's own identifier is not a clash.
    const second = await addRecipient(caller, envelopeId, { type: 'signer', identifier: 'seller', roleName: 'Seller' });
    const clash = await caller.rest.patch(`/envelopes/${envelopeId}/recipients/${second.id}`, { recipient: { identifier: 'buyer' } });
    expect(clash.status).toBe(409);
    expect(clash.body.error.name).toBe('Recipient.DuplicateIdentifier');
    const clashViaGraphql = await caller.graphql(updateRecipientMutation, { envelopeId, recipientId: second.id, input: { identifier: 'buyer' } });
    expect(firstErrorName(clashViaGraphql)).toBe('Recipient.DuplicateIdentifier');
    const same = await caller.rest.patch(`/envelopes/${envelopeId}/recipients/${first.id}`, { recipient: { identifier: 'buyer', roleName: 'Main buyer' } });
    expect(same.body.payload.recipient).toMatchObject({ identifier: 'buyer', roleName: 'Main buyer' });
  });
});

describe('updating recipients', () => {
  it('changes only the given keys through REST; agents, when given, replace all agents', async () => {
    const caller = await newCaller();
    const envelopeId = await newDraft(caller);
    const original = await addRecipient(caller, envelopeId, {
      type: 'signer',
      identifier: 'buyer',
      roleName: 'Buyer',
      order: 1,
      color: '#111111',
      agents: [person('Ada', { email: 'ada@example.com' }), person('Bea')],
    });
    const patched = await caller.rest.patch(`/envelopes/${envelopeId}/recipients/${original.id}`, { recipient: { roleName: 'Lead buyer', required: false } });
    expect(patched.status).toBe(200);
    expect(patched.body.payload.recipient).toEqual({ ...original, roleName: 'Lead buyer', required: false });

    const replaced = await caller.rest.patch(`/envelopes/${envelopeId}/recipients/${original.id}`, {
      recipient: { order: 0, agents: [person('Cem', { phone: '+905551234567', phoneContactMethod: 'sms', locale: 'tr-TR' })] },
    });
    expect(replaced.body.payload.recipient).toMatchObject({ identifier: 'buyer', roleName: 'Lead buyer', order: 0, required: false, color: '#111111' });
    expect(replaced.body.payload.recipient.agents).toEqual([
      { id: expect.any(String), kind: 'info', info: { name: 'Cem', email: null, phone: '+905551234567', locale: 'tr-TR', phoneContactMethod: 'sms' } },
    ]);
    const fetched = await caller.rest.get(`/envelopes/${envelopeId}/recipients/${original.id}`);
    expect(fetched.body.payload.recipient).toEqual(replaced.body.payload.recipient);

    const emptied = await caller.rest.patch(`/envelopes/${envelopeId}/recipients/${original.id}`, { recipient: { agents: [] } });
    expect(emptied.body.payload.recipient.agents).toEqual([]);

    const invalid = await caller.rest.patch(`/envelopes/${envelopeId}/recipients/${original.id}`, { recipient: { order: 2, color: 'blue' } });
    expectInvalid(invalid, 'recipient.color');
    expect((await caller.rest.get(`/envelopes/${envelopeId}/recipients/${original.id}`)).body.payload.recipient.order).toBe(0);
    expectInvalid(await caller.rest.patch(`/envelopes/${envelopeId}/recipients/${original.id}`, { roleName: 'Unwrapped' }), 'recipient');
    expectInvalid(await caller.rest.patch(`/envelopes/${envelopeId}/recipients/${original.id}`, { recipient: { nickname: 'x' } }), 'recipient');
  });

  it('changes only the given keys through GraphQL', async () => {
    const caller = await newCaller();
    const envelopeId = await newDraft(caller);
    const original = await addRecipient(caller, envelopeId, { type: 'delegator', identifier: 'manager', roleName: 'Manager', order: 4, agents: [person('Dora')] });
    const result = await caller.graphql(updateRecipientMutation, {
      envelopeId,
      recipientId: original.id,
      input: { type: 'signer', color: '#00AA00' },
    });
    expect(result.errors).toBeUndefined();
    expect(result.data.updateRecipient).toMatchObject({
      id: original.id,
      identifier: 'manager',
      roleName: 'Manager',
      type: 'signer',
      order: 4,
      required: true,
      color: '#00AA00',
      agents: [{ kind: 'info', info: { name: 'Dora' } }],
    });
    const replaced = await caller.graphql(updateRecipientMutation, {
      envelopeId,
      recipientId: original.id,
      input: { agents: [{ info: { name: 'Eve', locale: 'en_US' } }, { info: { name: 'Fay' } }] },
    });
    expect(replaced.data.updateRecipient.agents.map((agent: any) => [agent.info.name, agent.info.locale])).toEqual([
      ['Eve', 'en_US'],
      ['Fay', null],
    ]);
    const viaRest = await caller.rest.get(`/envelopes/${envelopeId}/recipients/${original.id}`);
    expect(viaRest.body.payload.recipient).toMatchObject({ type: 'signer', color: '#00AA00', order: 4 });
    expect(viaRest.body.payload.recipient.agents.map((agent: any) => agent.info.name)).toEqual(['Eve', 'Fay']);
  });

  it('re-types recipients: an in_person_signer needs a host, and leaving that type drops the host link', async () => {
    const caller = await newCaller();
    const envelopeId = await newDraft(caller);
    const host = await addRecipient(caller, envelopeId, { type: 'host', identifier: 'host', roleName: 'Host' });
    const signer = await addRecipient(caller, envelopeId, { type: 'signer', identifier: 'signer', roleName: 'Signer' });
    expectInvalid(await caller.rest.patch(`/envelopes/${envelopeId}/recipients/${signer.id}`, { recipient: { type: 'in_person_signer' } }), 'recipient.hostedById');
    const hosted = await caller.rest.patch(`/envelopes/${envelopeId}/recipients/${signer.id}`, { recipient: { type: 'in_person_signer', hostedById: host.id } });
    expect(hosted.body.payload.recipient).toMatchObject({ type: 'in_person_signer', hostedById: host.id });
    // Other keys change without repeating the host.
    const renamed = await caller.rest.patch(`/envelopes/${envelopeId}/recipients/${signer.id}`, { recipient: { roleName: 'Guest' } });
    expect(renamed.body.payload.recipient).toMatchObject({ type: 'in_person_signer', hostedById: host.id, roleName: 'Guest' });
    expectInvalid(await caller.rest.patch(`/envelopes/${envelopeId}/recipients/${signer.id}`, { recipient: { hostedById: null } }), 'recipient.hostedById');
    const back = await caller.graphql(updateRecipientMutation, { envelopeId, recipientId: signer.id, input: { type: 'signer' } });
    expect(back.data.updateRecipient).toMatchObject({ type: 'signer', hostedById: null });
  });

  it('refuses to change the type of a host that hosts someone, with Recipient.HostRecipientBound, on both faces', async () => {
    const caller = await newCaller();
    const envelopeId = await newDraft(caller);
    const host = await addRecipient(caller, envelopeId, { type: 'host', identifier: 'host', roleName: 'Host' });
    const guest = await addRecipient(caller, envelopeId, { type: 'in_person_signer', identifier: 'guest', roleName: 'Guest', hostedById: host.id });
    const rest = await caller.rest.patch(`/envelopes/${envelopeId}/recipients/${host.id}`, { recipient: { type: 'signer', roleName: 'Changed' } });
    expect(rest.status).toBe(409);
    expect(rest.body.error).toMatchObject({ name: 'Recipient.HostRecipientBound', context: { recipientId: host.id, boundRecipientIds: [guest.id] } });
    const graphql = await caller.graphql(updateRecipientMutation, { envelopeId, recipientId: host.id, input: { type: 'viewer' } });
    expect(firstErrorName(graphql)).toBe('Recipient.HostRecipientBound');
    expect((await caller.rest.get(`/envelopes/${envelopeId}/recipients/${host.id}`)).body.payload.recipient).toMatchObject({ type: 'host', roleName: 'Host' });

    // Changing other keys of the host is fine, and so is the type change once nobody is hosted.
    const renamed = await caller.rest.patch(`/envelopes/${envelopeId}/recipients/${host.id}`, { recipient: { type: 'host', roleName: 'Notary' } });
    expect(renamed.body.payload.recipient).toMatchObject({ type: 'host', roleName: 'Notary' });
    await caller.rest.delete(`/envelopes/${envelopeId}/recipients/${guest.id}`);
    const retyped = await caller.rest.patch(`/envelopes/${envelopeId}/recipients/${host.id}`, { recipient: { type: 'signer' } });
    expect(retyped.body.payload.recipient.type).toBe('signer');
  });
});

describe('deleting recipients', () => {
  it('removes the recipient with its agents and fields, through REST and GraphQL', async () => {
    const caller = await newCaller();
    const setup = await createDraftWithDocumentAndSigner(app, caller.team.apiKey);
    const { envelopeId, documentId, signerId } = setup;
    const viewer = await addRecipient(caller, envelopeId, { type: 'signer', identifier: 'witness', roleName: 'Witness', agents: [person('Wes')] });
    const view = { documentId, page: 0, location: { x: 50, y: 50 }, size: { width: 150, height: 40 } };
    const fields = await caller.rest.post(`/envelopes/${envelopeId}/fields`, {
      fields: [
        { type: 'simple_signature', recipientId: signerId, identifier: 'sig', views: [view] },
        { type: 'simple_signature', recipientId: viewer.id, identifier: 'witness-sig', views: [{ ...view, page: 1 }] },
      ],
    });
    expect(fields.status, JSON.stringify(fields.body)).toBe(200);

    const deleted = await caller.rest.delete(`/envelopes/${envelopeId}/recipients/${signerId}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ version: '1', success: true, payload: { deleted: true } });
    const after = await caller.rest.get(`/envelopes/${envelopeId}?includeFields=true&includeRecipients=true`);
    expect(after.body.payload.recipients.map((recipient: any) => recipient.id)).toEqual([viewer.id]);
    expect(after.body.payload.fields.map((field: any) => field.identifier)).toEqual(['witness-sig']);
    expect((await caller.rest.get(`/envelopes/${envelopeId}/recipients/${signerId}`)).body.error.name).toBe('Recipient.NotFound');
    expect((await caller.rest.delete(`/envelopes/${envelopeId}/recipients/${signerId}`)).body.error.name).toBe('Recipient.NotFound');

    const viaGraphql = await caller.graphql(deleteRecipientMutation, { envelopeId, recipientId: viewer.id });
    expect(viaGraphql.errors).toBeUndefined();
    expect(viaGraphql.data.deleteRecipient).toEqual({ id: viewer.id, deleted: true });
    const empty = await caller.rest.get(`/envelopes/${envelopeId}?includeFields=true&includeRecipients=true`);
    expect(empty.body.payload.recipients).toEqual([]);
    expect(empty.body.payload.fields).toEqual([]);
    // The identifier is free again.
    await addRecipient(caller, envelopeId, { type: 'signer', identifier: 'buyer', roleName: 'Buyer' });
  });

  it('refuses to delete a host that hosts an in_person_signer, then allows it once the signer is gone', async () => {
    const caller = await newCaller();
    const envelopeId = await newDraft(caller);
    const host = await addRecipient(caller, envelopeId, { type: 'host', identifier: 'host', roleName: 'Host', agents: [person('Hana')] });
    const guest = await addRecipient(caller, envelopeId, { type: 'in_person_signer', identifier: 'guest', roleName: 'Guest', hostedById: host.id });
    const byId = (recipients: any[]) => [...recipients].sort((a, b) => a.id.localeCompare(b.id));
    const before = byId(await listedRecipients(caller, envelopeId));

    const rest = await caller.rest.delete(`/envelopes/${envelopeId}/recipients/${host.id}`);
    expect(rest.status).toBe(409);
    expect(rest.body.error).toMatchObject({ name: 'Recipient.HostRecipientBound', context: { recipientId: host.id, boundRecipientIds: [guest.id] } });
    const graphql = await caller.graphql(deleteRecipientMutation, { envelopeId, recipientId: host.id });
    expect(firstErrorName(graphql)).toBe('Recipient.HostRecipientBound');
    expect(byId(await listedRecipients(caller, envelopeId))).toEqual(before);

    expect((await caller.graphql(deleteRecipientMutation, { envelopeId, recipientId: guest.id })).data.deleteRecipient.deleted).toBe(true);
    expect((await caller.rest.delete(`/envelopes/${envelopeId}/recipients/${host.id}`)).body.payload).toEqual({ deleted: true });
    expect(await listedRecipients(caller, envelopeId)).toEqual([]);
  });

  it('refuses to delete a recipient another one names in delegatedById, then allows it once that link is gone', async () => {
    const caller = await newCaller();
    const envelopeId = await newDraft(caller);
    const delegator = await addRecipient(caller, envelopeId, { type: 'delegator', identifier: 'manager', roleName: 'Manager' });
    const deputy = await addRecipient(caller, envelopeId, { type: 'signer', identifier: 'deputy', roleName: 'Deputy', delegatedById: delegator.id });
    const deputyTwo = await addRecipient(caller, envelopeId, { type: 'signer', identifier: 'deputy-2', roleName: 'Deputy 2', delegatedById: delegator.id });

    const rest = await caller.rest.delete(`/envelopes/${envelopeId}/recipients/${delegator.id}`);
    expect(rest.status).toBe(409);
    expect(rest.body.error.name).toBe('Recipient.DelegatorRecipientBound');
    expect([...rest.body.error.context.boundRecipientIds].sort()).toEqual([deputy.id, deputyTwo.id].sort());
    const graphql = await caller.graphql(deleteRecipientMutation, { envelopeId, recipientId: delegator.id });
    expect(firstErrorName(graphql)).toBe('Recipient.DelegatorRecipientBound');
    expect(await listedRecipients(caller, envelopeId)).toHaveLength(3);

    // The one that names it can go; the named one stays bound while any link remains.
    expect((await caller.rest.delete(`/envelopes/${envelopeId}/recipients/${deputy.id}`)).status).toBe(200);
    expect((await caller.rest.delete(`/envelopes/${envelopeId}/recipients/${delegator.id}`)).body.error.name).toBe('Recipient.DelegatorRecipientBound');
    await caller.rest.patch(`/envelopes/${envelopeId}/recipients/${deputyTwo.id}`, { recipient: { delegatedById: null } });
    const finally_ = await caller.graphql(deleteRecipientMutation, { envelopeId, recipientId: delegator.id });
    expect(finally_.data.deleteRecipient).toEqual({ id: delegator.id, deleted: true });
    expect((await listedRecipients(caller, envelopeId)).map((recipient) => recipient.id)).toEqual([deputyTwo.id]);
  });
});

describe('concurrent changes', () => {
  it('adds parallel recipients with distinct default colours and lets only one of several take an identifier', async () => {
    const caller = await newCaller();
    const envelopeId = await newDraft(caller);
    const distinct = await Promise.all(
      Array.from({ length: 6 }, (_, index) => caller.rest.post(`/envelopes/${envelopeId}/recipients`, { recipient: { type: 'signer', identifier: `signer-${index}`, roleName: 'Signer' } })),
    );
    expect(distinct.map((response) => response.status)).toEqual([200, 200, 200, 200, 200, 200]);
    expect(new Set(distinct.map((response) => response.body.payload.recipient.color)).size).toBe(6);

    const racing = await Promise.all(
      Array.from({ length: 4 }, () => caller.rest.post(`/envelopes/${envelopeId}/recipients`, { recipient: { type: 'viewer', identifier: 'cc', roleName: 'Copy' } })),
    );
    expect(racing.map((response) => response.status).sort()).toEqual([200, 409, 409, 409]);
    for (const refused of racing.filter((response) => response.status === 409)) expect(refused.body.error.name).toBe('Recipient.DuplicateIdentifier');
    expect(await listedRecipients(caller, envelopeId)).toHaveLength(7);
  });

  it('never leaves an in_person_signer without its host when the host is deleted while the signer is added', async () => {
    const caller = await newCaller();
    const envelopeId = await newDraft(caller);
    const host = await addRecipient(caller, envelopeId, { type: 'host', identifier: 'host', roleName: 'Host' });
    const [deleted, added] = await Promise.all([
      caller.rest.delete(`/envelopes/${envelopeId}/recipients/${host.id}`),
      caller.rest.post(`/envelopes/${envelopeId}/recipients`, { recipient: { type: 'in_person_signer', identifier: 'guest', roleName: 'Guest', hostedById: host.id } }),
    ]);
    const listed = await listedRecipients(caller, envelopeId);
    if (deleted.status === 200) {
      expectInvalid(added, 'recipient.hostedById');
      expect(listed).toEqual([]);
    } else {
      expect(deleted.body.error.name).toBe('Recipient.HostRecipientBound');
      expect(added.status).toBe(200);
      expect(listed.map((recipient) => recipient.identifier).sort()).toEqual(['guest', 'host']);
    }
  });
});

describe('draft only', () => {
  it('refuses to add, change or delete recipients of a closed (voided) envelope with Envelope.NotDraft, on both faces, and changes nothing (a sent one is corrected: envelope-corrections.test.ts)', async () => {
    const caller = await newCaller();
    const envelopeId = await newDraft(caller);
    const signer = await addRecipient(caller, envelopeId, { type: 'signer', identifier: 'buyer', roleName: 'Buyer', agents: [person('Ada')] });
    await forceEnvelopeStatus(app, envelopeId, 'voided');
    const before = await listedRecipients(caller, envelopeId);
    const eventsBefore = (await listAuditEvents(app.orm.em.fork(), envelopeId)).length;

    const attempts = [
      await caller.rest.post(`/envelopes/${envelopeId}/recipients`, { recipient: { type: 'viewer', identifier: 'late', roleName: 'Late' } }),
      await caller.rest.patch(`/envelopes/${envelopeId}/recipients/${signer.id}`, { recipient: { roleName: 'Changed', agents: [person('Eve')] } }),
      await caller.rest.delete(`/envelopes/${envelopeId}/recipients/${signer.id}`),
    ];
    for (const attempt of attempts) {
      expect(attempt.status).toBe(409);
      expect(attempt.body.error).toMatchObject({ name: 'Envelope.NotDraft', context: { envelopeId, status: 'voided' } });
    }
    const graphqlAttempts = [
      await caller.graphql(addRecipientMutation, { envelopeId, input: { type: 'viewer', identifier: 'late', roleName: 'Late' } }),
      await caller.graphql(updateRecipientMutation, { envelopeId, recipientId: signer.id, input: { roleName: 'Changed' } }),
      await caller.graphql(deleteRecipientMutation, { envelopeId, recipientId: signer.id }),
    ];
    for (const attempt of graphqlAttempts) expect(firstErrorName(attempt)).toBe('Envelope.NotDraft');

    expect(await listedRecipients(caller, envelopeId)).toEqual(before);
    expect(await listAuditEvents(app.orm.em.fork(), envelopeId)).toHaveLength(eventsBefore);
  });
});

describe('not found', () => {
  it('answers Recipient.NotFound for unknown, malformed and other envelopes’ recipient ids on get, update and delete', async () => {
    const caller = await newCaller();
    const envelopeId = await newDraft(caller);
    const mine = await addRecipient(caller, envelopeId, { type: 'signer', identifier: 'buyer', roleName: 'Buyer' });
    const otherEnvelopeId = await newDraft(caller, 'Other');
    const elsewhere = await addRecipient(caller, otherEnvelopeId, { type: 'signer', identifier: 'buyer', roleName: 'Buyer' });
    for (const recipientId of [unknownId, 'not-a-uuid', "1' or '1'='1", elsewhere.id]) {
      const path = `/envelopes/${envelopeId}/recipients/${encodeURIComponent(recipientId)}`;
      for (const response of [await caller.rest.get(path), await caller.rest.patch(path, { recipient: { roleName: 'Changed' } }), await caller.rest.delete(path)]) {
        expect(response.status, recipientId).toBe(404);
        expect(response.body.error).toMatchObject({ name: 'Recipient.NotFound', context: { recipientId } });
      }
      for (const result of [
        await caller.graphql(recipientQuery, { envelopeId, recipientId }),
        await caller.graphql(updateRecipientMutation, { envelopeId, recipientId, input: { roleName: 'Changed' } }),
        await caller.graphql(deleteRecipientMutation, { envelopeId, recipientId }),
      ]) {
        expect(firstErrorName(result)).toBe('Recipient.NotFound');
      }
    }
    // The other envelope's recipient is untouched.
    expect((await caller.rest.get(`/envelopes/${otherEnvelopeId}/recipients/${elsewhere.id}`)).body.payload.recipient.roleName).toBe('Buyer');

    // Another team's envelope is not found at all, whatever recipient id comes with it.
    const stranger = await newCaller();
    const theirs = await stranger.rest.get(`/envelopes/${envelopeId}/recipients/${mine.id}`);
    expect(theirs.status).toBe(404);
    expect(theirs.body.error.name).toBe('Envelope.NotFound');
    const theirAdd = await stranger.rest.post(`/envelopes/${envelopeId}/recipients`, { recipient: { type: 'signer', identifier: 'intruder', roleName: 'X' } });
    expect(theirAdd.body.error.name).toBe('Envelope.NotFound');
    expect(firstErrorName(await stranger.graphql(deleteRecipientMutation, { envelopeId, recipientId: mine.id }))).toBe('Envelope.NotFound');
    expect(await listedRecipients(caller, envelopeId)).toHaveLength(1);
  });
});

describe('listing recipients', () => {
  it('lists the recipients ordered by order, with their agents, on the envelope and on both faces', async () => {
    const caller = await newCaller();
    const envelopeId = await newDraft(caller);
    const third = await addRecipient(caller, envelopeId, { type: 'viewer', identifier: 'archive', roleName: 'Archive', order: 5, agents: [person('Vic')] });
    const first = await addRecipient(caller, envelopeId, { type: 'signer', identifier: 'buyer', roleName: 'Buyer', order: 0, agents: [person('Ada'), person('Bea')] });
    const second = await addRecipient(caller, envelopeId, { type: 'signer', identifier: 'seller', roleName: 'Seller', order: 2, agents: [person('Sid')] });

    const listed = await listedRecipients(caller, envelopeId);
    expect(listed.map((recipient) => recipient.identifier)).toEqual(['buyer', 'seller', 'archive']);
    expect(listed).toEqual([first, second, third]);
    expect(listed[0].agents.map((agent: any) => agent.info.name)).toEqual(['Ada', 'Bea']);
    expect((await caller.rest.get(`/envelopes/${envelopeId}/recipients`)).body.payload.recipients).toEqual(listed);
    // Without the flag the envelope comes alone.
    expect((await caller.rest.get(`/envelopes/${envelopeId}`)).body.payload.recipients).toBeUndefined();

    // Reordering moves it in the listing.
    await caller.rest.patch(`/envelopes/${envelopeId}/recipients/${third.id}`, { recipient: { order: 1 } });
    const graphql = await caller.graphql(`query($id: ID!) { envelope(id: $id) { recipients { identifier order agents { info { name } } } } }`, { id: envelopeId });
    expect(graphql.data.envelope.recipients).toEqual([
      { identifier: 'buyer', order: 0, agents: [{ info: { name: 'Ada' } }, { info: { name: 'Bea' } }] },
      { identifier: 'archive', order: 1, agents: [{ info: { name: 'Vic' } }] },
      { identifier: 'seller', order: 2, agents: [{ info: { name: 'Sid' } }] },
    ]);
  });
});

describe('audit trail', () => {
  it('appends recipient.added, recipient.updated and recipient.removed events for the calling key, from both faces', async () => {
    const caller = await newCaller();
    const envelopeId = await newDraft(caller);
    const viaRest = await addRecipient(caller, envelopeId, { type: 'signer', identifier: 'buyer', roleName: 'Buyer', agents: [person('Ada')] });
    const viaGraphql = (await caller.graphql(addRecipientMutation, { envelopeId, input: { type: 'viewer', identifier: 'cc', roleName: 'Copy' } })).data.addRecipient;
    await caller.rest.patch(`/envelopes/${envelopeId}/recipients/${viaRest.id}`, { recipient: { roleName: 'Lead buyer' } });
    await caller.graphql(updateRecipientMutation, { envelopeId, recipientId: viaGraphql.id, input: { order: 3 } });
    await caller.rest.delete(`/envelopes/${envelopeId}/recipients/${viaRest.id}`);
    await caller.graphql(deleteRecipientMutation, { envelopeId, recipientId: viaGraphql.id });
    // Refused changes leave no trace.
    await caller.rest.post(`/envelopes/${envelopeId}/recipients`, { recipient: { type: 'in_person_signer', identifier: 'x', roleName: 'X' } });
    await caller.rest.delete(`/envelopes/${envelopeId}/recipients/${unknownId}`);

    const events = (await listAuditEvents(app.orm.em.fork(), envelopeId)).filter((event) => event.type.startsWith('recipient.'));
    expect(events.map((event) => [event.type, event.details.recipientId])).toEqual([
      ['recipient.added', viaRest.id],
      ['recipient.added', viaGraphql.id],
      ['recipient.updated', viaRest.id],
      ['recipient.updated', viaGraphql.id],
      ['recipient.removed', viaRest.id],
      ['recipient.removed', viaGraphql.id],
    ]);
    for (const event of events) {
      expect(event.actorType).toBe('api_key');
      expect(event.actorId).toBe(caller.team.keyId);
      expect(event.ip).toEqual(expect.any(String));
    }
    expect(events[0].details).toMatchObject({ identifier: 'buyer', type: 'signer', agentCount: 1 });
    expect(events[2].details).toMatchObject({ changed: ['roleName'] });
  });
});

describe('viewers hold no fields', () => {
  it('refuses to turn a recipient with fields into a viewer, on both faces, until its fields are gone', async () => {
    const app = await startTestApp();
    try {
      const team = await seedTeam(app);
      const draft = await createDraftWithDocumentAndSigner(app, team.apiKey);
      const rest = restClient(app, team.apiKey);
      const created = await rest.post(`/envelopes/${draft.envelopeId}/fields`, {
        fields: [
          {
            type: 'simple_signature',
            recipientId: draft.signerId,
            identifier: 'sig',
            views: [{ documentId: draft.documentId, page: 0, location: { x: 50, y: 50 }, size: { width: 150, height: 40 } }],
          },
        ],
      });
      const fieldId = created.body.payload.fields[0].id;
      const refused = await rest.patch(`/envelopes/${draft.envelopeId}/recipients/${draft.signerId}`, { recipient: { type: 'viewer' } });
      expect(refused.status).toBe(409);
      expect(refused.body.error).toMatchObject({ name: 'Recipient.HasFields', context: { recipientId: draft.signerId, fieldIds: [fieldId] } });
      const graphql = await graphqlClient(app, team.apiKey)('mutation($e: ID!, $r: ID!) { updateRecipient(envelopeId: $e, recipientId: $r, input: { type: viewer }) { type } }', {
        e: draft.envelopeId,
        r: draft.signerId,
      });
      expect(firstErrorName(graphql)).toBe('Recipient.HasFields');
      expect((await rest.get(`/envelopes/${draft.envelopeId}/recipients/${draft.signerId}`)).body.payload.recipient.type).toBe('signer');
      await rest.delete(`/envelopes/${draft.envelopeId}/fields/${fieldId}`);
      const allowed = await rest.patch(`/envelopes/${draft.envelopeId}/recipients/${draft.signerId}`, { recipient: { type: 'viewer' } });
      expect(allowed.body.payload.recipient.type).toBe('viewer');
    } finally {
      await app.close();
    }
  });
});

describe('one GraphQL operation with several mutations', () => {
  it('shows each mutation’s own result, not what an earlier mutation in the same request loaded', async () => {
    const app = await startTestApp();
    try {
      const team = await seedTeam(app);
      const draft = await createDraftWithDocumentAndSigner(app, team.apiKey);
      const result = await graphqlClient(app, team.apiKey)(
        `mutation($e: ID!, $r: ID!) {
          first: updateRecipient(envelopeId: $e, recipientId: $r, input: { roleName: "One", agents: [{ info: { name: "Agent One" } }] }) { roleName agents { info { name } } }
          second: updateRecipient(envelopeId: $e, recipientId: $r, input: { roleName: "Two", agents: [{ info: { name: "Agent Two" } }] }) { roleName agents { info { name } } }
        }`,
        { e: draft.envelopeId, r: draft.signerId },
      );
      expect(result.errors).toBeUndefined();
      expect(result.data.first).toEqual({ roleName: 'One', agents: [{ info: { name: 'Agent One' } }] });
      expect(result.data.second).toEqual({ roleName: 'Two', agents: [{ info: { name: 'Agent Two' } }] });
    } finally {
      await app.close();
    }
  });
});
