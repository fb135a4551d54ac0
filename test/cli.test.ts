import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { AuditEvent } from '../src/domain/audit/audit-event.entity.ts';
import { restClient, startTestApp, type TestApp } from './helpers/harness.ts';

const run = promisify(execFile);

async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, ['src/cli/main.ts', ...args], {
      // The same audit key as the test app, so the CLI can verify the chains the app wrote.
      env: {
        ...process.env,
        DATABASE_URL: inject('databaseUrl'),
        // The embedded test database is reached by URL here, and PGlite shares prepared statements between connections.
        DATABASE_PREPARED_STATEMENTS: inject('databaseKind') === 'embedded' ? 'false' : 'true',
        LOG_LEVEL: 'silent',
        AUDIT_HMAC_KEY: app.dependencies.auditKey.toString('utf8'),
      },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failure = error as { code: number; stdout: string; stderr: string };
    return { code: failure.code, stdout: failure.stdout, stderr: failure.stderr };
  }
}

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app.close();
});

describe('the command line', () => {
  it('creates a team whose key works, adds a second key, and revokes the first', async () => {
    const created = await cli('team', 'create', '--name', 'Acme Legal');
    expect(created.code).toBe(0);
    const team = JSON.parse(created.stdout);
    expect(team).toEqual({ workspaceId: expect.any(String), teamId: expect.any(String), keyId: expect.any(String), apiKey: expect.stringMatching(/^esk_/) });
    const me = await restClient(app, team.apiKey).get('/me');
    expect(me.body.payload.team).toMatchObject({ id: team.teamId, name: 'Acme Legal', workspaceId: team.workspaceId });

    const second = JSON.parse((await cli('key', 'create', '--team', team.teamId, '--label', 'ci')).stdout);
    expect(second).toEqual({ keyId: expect.any(String), teamId: team.teamId, apiKey: expect.stringMatching(/^esk_/) });
    expect(second.apiKey).not.toBe(team.apiKey);

    const revoked = await cli('key', 'revoke', '--key-id', team.keyId);
    expect(revoked.code).toBe(0);
    expect(JSON.parse(revoked.stdout)).toEqual({ keyId: team.keyId, revokedAt: expect.any(String) });
    expect((await restClient(app, team.apiKey).get('/me')).body.error.name).toBe('Auth.InvalidApiKey');
    expect((await restClient(app, second.apiKey).get('/me')).status).toBe(200);
  });

  it('adds a team to an existing workspace', async () => {
    const first = JSON.parse((await cli('team', 'create', '--name', 'First')).stdout);
    const second = JSON.parse((await cli('team', 'create', '--name', 'Second', '--workspace', first.workspaceId)).stdout);
    expect(second.workspaceId).toBe(first.workspaceId);
    expect(second.teamId).not.toBe(first.teamId);
  });

  it('fails with one line and exit code 1 on bad input', async () => {
    // None of these changes anything, so they run side by side (each is a process start of seconds).
    const [unknownTeam, unknownWorkspace, unknownKey, missingName, nonsense] = await Promise.all([
      cli('key', 'create', '--team', '00000000-0000-4000-8000-000000000000'),
      cli('team', 'create', '--name', 'X', '--workspace', 'nope'),
      cli('key', 'revoke', '--key-id', '00000000-0000-4000-8000-000000000000'),
      cli('team', 'create'),
      cli('frobnicate'),
    ]);
    expect(unknownTeam.code).toBe(1);
    expect(unknownTeam.stderr.trim()).toBe('Team.NotFound: No team has this id.');
    expect(unknownWorkspace.code).toBe(1);
    expect(unknownWorkspace.stderr).toContain('Workspace.NotFound');
    expect(unknownKey.stderr).toContain('ApiKey.NotFound');
    expect(missingName.code).toBe(1);
    expect(missingName.stderr).toContain('--name');
    expect(nonsense.code).toBe(1);
    expect(nonsense.stderr).toContain('usage:');
  });

  it('verifies an envelope’s audit chain, exiting 2 with the broken link when it was tampered with', async () => {
    const team = JSON.parse((await cli('team', 'create', '--name', 'Audited')).stdout);
    const envelopeId = (await restClient(app, team.apiKey).post('/envelopes', { name: 'Audited' })).body.payload.envelopeId;
    const valid = await cli('audit', 'verify', '--envelope', envelopeId);
    expect(valid.code).toBe(0);
    expect(JSON.parse(valid.stdout)).toEqual({ envelopeId, valid: true, length: 1, headHash: expect.stringMatching(/^[0-9a-f]{64}$/) });
    await app.orm.em.fork().nativeUpdate(AuditEvent, { streamId: envelopeId, seq: 1 }, { type: 'envelope.rewritten' });
    const broken = await cli('audit', 'verify', '--envelope', envelopeId);
    expect(broken.code, broken.stderr).toBe(2);
    expect(JSON.parse(broken.stdout)).toEqual({ envelopeId, valid: false, brokenAtSeq: 1, reason: 'content does not match its hash' });
    expect((await cli('audit', 'verify', '--envelope', 'nope')).code).toBe(1);
    const unknown = await cli('audit', 'verify', '--envelope', '00000000-0000-4000-8000-000000000000');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr.trim()).toBe('Envelope.NotFound: No audit events exist for this envelope id.');
  });
});

describe('the command line beside a server on the embedded database', () => {
  // This server makes its own embedded database whatever the suite runs on, so one run of it is
  // enough: with the embedded pass (CI's second pass, and a clone without PostgreSQL), not twice.
  it.skipIf(inject('databaseKind') === 'server')(
    'creates a team and a key while the server holds the database, and the key works against that server at once',
    { timeout: 120_000 },
    async () => {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'envelope-cli-beside-'));
      const port = 5200 + Math.floor(Math.random() * 600);
      // DATABASE_URL empty: the embedded PostgreSQL under DATA_DIR, as on a fresh clone.
      const env = { ...process.env, DATABASE_URL: '', DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: 'warn', AUDIT_HMAC_KEY: '' };
      const server = spawn(process.execPath, ['src/main.ts'], { env, stdio: ['ignore', 'ignore', 'inherit'] });
      try {
        const url = `http://127.0.0.1:${port}`;
        await expect.poll(async () => (await fetch(`${url}/readyz`).catch(() => undefined))?.status, { timeout: 60_000, interval: 250 }).toBe(200);

        const runBeside = async (...args: string[]) => {
          const { stdout } = await run(process.execPath, ['src/cli/main.ts', ...args], { env });
          return JSON.parse(stdout);
        };
        const team = await runBeside('team', 'create', '--name', 'Beside the server');
        const key = await runBeside('key', 'create', '--team', team.teamId, '--label', 'second');
        for (const apiKey of [team.apiKey, key.apiKey]) {
          const me = await fetch(`${url}/api/v1/key/me`, { headers: { 'x-service-api-key': apiKey } });
          expect(me.status).toBe(200);
          expect(((await me.json()) as any).payload.team).toMatchObject({ id: team.teamId, name: 'Beside the server' });
        }
        // The server kept serving throughout, and still does.
        expect((await fetch(`${url}/healthz`)).status).toBe(200);
      } finally {
        // A server that already exited (it failed to start) sends no second 'exit': not waited for.
        if (server.exitCode === null && server.signalCode === null) {
          const exited = new Promise((resolve) => server.once('exit', resolve));
          server.kill('SIGTERM');
          await exited;
        }
        fs.rmSync(dataDir, { recursive: true, force: true });
      }
    },
  );

  it('says plainly why when the process holding the database does not share it', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'envelope-cli-held-'));
    // A live process (this one, seen from the child) holds the lock but publishes no address.
    fs.mkdirSync(path.join(dataDir, 'postgres'), { recursive: true });
    fs.writeFileSync(path.join(dataDir, 'postgres', 'embedded.pid'), String(process.pid));
    try {
      const failure = await run(process.execPath, ['src/cli/main.ts', 'team', 'create', '--name', 'X'], { env: { ...process.env, DATABASE_URL: '', DATA_DIR: dataDir } }).catch(
        (error) => error,
      );
      expect(failure.code).toBe(1);
      expect(failure.stderr).toContain(`is in use by process ${process.pid}`);
      expect(failure.stderr).toContain('DATABASE_URL');
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
