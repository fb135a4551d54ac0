/**
 * A signer's own PAdES signature made at a CSC v2 trust service (issue 35, the PDF half): the
 * document prepared with the signer's placeholder, the signed attributes' hash authorized through
 * the provider's oauth2/authorize (scope credential) and signed by signatures/signHash, the CMS
 * built around it by the seal's own code (pdf/seal.ts) and embedded; then the service's seal as an
 * incremental update keeps it valid. pdfsig checks both.
 */
import { execFileSync } from 'node:child_process';
import { createPrivateKey } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openForUpdate } from '../src/domain/pdf/incremental.ts';
import { contentDigestOf, embedExternalSignature, prepareExternalSignature, sealAsUpdate, signedAttributesOf } from '../src/domain/pdf/seal.ts';
import { createCscClient, RSA_ENCRYPTION_OID, SHA256_OID } from '../src/domain/trust/csc-client.ts';
import { type CscTestProvider, startCscProvider } from './helpers/csc-provider.ts';
import { pdfsig } from './helpers/pdf-tools.ts';
import { authorizeAtProvider } from './helpers/signer-signed.ts';

const redirectUri = 'http://127.0.0.1:1/sign/trust-service/callback';

describe('a signer’s signature at a CSC trust service', () => {
  let provider: CscTestProvider;
  let directory: string;

  beforeAll(async () => {
    provider = await startCscProvider();
    directory = fs.mkdtempSync(path.join(os.tmpdir(), 'signer-signature-'));
  });
  afterAll(async () => {
    await provider.close();
    fs.rmSync(directory, { recursive: true, force: true });
  });

  it('is embedded as the signer’s own PAdES signature, and the seal after it keeps it valid', async () => {
    const user = provider.addUser({ name: 'Quinn Qualified', email: 'quinn@example.com', pin: '1234', level: 'qualified' });
    const client = createCscClient(provider);
    // The service-scope step: the signer lets the service read its credential and certificate.
    const serviceCode = await authorizeAtProvider(client.authorizeUrl({ redirectUri, state: 's1', scope: 'service' }), { username: 'quinn@example.com', pin: '1234', consent: 'yes' });
    const serviceToken = await client.exchangeCode({ code: serviceCode, redirectUri });
    const [credentialId] = await client.listCredentials(serviceToken.accessToken);
    expect(credentialId).toBe(user.credentialId);
    const credential = await client.credentialInfo(serviceToken.accessToken, credentialId!);

    const original = await PDFDocument.create();
    original.addPage([595, 842]).drawText('Contract', { x: 50, y: 780, font: await original.embedFont(StandardFonts.Helvetica) });
    const pdf = await PDFDocument.load(await original.save());
    const { prepared, contentDigest } = await prepareExternalSignature(pdf, {
      certificates: credential.certificates,
      info: { reason: 'Signed by Quinn Qualified', name: 'Quinn Qualified', signingTime: new Date() },
    });
    expect(contentDigestOf(prepared).equals(contentDigest)).toBe(true);
    const hash = signedAttributesOf(contentDigest, credential.certificates[0]!).digest;

    // The credential-scope step: the hash authorized with the PIN, then signatures/signHash.
    const credentialCode = await authorizeAtProvider(
      client.authorizeUrl({ redirectUri, state: 's2', scope: 'credential', credentialId: credentialId!, hashes: [hash], numSignatures: 1, hashAlgorithmOID: SHA256_OID }),
      { pin: '1234', consent: 'yes' },
    );
    const credentialToken = await client.exchangeCode({ code: credentialCode, redirectUri });
    const [signature] = await client.signHash(credentialToken.accessToken, { credentialId: credentialId!, hashes: [hash], hashAlgorithmOID: SHA256_OID, signAlgo: RSA_ENCRYPTION_OID });
    const { signed } = await embedExternalSignature(prepared, { certificates: credential.certificates, signature: signature! });
    const signedPath = path.join(directory, 'signed.pdf');
    fs.writeFileSync(signedPath, signed);
    const once = pdfsig(signedPath);
    expect(once).toContain('Quinn Qualified');
    expect(once).toContain('Signature is Valid');

    // The service's seal, as an incremental update: the signer's bytes stay as they were.
    const keyPath = path.join(directory, 'seal.key');
    const certPath = path.join(directory, 'seal.crt');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', keyPath, '-out', certPath, '-days', '2', '-subj', '/CN=Envelope service seal'], { stdio: 'ignore' });
    const keyPkcs8 = createPrivateKey(fs.readFileSync(keyPath)).export({ format: 'der', type: 'pkcs8' });
    const certificateDer = Buffer.from(
      fs
        .readFileSync(certPath, 'utf8')
        .replace(/-----[^-]+-----/g, '')
        .replace(/\s+/g, ''),
      'base64',
    );
    const document = await openForUpdate(signed);
    const sealed = await sealAsUpdate(
      signed,
      document,
      { changed: [], since: document.context.largestObjectNumber },
      { material: { keyPkcs8: new Uint8Array(keyPkcs8), certificates: [new Uint8Array(certificateDer)] }, info: { reason: 'Sealed', name: 'Envelope service', signingTime: new Date() } },
    );
    expect(sealed.subarray(0, signed.length).equals(signed)).toBe(true);
    const sealedPath = path.join(directory, 'sealed.pdf');
    fs.writeFileSync(sealedPath, sealed);
    const report = pdfsig(sealedPath);
    expect(report).toContain('Signature #2');
    expect(report).toContain('Quinn Qualified');
    expect(report).toContain('Envelope service seal');
    expect(report.match(/Signature is Valid/g)).toHaveLength(2);
  });
});
