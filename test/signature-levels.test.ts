/**
 * Issue 35: a recipient's signatureLevel and the team's trustServices, on both faces. A level above
 * simple needs a trust service offering it (Request.Invalid at the field, Recipient.TrustServiceUnavailable);
 * a trust service's client secret is stored encrypted and never answered.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { graphqlClient, restClient, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

describe('signature levels and trust services', () => {
  it('refuse a level no trust service offers, keep the secret unreadable, and carry the level on both faces', async () => {
    const team = await seedTeam(app);
    const rest = restClient(app, team.apiKey);
    const graphql = graphqlClient(app, team.apiKey);
    const envelopeId = (await rest.post('/envelopes', { name: 'Levels' })).body.payload.envelopeId;

    const refused = await rest.post(`/envelopes/${envelopeId}/recipients`, { recipient: { type: 'signer', identifier: 'a', roleName: 'A', signatureLevel: 'advanced' } });
    expect(refused.status).toBe(400);
    expect(refused.body.error.name).toBe('Request.Invalid');
    expect(refused.body.error.context.issues[0]).toMatchObject({ path: 'recipient.signatureLevel', message: expect.stringContaining('Recipient.TrustServiceUnavailable') });

    const missingSecret = await rest.patch('/team/settings', { trustServices: [{ id: 'tsp', name: 'TSP', baseUrl: 'https://tsp.example/csc/v2', clientId: 'c', levels: ['advanced'] }] });
    expect(missingSecret.status).toBe(400);
    expect(missingSecret.body.error.context.issues[0].path).toBe('trustServices[0].clientSecret');

    const saved = await rest.patch('/team/settings', {
      trustServices: [{ id: 'tsp', name: 'TSP', baseUrl: 'https://tsp.example/csc/v2/', clientId: 'c', clientSecret: 's3cret-value', levels: ['advanced'] }],
    });
    expect(saved.status, JSON.stringify(saved.body)).toBe(200);
    expect(saved.body.payload.settings.trustServices).toEqual([
      { id: 'tsp', name: 'TSP', baseUrl: 'https://tsp.example/csc/v2', clientId: 'c', clientSecretSet: true, levels: ['advanced'] },
    ]);
    const [row] = await app.orm.em.fork().execute<{ settings: string }[]>(`select settings::text as settings from team where id = ?`, [team.teamId]);
    expect(row!.settings).not.toContain('s3cret-value');
    const [trail] = await app.orm.em
      .fork()
      .execute<{ details: string }[]>(`select details::text as details from audit_event where stream_id = ? and type = 'team.settings_updated'`, [team.teamId]);
    expect(trail!.details).not.toContain('s3cret-value');

    // Renamed through GraphQL without the secret: the stored one stays.
    const renamed = await graphql(
      `mutation { updateTeamSettings(input: { trustServices: [{ id: "tsp", name: "Renamed", baseUrl: "https://tsp.example/csc/v2", clientId: "c", levels: ["advanced"] }] }) { trustServices { id name clientSecretSet levels } } }`,
    );
    expect(renamed.data.updateTeamSettings.trustServices).toEqual([{ id: 'tsp', name: 'Renamed', clientSecretSet: true, levels: ['advanced'] }]);

    const advanced = await rest.post(`/envelopes/${envelopeId}/recipients`, { recipient: { type: 'signer', identifier: 'a', roleName: 'A', signatureLevel: 'advanced' } });
    expect(advanced.status, JSON.stringify(advanced.body)).toBe(200);
    expect(advanced.body.payload.recipient).toMatchObject({ signatureLevel: 'advanced', trustServiceId: null });

    // Only a signer signs with its own certificate: a viewer asking for a level is refused by name, nothing added.
    const viewer = await rest.post(`/envelopes/${envelopeId}/recipients`, { recipient: { type: 'viewer', identifier: 'v', roleName: 'V', signatureLevel: 'advanced' } });
    expect(viewer.status).toBe(400);
    expect(viewer.body.error.context.issues[0]).toMatchObject({ path: 'recipient.signatureLevel', message: expect.stringContaining('Recipient.SignatureLevelNotSigner') });
    const listed = (await rest.get(`/envelopes/${envelopeId}?includeRecipients=true`)).body.payload.recipients.map((recipient: { identifier: string }) => recipient.identifier);
    expect(listed).toEqual(['a']);

    const qualified = await graphql(
      `mutation($envelopeId: ID!) { addRecipient(envelopeId: $envelopeId, input: { type: signer, identifier: "q", roleName: "Q", signatureLevel: qualified }) { id signatureLevel } }`,
      { envelopeId },
    );
    expect(qualified.errors?.[0]?.extensions?.code).toBe('Request.Invalid');
    const simple = await graphql(
      `mutation($envelopeId: ID!) { addRecipient(envelopeId: $envelopeId, input: { type: signer, identifier: "s", roleName: "S" }) { id signatureLevel trustServiceId } }`,
      {
        envelopeId,
      },
    );
    expect(simple.data.addRecipient).toMatchObject({ signatureLevel: 'simple', trustServiceId: null });

    // The level is stored per recipient and offered by the team: sending has no complaint about it
    // (the round trip itself: trust-signing.test.ts).
    const dry = await rest.put(`/envelopes/${envelopeId}/send?dryRun=true`, {});
    expect(dry.status, JSON.stringify(dry.body)).toBe(200);
    const issues = dry.body.payload.dryRun.problems.flatMap((problem: { context: { issues?: { path: string }[] } }) => problem.context.issues ?? []) as { path: string }[];
    expect(issues.length).toBeGreaterThan(0); // recipients without fields or agents: the dry run does list problems
    expect(issues.filter((issue) => issue.path.endsWith('.signatureLevel'))).toEqual([]);
  });
});
