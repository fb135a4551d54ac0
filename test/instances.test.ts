import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { adoptSharedSecrets, checkSharedSecrets, SharedSecretMismatchError, sharedSecretsOf } from '../src/db/shared-secrets.ts';
import { restClient, runInstanceEnvironment, seedTeam, startTestApp, TEST_AUDIT_KEY, type TestApp, testSealCertificate } from './helpers/harness.ts';
import { type ServerProcess, startServerProcess } from './helpers/process.ts';

/*
 * What instances sharing one database must agree on (issue 20): the secrets (compared by
 * fingerprint at start) and the sandbox clock (one offset in the database).
 */
const onServer = inject('databaseKind') === 'server';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
  // The run's installation: its audit key and seal are the ones recorded for this database.
  await checkSharedSecrets(app.orm, sharedSecretsOf({ auditKey: Buffer.from(TEST_AUDIT_KEY), sealFingerprintSha256: testSealCertificate().fingerprintSha256 }));
});
afterAll(async () => {
  await app.close();
});

/** Runs `src/main.ts` on the run's database with `env` and waits for it to exit (start-up refused) or listen. */
function startExpectingRefusal(env: Record<string, string>, dataDir: string): Promise<{ code: number | null; stderr: string; stdout: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['src/main.ts'], {
      env: { ...process.env, DATABASE_URL: inject('databaseUrl'), PORT: '0', DATA_DIR: dataDir, LOG_LEVEL: 'info', OUTBOX_WORKER: 'false', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      // It started after all: stop it, the test reports what it printed.
      if (stdout.includes('"address":')) child.kill('SIGTERM');
    });
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('exit', (code) => resolve({ code, stderr, stdout }));
  });
}

describe('shared secrets', () => {
  it('are recorded by fingerprint on first use, accepted again when equal, and a different one is refused naming its variable', async () => {
    const seal = testSealCertificate().fingerprintSha256;
    const same = sharedSecretsOf({ auditKey: Buffer.from(TEST_AUDIT_KEY), sealFingerprintSha256: seal });
    await expect(checkSharedSecrets(app.orm, same)).resolves.toBeUndefined();

    const otherKey = sharedSecretsOf({ auditKey: Buffer.from('another-audit-key-0123456789abcdef01234567'), sealFingerprintSha256: seal });
    const refusal = await checkSharedSecrets(app.orm, otherKey).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(SharedSecretMismatchError);
    expect((refusal as Error).message).toMatch(/^AUDIT_HMAC_KEY: the audit chain key .* differs from the one the other instances of this database use/);

    const otherSeal = sharedSecretsOf({ auditKey: Buffer.from(TEST_AUDIT_KEY), sealFingerprintSha256: 'f'.repeat(64) });
    expect(((await checkSharedSecrets(app.orm, otherSeal).catch((error: unknown) => error)) as Error).message).toMatch(/^SEAL_P12: the sealing certificate differs/);

    // What is stored is a fingerprint, never the key itself.
    const rows = await app.orm.em.fork().getConnection().execute<{ name: string; fingerprint: string }[]>(`select name, fingerprint from shared_secret_fingerprint order by name`);
    expect(rows.map((row) => row.name)).toEqual(['audit-key', 'seal-certificate']);
    for (const row of rows) {
      expect(row.fingerprint).toMatch(/^[0-9a-f]{64}$/);
      expect(row.fingerprint).not.toContain(Buffer.from(TEST_AUDIT_KEY).toString('hex'));
    }
    // Adopting the same configuration changes nothing.
    expect(await adoptSharedSecrets(app.orm, same)).toEqual([
      { variable: 'AUDIT_HMAC_KEY', changed: false },
      { variable: 'SEAL_P12', changed: false },
    ]);
  });

  describe.skipIf(!onServer)('at start (a second process on the embedded database cannot open it)', () => {
    it('a second instance with a different AUDIT_HMAC_KEY stops with one line naming the variable', async () => {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'envelope-instance-'));
      try {
        const environment = runInstanceEnvironment(dataDir);
        const result = await startExpectingRefusal({ ...environment, AUDIT_HMAC_KEY: 'a-different-audit-key-0123456789abcdef0123' }, dataDir);
        expect(result.stdout).not.toContain('"address":');
        expect(result.code).toBe(1);
        const lines = result.stderr.trim().split('\n');
        expect(lines).toHaveLength(1);
        expect(lines[0]).toMatch(/^AUDIT_HMAC_KEY: .* differs from the one the other instances of this database use .* give every instance the same AUDIT_HMAC_KEY/);
        expect(result.stderr).not.toContain('a-different-audit-key');
      } finally {
        fs.rmSync(dataDir, { recursive: true, force: true });
      }
    });

    it('a second instance that generated its own seal (no shared SEAL_P12) stops naming SEAL_P12', async () => {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'envelope-instance-'));
      try {
        const result = await startExpectingRefusal({ AUDIT_HMAC_KEY: TEST_AUDIT_KEY }, dataDir);
        expect(result.code).toBe(1);
        expect(result.stderr.trim()).toMatch(/^SEAL_P12: the sealing certificate differs from the one the other instances of this database use/);
      } finally {
        fs.rmSync(dataDir, { recursive: true, force: true });
      }
    });
  });
});

describe.skipIf(!onServer)('the sandbox clock (SANDBOX_CLOCK=true) is one clock for every instance on the database', () => {
  const servers: ServerProcess[] = [];
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.stop()));
  });

  it('a move on one instance is what the next request on another sees, and a later start keeps it', async () => {
    const team = await seedTeam(app);
    const first = await startServerProcess(app, { SANDBOX_CLOCK: 'true' });
    servers.push(first);
    const second = await startServerProcess(app, { SANDBOX_CLOCK: 'true' });
    servers.push(second);
    const advance = async (server: ServerProcess, seconds: number) => {
      const answer = await restClient(server, team.apiKey).post('/sandbox/clock', { seconds });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      return Date.parse(answer.body.payload.now);
    };

    // Each answer's time is compared with the real time once it is back: a loaded machine may take
    // a while to answer, so each check allows a minute, which the moved hour still dwarfs (an
    // instance that did not take the move would be a second or two ahead, not an hour). The
    // order between instances is asserted on their own answers, which no delay moves.
    const hour = 3_600;
    const slackMs = 60_000;
    const movedOnFirst = await advance(first, hour);
    expect(movedOnFirst - Date.now()).toBeGreaterThan(hour * 1000 - slackMs);
    // The second instance answers its very next request on the moved clock, plus its own second.
    const movedOnSecond = await advance(second, 1);
    expect(movedOnSecond - movedOnFirst).toBeGreaterThanOrEqual(1_000);
    expect(movedOnSecond - Date.now()).toBeGreaterThan(hour * 1000 - slackMs);

    // An instance started afterwards (or restarted) tells the same time.
    const third = await startServerProcess(app, { SANDBOX_CLOCK: 'true' });
    servers.push(third);
    const movedOnThird = await advance(third, 1);
    expect(movedOnThird - movedOnSecond).toBeGreaterThanOrEqual(1_000);
    expect(movedOnThird - Date.now()).toBeGreaterThan(hour * 1000 - slackMs);
  });
});
