import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { graphqlClient, restClient, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';

/**
 * The request context's costly parts (a unit of work, the request's child logger) are made only
 * by a request that uses them. A read answered by the read model with a cached key needs neither,
 * on either face and over a subscription; a write still gets its own unit of work.
 */
let app: TestApp;

beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app.close();
});

describe('the request context', () => {
  it('forks no entity manager and makes no child logger for reads; a write gets its unit of work', async () => {
    const team = await seedTeam(app);
    const graphql = graphqlClient(app, team.apiKey);
    const rest = restClient(app, team.apiKey);
    const envelopeId = (await rest.post('/envelopes', { name: 'Lazy' })).body.payload.envelopeId as string;
    // Warm: the key is verified once (that lookup uses the ORM) and cached.
    expect((await graphql('{ viewer { id } }')).errors).toBeUndefined();

    const fork = vi.spyOn(app.orm.em, 'fork');
    const child = vi.spyOn(app.dependencies.logger, 'child');
    try {
      const read = await graphql(`{ envelope(id: "${envelopeId}") { id name documents { id } } envelopes(first: 5) { nodes { id } } }`);
      expect(read.errors).toBeUndefined();
      expect(read.data.envelope.name).toBe('Lazy');
      expect((await rest.get(`/envelopes/${envelopeId}`)).status).toBe(200);
      expect(fork).not.toHaveBeenCalled();
      expect(child).not.toHaveBeenCalled();

      const renamed = await graphql(`mutation { updateEnvelope(id: "${envelopeId}", input: { name: "Renamed" }) { name } }`);
      expect(renamed.data.updateEnvelope.name).toBe('Renamed');
      expect(fork).toHaveBeenCalled();
    } finally {
      fork.mockRestore();
      child.mockRestore();
    }
  });
});
