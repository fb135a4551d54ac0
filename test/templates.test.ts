import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listAuditEvents, verifyAuditChain } from '../src/domain/audit/audit.service.ts';
import { unknownId } from './helpers/envelopes.ts';
import { firstErrorName, graphqlClient, restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app.close();
});

const templateFields = 'id name description teamScope teamId createdAt updatedAt documents { id } recipients { id } fields { id }';
const gql = {
  create: `mutation($input: CreateTemplateInput!) { createTemplate(input: $input) { ${templateFields} } }`,
  update: `mutation($id: ID!, $input: UpdateTemplateInput!) { updateTemplate(id: $id, input: $input) { ${templateFields} } }`,
  delete: 'mutation($id: ID!) { deleteTemplate(id: $id) { id deleted } }',
  template: `query($id: ID!) { template(id: $id) { ${templateFields} } }`,
  templates: `query($first: Int, $after: String) { templates(first: $first, after: $after) { edges { cursor node { id } } nodes { id name } pageInfo { hasNextPage endCursor } } }`,
};

function callerOf(team: SeededTeam) {
  return { team, rest: restClient(app, team.apiKey), graphql: graphqlClient(app, team.apiKey) };
}

describe('templates: create, get, list, patch, delete on both faces', () => {
  it('REST: creates a template and answers it with empty documents, roles and fields', async () => {
    const { rest, team } = callerOf(await seedTeam(app));
    const created = await rest.post('/templates', { name: 'NDA', description: 'Mutual non-disclosure' });
    expect(created.status).toBe(200);
    const templateId = created.body.payload.templateId;
    expect(templateId).toMatch(/^[0-9a-f-]{36}$/);
    const read = await rest.get(`/templates/${templateId}`);
    expect(read.body.payload.template).toMatchObject({
      id: templateId,
      name: 'NDA',
      description: 'Mutual non-disclosure',
      teamScope: [],
      teamId: team.teamId,
      documents: [],
      recipients: [],
      fields: [],
    });
  });

  it('GraphQL: creates, reads, updates and deletes a template', async () => {
    const { graphql, team } = callerOf(await seedTeam(app));
    const created = await graphql(gql.create, { input: { name: 'Lease', description: 'Flat lease' } });
    expect(created.errors).toBeUndefined();
    const id = created.data.createTemplate.id;
    expect(created.data.createTemplate).toMatchObject({ name: 'Lease', description: 'Flat lease', teamScope: [], teamId: team.teamId, documents: [] });
    const updated = await graphql(gql.update, { id, input: { name: 'Lease 2', description: null } });
    expect(updated.errors).toBeUndefined();
    expect(updated.data.updateTemplate).toMatchObject({ name: 'Lease 2', description: null });
    const read = await graphql(gql.template, { id });
    expect(read.data.template.name).toBe('Lease 2');
    const deleted = await graphql(gql.delete, { id });
    expect(deleted.data.deleteTemplate).toEqual({ id, deleted: true });
    const gone = await graphql(gql.template, { id });
    expect(firstErrorName(gone)).toBe('Template.NotFound');
  });

  it('REST: patches only the given keys and deletes', async () => {
    const { rest } = callerOf(await seedTeam(app));
    const templateId = (await rest.post('/templates', { name: 'Offer', description: 'Job offer' })).body.payload.templateId;
    const patched = await rest.patch(`/templates/${templateId}`, { name: 'Offer letter' });
    expect(patched.status).toBe(200);
    expect(patched.body.payload.template).toMatchObject({ name: 'Offer letter', description: 'Job offer' });
    expect((await rest.delete(`/templates/${templateId}`)).body.payload).toEqual({ deleted: true });
    const gone = await rest.get(`/templates/${templateId}`);
    expect(gone.status).toBe(404);
    expect(gone.body.error.name).toBe('Template.NotFound');
  });

  it('refuses invalid names on both faces with Request.Invalid', async () => {
    const { rest, graphql } = callerOf(await seedTeam(app));
    const short = await rest.post('/templates', { name: 'X' });
    expect(short.status).toBe(400);
    expect(short.body.error.name).toBe('Request.Invalid');
    expect(short.body.error.context.issues[0].path).toBe('name');
    const long = await graphql(gql.create, { input: { name: 'Y'.repeat(49) } });
    expect(firstErrorName(long)).toBe('Request.Invalid');
  });

  it('lists templates newest first in keyset pages on both faces', async () => {
    const { rest, graphql } = callerOf(await seedTeam(app));
    const ids: string[] = [];
    for (const name of ['First', 'Second', 'Third']) ids.push((await rest.post('/templates', { name })).body.payload.templateId);
    const page1 = await rest.get('/templates?limit=2');
    expect(page1.body.payload.templates.map((template: { id: string }) => template.id)).toEqual([ids[2], ids[1]]);
    expect(page1.body.payload.templates[0].documents).toEqual([]);
    const page2 = await rest.get(`/templates?limit=2&cursor=${page1.body.payload.nextCursor}`);
    expect(page2.body.payload.templates.map((template: { id: string }) => template.id)).toEqual([ids[0]]);
    expect(page2.body.payload.nextCursor).toBeNull();
    const first = await graphql(gql.templates, { first: 2 });
    expect(first.data.templates.nodes.map((node: { id: string }) => node.id)).toEqual([ids[2], ids[1]]);
    const second = await graphql(gql.templates, { first: 2, after: first.data.templates.pageInfo.endCursor });
    expect(second.data.templates.nodes.map((node: { id: string }) => node.id)).toEqual([ids[0]]);
    expect(second.data.templates.pageInfo.hasNextPage).toBe(false);
  });

  it('records template changes in the team’s audit chain', async () => {
    const { rest, team } = callerOf(await seedTeam(app));
    const templateId = (await rest.post('/templates', { name: 'Audited' })).body.payload.templateId;
    await rest.patch(`/templates/${templateId}`, { name: 'Audited 2' });
    await rest.delete(`/templates/${templateId}`);
    const events = await listAuditEvents(app.orm.em.fork(), team.teamId);
    expect(events.map((event) => [event.type, event.details.templateId])).toEqual([
      ['template.created', templateId],
      ['template.updated', templateId],
      ['template.deleted', templateId],
    ]);
    expect(await verifyAuditChain(app.orm.em.fork(), app.dependencies.auditKey, team.teamId)).toMatchObject({ valid: true, length: 3 });
  });
});

describe('teamScope', () => {
  let owner: ReturnType<typeof callerOf>;
  let sibling: ReturnType<typeof callerOf>;
  let outsider: ReturnType<typeof callerOf>;
  let bystander: ReturnType<typeof callerOf>;
  let templateId: string;

  beforeAll(async () => {
    owner = callerOf(await seedTeam(app));
    sibling = callerOf(await seedTeam(app, { workspaceId: owner.team.workspaceId }));
    bystander = callerOf(await seedTeam(app, { workspaceId: owner.team.workspaceId }));
    outsider = callerOf(await seedTeam(app));
    templateId = (await owner.rest.post('/templates', { name: 'Shared', teamScope: [sibling.team.teamId.toUpperCase()] })).body.payload.templateId;
  });

  it('stores scope ids lower-case and once each', async () => {
    const read = await owner.rest.get(`/templates/${templateId}`);
    expect(read.body.payload.template.teamScope).toEqual([sibling.team.teamId]);
  });

  it('refuses, at write time, a team of another workspace exactly like an unknown or malformed one', async () => {
    for (const face of ['rest', 'graphql'] as const) {
      const answers = [];
      for (const id of [outsider.team.teamId, unknownId, 'not-a-team']) {
        if (face === 'rest') {
          const answer = await owner.rest.post('/templates', { name: 'Leaky', teamScope: [sibling.team.teamId, id] });
          expect(answer.status).toBe(400);
          answers.push(answer.body.error.context.issues);
        } else {
          const answer = await owner.graphql(gql.update, { id: templateId, input: { teamScope: [id] } });
          expect(firstErrorName(answer)).toBe('Request.Invalid');
          answers.push(answer.errors?.[0].extensions.context.issues);
        }
      }
      expect(answers[0]).toEqual([{ path: face === 'rest' ? 'teamScope[1]' : 'teamScope[0]', message: 'must be the id of a team of your workspace' }]);
      expect(answers[0]).toEqual(answers[1]);
      expect(answers[0]).toEqual(answers[2]);
    }
    expect((await owner.rest.get(`/templates/${templateId}`)).body.payload.template.teamScope).toEqual([sibling.team.teamId]);
  });

  it('lets a team in scope read and list the template', async () => {
    const read = await sibling.rest.get(`/templates/${templateId}`);
    expect(read.status).toBe(200);
    expect(read.body.payload.template.teamId).toBe(owner.team.teamId);
    const listed = await sibling.graphql(gql.templates, { first: 100 });
    expect(listed.data.templates.nodes.map((node: { id: string }) => node.id)).toContain(templateId);
    const one = await sibling.graphql(gql.template, { id: templateId });
    expect(one.data.template.id).toBe(templateId);
  });

  it('refuses a change by a team in scope with Template.NotOwner on both faces, and changes nothing', async () => {
    const patch = await sibling.rest.patch(`/templates/${templateId}`, { name: 'Hijacked' });
    expect(patch.status).toBe(403);
    expect(patch.body.error.name).toBe('Template.NotOwner');
    const remove = await sibling.rest.delete(`/templates/${templateId}`);
    expect(remove.body.error.name).toBe('Template.NotOwner');
    expect(firstErrorName(await sibling.graphql(gql.update, { id: templateId, input: { name: 'Hijacked' } }))).toBe('Template.NotOwner');
    expect(firstErrorName(await sibling.graphql(gql.delete, { id: templateId }))).toBe('Template.NotOwner');
    expect((await owner.rest.get(`/templates/${templateId}`)).body.payload.template.name).toBe('Shared');
  });

  it('shows every other team (same workspace or not) Template.NotFound, identical to an unknown id', async () => {
    for (const other of [bystander, outsider]) {
      for (const [method, body] of [
        ['get', undefined],
        ['patch', { name: 'Hijacked' }],
        ['delete', undefined],
      ] as const) {
        const foreign = await other.rest.call(method.toUpperCase(), `/templates/${templateId}`, body);
        const missing = await other.rest.call(method.toUpperCase(), `/templates/${unknownId}`, body);
        expect(foreign.status).toBe(404);
        const blank = (answer: unknown, id: string) =>
          JSON.stringify(answer)
            .replaceAll(id, '<id>')
            .replace(/"requestId":"[^"]+"/, '');
        expect(blank(foreign.body, templateId)).toBe(blank(missing.body, unknownId));
      }
      const listed = await other.graphql(gql.templates, { first: 100 });
      expect(listed.data.templates.nodes.map((node: { id: string }) => node.id)).not.toContain(templateId);
      expect(firstErrorName(await other.graphql(gql.template, { id: templateId }))).toBe('Template.NotFound');
    }
  });

  it('stops sharing when the owner takes a team out of scope', async () => {
    const scoped = (await owner.rest.post('/templates', { name: 'Briefly shared', teamScope: [sibling.team.teamId] })).body.payload.templateId;
    expect((await sibling.rest.get(`/templates/${scoped}`)).status).toBe(200);
    expect((await owner.rest.patch(`/templates/${scoped}`, { teamScope: [] })).status).toBe(200);
    expect((await sibling.rest.get(`/templates/${scoped}`)).body.error.name).toBe('Template.NotFound');
  });
});
