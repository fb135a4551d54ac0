import { execFile } from 'node:child_process';
import { constants, createHash, publicDecrypt, randomBytes, X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CscClient, createCscClient, TrustServiceError } from '../src/domain/trust/csc-client.ts';
import { type CscTestProvider, QC_STATEMENTS_QUALIFIED_ESIGN, startCscProvider } from './helpers/csc-provider.ts';

/*
 * The CSC v2 client (src/domain/trust/csc-client.ts) against the test provider
 * (test/helpers/csc-provider.ts), both real HTTP: every endpoint, the OAuth code flow as a browser
 * would post it, explicit authorization, and what a caller sees when the provider refuses, is
 * down, is slow, or has revoked a certificate.
 */

const run = promisify(execFile);
let provider: CscTestProvider;
let client: CscClient;
let alice: { credentialId: string; userId: string; certificatePem: string };
let bob: { credentialId: string; userId: string; certificatePem: string };
const redirectUri = 'http://127.0.0.1:9/callback';

beforeAll(async () => {
  provider = await startCscProvider();
  client = createCscClient(provider, { timeoutMs: 2_000 });
  alice = provider.addUser({ name: 'Alice Martin', email: 'alice@example.com', pin: '123456', level: 'qualified' });
  bob = provider.addUser({ name: 'Bob Müller', email: 'bob@example.com', pin: '654321', otp: '777111', level: 'advanced', authMode: 'explicit' });
});
afterAll(async () => {
  await provider?.close();
});

const digest = () => createHash('sha256').update(randomBytes(32)).digest();
const digestInfo = (hash: Uint8Array) => Buffer.concat([Buffer.from('3031300d060960864801650304020105000420', 'hex'), hash]);

function verifies(certificateDer: Uint8Array, hash: Uint8Array, signature: Uint8Array): boolean {
  const key = new X509Certificate(certificateDer).publicKey;
  return publicDecrypt({ key, padding: constants.RSA_PKCS1_PADDING }, signature).equals(digestInfo(hash));
}

/** What the signer's browser does on the provider's page: posts the form with the PIN (and OTP), and is sent back with a code. */
async function consent(url: string, form: Record<string, string>): Promise<URL> {
  const page = await fetch(url);
  expect(page.status).toBe(200);
  const html = await page.text();
  expect(html).toContain('name="pin"');
  const query = new URL(url).searchParams;
  const response = await fetch(new URL('authorize', url), {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ ...Object.fromEntries(query), consent: 'yes', ...form }).toString(),
    redirect: 'manual',
  });
  expect(response.status).toBe(302);
  return new URL(response.headers.get('location')!);
}

describe('CSC v2 client against the test provider', () => {
  it('reads info', async () => {
    const info = await client.info();
    expect(info.specs).toMatch(/^2\./);
    expect(info.authType).toEqual(expect.arrayContaining(['oauth2code', 'oauth2client']));
    expect(info.methods).toContain('signatures/signHash');
  });

  it('signs with a credential-scope token bound to the hashes named at authorize time, and refuses any other hash', async () => {
    const hashes = [digest(), digest()];
    const url = client.authorizeUrl({ redirectUri, state: 'state-1', scope: 'credential', credentialId: alice.credentialId, hashes });
    expect(new URL(url).searchParams.get('authorization_details')).toContain(alice.credentialId);
    const back = await consent(url, { pin: '123456' });
    expect(back.searchParams.get('state')).toBe('state-1');
    const token = await client.exchangeCode({ code: back.searchParams.get('code')!, redirectUri });

    const info = await client.credentialInfo(token.accessToken, alice.credentialId);
    expect(info.keyAlgorithms).toContain('1.2.840.113549.1.1.1');
    expect(info.certificates).toHaveLength(2);
    const certificate = new X509Certificate(info.certificates[0]!);
    expect(certificate.subject).toContain('CN=Alice Martin');
    expect(Buffer.from(info.certificates[1]!).equals(new X509Certificate(provider.caCertPem).raw)).toBe(true);
    // Qualified: the certificate carries the ETSI QCStatements (QcCompliance, QcType esign).
    expect(Buffer.from(certificate.raw).includes(Buffer.from(QC_STATEMENTS_QUALIFIED_ESIGN, 'hex'))).toBe(true);

    const signatures = await client.signHash(token.accessToken, { credentialId: alice.credentialId, hashes });
    expect(signatures).toHaveLength(2);
    expect(verifies(info.certificates[0]!, hashes[0]!, signatures[0]!)).toBe(true);
    expect(verifies(info.certificates[0]!, hashes[1]!, signatures[1]!)).toBe(true);

    const other = await client.signHash(token.accessToken, { credentialId: alice.credentialId, hashes: [digest()] }).catch((error: unknown) => error);
    expect(other).toBeInstanceOf(TrustServiceError);
    expect(other).toMatchObject({ reason: 'refused', providerError: 'invalid_request' });
    // Spent: the same hashes do not sign twice.
    await expect(client.signHash(token.accessToken, { credentialId: alice.credentialId, hashes: [hashes[0]!] })).rejects.toMatchObject({ reason: 'refused' });
  });

  it('authorizes explicitly with PIN and OTP (a SAD), lists the user credentials with a service token, and an advanced certificate has no QC statements', async () => {
    const url = client.authorizeUrl({ redirectUri, state: 'state-2', scope: 'service' });
    const back = await consent(url, { username: 'bob@example.com', pin: '654321', otp: '777111' });
    const token = await client.exchangeCode({ code: back.searchParams.get('code')!, redirectUri });
    expect(await client.listCredentials(token.accessToken)).toEqual([bob.credentialId]);
    const info = await client.credentialInfo(token.accessToken, bob.credentialId);
    expect(info.authMode).toBe('explicit');
    expect(info.authObjects.map((item) => item.id)).toEqual(['PIN', 'OTP']);
    expect(Buffer.from(info.certificates[0]!).includes(Buffer.from('0604008e46', 'hex'))).toBe(false);

    const hashes = [digest()];
    const sad = await client.authorizeCredential(token.accessToken, { credentialId: bob.credentialId, hashes, pin: '654321', otp: '777111' });
    const [signature] = await client.signHash(token.accessToken, { credentialId: bob.credentialId, sad, hashes });
    expect(verifies(info.certificates[0]!, hashes[0]!, signature!)).toBe(true);
    // A SAD without the right OTP is not given; signing without one is refused.
    await expect(client.authorizeCredential(token.accessToken, { credentialId: bob.credentialId, hashes, pin: '654321', otp: '000000' })).rejects.toMatchObject({
      reason: 'refused',
      providerError: 'access_denied',
    });
    await expect(client.signHash(token.accessToken, { credentialId: bob.credentialId, hashes })).rejects.toMatchObject({ reason: 'refused' });
    // Another user's credential is not Bob's to use.
    await expect(client.credentialInfo(token.accessToken, alice.credentialId)).rejects.toMatchObject({ reason: 'refused', providerError: 'invalid_request' });
  });

  it('a wrong PIN on the authorize page comes back as an OAuth error, with the state', async () => {
    const url = client.authorizeUrl({ redirectUri, state: 'state-3', scope: 'credential', credentialId: alice.credentialId, hashes: [digest()] });
    const back = await consent(url, { pin: '000000' });
    expect(back.searchParams.get('error')).toBe('access_denied');
    expect(back.searchParams.get('state')).toBe('state-3');
    expect(back.searchParams.get('code')).toBeNull();
  });

  it('client credentials: a seal credential signs without a SAD; a wrong client secret is refused; an expired token is refused as invalid_token', async () => {
    const seal = provider.addSeal({ name: 'Envelope Service' });
    const token = await client.clientCredentialsToken();
    expect(await client.listCredentials(token.accessToken)).toContain(seal.credentialId);
    expect(await client.listCredentials(token.accessToken)).not.toContain(alice.credentialId);
    const info = await client.credentialInfo(token.accessToken, seal.credentialId);
    expect(info.authMode).toBe('implicit');
    const hash = digest();
    const [signature] = await client.signHash(token.accessToken, { credentialId: seal.credentialId, hashes: [hash] });
    expect(verifies(info.certificates[0]!, hash, signature!)).toBe(true);

    const wrong = createCscClient({ ...provider, clientSecret: 'not-the-secret' });
    const refused = await wrong.clientCredentialsToken().catch((error: unknown) => error);
    expect(refused).toMatchObject({ reason: 'refused', status: 401, providerError: 'invalid_client' });
    // The secret is never in what a log would show.
    expect(String((refused as Error).message)).not.toContain('not-the-secret');

    provider.expireTokens();
    await expect(client.signHash(token.accessToken, { credentialId: seal.credentialId, hashes: [hash] })).rejects.toMatchObject({ status: 401, providerError: 'invalid_token' });
  });

  it('provider down: unreachable (connection refused) or timeout (accepted, never answered); slow past the deadline: timeout; back: works', async () => {
    await provider.setDown(true);
    await expect(client.info()).rejects.toMatchObject({ name: 'TrustServiceError', reason: 'unreachable' });
    await provider.setDown(false);
    expect((await client.info()).name).toBeTruthy();

    await provider.setDown(true, 'hang');
    const quick = createCscClient(provider, { timeoutMs: 300 });
    await expect(quick.info()).rejects.toMatchObject({ reason: 'timeout' });
    await provider.setDown(false);

    provider.setSlow(1_000);
    await expect(quick.info()).rejects.toMatchObject({ reason: 'timeout' });
    provider.setSlow(0);
    expect((await quick.info()).specs).toMatch(/^2\./);
  });

  it('a revoked certificate: OCSP answers revoked, credentials/info says so', async () => {
    const carol = provider.addUser({ name: 'Carol Revoked', email: 'carol@example.com', pin: '1111', level: 'advanced' });
    const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'csc-ocsp-'));
    const certPath = path.join(directory, 'carol.pem');
    fs.writeFileSync(certPath, carol.certificatePem);
    const ocsp = () =>
      run('openssl', ['ocsp', '-issuer', provider.caCertPath, '-cert', certPath, '-url', provider.ocspUrl, '-CAfile', provider.caCertPath, '-no_nonce']).then(({ stdout }) => stdout);
    try {
      expect(await ocsp()).toMatch(/carol\.pem: good/);
      provider.revoke(carol.credentialId);
      expect(await ocsp()).toMatch(/carol\.pem: revoked/);
      // The user's own view of it: a service token of Carol's.
      const url = client.authorizeUrl({ redirectUri, state: 's', scope: 'service' });
      const back = await consent(url, { username: 'carol@example.com', pin: '1111' });
      const token = await client.exchangeCode({ code: back.searchParams.get('code')!, redirectUri });
      expect((await client.credentialInfo(token.accessToken, carol.credentialId)).certificateStatus).toBe('revoked');
    } finally {
      fs.rmSync(directory, { recursive: true, force: true });
    }
  });

  it('a disabled key is refused at signHash', async () => {
    const seal = provider.addSeal({ name: 'Disabled Seal' });
    const token = await client.clientCredentialsToken();
    provider.disable(seal.credentialId);
    await expect(client.signHash(token.accessToken, { credentialId: seal.credentialId, hashes: [digest()] })).rejects.toMatchObject({ reason: 'refused' });
    provider.disable(seal.credentialId, false);
    expect(await client.signHash(token.accessToken, { credentialId: seal.credentialId, hashes: [digest()] })).toHaveLength(1);
  });
});
