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
  app = await startTestApp({ countStatements: true });
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
      id name status
      documents { id name pages { width height } }
      recipients { id identifier agents { id kind info { name } } }
      fields { id identifier views { documentId page location { x y } } }
      auditEvents { seq type }
    }
  }
}`;

async function statementsFor(run: () => Promise<unknown>): Promise<number> {
  app.resetStatements();
  await run();
  return app.statements.length;
}

describe('batched loading of nested data', () => {
  it('runs the same few statements for 50 envelopes with everything nested as for 1', async () => {
    const team = await seedTeam(app);
    await seedEnvelopes(team.teamId, 50);
    const graphql = graphqlClient(app, team.apiKey);

    let one: any;
    let fifty: any;
    const forOne = await statementsFor(async () => (one = await graphql(nestedQuery, { first: 1 })));
    const forFifty = await statementsFor(async () => (fifty = await graphql(nestedQuery, { first: 50 })));

    expect(one.errors).toBeUndefined();
    expect(fifty.errors).toBeUndefined();
    expect(fifty.data.envelopes.nodes).toHaveLength(50);
    for (const envelope of fifty.data.envelopes.nodes) {
      expect(envelope.documents).toHaveLength(1);
      expect(envelope.recipients).toHaveLength(2);
      expect(envelope.recipients[0].agents).toHaveLength(2);
      expect(envelope.fields).toHaveLength(2);
      expect(envelope.fields[0].views).toHaveLength(2);
    }
    // Authentication, the page, then one statement each for documents, recipients, agents,
    // fields, views and audit events: the count is measured, not zero, and does not grow with the page.
    expect(forOne).toBeGreaterThanOrEqual(8);
    expect(forFifty).toBe(forOne);
    expect(forFifty).toBeLessThanOrEqual(9);
  });

  it('keeps REST includes batched too: one envelope with everything costs a fixed number of statements', async () => {
    const team = await seedTeam(app);
    await seedEnvelopes(team.teamId, 1);
    const rest = restClient(app, team.apiKey);
    const envelopeId = (await rest.get('/envelopes')).body.payload.envelopes[0].id;
    const count = await statementsFor(() => rest.get(`/envelopes/${envelopeId}?includeDocuments=true&includeRecipients=true&includeFields=true`));
    expect(count).toBeGreaterThanOrEqual(6);
    expect(count).toBeLessThanOrEqual(7);
  });
});
