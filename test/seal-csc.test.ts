import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { openSeal, type SealCertificate, SealCertificateError } from '../src/domain/artefact/seal-certificate.ts';
import { type CscTestProvider, startCscProvider } from './helpers/csc-provider.ts';
import { startTestApp, type TestApp } from './helpers/harness.ts';
import { pdfsig } from './helpers/pdf-tools.ts';
import { downloadSealed, finalizedEnvelope, retryNow, sealJob, sealWorker, startServer } from './helpers/seal-jobs.ts';

/*
 * The seal's key at a trust service provider (issue 35): SEAL_SIGNER=csc against the CSC API v2
 * test provider (test/helpers/csc-provider.ts), a real HTTP server with its own CA. The service
 * authenticates with client credentials, reads its chain from credentials/info, authorizes each
 * signature with its PIN (credentials/authorize) and has the hash signed by signatures/signHash;
 * the key never leaves the provider.
 */

const run = promisify(execFile);
let provider: CscTestProvider;
let credential: { credentialId: string; certificatePem: string };
let seal: SealCertificate;
let app: TestApp;
let directory: string;
const PIN = '50417';

function cscEnv(overrides: Record<string, string> = {}): Record<string, string> {
  return {
    SEAL_SIGNER: 'csc',
    SEAL_CSC_URL: provider.baseUrl,
    SEAL_CSC_CLIENT_ID: provider.clientId,
    SEAL_CSC_CLIENT_SECRET: provider.clientSecret,
    SEAL_CSC_CREDENTIAL_ID: credential.credentialId,
    SEAL_CSC_PIN: PIN,
    ...overrides,
  };
}

beforeAll(async () => {
  provider = await startCscProvider();
  credential = provider.addSeal({ name: 'Envelope Service Remote Seal', pin: PIN, level: 'qualified' });
  directory = fs.mkdtempSync(path.join(os.tmpdir(), 'seal-csc-'));
  seal = await openSeal(loadConfig({ DATA_DIR: directory, ...cscEnv() }));
  app = await startTestApp({ seal });
});
afterAll(async () => {
  await app?.close();
  await seal?.signer.close();
  await provider?.close();
  if (directory !== undefined) fs.rmSync(directory, { recursive: true, force: true });
});

async function openFails(env: Record<string, string>): Promise<string> {
  let caught: unknown;
  try {
    const opened = await openSeal(loadConfig({ DATA_DIR: directory, ...env }));
    await opened.signer.close();
  } catch (error) {
    caught = error;
  }
  expect(caught, JSON.stringify(env)).toBeInstanceOf(SealCertificateError);
  const message = (caught as Error).message;
  expect(message).not.toContain('\n');
  return message;
}

describe('the seal with its key at a CSC v2 trust service provider (SEAL_SIGNER=csc)', () => {
  it('seals a finalized envelope through signHash: pdfsig validates the whole file and names the seal certificate; the key never reached the process', async () => {
    expect(seal.signer.kind).toBe('csc');
    expect(seal.keyPkcs8).toBeUndefined();
    // The chain came from credentials/info: the seal's certificate and the provider's CA.
    expect(seal.certificates).toHaveLength(2);
    expect(seal.subject).toContain('CN=Envelope Service Remote Seal');
    const signedBefore = provider.signedCount(credential.credentialId);

    const { team, built } = await finalizedEnvelope(app);
    expect(await sealWorker(app, team.teamId, []).drain()).toBe(1);
    expect(await sealJob(app, built.envelopeId)).toMatchObject({ processed_at: expect.anything(), last_error: null });
    const file = await downloadSealed(app, directory, team.apiKey, built.envelopeId, built.documentId, 'csc-sealed.pdf');
    const report = pdfsig(file);
    expect(report).toContain('Signature is Valid.');
    expect(report).toContain('Total document signed');
    expect(report).toMatch(/Signer Certificate Common Name: Envelope Service Remote Seal/);
    // Each seal is one hash signed by the provider.
    expect(provider.signedCount(credential.credentialId)).toBeGreaterThan(signedBefore);
  });

  it('refuses to start with one line naming what is wrong: an unreachable provider, a bad client secret, an unknown credential, a wrong PIN, a missing PIN', async () => {
    // Through src/main.ts itself: the line on stderr, the exit code.
    const wrongPin = await startServer(directory, cscEnv({ SEAL_CSC_PIN: '00000' }));
    expect(wrongPin.code).toBe(1);
    expect(wrongPin.stderr.trim()).toMatch(/^SEAL_CSC_PIN: the provider refused to authorize credential "[\w-]+" \(access_denied: Invalid PIN\)$/);
    expect(wrongPin.stderr).not.toContain(provider.clientSecret);

    expect(await openFails(cscEnv({ SEAL_CSC_URL: 'http://127.0.0.1:9/csc/v2' }))).toMatch(
      /^SEAL_CSC_URL: the provider at http:\/\/127\.0\.0\.1:9\/csc\/v2 could not be reached \(.*unreachable/,
    );
    const badSecret = await openFails(cscEnv({ SEAL_CSC_CLIENT_SECRET: 'not-the-secret' }));
    expect(badSecret).toMatch(/^SEAL_CSC_CLIENT_SECRET: the provider refused the client credentials of "[\w-]+" \(invalid_client: /);
    expect(badSecret).not.toContain('not-the-secret');
    expect(await openFails(cscEnv({ SEAL_CSC_CREDENTIAL_ID: 'no-such-credential' }))).toMatch(
      /^SEAL_CSC_CREDENTIAL_ID: the provider has no credential "no-such-credential" for client "[\w-]+" \(invalid_request: Invalid parameter credentialID\)$/,
    );
    const { SEAL_CSC_PIN: _pin, ...withoutPin } = cscEnv();
    expect(await openFails(withoutPin)).toMatch(/^SEAL_CSC_PIN: credential "[\w-]+" needs explicit authorization \(PIN\); set SEAL_CSC_PIN or SEAL_CSC_PIN_FILE$/);
    expect(await openFails({ ...withoutPin, SEAL_CSC_PIN_FILE: path.join(directory, 'absent-pin') })).toMatch(/^SEAL_CSC_PIN_FILE: cannot read .*ENOENT/);
    // A person's credential (OAuth consent at each use) cannot seal unattended.
    const person = provider.addUser({ name: 'Somebody', email: 'somebody@example.com', pin: '1234', level: 'advanced' });
    expect(await openFails(cscEnv({ SEAL_CSC_CREDENTIAL_ID: person.credentialId }))).toMatch(/^SEAL_CSC_CREDENTIAL_ID: the provider has no credential/);
    // A disabled key is named before any seal is attempted.
    const disabled = provider.addSeal({ name: 'Disabled Seal' });
    provider.disable(disabled.credentialId);
    const { SEAL_CSC_PIN: _unused, ...implicitEnv } = cscEnv({ SEAL_CSC_CREDENTIAL_ID: disabled.credentialId });
    expect(await openFails(implicitEnv)).toMatch(/^SEAL_CSC_CREDENTIAL_ID: credential "[\w-]+" has its key disabled at the provider$/);

    // The secret from a file works as well as from the environment.
    const secretFile = path.join(directory, 'client-secret');
    fs.writeFileSync(secretFile, `${provider.clientSecret}\n`, { mode: 0o600 });
    const { SEAL_CSC_CLIENT_SECRET: _secret, ...withoutSecret } = cscEnv();
    const fromFile = await openSeal(loadConfig({ DATA_DIR: directory, ...withoutSecret, SEAL_CSC_CLIENT_SECRET_FILE: secretFile }));
    expect(fromFile.fingerprintSha256).toBe(seal.fingerprintSha256);
    await fromFile.signer.close();
  });

  it('configuration names what a CSC seal is missing, and refuses CSC variables for another signer', () => {
    expect(() => loadConfig({ SEAL_SIGNER: 'csc' })).toThrow(/^Invalid configuration: SEAL_CSC_URL must name/);
    const { SEAL_CSC_CREDENTIAL_ID: _id, ...withoutCredential } = cscEnv();
    expect(() => loadConfig(withoutCredential)).toThrow(/^Invalid configuration: SEAL_CSC_CREDENTIAL_ID must name/);
    expect(() => loadConfig(cscEnv({ SEAL_CSC_CLIENT_SECRET_FILE: '/x' }))).toThrow(/^Invalid configuration: SEAL_CSC_CLIENT_SECRET exactly one of/);
    expect(() => loadConfig(cscEnv({ SEAL_CSC_PIN_FILE: '/x' }))).toThrow(/^Invalid configuration: SEAL_CSC_PIN at most one of/);
    expect(() => loadConfig(cscEnv({ SEAL_CSC_URL: 'ftp://tsp.example' }))).toThrow(/^Invalid configuration: SEAL_CSC_URL must be the absolute http\(s\) URL/);
    expect(() => loadConfig(cscEnv({ SEAL_P12: '/x.p12', SEAL_P12_PASSWORD: 'x' }))).toThrow(/^Invalid configuration: SEAL_P12 must be unset with SEAL_SIGNER=csc/);
    expect(() => loadConfig({ SEAL_CSC_URL: 'https://tsp.example/csc/v2' })).toThrow(/^Invalid configuration: SEAL_CSC_URL is only read with SEAL_SIGNER=csc/);
    expect(() => loadConfig({ SEAL_SIGNER: 'pkcs11', SEAL_CSC_CREDENTIAL_ID: 'x' })).toThrow(/^Invalid configuration: SEAL_CSC_CREDENTIAL_ID is only read with SEAL_SIGNER=csc/);
    expect(() => loadConfig(cscEnv({ PKCS11_MODULE: '/x.so' }))).toThrow(/^Invalid configuration: PKCS11_MODULE is only read with SEAL_SIGNER=pkcs11/);
    // Neither the client secret nor the PIN is repeated into the log.
    expect(() => loadConfig(cscEnv({ SEAL_CSC_CLIENT_SECRET_FILE: '/x' }))).not.toThrow(provider.clientSecret);
    expect(() => loadConfig(cscEnv({ SEAL_CSC_PIN_FILE: '/x' }))).not.toThrow(PIN);
  });

  it('the provider down at seal time fails the seal job by name, to be retried; the provider back, the retry seals', async () => {
    const { team, built } = await finalizedEnvelope(app);
    const lines: Record<string, any>[] = [];
    await provider.setDown(true);
    try {
      expect(await sealWorker(app, team.teamId, lines).drain()).toBe(1);
      expect((await fetch(`${app.url}/healthz`)).status).toBe(200);
    } finally {
      await provider.setDown(false);
    }
    const failed = await sealJob(app, built.envelopeId);
    expect(failed).toMatchObject({ attempts: 1, processed_at: null, failed_at: null });
    expect(failed.last_error).toMatch(/^seal_signer_unavailable: (ReasonedError: )?Seal\.SignerUnavailable: the seal's signing key could not be used \(CSC provider .*unreachable/);
    const logged = lines.find((line) => line.msg === 'outbox message failed; will retry');
    expect(logged).toMatchObject({ level: 'warn', reason: 'seal_signer_unavailable', topic: 'artefact.seal' });
    expect(JSON.stringify(lines)).not.toContain(provider.clientSecret);
    expect(JSON.stringify(lines)).not.toContain(PIN);

    await retryNow(app, built.envelopeId);
    expect(await sealWorker(app, team.teamId, lines).drain()).toBe(1);
    expect(await sealJob(app, built.envelopeId)).toMatchObject({ attempts: 2, processed_at: expect.anything() });
    expect(pdfsig(await downloadSealed(app, directory, team.apiKey, built.envelopeId, built.documentId, 'after-down.pdf'))).toContain('Signature is Valid.');
  });

  it('the credential disabled while running: the seal job fails by name with what the provider said, and seals once it is enabled again; an expired token is replaced unseen', async () => {
    const { team, built } = await finalizedEnvelope(app);
    const lines: Record<string, any>[] = [];
    provider.disable(credential.credentialId);
    try {
      expect(await sealWorker(app, team.teamId, lines).drain()).toBe(1);
    } finally {
      provider.disable(credential.credentialId, false);
    }
    const failed = await sealJob(app, built.envelopeId);
    expect(failed).toMatchObject({ attempts: 1, processed_at: null, failed_at: null });
    expect(failed.last_error).toMatch(/^seal_signer_unavailable: .*Seal\.SignerUnavailable: .*refused \(HTTP 400, invalid_request: The credential is disabled\)/);
    const logged = lines.find((line) => line.msg === 'outbox message failed; will retry');
    expect(logged!.err.message).toMatch(/credential .* is disabled/);

    // The provider forgot the service's token meanwhile (expiry, a restart): a new one is asked for.
    provider.expireTokens();
    const tokensBefore = provider.requests('oauth2/token');
    await retryNow(app, built.envelopeId);
    expect(await sealWorker(app, team.teamId, lines).drain()).toBe(1);
    expect(await sealJob(app, built.envelopeId)).toMatchObject({ attempts: 2, processed_at: expect.anything() });
    expect(provider.requests('oauth2/token')).toBe(tokensBefore + 1);
    expect(pdfsig(await downloadSealed(app, directory, team.apiKey, built.envelopeId, built.documentId, 'after-disabled.pdf'))).toContain('Signature is Valid.');
  });

  it('two instances (processes of their own) sign with the same credential at once, while this one seals', async () => {
    const instance = () => run(process.execPath, ['test/helpers/pkcs11-instance.ts', '16'], { env: { ...process.env, DATA_DIR: directory, ...cscEnv() }, timeout: 60_000 });
    const { team, built } = await finalizedEnvelope(app);
    const [first, second, sealed] = await Promise.all([instance(), instance(), sealWorker(app, team.teamId, []).drain()]);
    for (const output of [first, second]) {
      expect(JSON.parse(output.stdout)).toEqual({ fingerprint: seal.fingerprintSha256, signed: 16, verified: 16 });
    }
    expect(sealed).toBe(1);
    expect(pdfsig(await downloadSealed(app, directory, team.apiKey, built.envelopeId, built.documentId, 'shared-credential.pdf'))).toContain('Signature is Valid.');
  });
});
