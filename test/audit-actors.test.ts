/**
 * Audit events name their actors on both faces: an API key by its label (its prefix without
 * one), a recipient's person by name, the system by nothing; every distinct actor of an answer is
 * named in one statement (a DataLoader batch), and another team's actors are never named.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../src/domain/team/team.service.ts';
import { graphqlClient, restClient, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { buildEnvelope, signAndComplete, tokenFor } from './helpers/signing.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ countStatements: true });
});
afterAll(async () => {
  await app.close();
});

const ACTORS_QUERY = 'query($id: ID!) { envelope(id: $id) { auditEvents { type actor { type id name } } } }';

describe('audit actors', () => {
  it('are named on both faces: the key by its label, the signer by name', async () => {
    const team = await seedTeam(app);
    const labelled = await createApiKey(app.orm.em.fork(), { teamId: team.teamId, label: 'CRM sync' });
    const built = await buildEnvelope(app, labelled.apiKey, { recipients: [{ identifier: 'ada', agents: [{ info: { name: 'Ada Lovelace', email: 'ada@example.com' } }] }] });
    const rest = restClient(app, labelled.apiKey);
    expect((await rest.put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
    const signed = await signAndComplete(app, await tokenFor(app, built.envelopeId, built.recipients.ada));
    expect(signed.errors).toBeUndefined();

    const events = (await rest.get(`/envelopes/${built.envelopeId}/audit`)).body.payload.events as { type: string; actor: { type: string; id: string | null; name: string | null } }[];
    const byType = (type: string) => events.find((event) => event.type === type)!.actor;
    expect(byType('envelope.created')).toEqual({ type: 'api_key', id: labelled.keyId, name: 'CRM sync' });
    expect(byType('recipient.completed')).toMatchObject({ type: 'agent', name: 'Ada Lovelace' });

    const graphql = await graphqlClient(app, labelled.apiKey)(ACTORS_QUERY, { id: built.envelopeId });
    expect(graphql.errors, JSON.stringify(graphql)).toBeUndefined();
    expect(graphql.data.envelope.auditEvents.map((event: { actor: unknown }) => event.actor)).toEqual(events.map((event) => event.actor));
  });

  it('name an unlabelled key by its prefix, and every actor of an answer in one statement', async () => {
    const team = await seedTeam(app);
    const built = await buildEnvelope(app, team.apiKey, { recipients: [{ identifier: 'ada' }, { identifier: 'bob' }] });
    const rest = restClient(app, team.apiKey);
    await rest.put(`/envelopes/${built.envelopeId}/send`);
    for (const identifier of ['ada', 'bob']) await signAndComplete(app, await tokenFor(app, built.envelopeId, built.recipients[identifier]));
    app.resetStatements();
    const answer = await graphqlClient(app, team.apiKey)(ACTORS_QUERY, { id: built.envelopeId });
    expect(answer.errors, JSON.stringify(answer.errors)).toBeUndefined();
    const names = [...new Set(answer.data.envelope.auditEvents.map((event: { actor: { name: string | null } }) => event.actor.name))];
    expect(names.filter((name) => typeof name === 'string' && name.startsWith('esk_'))).toHaveLength(1);
    expect(names.filter((name) => name === 'Person ada' || name === 'Person bob')).toHaveLength(2);
    // The envelope with its events, then one statement naming the key and both people.
    const naming = app.statements.filter((statement) => /from "api_key" as "k"/.test(statement));
    expect(naming).toHaveLength(1);
  });

  it('are answered when the selection leaves out seq (the window is still cut by it)', async () => {
    const team = await seedTeam(app);
    const built = await buildEnvelope(app, team.apiKey, { recipients: [{ identifier: 'ada' }] });
    const answer = await graphqlClient(app, team.apiKey)('query($id: ID!) { envelope(id: $id) { auditEvents(first: 2) { type } } }', { id: built.envelopeId });
    expect(answer.data.envelope.auditEvents).toEqual([{ type: 'envelope.created' }, { type: 'document.added' }]);
  });

  it('never name another team’s actor, nor the system', async () => {
    const owner = await seedTeam(app);
    const other = await seedTeam(app);
    const labelled = await createApiKey(app.orm.em.fork(), { teamId: owner.teamId, label: 'Owner key' });
    const { actorName } = await import('../src/domain/audit/actor-names.ts');
    const { readerOf } = await import('../src/domain/read-model.ts');
    const asOther = { reader: readerOf(app.orm.em.fork()), caller: async () => ({ teamId: other.teamId, workspaceId: other.workspaceId, apiKeyId: other.keyId }) };
    expect(await actorName(asOther, { type: 'api_key', id: labelled.keyId })).toBeNull();
    expect(await actorName(asOther, { type: 'api_key', id: 'not-a-uuid' })).toBeNull();
    expect(await actorName(asOther, { type: 'system', id: null })).toBeNull();
  });
});
