/**
 * The service's sealing certificate (docs/reference/contract.md §2): SEAL_P12 + SEAL_P12_PASSWORD, else a
 * self-signed one generated once under DATA_DIR (`seal/seal.pem`, key and certificate, mode
 * 0600). A certificate that cannot be read, has no matching RSA key, or is not valid now stops
 * start-up with one line naming the variable (SealCertificateError).
 */
import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import forge from 'node-forge';
import type { SealMaterial } from '../pdf/seal.ts';

export class SealCertificateError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SealCertificateError';
  }
}

export type SealCertificate = SealMaterial & {
  subject: string;
  notAfter: Date;
  /** SHA-256 of the signer certificate's DER: how a verifier tells our seal from others. */
  fingerprintSha256: string;
  selfSigned: boolean;
  /** TSA_URL: seals carry an RFC 3161 signature timestamp from it (set by the caller, not the file). */
  tsaUrl?: string;
};

function derOf(certificate: forge.pki.Certificate): Uint8Array {
  return Buffer.from(forge.asn1.toDer(forge.pki.certificateToAsn1(certificate)).getBytes(), 'binary');
}

function keyDerOf(key: forge.pki.rsa.PrivateKey): Uint8Array {
  return Buffer.from(forge.asn1.toDer(forge.pki.wrapRsaPrivateKey(forge.pki.privateKeyToAsn1(key))).getBytes(), 'binary');
}

/** The seal from a key and its certificates; `origin` names where they came from in an error, `now` (null: not checked) the validity check. */
function assemble(key: forge.pki.rsa.PrivateKey, certificates: forge.pki.Certificate[], check: { origin: string; now: Date | null; selfSigned: boolean }): SealCertificate {
  const { origin, now, selfSigned } = check;
  const signer = certificates.find((certificate) => {
    const publicKey = certificate.publicKey as forge.pki.rsa.PublicKey;
    return publicKey.n !== undefined && publicKey.n.compareTo(key.n) === 0 && publicKey.e.compareTo(key.e) === 0;
  });
  if (signer === undefined) throw new SealCertificateError(`${origin}: no certificate matches the private key`);
  if (now !== null && signer.validity.notAfter.getTime() <= now.getTime()) {
    throw new SealCertificateError(`${origin}: the certificate expired on ${signer.validity.notAfter.toISOString()}`);
  }
  if (now !== null && signer.validity.notBefore.getTime() > now.getTime()) {
    throw new SealCertificateError(`${origin}: the certificate is not valid before ${signer.validity.notBefore.toISOString()}`);
  }
  const ordered = [signer, ...certificates.filter((certificate) => certificate !== signer)];
  const certificateDers = ordered.map(derOf);
  return {
    keyPkcs8: keyDerOf(key),
    certificates: certificateDers,
    subject: signer.subject.attributes.map((attribute) => `${attribute.shortName ?? attribute.name}=${attribute.value}`).join(', '),
    notAfter: signer.validity.notAfter,
    fingerprintSha256: createHash('sha256').update(certificateDers[0]!).digest('hex'),
    selfSigned,
  };
}

function fromP12(filePath: string, password: string, now: Date | null): SealCertificate {
  let bytes: Buffer;
  try {
    bytes = fs.readFileSync(filePath);
  } catch (error) {
    throw new SealCertificateError(`SEAL_P12: cannot read ${filePath} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
  let p12: forge.pkcs12.Pkcs12Pfx;
  try {
    p12 = forge.pkcs12.pkcs12FromAsn1(forge.asn1.fromDer(bytes.toString('binary')), false, password);
  } catch (error) {
    throw new SealCertificateError(`SEAL_P12: not a PKCS#12 file this password opens (${(error as Error).message})`);
  }
  const keyBags = [
    ...(p12.getBags({ bagType: forge.pki.oids.pkcs8ShroudedKeyBag! })[forge.pki.oids.pkcs8ShroudedKeyBag!] ?? []),
    ...(p12.getBags({ bagType: forge.pki.oids.keyBag! })[forge.pki.oids.keyBag!] ?? []),
  ];
  const key = keyBags.find((bag) => bag.key !== undefined)?.key as forge.pki.rsa.PrivateKey | undefined;
  if (key === undefined || (key as { n?: unknown }).n === undefined) throw new SealCertificateError('SEAL_P12: holds no RSA private key');
  const certificates = (p12.getBags({ bagType: forge.pki.oids.certBag! })[forge.pki.oids.certBag!] ?? []).flatMap((bag) => (bag.cert ? [bag.cert] : []));
  return assemble(key, certificates, { origin: 'SEAL_P12', now, selfSigned: false });
}

function selfSigned(dataDir: string, now: Date | null): SealCertificate {
  const filePath = path.join(dataDir, 'seal', 'seal.pem');
  fs.mkdirSync(path.dirname(filePath), { recursive: true });
  if (!fs.existsSync(filePath)) {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 3072 });
    const key = forge.pki.privateKeyFromPem(privateKey.export({ type: 'pkcs1', format: 'pem' }).toString());
    const certificate = forge.pki.createCertificate();
    certificate.publicKey = forge.pki.setRsaPublicKey(key.n, key.e);
    certificate.serialNumber = `01${randomBytes(15).toString('hex')}`;
    const from = now ?? new Date();
    certificate.validity.notBefore = new Date(from.getTime() - 60_000);
    certificate.validity.notAfter = new Date(from.getTime() + 10 * 365 * 24 * 3600 * 1000);
    const name = [
      { name: 'commonName', value: 'Envelope Service Seal (self-signed)' },
      { name: 'organizationName', value: 'Envelope Service' },
    ];
    certificate.setSubject(name);
    certificate.setIssuer(name);
    certificate.setExtensions([
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, nonRepudiation: true },
      { name: 'subjectKeyIdentifier' },
    ]);
    certificate.sign(key, forge.md.sha256.create());
    const temporary = `${filePath}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    fs.writeFileSync(temporary, forge.pki.privateKeyToPem(key) + forge.pki.certificateToPem(certificate), { mode: 0o600 });
    try {
      // link fails if another process got there first: both then use the one on disk.
      fs.linkSync(temporary, filePath);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    } finally {
      fs.rmSync(temporary, { force: true });
    }
  }
  const pem = fs.readFileSync(filePath, 'utf8');
  let key: forge.pki.rsa.PrivateKey;
  let certificate: forge.pki.Certificate;
  try {
    key = forge.pki.privateKeyFromPem(pem) as forge.pki.rsa.PrivateKey;
    // forge reads the first PEM block of a string: give it the certificate's own.
    certificate = forge.pki.certificateFromPem(/-----BEGIN CERTIFICATE-----[^]*?-----END CERTIFICATE-----/.exec(pem)?.[0] ?? '');
  } catch (error) {
    throw new SealCertificateError(`${filePath}: the generated seal certificate cannot be read (${(error as Error).message}); remove it to make a new one`);
  }
  return assemble(key, [certificate], { origin: filePath, now, selfSigned: true });
}

/**
 * `now` null: read the certificate whatever its validity (the offline verifier: a package sealed
 * last year is ours even if the seal has expired since).
 */
export function loadSealCertificate(config: { sealP12Path: string | undefined; sealP12Password: string | undefined; dataDir: string }, now: Date | null = new Date()): SealCertificate {
  if (config.sealP12Path !== undefined) return fromP12(config.sealP12Path, config.sealP12Password ?? '', now);
  return selfSigned(config.dataDir, now);
}
