/**
 * The service's sealing certificate (docs/reference/contract.md §2): SEAL_P12 + SEAL_P12_PASSWORD, else a
 * self-signed one generated once under DATA_DIR (`seal/seal.pem`, key and certificate, mode
 * 0600), or (SEAL_SIGNER=pkcs11) a key on a PKCS#11 token with its certificate chain, or
 * (SEAL_SIGNER=csc) a credential at a CSC API v2 trust service provider with the chain it gives. A
 * certificate that cannot be read, has no matching RSA key, or is not valid now stops start-up
 * with one line naming the variable (SealCertificateError), and so does a key that fails to sign
 * the start-up probe.
 */
import { constants, createHash, generateKeyPairSync, publicDecrypt, randomBytes, X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import forge from 'node-forge';
import type { Config } from '../../config.ts';
import type { SealMaterial } from '../pdf/seal.ts';
import { CscSetupError, openCscSeal } from './csc-signer.ts';
import { openPkcs11Seal, Pkcs11SetupError } from './pkcs11-signer.ts';
import { digestInfoOf, inProcessSigner, type SealSigner } from './seal-signer.ts';

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
  /** What signs the seal's hashes: the key in this process (p12) or on a token (pkcs11). */
  signer: SealSigner;
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
  const keyPkcs8 = keyDerOf(key);
  return {
    keyPkcs8,
    signer: inProcessSigner(keyPkcs8),
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
    certificate.setExtensions([{ name: 'basicConstraints', cA: false }, { name: 'keyUsage', digitalSignature: true, nonRepudiation: true }, { name: 'subjectKeyIdentifier' }]);
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

/** What a PDF worker needs to seal: the certificates, and the key itself only when it lives in the process. */
export function sealMaterialOf(seal: SealCertificate): SealMaterial {
  return seal.keyPkcs8 === undefined ? { certificates: seal.certificates } : { keyPkcs8: seal.keyPkcs8, certificates: seal.certificates };
}

/**
 * `now` null: read the certificate whatever its validity (the offline verifier: a package sealed
 * last year is ours even if the seal has expired since).
 */
export function loadSealCertificate(config: { sealP12Path: string | undefined; sealP12Password: string | undefined; dataDir: string }, now: Date | null = new Date()): SealCertificate {
  if (config.sealP12Path !== undefined) return fromP12(config.sealP12Path, config.sealP12Password ?? '', now);
  return selfSigned(config.dataDir, now);
}

/**
 * The seal as the running service uses it (start-up): read or generated as above for
 * SEAL_SIGNER=p12, opened on the token for SEAL_SIGNER=pkcs11, at the provider for SEAL_SIGNER=csc;
 * then a probe digest is signed
 * and checked under the certificate, so a key that cannot sign stops start-up rather than the
 * first seal. Every failure is one line naming the variable (SealCertificateError).
 */
export async function openSeal(config: Pick<Config, 'sealP12Path' | 'sealP12Password' | 'dataDir' | 'sealSigner'>, now: Date = new Date()): Promise<SealCertificate> {
  let seal: SealCertificate;
  let variable: string;
  if (config.sealSigner.kind !== 'p12') {
    const opened = await openRemoteSeal(config.sealSigner);
    variable = config.sealSigner.kind === 'csc' ? 'SEAL_CSC_CREDENTIAL_ID' : config.sealSigner.certificateChainPath !== undefined ? 'SEAL_CERT_CHAIN' : 'PKCS11_KEY_LABEL';
    const signer = new X509Certificate(opened.certificates[0]!);
    const notAfter = new Date(signer.validTo);
    const notBefore = new Date(signer.validFrom);
    if (notAfter.getTime() <= now.getTime() || notBefore.getTime() > now.getTime()) {
      await opened.signer.close();
      throw new SealCertificateError(
        notAfter.getTime() <= now.getTime()
          ? `${variable}: the certificate expired on ${notAfter.toISOString()}`
          : `${variable}: the certificate is not valid before ${notBefore.toISOString()}`,
      );
    }
    seal = {
      certificates: opened.certificates,
      signer: opened.signer,
      subject: signer.subject.split('\n').join(', '),
      notAfter,
      fingerprintSha256: createHash('sha256').update(opened.certificates[0]!).digest('hex'),
      selfSigned: signer.checkIssued(signer),
    };
  } else {
    seal = loadSealCertificate(config, now);
    variable = config.sealP12Path !== undefined ? 'SEAL_P12' : path.join(config.dataDir, 'seal', 'seal.pem');
  }
  const digest = createHash('sha256').update(randomBytes(32)).digest();
  let probe: Uint8Array;
  try {
    probe = await seal.signer.signDigest(digest);
  } catch (error) {
    await seal.signer.close();
    throw new SealCertificateError(`${variable}: the key could not sign the start-up probe (${(error as Error).message})`);
  }
  let recovered: Buffer | undefined;
  try {
    recovered = publicDecrypt({ key: new X509Certificate(seal.certificates[0]!).publicKey, padding: constants.RSA_PKCS1_PADDING }, probe);
  } catch {
    recovered = undefined;
  }
  if (recovered === undefined || !recovered.equals(digestInfoOf(digest))) {
    await seal.signer.close();
    throw new SealCertificateError(`${variable}: the start-up probe signature does not verify under the certificate`);
  }
  return seal;
}

/** A seal whose key is outside the process (a PKCS#11 token, a CSC provider); a setup failure becomes the one-line SealCertificateError. */
async function openRemoteSeal(signer: Exclude<Config['sealSigner'], { kind: 'p12' }>, options: { probe?: boolean } = {}): Promise<{ signer: SealSigner; certificates: Uint8Array[] }> {
  try {
    return signer.kind === 'csc' ? await openCscSeal(signer, options) : await openPkcs11Seal(signer);
  } catch (error) {
    if (error instanceof Pkcs11SetupError || error instanceof CscSetupError) throw new SealCertificateError(error.message);
    throw error;
  }
}

/**
 * The SHA-256 of this installation's seal certificate, for the command line's verifiers and
 * `secrets adopt`: read as loadSealCertificate does (never generated), or from the token (its
 * certificate, the session closed at once) or SEAL_CERT_CHAIN for SEAL_SIGNER=pkcs11. Undefined
 * when the installation has no seal yet (no SEAL_P12 and none generated).
 */
export async function installationSealFingerprint(config: Pick<Config, 'sealP12Path' | 'sealP12Password' | 'dataDir' | 'sealSigner'>, now: Date | null): Promise<string | undefined> {
  if (config.sealSigner.kind !== 'p12') {
    const opened = await openRemoteSeal(config.sealSigner, { probe: false });
    await opened.signer.close();
    return createHash('sha256').update(opened.certificates[0]!).digest('hex');
  }
  if (config.sealP12Path === undefined && !fs.existsSync(path.join(config.dataDir, 'seal', 'seal.pem'))) return undefined;
  return loadSealCertificate(config, now).fingerprintSha256;
}
