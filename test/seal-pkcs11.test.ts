import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { openSeal, type SealCertificate, SealCertificateError } from '../src/domain/artefact/seal-certificate.ts';
import { startTestApp, type TestApp } from './helpers/harness.ts';
import { pdfsig } from './helpers/pdf-tools.ts';
import { downloadSealed, finalizedEnvelope, retryNow, sealJob, sealWorker, startServer } from './helpers/seal-jobs.ts';
import { createSoftHsmToken } from './helpers/softhsm.ts';
import { startLocalTsa } from './helpers/tsa.ts';
import { sealWorkerFor } from './helpers/workers.ts';

/*
 * Seal keys in hardware (issue 35): SEAL_SIGNER=pkcs11 against Debian's SoftHSM, a token this file
 * makes itself (its own softhsm2.conf, a key and a CA-issued certificate imported with
 * pkcs11-tool). The service signs only digests through C_Sign; the key never enters the process.
 */

const run = promisify(execFile);
let token: ReturnType<typeof createSoftHsmToken>;
let seal: SealCertificate;
let app: TestApp;
let directory: string;

beforeAll(async () => {
  token = createSoftHsmToken({ label: 'envelope-seal', pin: '4821', keyLabel: 'seal-key', commonName: 'Token Seal' });
  // The module reads its configuration from the environment of the process that loads it.
  process.env.SOFTHSM2_CONF = token.confPath;
  directory = fs.mkdtempSync(path.join(os.tmpdir(), 'seal-pkcs11-'));
  seal = await openSeal(loadConfig({ DATA_DIR: directory, ...token.serviceEnv() }));
  app = await startTestApp({ seal });
});
afterAll(async () => {
  await app?.close();
  await seal?.signer.close();
  token?.remove();
  fs.rmSync(directory, { recursive: true, force: true });
});

describe('the seal with its key on a PKCS#11 token (SEAL_SIGNER=pkcs11)', () => {
  it('seals a finalized envelope through the token: pdfsig validates the whole file, signed by the token certificate; the key never reached the process', async () => {
    // Nothing of the key is in the process: the worker gets certificates only, and signatures come back from C_Sign.
    expect(seal.signer.kind).toBe('pkcs11');
    expect(seal.keyPkcs8).toBeUndefined();
    expect(seal.certificates).toHaveLength(2); // the seal's certificate and its CA, read from the token
    expect(seal.subject).toContain('CN=Token Seal');

    const { team, built } = await finalizedEnvelope(app);
    const lines: Record<string, any>[] = [];
    expect(await sealWorker(app, team.teamId, lines).drain()).toBe(1);
    expect(await sealJob(app, built.envelopeId)).toMatchObject({ processed_at: expect.anything(), last_error: null });
    const file = await downloadSealed(app, directory, team.apiKey, built.envelopeId, built.documentId, 'token-sealed.pdf');
    const report = pdfsig(file);
    expect(report).toContain('Signature is Valid.');
    expect(report).toContain('Total document signed');
    expect(report).toMatch(/Signer Certificate Common Name: Token Seal/);

    // The certificate of completion is sealed through the token too.
    const certificate = await fetch(`${app.url}/api/v1/key/envelopes/${built.envelopeId}/audit/pdf`, { headers: { 'x-service-api-key': team.apiKey } });
    expect(certificate.status).toBe(200);
    const certificatePath = path.join(directory, 'token-certificate.pdf');
    fs.writeFileSync(certificatePath, Buffer.from(await certificate.arrayBuffer()));
    expect(pdfsig(certificatePath)).toContain('Signature is Valid.');

    // The evidence package's manifest signature is made on the main thread, through the token as well.
    const evidence = await fetch(`${app.url}/api/v1/key/envelopes/${built.envelopeId}/evidence`, { headers: { 'x-service-api-key': team.apiKey } });
    expect(evidence.status).toBe(200);
    const zipPath = path.join(directory, 'evidence.zip');
    fs.writeFileSync(zipPath, Buffer.from(await evidence.arrayBuffer()));
    const unpacked = path.join(directory, 'evidence');
    await run('unzip', ['-o', '-q', zipPath, 'manifest.json', 'manifest.json.p7s', '-d', unpacked]);
    const signer = path.join(directory, 'signer.pem');
    await run('openssl', [
      'cms',
      '-verify',
      '-binary',
      '-inform',
      'DER',
      '-in',
      path.join(unpacked, 'manifest.json.p7s'),
      '-content',
      path.join(unpacked, 'manifest.json'),
      '-noverify',
      '-signer',
      signer,
      '-out',
      '/dev/null',
    ]);
    expect(fs.readFileSync(signer, 'utf8')).toBe(token.sealCertificatePem);
  });

  it('with a TSA, the token-signed seal carries its signature timestamp and ends with a document timestamp', async () => {
    const tsa = await startLocalTsa();
    const stamped = await startTestApp({ seal, env: { TSA_URL: tsa.url } });
    try {
      const { team, built } = await finalizedEnvelope(stamped);
      expect(await sealWorkerFor(stamped, team.teamId).drain()).toBe(1);
      const response = await fetch(`${stamped.url}/api/v1/key/envelopes/${built.envelopeId}/documents/${built.documentId}/pdf`, { headers: { 'x-service-api-key': team.apiKey } });
      const bytes = Buffer.from(await response.arrayBuffer());
      const form = new FormData();
      form.append('document', new Blob([bytes], { type: 'application/pdf' }), 'stamped.pdf');
      const verified = (await (await fetch(`${stamped.url}/api/v1/key/verify`, { method: 'POST', headers: { 'x-service-api-key': team.apiKey }, body: form })).json()) as {
        payload: { verification: Record<string, any> };
      };
      const verification = verified.payload.verification;
      expect(verification).toMatchObject({ valid: true, ours: true });
      expect(verification.signatures[0]).toMatchObject({ type: 'signature', valid: true, timestamp: { valid: true }, signer: { subject: 'CN=Token Seal, O=Envelope Service Test' } });
      expect(verification.signatures.at(-1)).toMatchObject({ type: 'document-timestamp', valid: true, coversWholeFile: true });
      const file = path.join(directory, 'token-stamped.pdf');
      fs.writeFileSync(file, bytes);
      expect(pdfsig(file)).toContain('Signature is Valid.');
    } finally {
      await stamped.close();
      await tsa.close();
    }
  });

  it('refuses to start with one line naming what is wrong: a wrong PIN, no such token, no such key, a module that does not load, an unreadable PIN file', async () => {
    const wrongPin = await startServer(directory, { SOFTHSM2_CONF: token.confPath, ...token.serviceEnv({ PKCS11_PIN: '0000' }) });
    expect(wrongPin.code).toBe(1);
    expect(wrongPin.stderr.trim()).toMatch(/^PKCS11_PIN: token "envelope-seal" refused the PIN \(CKR_PIN_INCORRECT\)$/);

    const cases: [Record<string, string>, RegExp][] = [
      [token.serviceEnv({ PKCS11_TOKEN_LABEL: 'no-such-token' }), /^PKCS11_TOKEN_LABEL: no token labelled "no-such-token" in \S+ \(tokens: .*"envelope-seal"/],
      [token.serviceEnv({ PKCS11_KEY_LABEL: 'other-key' }), /^PKCS11_KEY_LABEL: no private key labelled "other-key" on token "envelope-seal"$/],
      [token.serviceEnv({ PKCS11_MODULE: '/nonexistent/libpkcs11.so' }), /^PKCS11_MODULE: cannot load \/nonexistent\/libpkcs11\.so/],
      [{ ...token.serviceEnv(), PKCS11_PIN: '', PKCS11_PIN_FILE: path.join(directory, 'absent-pin') }, /^PKCS11_PIN_FILE: cannot read .*ENOENT/],
      [token.serviceEnv({ SEAL_CERT_CHAIN: path.join(directory, 'absent.pem') }), /^SEAL_CERT_CHAIN: cannot read .*ENOENT/],
    ];
    for (const [env, message] of cases) {
      let caught: unknown;
      try {
        await openSeal(loadConfig({ DATA_DIR: directory, ...env }));
      } catch (error) {
        caught = error;
      }
      expect(caught, JSON.stringify(env)).toBeInstanceOf(SealCertificateError);
      expect((caught as Error).message).toMatch(message);
      expect((caught as Error).message).not.toContain('\n');
    }

    // A certificate of another key (SEAL_CERT_CHAIN) fails the probe: every seal would have been invalid.
    const foreign = path.join(directory, 'foreign.pem');
    fs.writeFileSync(foreign, token.caCertificatePem);
    await expect(openSeal(loadConfig({ DATA_DIR: directory, ...token.serviceEnv({ SEAL_CERT_CHAIN: foreign }) }))).rejects.toThrow(
      /^SEAL_CERT_CHAIN: the certificate \(CN=Token Test CA\) does not match the key "seal-key"/,
    );
    // The right chain from a PEM file works as well as the token's own.
    const chain = path.join(directory, 'chain.pem');
    fs.writeFileSync(chain, token.sealCertificatePem + token.caCertificatePem);
    const fromPem = await openSeal(loadConfig({ DATA_DIR: directory, ...token.serviceEnv({ SEAL_CERT_CHAIN: chain }) }));
    expect(fromPem.fingerprintSha256).toBe(seal.fingerprintSha256);
    await fromPem.signer.close();
  });

  it('configuration names what a PKCS#11 seal is missing', () => {
    expect(() => loadConfig({ SEAL_SIGNER: 'pkcs11' })).toThrow(/^Invalid configuration: PKCS11_MODULE must name/);
    expect(() => loadConfig({ ...token.serviceEnv(), PKCS11_SLOT: '3' })).toThrow(/^Invalid configuration: PKCS11_TOKEN_LABEL exactly one of PKCS11_TOKEN_LABEL and PKCS11_SLOT/);
    expect(() => loadConfig({ ...token.serviceEnv(), PKCS11_PIN: '' })).toThrow(/^Invalid configuration: PKCS11_PIN exactly one of/);
    expect(() => loadConfig({ PKCS11_MODULE: '/x.so' })).toThrow(/^Invalid configuration: PKCS11_MODULE is only read with SEAL_SIGNER=pkcs11/);
    expect(() => loadConfig({ SEAL_SIGNER: 'kms' })).toThrow(/^Invalid configuration: SEAL_SIGNER must be p12, pkcs11 or csc/);
    // The PIN is never repeated into the log.
    expect(() => loadConfig({ ...token.serviceEnv(), PKCS11_PIN: '' })).not.toThrow(/4821/);
  });

  it('a token removed while running fails the seal job by name, to be retried, without taking the service down; the token back, the retry seals', async () => {
    const { team, built } = await finalizedEnvelope(app);
    const parked = `${token.tokensPath}.removed`;
    fs.renameSync(token.tokensPath, parked);
    const lines: Record<string, any>[] = [];
    let busy: Response;
    try {
      expect(await sealWorker(app, team.teamId, lines).drain()).toBe(1);
      // Meanwhile a download (which would seal on the spot) says to come back; the service answers.
      busy = await fetch(`${app.url}/api/v1/key/envelopes/${built.envelopeId}/documents/${built.documentId}/pdf`, { headers: { 'x-service-api-key': team.apiKey } });
      expect((await fetch(`${app.url}/healthz`)).status).toBe(200);
    } finally {
      fs.renameSync(parked, token.tokensPath);
    }
    expect(busy.status).toBe(503);
    expect(((await busy.json()) as { error: { name: string } }).error.name).toBe('Server.Busy');
    const failed = await sealJob(app, built.envelopeId);
    expect(failed).toMatchObject({ attempts: 1, processed_at: null, failed_at: null });
    expect(failed.last_error).toMatch(/^seal_signer_unavailable: (ReasonedError: )?Seal\.SignerUnavailable: the seal's signing key could not be used/);
    // The token's absence, not a module this process finalized by mistake.
    expect(failed.last_error).not.toContain('CKR_CRYPTOKI_NOT_INITIALIZED');
    const logged = lines.find((line) => line.msg === 'outbox message failed; will retry');
    expect(logged).toMatchObject({ level: 'warn', reason: 'seal_signer_unavailable', topic: 'artefact.seal' });
    expect(logged!.err.message).toMatch(/^Seal\.SignerUnavailable/);

    // The token is back: the next attempt connects again and seals.
    await retryNow(app, built.envelopeId);
    expect(await sealWorker(app, team.teamId, lines).drain()).toBe(1);
    expect(await sealJob(app, built.envelopeId)).toMatchObject({ attempts: 2, processed_at: expect.anything() });
    const file = await downloadSealed(app, directory, team.apiKey, built.envelopeId, built.documentId, 'after-return.pdf');
    expect(pdfsig(file)).toContain('Signature is Valid.');
  });

  it('two instances (processes of their own) sign with the same token at once, while this one seals', async () => {
    const instance = () =>
      run(process.execPath, ['test/helpers/pkcs11-instance.ts', '24'], {
        env: { ...process.env, SOFTHSM2_CONF: token.confPath, DATA_DIR: directory, ...token.serviceEnv() },
        timeout: 60_000,
      });
    const { team, built } = await finalizedEnvelope(app);
    const [first, second, sealed] = await Promise.all([instance(), instance(), sealWorker(app, team.teamId, []).drain()]);
    for (const output of [first, second]) {
      expect(JSON.parse(output.stdout)).toEqual({ fingerprint: seal.fingerprintSha256, signed: 24, verified: 24 });
    }
    expect(sealed).toBe(1);
    const file = await downloadSealed(app, directory, team.apiKey, built.envelopeId, built.documentId, 'shared-token.pdf');
    expect(pdfsig(file)).toContain('Signature is Valid.');
  });
});
