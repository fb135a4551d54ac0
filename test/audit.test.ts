import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyAuditChain } from '../src/domain/audit/audit.service.ts';
import { AuditEvent } from '../src/domain/audit/audit-event.entity.ts';
import { unknownId } from './helpers/envelopes.ts';
import { firstErrorName, graphqlClient, restClient, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app.close();
});

describe('the audit trail of authoring', () => {
  it('records every change with actor, IP and user agent, readable on both faces', async () => {
    const team = await seedTeam(app);
    const rest = restClient(app, team.apiKey);
    const envelopeId = (await rest.post('/envelopes', { name: 'Audited' }, { 'user-agent': 'crm-sync/2.1' })).body.payload.envelopeId;
    await rest.patch(`/envelopes/${envelopeId}`, { name: 'Audited 2' });
    const recipient = await rest.post(`/envelopes/${envelopeId}/recipients`, { recipient: { type: 'viewer', identifier: 'cc', roleName: 'CC' } });
    await rest.delete(`/envelopes/${envelopeId}/recipients/${recipient.body.payload.recipient.id}`);

    const events = (await rest.get(`/envelopes/${envelopeId}/audit`)).body.payload.events;
    expect(events.map((event: { type: string; seq: number }) => [event.seq, event.type])).toEqual([
      [1, 'envelope.created'],
      [2, 'envelope.updated'],
      [3, 'recipient.added'],
      [4, 'recipient.removed'],
    ]);
    expect(events[0]).toMatchObject({ actor: { type: 'api_key', id: team.keyId }, userAgent: 'crm-sync/2.1', prevHash: '0'.repeat(64) });
    expect(events[0].ip).toMatch(/127\.0\.0\.1/);
    expect(events[1].details).toEqual({ changed: ['name'] });
    expect(events[1].prevHash).toBe(events[0].hash);

    const graphql = await graphqlClient(app, team.apiKey)('query($id: ID!) { envelope(id: $id) { auditEvents { seq type actor { type id } hash prevHash } } }', {
      id: envelopeId,
    });
    expect(graphql.data.envelope.auditEvents.map((event: { type: string }) => event.type)).toEqual(events.map((event: { type: string }) => event.type));
    expect(graphql.data.envelope.auditEvents[3].hash).toBe(events[3].hash);
    expect((await rest.get(`/envelopes/${unknownId}/audit`)).body.error.name).toBe('Envelope.NotFound');
  });

  it('keeps the chain gapless and valid when many changes to one envelope race', async () => {
    const team = await seedTeam(app);
    const rest = restClient(app, team.apiKey);
    const envelopeId = (await rest.post('/envelopes', { name: 'Busy' })).body.payload.envelopeId;
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, index) =>
        rest.post(`/envelopes/${envelopeId}/recipients`, { recipient: { type: 'signer', identifier: `signer-${index}`, roleName: `Signer ${index}` } }),
      ),
    );
    expect(answers.map((answer) => answer.status)).toEqual(Array(12).fill(200));
    const events = (await rest.get(`/envelopes/${envelopeId}/audit`)).body.payload.events;
    expect(events.map((event: { seq: number }) => event.seq)).toEqual(Array.from({ length: 13 }, (_, index) => index + 1));
    const verification = await verifyAuditChain(app.orm.em.fork(), app.dependencies.auditKey, envelopeId);
    expect(verification).toEqual({ valid: true, length: 13, headHash: events[12].hash });
    // The envelope lock serialises the adds, so each saw the ones before it: ten distinct colours.
    const recipients = (await rest.get(`/envelopes/${envelopeId}/recipients`)).body.payload.recipients;
    expect(new Set(recipients.map((recipient: { color: string }) => recipient.color)).size).toBe(10);
  });

  it('reports the first broken link when a stored event is rewritten', async () => {
    const team = await seedTeam(app);
    const rest = restClient(app, team.apiKey);
    const envelopeId = (await rest.post('/envelopes', { name: 'Tampered' })).body.payload.envelopeId;
    await rest.patch(`/envelopes/${envelopeId}`, { name: 'Step 2' });
    await rest.patch(`/envelopes/${envelopeId}`, { name: 'Step 3' });
    const em = app.orm.em.fork();
    expect((await verifyAuditChain(em, app.dependencies.auditKey, envelopeId)).valid).toBe(true);
    await em.nativeUpdate(AuditEvent, { streamId: envelopeId, seq: 2 }, { details: { changed: ['nothing to see'] } });
    expect(await verifyAuditChain(app.orm.em.fork(), app.dependencies.auditKey, envelopeId)).toEqual({
      valid: false,
      brokenAtSeq: 2,
      reason: 'content does not match its hash',
    });
    await em.nativeDelete(AuditEvent, { streamId: envelopeId, seq: 1 });
    expect(await verifyAuditChain(app.orm.em.fork(), app.dependencies.auditKey, envelopeId)).toMatchObject({ valid: false, brokenAtSeq: 1 });
  });

  it('writes no audit event for a refused change', async () => {
    const team = await seedTeam(app);
    const rest = restClient(app, team.apiKey);
    const envelopeId = (await rest.post('/envelopes', { name: 'Quiet' })).body.payload.envelopeId;
    await rest.patch(`/envelopes/${envelopeId}`, { name: 'x' });
    await rest.post(`/envelopes/${envelopeId}/recipients`, { recipient: { type: 'in_person_signer', identifier: 'p', roleName: 'P' } });
    const graphql = await graphqlClient(app, team.apiKey)('mutation($id: ID!) { updateEnvelope(id: $id, input: { expirationPeriodDays: 0 }) { id } }', { id: envelopeId });
    expect(firstErrorName(graphql)).toBe('Request.Invalid');
    const events = (await rest.get(`/envelopes/${envelopeId}/audit`)).body.payload.events;
    expect(events.map((event: { type: string }) => event.type)).toEqual(['envelope.created']);
  });
});

describe('the client address in the audit log', () => {
  it('ignores X-Forwarded-For unless proxies are trusted, then takes the address the nearest trusted proxy saw', async () => {
    const team = await seedTeam(app);
    const forged = { 'x-forwarded-for': '203.0.113.7' };
    const direct = (await restClient(app, team.apiKey).post('/envelopes', { name: 'Direct' }, forged)).body.payload.envelopeId;
    const directEvents = (await restClient(app, team.apiKey).get(`/envelopes/${direct}/audit`)).body.payload.events;
    expect(directEvents[0].ip).toBe('127.0.0.1');

    const proxied = await startTestApp({ env: { TRUST_PROXY_HOPS: '1' } });
    try {
      const proxiedTeam = await seedTeam(proxied);
      const rest = restClient(proxied, proxiedTeam.apiKey);
      // The client wrote "198.51.100.1" itself; the one trusted proxy appended the address it saw.
      const id = (await rest.post('/envelopes', { name: 'Proxied' }, { 'x-forwarded-for': '198.51.100.1, 203.0.113.7' })).body.payload.envelopeId;
      expect((await rest.get(`/envelopes/${id}/audit`)).body.payload.events[0].ip).toBe('203.0.113.7');
    } finally {
      await proxied.close();
    }
  });
});

describe('verifying an envelope’s audit chain', () => {
  it('reports a valid chain and then the first broken link, identically on both faces', async () => {
    const team = await seedTeam(app);
    const rest = restClient(app, team.apiKey);
    const graphql = graphqlClient(app, team.apiKey);
    const envelopeId = (await rest.post('/envelopes', { name: 'Verified' })).body.payload.envelopeId;
    await rest.patch(`/envelopes/${envelopeId}`, { name: 'Verified 2' });
    const query = 'query($id: ID!) { verifyAuditChain(envelopeId: $id) { valid length headHash brokenAtSeq reason } }';

    const valid = (await rest.get(`/envelopes/${envelopeId}/audit/verify`)).body.payload.verification;
    const head = (await rest.get(`/envelopes/${envelopeId}/audit`)).body.payload.events[1].hash;
    expect(valid).toEqual({ valid: true, length: 2, headHash: head });
    expect((await graphql(query, { id: envelopeId })).data.verifyAuditChain).toEqual({ valid: true, length: 2, headHash: head, brokenAtSeq: null, reason: null });

    await app.orm.em.fork().nativeUpdate(AuditEvent, { streamId: envelopeId, seq: 1 }, { ip: '6.6.6.6' });
    const broken = (await rest.get(`/envelopes/${envelopeId}/audit/verify`)).body.payload.verification;
    expect(broken).toEqual({ valid: false, brokenAtSeq: 1, reason: 'content does not match its hash' });
    expect((await graphql(query, { id: envelopeId })).data.verifyAuditChain).toMatchObject({ valid: false, brokenAtSeq: 1 });

    const stranger = await seedTeam(app);
    expect((await restClient(app, stranger.apiKey).get(`/envelopes/${envelopeId}/audit/verify`)).body.error.name).toBe('Envelope.NotFound');
    expect(firstErrorName(await graphqlClient(app, stranger.apiKey)(query, { id: envelopeId }))).toBe('Envelope.NotFound');
  });
});

describe('empty patches', () => {
  it('answer the current state (still draft-checked) and record no audit event', async () => {
    const team = await seedTeam(app);
    const rest = restClient(app, team.apiKey);
    const envelopeId = (await rest.post('/envelopes', { name: 'Untouched' })).body.payload.envelopeId;
    const recipientId = (await rest.post(`/envelopes/${envelopeId}/recipients`, { recipient: { type: 'viewer', identifier: 'cc', roleName: 'CC' } })).body.payload.recipient.id;
    expect((await rest.patch(`/envelopes/${envelopeId}`, {})).body.payload.envelope.name).toBe('Untouched');
    expect((await rest.patch(`/envelopes/${envelopeId}/recipients/${recipientId}`, { recipient: {} })).body.payload.recipient.roleName).toBe('CC');
    const events = (await rest.get(`/envelopes/${envelopeId}/audit`)).body.payload.events;
    expect(events.map((event: { type: string }) => event.type)).toEqual(['envelope.created', 'recipient.added']);
  });
});

describe('pages of the audit trail', () => {
  async function envelopeWithEvents(apiKey: string, updates: number) {
    const rest = restClient(app, apiKey);
    const envelopeId = (await rest.post('/envelopes', { name: 'Long trail' })).body.payload.envelopeId;
    for (let index = 0; index < updates; index += 1) await rest.patch(`/envelopes/${envelopeId}`, { context: { step: index } });
    return envelopeId as string;
  }

  it('pages through REST with limit and afterSeq, ending with nextAfterSeq null; bad windows are Request.Invalid', async () => {
    const team = await seedTeam(app);
    const rest = restClient(app, team.apiKey);
    const envelopeId = await envelopeWithEvents(team.apiKey, 4); // 5 events
    const seen: number[] = [];
    let afterSeq: number | null = 0;
    while (afterSeq !== null) {
      const page: { events: { seq: number }[]; nextAfterSeq: number | null } = (await rest.get(`/envelopes/${envelopeId}/audit?limit=2&afterSeq=${afterSeq}`)).body.payload;
      expect(page.events.length).toBeLessThanOrEqual(2);
      seen.push(...page.events.map((event: { seq: number }) => event.seq));
      afterSeq = page.nextAfterSeq;
    }
    expect(seen).toEqual([1, 2, 3, 4, 5]);
    expect((await rest.get(`/envelopes/${envelopeId}/audit`)).body.payload).toMatchObject({ nextAfterSeq: null });
    for (const query of ['limit=0', 'limit=1001', 'afterSeq=-1', 'limit=two']) {
      const refused = await rest.get(`/envelopes/${envelopeId}/audit?${query}`);
      expect(refused.status, query).toBe(400);
      expect(refused.body.error.name).toBe('Request.Invalid');
    }
  });

  it('takes first and afterSeq on GraphQL, also when aliases ask for different windows in one query', async () => {
    const team = await seedTeam(app);
    const envelopeId = await envelopeWithEvents(team.apiKey, 5); // 6 events
    const result = await graphqlClient(app, team.apiKey)(
      `query($id: ID!, $after: Int) { envelope(id: $id) {
        head: auditEvents(first: 2) { seq }
        tail: auditEvents(afterSeq: $after) { seq }
        middle: auditEvents(first: 2, afterSeq: 2) { seq } } }`,
      { id: envelopeId, after: 4 },
    );
    expect(result.errors).toBeUndefined();
    expect(result.data.envelope.head.map((event: { seq: number }) => event.seq)).toEqual([1, 2]);
    expect(result.data.envelope.tail.map((event: { seq: number }) => event.seq)).toEqual([5, 6]);
    expect(result.data.envelope.middle.map((event: { seq: number }) => event.seq)).toEqual([3, 4]);
    const page = await graphqlClient(app, team.apiKey)('{ envelopes(first: 1) { nodes { auditEvents(first: 3, afterSeq: 1) { seq } } } }');
    expect(page.data.envelopes.nodes[0].auditEvents.map((event: { seq: number }) => event.seq)).toEqual([2, 3, 4]);
    const refused = await graphqlClient(app, team.apiKey)('query($id: ID!) { envelope(id: $id) { auditEvents(first: 5000) { seq } } }', { id: envelopeId });
    expect(firstErrorName(refused)).toBe('Request.Invalid');
  });
});
