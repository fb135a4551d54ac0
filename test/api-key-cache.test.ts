import { execFile } from 'node:child_process';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ApiKey } from '../src/domain/team/api-key.entity.ts';
import { API_KEY_REVOKED_CHANNEL, ApiKeyCache, listenForApiKeyRevocations } from '../src/domain/team/api-key-cache.ts';
import { createApiKey, revokeApiKey } from '../src/domain/team/team.service.ts';
import { createLogger } from '../src/shared/logger.ts';
import { eventually } from './helpers/eventually.ts';
import { firstErrorName, graphqlClient, restClient, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { startServerProcess } from './helpers/process.ts';

const onServer = inject('databaseKind') === 'server';
const viewerQuery = '{ viewer { id } }';

/** Statements that read the api_key table: the key lookup (the pg_notify channel name does not match). */
function keyLookups(statements: string[]): string[] {
  return statements.filter((statement) => /\bapi_key\b/.test(statement));
}

// Revocations in these apps can only reach the cache in process: no listener, so a test passes
// only if revokeApiKey evicts by itself.
let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ countStatements: true, apiKeyCache: { listen: false } });
});
afterAll(async () => {
  await app.close();
});

describe('the API key cache', () => {
  it('looks a key up once: the next requests, on either face, run no statement to authenticate', async () => {
    const team = await seedTeam(app);
    const other = await seedTeam(app);
    app.resetStatements();
    const cold = await restClient(app, team.apiKey).get('/me');
    expect(cold.status).toBe(200);
    const coldStatements = [...app.statements];
    expect(keyLookups(coldStatements)).toHaveLength(1);

    app.resetStatements();
    const warm = await restClient(app, team.apiKey).get('/me');
    expect(warm.body).toEqual(cold.body);
    expect(keyLookups(app.statements)).toEqual([]);
    // What is left is the route's own read of the team (on the cold path the lookup had loaded it).
    expect(app.statements.length).toBeLessThanOrEqual(coldStatements.length);

    app.resetStatements();
    const graphql = await graphqlClient(app, team.apiKey)(viewerQuery);
    expect(graphql.data.viewer.id).toBe(team.teamId);
    expect(keyLookups(app.statements)).toEqual([]);

    // Each key keeps its own caller.
    expect((await restClient(app, other.apiKey).get('/me')).body.payload.team.id).toBe(other.teamId);
    expect((await restClient(app, team.apiKey).get('/me')).body.payload.team.id).toBe(team.teamId);
    expect((await graphqlClient(app, other.apiKey)(viewerQuery)).data.viewer.id).toBe(other.teamId);
  });

  it('never remembers an unknown key, and a key created later works at once', async () => {
    const team = await seedTeam(app);
    const size = app.dependencies.apiKeyCache!.size;
    app.resetStatements();
    for (let attempt = 0; attempt < 2; attempt += 1) {
      const refused = await restClient(app, 'esk_no-such-key-0123456789').get('/me');
      expect(refused.body.error.name).toBe('Auth.InvalidApiKey');
    }
    expect(keyLookups(app.statements)).toHaveLength(2);
    expect(app.dependencies.apiKeyCache!.size).toBe(size);
    const second = await createApiKey(app.orm.em.fork(), { teamId: team.teamId });
    expect((await restClient(app, second.apiKey).get('/me')).status).toBe(200);
  });

  it('refuses a revoked key on the very next request, on both faces, while the team’s other key stays cached', async () => {
    const team = await seedTeam(app);
    const spare = await createApiKey(app.orm.em.fork(), { teamId: team.teamId });
    for (const key of [team.apiKey, spare.apiKey]) {
      expect((await restClient(app, key).get('/me')).status).toBe(200);
      expect((await graphqlClient(app, key)(viewerQuery)).data.viewer.id).toBe(team.teamId);
    }
    app.resetStatements();
    expect((await restClient(app, team.apiKey).get('/me')).status).toBe(200);
    expect(keyLookups(app.statements)).toEqual([]);

    await revokeApiKey(app.orm.em.fork(), { keyId: team.keyId });
    const rest = await restClient(app, team.apiKey).get('/me');
    expect(rest.status).toBe(401);
    expect(rest.body.error.name).toBe('Auth.InvalidApiKey');
    const graphql = await graphqlClient(app, team.apiKey)(viewerQuery);
    expect(graphql.status).toBe(401);
    expect(firstErrorName(graphql)).toBe('Auth.InvalidApiKey');

    app.resetStatements();
    expect((await restClient(app, spare.apiKey).get('/me')).status).toBe(200);
    expect(keyLookups(app.statements)).toEqual([]);
  });

  it('does not remember a lookup that was under way when a key was evicted', () => {
    const cache = new ApiKeyCache();
    try {
      const caller = { teamId: 't', workspaceId: 'w', apiKeyId: 'k1' };
      // A lookup starts (and may read the key before the revocation commits); the revocation lands.
      const generation = cache.generation();
      cache.evictKey('k1');
      cache.remember('hash-1', caller, generation);
      expect(cache.get('hash-1')).toBeUndefined();
      cache.remember('hash-1', caller, cache.generation());
      expect(cache.get('hash-1')).toEqual(caller);
    } finally {
      cache.close();
    }
  });

  it('looks a key up again once its entry is older than the TTL', async () => {
    // The TTL is read on the service's clock, moved forward here: no sleeping, nothing a busy machine can age early.
    const shortLived = await startTestApp({ countStatements: true, apiKeyCache: { ttlMs: 5_000, listen: false } });
    try {
      const team = await seedTeam(shortLived);
      const me = () => restClient(shortLived, team.apiKey).get('/me');
      expect((await me()).status).toBe(200);
      // Revoked behind the cache's back (no eviction, no notification): only the TTL ends the entry.
      await shortLived.orm.em.fork().nativeUpdate(ApiKey, { id: team.keyId }, { revokedAt: new Date() });
      shortLived.dependencies.clock.advance(4);
      shortLived.resetStatements();
      expect((await me()).status).toBe(200);
      expect(keyLookups(shortLived.statements)).toEqual([]);
      shortLived.dependencies.clock.advance(2);
      shortLived.resetStatements();
      const expired = await me();
      expect(expired.status).toBe(401);
      expect(expired.body.error.name).toBe('Auth.InvalidApiKey');
      expect(keyLookups(shortLived.statements)).toHaveLength(1);
    } finally {
      await shortLived.close();
    }
  });
});

describe.skipIf(!onServer)('revocations from other processes (skipped on the embedded database: no other process can open it while a server runs)', () => {
  it('reach a running server through the revocation notification, not the cache lifetime', async () => {
    const team = await seedTeam(app);
    // A lifetime the CLI's start cannot outlast on a busy machine: only the notification can end the entry.
    const server = await startServerProcess(app, { API_KEY_CACHE_TTL_MS: '300000' });
    const { url, environment } = server;
    try {
      expect(server.output()).toContain('listening for API key revocations');
      const me = () => fetch(`${url}/api/v1/key/me`, { headers: { 'x-service-api-key': team.apiKey } });

      expect((await me()).status).toBe(200);
      // The server really answers from its cache: revoked behind its back, the key still works there.
      await app.orm.em.fork().nativeUpdate(ApiKey, { id: team.keyId }, { revokedAt: new Date() });
      expect((await me()).status).toBe(200);
      await app.orm.em.fork().nativeUpdate(ApiKey, { id: team.keyId }, { revokedAt: null });

      const revoked = await promisify(execFile)(process.execPath, ['src/cli/main.ts', 'key', 'revoke', '--key-id', team.keyId], {
        env: { ...environment, LOG_LEVEL: 'silent' },
      });
      const cliExitedAt = performance.now();
      expect(JSON.parse(revoked.stdout)).toMatchObject({ keyId: team.keyId });

      // Only the notification can end the entry before its 5-minute lifetime; how soon it arrives
      // is a matter of the machine's load, so it is waited for (up to a minute), not timed.
      let response = await me();
      while (response.status === 200 && performance.now() - cliExitedAt < 60_000) {
        await sleep(10);
        response = await me();
      }
      expect(response.status).toBe(401);
      expect(((await response.json()) as any).error.name).toBe('Auth.InvalidApiKey');
    } finally {
      await server.stop();
    }
  });

  it('turn the cache off while the listener is disconnected, and back on once it listens again', async () => {
    // A proxy between the listener and PostgreSQL, so the test can cut the connection.
    const target = new URL(inject('databaseUrl'));
    const sockets = new Set<net.Socket>();
    const proxy = net.createServer((client) => {
      const upstream = net.connect({ host: target.hostname, port: Number(target.port || 5432) });
      for (const socket of [client, upstream]) {
        sockets.add(socket);
        socket.on('error', () => {});
        socket.on('close', () => sockets.delete(socket));
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const proxied = new URL(target);
    proxied.host = `127.0.0.1:${(proxy.address() as net.AddressInfo).port}`;

    const cache = new ApiKeyCache();
    const listener = await listenForApiKeyRevocations({
      connectionString: proxied.toString(),
      cache,
      logger: createLogger('silent'),
      retryMs: { first: 50, max: 200 },
    });
    const caller = { teamId: 't', workspaceId: 'w', apiKeyId: '00000000-0000-4000-8000-00000000000a' };
    const notifier = new pg.Client({ connectionString: inject('databaseUrl') });
    await notifier.connect();
    try {
      cache.remember('hash-a', caller, cache.generation());
      expect(cache.get('hash-a')).toEqual(caller);

      for (const socket of sockets) socket.destroy();
      await waitFor(() => cache.get('hash-a') === undefined);
      cache.remember('hash-a', caller, cache.generation());
      expect(cache.get('hash-a')).toBeUndefined();

      // Reconnected: remembering works again, and a notification evicts.
      await waitFor(() => {
        cache.remember('hash-a', caller, cache.generation());
        return cache.get('hash-a') !== undefined;
      });
      await notifier.query('select pg_notify($1, $2)', [API_KEY_REVOKED_CHANNEL, caller.apiKeyId]);
      await waitFor(() => cache.get('hash-a') === undefined);
    } finally {
      await notifier.end();
      await listener.close();
      cache.close();
      proxy.close();
      for (const socket of sockets) socket.destroy();
    }
  });
});

/** A notification's effect on the cache: bounds a hang, not a latency (test/helpers/eventually.ts). */
async function waitFor(condition: () => boolean): Promise<void> {
  await eventually(condition, { intervalMs: 10, what: 'the cache change' });
}
