import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Document } from '../src/domain/document/document.entity.ts';
import { Envelope } from '../src/domain/envelope/envelope.entity.ts';
import { FieldView } from '../src/domain/field/field-view.entity.ts';
import { Field } from '../src/domain/field/field.entity.ts';
import { Agent } from '../src/domain/recipient/agent.entity.ts';
import { Recipient } from '../src/domain/recipient/recipient.entity.ts';
import { Team } from '../src/domain/team/team.entity.ts';
import { graphqlClient, restClient, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';

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
    ];
    for (const [query, variables] of reads) {
      let result: any;
      const statements = await statementsFor(async () => (result = await graphql(query, variables)));
      expect(result.errors).toBeUndefined();
      expect(statements).toHaveLength(1);
    }
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
});
