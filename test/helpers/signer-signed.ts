/**
 * A PDF carrying signers' own PAdES signatures made at the CSC v2 test provider (each through its
 * oauth2/authorize with the PIN and signatures/signHash, as test/signer-signature-pdf.test.ts does),
 * each an incremental update, then optionally the service-like seal over them.
 */
import { execFileSync } from 'node:child_process';
import { createPrivateKey } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import { openForUpdate } from '../../src/domain/pdf/incremental.ts';
import { embedExternalSignature, prepareExternalSignature, sealAsUpdate, signedAttributesOf } from '../../src/domain/pdf/seal.ts';
import { createCscClient, RSA_ENCRYPTION_OID, SHA256_OID } from '../../src/domain/trust/csc-client.ts';
import type { CscTestProvider } from './csc-provider.ts';

const redirectUri = 'http://127.0.0.1:1/sign/trust-service/callback';

/** What the signer's browser does on the provider's authorize page: the form posted; answers the code. */
export async function authorizeAtProvider(url: string, form: Record<string, string>): Promise<string> {
  const params = new URL(url).searchParams;
  for (const [name, value] of Object.entries(form)) params.set(name, value);
  const response = await fetch(new URL('authorize', url), { method: 'POST', body: params, redirect: 'manual' });
  const location = new URL(response.headers.get('location')!);
  const code = location.searchParams.get('code');
  if (code === null) throw new Error(`no code: ${location.searchParams.get('error')} ${location.searchParams.get('error_description')}`);
  return code;
}

export type ProviderSigner = { name: string; email: string; pin: string };

/** The signers' signatures in order, then (with `seal`) a self-signed seal as an update; answers the file and each signer's certificates (DER, the signer's first). */
export async function signWithProvider(
  provider: CscTestProvider,
  options: { signers: ProviderSigner[]; pdf?: Buffer; seal?: boolean },
): Promise<{ bytes: Buffer; certificates: Uint8Array[][] }> {
  const client = createCscClient(provider);
  let file: Buffer;
  if (options.pdf) {
    file = options.pdf;
  } else {
    const original = await PDFDocument.create();
    original.addPage([595, 842]).drawText('Contract', { x: 50, y: 780, font: await original.embedFont(StandardFonts.Helvetica) });
    file = Buffer.from(await original.save());
  }
  const certificates: Uint8Array[][] = [];
  for (const [index, signer] of options.signers.entries()) {
    const serviceCode = await authorizeAtProvider(client.authorizeUrl({ redirectUri, state: `service-${index}`, scope: 'service' }), {
      username: signer.email,
      pin: signer.pin,
      consent: 'yes',
    });
    const serviceToken = await client.exchangeCode({ code: serviceCode, redirectUri });
    const [credentialId] = await client.listCredentials(serviceToken.accessToken);
    const credential = await client.credentialInfo(serviceToken.accessToken, credentialId!);
    const info = { reason: `Signed by ${signer.name}`, name: signer.name, signingTime: new Date() };
    const document = await openForUpdate(file);
    const { prepared, contentDigest } =
      index === 0 && options.pdf === undefined
        ? await prepareExternalSignature(await PDFDocument.load(file), { certificates: credential.certificates, info })
        : await prepareExternalSignature(document, { certificates: credential.certificates, info }, { file, changed: [], since: document.context.largestObjectNumber });
    const hash = signedAttributesOf(contentDigest, credential.certificates[0]!).digest;
    const credentialCode = await authorizeAtProvider(
      client.authorizeUrl({ redirectUri, state: `credential-${index}`, scope: 'credential', credentialId: credentialId!, hashes: [hash], numSignatures: 1, hashAlgorithmOID: SHA256_OID }),
      { pin: signer.pin, consent: 'yes' },
    );
    const credentialToken = await client.exchangeCode({ code: credentialCode, redirectUri });
    const [signature] = await client.signHash(credentialToken.accessToken, { credentialId: credentialId!, hashes: [hash], hashAlgorithmOID: SHA256_OID, signAlgo: RSA_ENCRYPTION_OID });
    file = (await embedExternalSignature(prepared, { certificates: credential.certificates, signature: signature! })).signed;
    certificates.push(credential.certificates);
  }
  if (options.seal) {
    const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'signer-signed-'));
    try {
      const keyPath = path.join(directory, 'seal.key');
      const certPath = path.join(directory, 'seal.crt');
      execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', keyPath, '-out', certPath, '-days', '2', '-subj', '/CN=Envelope service seal'], {
        stdio: 'ignore',
      });
      const keyPkcs8 = createPrivateKey(fs.readFileSync(keyPath)).export({ format: 'der', type: 'pkcs8' });
      const certificateDer = Buffer.from(
        fs
          .readFileSync(certPath, 'utf8')
          .replace(/-----[^-]+-----/g, '')
          .replace(/\s+/g, ''),
        'base64',
      );
      const document = await openForUpdate(file);
      file = await sealAsUpdate(
        file,
        document,
        { changed: [], since: document.context.largestObjectNumber },
        { material: { keyPkcs8: new Uint8Array(keyPkcs8), certificates: [new Uint8Array(certificateDer)] }, info: { reason: 'Sealed', name: 'Envelope service', signingTime: new Date() } },
      );
    } finally {
      fs.rmSync(directory, { recursive: true, force: true });
    }
  }
  return { bytes: file, certificates };
}
