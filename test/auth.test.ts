import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { revokeApiKey } from '../src/domain/team/team.service.ts';
import { firstErrorName, graphqlClient, restClient, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app.close();
});

const viewerQuery = '{ viewer { id name workspaceId createdAt } }';

describe('authentication on both faces', () => {
  it('accepts a good key: REST /me and GraphQL viewer name the same team', async () => {
    const team = await seedTeam(app);
    const rest = await restClient(app, team.apiKey).get('/me');
    expect(rest.status).toBe(200);
    expect(rest.body).toMatchObject({ version: '1', success: true, payload: { team: { id: team.teamId, workspaceId: team.workspaceId } } });
    const graphql = await graphqlClient(app, team.apiKey)(viewerQuery);
    expect(graphql.errors).toBeUndefined();
    expect(graphql.data.viewer).toMatchObject({ id: team.teamId, workspaceId: team.workspaceId });
  });

  it('refuses a request without a key with Auth.MissingApiKey (401)', async () => {
    const rest = await restClient(app, undefined).get('/me');
    expect(rest.status).toBe(401);
    expect(rest.body).toEqual({
      version: '1',
      success: false,
      error: { name: 'Auth.MissingApiKey', description: expect.any(String), context: { requestId: expect.any(String) } },
    });
    expect(rest.headers.get('x-request-id')).toBe(rest.body.error.context.requestId);
    const graphql = await graphqlClient(app, undefined)(viewerQuery);
    expect(graphql.status).toBe(401);
    expect(firstErrorName(graphql)).toBe('Auth.MissingApiKey');
    expect(graphql.data).toBeNull();
  });

  it('refuses an unknown or malformed key with Auth.InvalidApiKey (401)', async () => {
    for (const key of ['esk_notakeyatall', 'garbage', 'x'.repeat(500)]) {
      const rest = await restClient(app, key).get('/me');
      expect(rest.status).toBe(401);
      expect(rest.body.error.name).toBe('Auth.InvalidApiKey');
      const graphql = await graphqlClient(app, key)(viewerQuery);
      expect(firstErrorName(graphql)).toBe('Auth.InvalidApiKey');
    }
  });

  it('refuses a revoked key at once, on both faces, while the team’s other keys keep working', async () => {
    const team = await seedTeam(app);
    expect((await restClient(app, team.apiKey).get('/me')).status).toBe(200);
    await revokeApiKey(app.orm.em.fork(), { keyId: team.keyId });
    const rest = await restClient(app, team.apiKey).get('/me');
    expect(rest.status).toBe(401);
    expect(rest.body.error.name).toBe('Auth.InvalidApiKey');
    expect(firstErrorName(await graphqlClient(app, team.apiKey)(viewerQuery))).toBe('Auth.InvalidApiKey');
  });

  it('lets GraphiQL and introspection work without a key', async () => {
    const page = await fetch(`${app.url}/graphql`, { headers: { accept: 'text/html' } });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('GraphiQL');
    const introspection = await graphqlClient(app, undefined)('{ __schema { queryType { name } } }');
    expect(introspection.data.__schema.queryType.name).toBe('Query');
  });
});

describe('the REST error body', () => {
  it('answers an unknown path with Route.NotFound (404) and a wrong method with Route.MethodNotAllowed (405)', async () => {
    const team = await seedTeam(app);
    const client = restClient(app, team.apiKey);
    const missing = await client.get('/no-such-thing');
    expect(missing.status).toBe(404);
    expect(missing.body.error.name).toBe('Route.NotFound');
    const wrongMethod = await client.delete('/me');
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.body.error).toMatchObject({ name: 'Route.MethodNotAllowed', context: { allowed: ['GET'] } });
  });

  it('keeps a caller-supplied request id that looks like one', async () => {
    const response = await restClient(app, undefined).get('/me', { 'x-request-id': 'caller-req-12345' });
    expect(response.body.error.context.requestId).toBe('caller-req-12345');
    expect(response.headers.get('x-request-id')).toBe('caller-req-12345');
  });

  it('answers /healthz and /readyz', async () => {
    expect(await (await fetch(`${app.url}/healthz`)).json()).toEqual({ status: 'ok' });
    const ready = await fetch(`${app.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ready', database: 'ok', blobStore: 'ok' });
  });
});

describe('REST_ERRORS_HTTP_200', () => {
  it('answers errors with HTTP 200 and the very same body', async () => {
    const legacy = await startTestApp({ env: { REST_ERRORS_HTTP_200: 'true' } });
    try {
      const response = await restClient(legacy, undefined).get('/me', { 'x-request-id': 'legacy-req-0001' });
      const standard = await restClient(app, undefined).get('/me', { 'x-request-id': 'legacy-req-0001' });
      expect(response.status).toBe(200);
      expect(standard.status).toBe(401);
      expect(response.body).toEqual(standard.body);
    } finally {
      await legacy.close();
    }
  });
});
