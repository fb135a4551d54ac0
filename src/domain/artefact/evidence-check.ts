/**
 * Offline check of an evidence package (`npm run cli -- verify-package FILE.zip`; evidence.service.ts
 * makes them): needs neither the service nor its database. Every finding names the part it is
 * about, so one flipped byte anywhere is reported against the part that holds it:
 *
 * - the ZIP itself (zip-reader.ts): one entry per name, local and central names alike, no
 *   overlapping entries, each entry inflating within EVIDENCE_ENTRY_BYTES_LIMIT and matching its
 *   CRC-32;
 * - manifest.json: its detached CMS signature (manifest.json.p7s) verifies, by a seal this
 *   verifier accepts (the installation's, or one given with --seal-cert), and it lists exactly
 *   the parts present;
 * - every part: its SHA-256 and size match the manifest;
 * - every PDF: its PAdES seal is valid and covers the whole file (pdf/verify.ts);
 * - the audit chain: seq 1..n without gaps, each prevHash the previous hash, the last hash the
 *   manifest's head, each certificate's recorded head at its seq; with the audit key, every HMAC;
 * - every biometric file: the SHA-256 of its strokes is the one the chain recorded for that field.
 *
 * Every failure also has a stable name (PACKAGE_FAILURES), listed once in `failureNames`.
 */
import { createHash, webcrypto, X509Certificate } from 'node:crypto';
import * as pkijs from 'pkijs';
import { GENESIS_HASH, hashAuditEvent } from '../audit/audit.service.ts';
import { summariseBiometricValue } from '../field/field-values.ts';
import { verifyPdf } from '../pdf/verify.ts';
import { bufferSource, openZip, ZIP_FAILURES, ZipEntryError, type ZipProblem, type ZipSource } from './zip-reader.ts';

export const EVIDENCE_FORMAT = 'envelope-evidence-package/1';

/** One part of the package as the manifest lists it. */
/** `attachment`: a file a signer uploaded and kept, as uploaded (its hash also in the chain's field.submitted event); `name` its uploaded name. */
export type EvidencePart = {
  path: string;
  kind: 'document' | 'certificate' | 'audit-chain' | 'biometric' | 'attachment' | 'readme';
  sha256: string;
  byteSize: number;
  locale?: string;
  documentId?: string;
  fieldId?: string;
  attachmentId?: string;
  name?: string;
};

/** manifest.json: what the package holds, signed by manifest.json.p7s. */
export type EvidenceManifest = {
  format: typeof EVIDENCE_FORMAT;
  envelopeId: string;
  envelopeName: string;
  status: string;
  generatedAt: string;
  chain: { length: number; headHash: string };
  certificates: { locale: string; path: string; sha256: string; chainSeq: number; chainHead: string }[];
  parts: EvidencePart[];
};

pkijs.setEngine('node', new pkijs.CryptoEngine({ name: 'node', crypto: webcrypto as unknown as Crypto }));

export type PartFinding = { path: string; valid: boolean; problems: { name: string; problem: string }[] };
export type PackageReport = {
  valid: boolean;
  envelopeId: string | null;
  /** The certificate that signed manifest.json (null when the signature cannot be read). */
  seal: SealReport | null;
  parts: PartFinding[];
  chain: { length: number; headHash: string | null; linked: boolean; hmacChecked: boolean } | null;
  /** The failing parts' paths, in the order found. */
  failures: string[];
  /** The names of what failed (`EvidencePackage.…`), each once, in the order found. */
  failureNames: string[];
};

/** The most one entry of a package may inflate to: a document's 48 MB limit with room for its seal and long-term validation data. */
export const EVIDENCE_ENTRY_BYTES_LIMIT = 64 * 1024 * 1024;

/** Every entry of a package, each read within the bound (tests reading packages the service made). */
export function readZip(bytes: Buffer): { entries: Map<string, Buffer>; problems: ZipProblem[] } {
  const zip = openZip(bufferSource(bytes), { maxEntryBytes: EVIDENCE_ENTRY_BYTES_LIMIT });
  return { entries: new Map([...zip.entries].map(([name, entry]) => [name, entry.read()])), problems: zip.problems };
}

/**
 * Checks the detached CMS signature over manifest.json. When it does not verify, the signed
 * message-digest attribute tells which side changed: it still matches manifest.json, so the
 * signature file is damaged; it does not, so manifest.json was changed. The signer is the
 * certificate the signature verified under (not merely the first one the file carries: a file
 * may carry this installation's certificate beside the one that really signed).
 */
async function cmsVerifies(
  signature: Buffer,
  content: Buffer,
): Promise<{ valid: boolean; signer: Buffer | null; culprit: 'manifest.json' | 'manifest.json.p7s' | null; problem: string | null }> {
  let signedData: pkijs.SignedData;
  try {
    const buffer = signature.buffer.slice(signature.byteOffset, signature.byteOffset + signature.byteLength) as ArrayBuffer;
    signedData = new pkijs.SignedData({ schema: pkijs.ContentInfo.fromBER(buffer).content });
  } catch (error) {
    return { valid: false, signer: null, culprit: 'manifest.json.p7s', problem: `the signature cannot be read: ${(error as Error).message}` };
  }
  const digestAttribute = signedData.signerInfos[0]?.signedAttrs?.attributes.find((attribute) => attribute.type === '1.2.840.113549.1.9.4');
  const signedDigest = digestAttribute ? Buffer.from((digestAttribute.values[0] as { valueBlock: { valueHexView: Uint8Array } }).valueBlock.valueHexView).toString('hex') : null;
  const contentDigest = createHash('sha256').update(content).digest('hex');
  let verified = false;
  let signer: Buffer | null = null;
  try {
    const data = content.buffer.slice(content.byteOffset, content.byteOffset + content.byteLength) as ArrayBuffer;
    const result = await signedData.verify({ signer: 0, data, checkChain: false, extendedMode: true });
    verified = result.signatureVerified === true;
    if (result.signerCertificate) signer = Buffer.from(result.signerCertificate.toSchema().toBER(false));
  } catch {
    verified = false;
  }
  if (verified && signer !== null) return { valid: true, signer, culprit: null, problem: null };
  return signedDigest === contentDigest
    ? { valid: false, signer, culprit: 'manifest.json.p7s', problem: 'its signature value does not verify (the signature file was changed)' }
    : { valid: false, signer, culprit: 'manifest.json', problem: 'it does not match its signature in manifest.json.p7s (manifest.json was changed)' };
}

/** What the verifier says about the certificate that sealed the package (signed its manifest). */
export type SealReport = {
  subject: string;
  issuer: string;
  serialNumber: string;
  fingerprintSha256: string;
  /** Whether it is a seal this verifier was told to accept, and which told it: the installation's configuration, or --seal-cert. */
  trusted: boolean;
  trustedAs: 'installation' | 'seal-cert' | null;
};

/** A seal certificate the verifier accepts: the installation's own, or one an operator named (`--seal-cert`). */
export type TrustedSeal = { fingerprintSha256: string; source: 'installation' | 'seal-cert' };

function sealReportOf(der: Buffer, trusted: TrustedSeal[]): SealReport {
  const fingerprintSha256 = createHash('sha256').update(der).digest('hex');
  const match = trusted.find((seal) => seal.fingerprintSha256 === fingerprintSha256);
  let names = { subject: '', issuer: '', serialNumber: '' };
  try {
    const certificate = new X509Certificate(der);
    names = { subject: certificate.subject.split('\n').join(', '), issuer: certificate.issuer.split('\n').join(', '), serialNumber: certificate.serialNumber.toLowerCase() };
  } catch {
    // A certificate pkijs verified under but Node cannot print: the fingerprint still identifies it.
  }
  return { ...names, fingerprintSha256, trusted: match !== undefined, trustedAs: match?.source ?? null };
}

/** The stable names of what the verifier finds (docs/artefacts.md, "Offline verification"). */
export const PACKAGE_FAILURES = {
  ...ZIP_FAILURES,
  manifestInvalid: 'EvidencePackage.ManifestInvalid',
  signatureInvalid: 'EvidencePackage.SignatureInvalid',
  foreignSeal: 'EvidencePackage.ForeignSeal',
  noSealToCompare: 'EvidencePackage.NoSealToCompare',
  partUnlisted: 'EvidencePackage.PartUnlisted',
  partMissing: 'EvidencePackage.PartMissing',
  partChanged: 'EvidencePackage.PartChanged',
  pdfSealInvalid: 'EvidencePackage.PdfSealInvalid',
  chainBroken: 'EvidencePackage.ChainBroken',
  biometricMismatch: 'EvidencePackage.BiometricMismatch',
} as const;

type FailureName = (typeof PACKAGE_FAILURES)[keyof typeof PACKAGE_FAILURES];

type ChainLine = Parameters<typeof hashAuditEvent>[1] & { hash: string; details: Record<string, unknown> };

/**
 * Checks a package offline. `trustedSeals` are the certificates whose packages this verifier
 * accepts: a package sealed by any other (another installation's, or a forger's own) fails with
 * `EvidencePackage.ForeignSeal`, and with none to compare with it fails with
 * `EvidencePackage.NoSealToCompare`, so that `valid: true` always means "sealed by us".
 */
export async function verifyEvidencePackage(file: Buffer | ZipSource, options: { auditKey?: Buffer; trustedSeals: TrustedSeal[] }): Promise<PackageReport> {
  const findings = new Map<string, PartFinding>();
  const failures: string[] = [];
  const failureNames: string[] = [];
  const fail = (path: string, name: FailureName, problem: string) => {
    const finding = findings.get(path) ?? { path, valid: true, problems: [] };
    finding.valid = false;
    finding.problems.push({ name, problem });
    findings.set(path, finding);
    if (!failures.includes(path)) failures.push(path);
    if (!failureNames.includes(name)) failureNames.push(name);
  };
  const ok = (path: string) => {
    if (!findings.has(path)) findings.set(path, { path, valid: true, problems: [] });
  };
  let seal: SealReport | null = null;
  const report = (envelopeId: string | null, chain: PackageReport['chain']): PackageReport => ({
    valid: failures.length === 0,
    envelopeId,
    seal,
    parts: [...findings.values()],
    chain,
    failures,
    failureNames,
  });

  let zip: ReturnType<typeof openZip>;
  try {
    zip = openZip(Buffer.isBuffer(file) ? bufferSource(file) : file, { maxEntryBytes: EVIDENCE_ENTRY_BYTES_LIMIT });
  } catch (error) {
    fail('(zip)', PACKAGE_FAILURES.notZip, (error as Error).message);
    return report(null, null);
  }
  for (const problem of zip.problems) fail(problem.path, problem.failure, problem.message);
  const { entries } = zip;
  /** One entry's bytes (held only by the caller), or undefined with its failure recorded. */
  const read = (path: string): Buffer | undefined => {
    const entry = entries.get(path);
    if (entry === undefined) return undefined;
    try {
      return entry.read();
    } catch (error) {
      if (!(error instanceof ZipEntryError)) throw error;
      fail(path, error.failure, error.message);
      return undefined;
    }
  };

  // The manifest, and its signature.
  if (!entries.has('manifest.json')) {
    if (!failures.includes('manifest.json')) fail('manifest.json', PACKAGE_FAILURES.manifestInvalid, 'missing');
    return report(null, null);
  }
  const manifestBytes = read('manifest.json');
  if (manifestBytes === undefined) return report(null, null);
  let manifest: EvidenceManifest;
  try {
    manifest = JSON.parse(manifestBytes.toString('utf8')) as EvidenceManifest;
    if (manifest.format !== EVIDENCE_FORMAT || !Array.isArray(manifest.parts)) throw new Error(`not a ${EVIDENCE_FORMAT} manifest`);
  } catch (error) {
    fail('manifest.json', PACKAGE_FAILURES.manifestInvalid, `cannot be read: ${(error as Error).message}`);
    return report(null, null);
  }
  const signature = entries.has('manifest.json.p7s') ? read('manifest.json.p7s') : undefined;
  let manifestSigner: string | null = null;
  if (signature === undefined) {
    if (!failures.includes('manifest.json.p7s')) fail('manifest.json.p7s', PACKAGE_FAILURES.signatureInvalid, 'missing');
  } else {
    const checked = await cmsVerifies(signature, manifestBytes);
    if (checked.signer !== null) seal = sealReportOf(checked.signer, options.trustedSeals);
    if (!checked.valid) fail(checked.culprit!, PACKAGE_FAILURES.signatureInvalid, checked.problem!);
    else {
      ok('manifest.json');
      ok('manifest.json.p7s');
      manifestSigner = seal!.fingerprintSha256;
      if (options.trustedSeals.length === 0) {
        fail(
          'manifest.json.p7s',
          PACKAGE_FAILURES.noSealToCompare,
          'no seal certificate to compare with: run where the service’s configuration is (SEAL_P12, or DATA_DIR with seal/seal.pem), or name the certificate with --seal-cert FILE',
        );
      } else if (!seal!.trusted) {
        fail(
          'manifest.json.p7s',
          PACKAGE_FAILURES.foreignSeal,
          `sealed by a certificate that is neither this installation’s seal nor one given with --seal-cert: ${seal!.subject} (SHA-256 ${seal!.fingerprintSha256})`,
        );
      }
    }
  }

  // Every part: present, listed, its hash and size; every PDF, while its bytes are at hand: its seal.
  const listed = new Set(manifest.parts.map((part) => part.path));
  for (const name of entries.keys()) {
    if (name !== 'manifest.json' && name !== 'manifest.json.p7s' && !listed.has(name)) fail(name, PACKAGE_FAILURES.partUnlisted, 'not listed in manifest.json');
  }
  const sealSigners = new Set<string>();
  const trustedFingerprints = options.trustedSeals.map((trusted) => trusted.fingerprintSha256);
  for (const part of manifest.parts) {
    if (!entries.has(part.path)) {
      if (!failures.includes(part.path)) fail(part.path, PACKAGE_FAILURES.partMissing, 'listed in manifest.json but missing from the package');
      continue;
    }
    const content = read(part.path);
    if (content === undefined) continue;
    const digest = createHash('sha256').update(content).digest('hex');
    if (digest !== part.sha256 || content.length !== part.byteSize) fail(part.path, PACKAGE_FAILURES.partChanged, `its SHA-256 (${digest}) does not match manifest.json (${part.sha256})`);
    else ok(part.path);
    if ((part.kind !== 'document' && part.kind !== 'certificate') || content.length === 0) continue;
    let verification;
    try {
      verification = await verifyPdf(content, { ourCertificateSha256: trustedFingerprints });
    } catch (error) {
      fail(part.path, PACKAGE_FAILURES.pdfSealInvalid, `it cannot be checked as a PDF: ${(error as Error).message}`);
      continue;
    }
    const signer = verification.signatures.at(-1)?.signer?.sha256;
    if (verification.valid && signer !== undefined && !failures.includes(part.path)) sealSigners.add(signer);
    if (!verification.valid)
      fail(
        part.path,
        PACKAGE_FAILURES.pdfSealInvalid,
        `its PAdES seal does not verify: ${verification.signatures.find((entry) => !entry.valid)?.problem ?? 'the last signature does not cover the whole file'}`,
      );
    const named = verification.signatures.at(-1)?.envelopeId;
    if (verification.valid && named !== null && named !== undefined && named !== manifest.envelopeId)
      fail(part.path, PACKAGE_FAILURES.pdfSealInvalid, `sealed for envelope ${named}, not ${manifest.envelopeId}`);
  }

  // The manifest is signed with the certificate that sealed the PDFs (a changed certificate in the
  // signature file can leave the signature verifying under its own key).
  if (manifestSigner !== null && sealSigners.size > 0 && !sealSigners.has(manifestSigner))
    fail('manifest.json.p7s', PACKAGE_FAILURES.signatureInvalid, 'signed by a certificate other than the one that sealed the PDFs');

  // The audit chain.
  let chainSummary: PackageReport['chain'] = null;
  const chainPart = manifest.parts.find((part) => part.kind === 'audit-chain');
  const chainBytes = chainPart && entries.has(chainPart.path) ? read(chainPart.path) : undefined;
  let lines: ChainLine[] = [];
  if (chainPart === undefined || chainBytes === undefined) {
    const name = chainPart?.path ?? 'audit/audit-chain.jsonl';
    if (!failures.includes(name)) fail(name, PACKAGE_FAILURES.chainBroken, 'missing');
  } else {
    const name = chainPart.path;
    try {
      lines = chainBytes
        .toString('utf8')
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => JSON.parse(line) as ChainLine);
    } catch (error) {
      fail(name, PACKAGE_FAILURES.chainBroken, `a line is not JSON: ${(error as Error).message}`);
    }
    let previous = GENESIS_HASH;
    let linked = lines.length > 0;
    for (const [index, line] of lines.entries()) {
      if (line.seq !== index + 1) {
        fail(name, PACKAGE_FAILURES.chainBroken, `event ${index + 1} is missing (found seq ${line.seq})`);
        linked = false;
        break;
      }
      if (line.prevHash !== previous) {
        fail(name, PACKAGE_FAILURES.chainBroken, `event ${line.seq} does not link to the event before it`);
        linked = false;
        break;
      }
      if (line.streamId !== manifest.envelopeId) fail(name, PACKAGE_FAILURES.chainBroken, `event ${line.seq} belongs to another chain`);
      if (options.auditKey !== undefined && hashAuditEvent(options.auditKey, line) !== line.hash) {
        fail(name, PACKAGE_FAILURES.chainBroken, `event ${line.seq} does not match its hash (HMAC with the given audit key)`);
        linked = false;
        break;
      }
      previous = line.hash;
    }
    if (linked && previous !== manifest.chain.headHash) fail(name, PACKAGE_FAILURES.chainBroken, `the chain ends at ${previous}, not at the head manifest.json names`);
    for (const certificate of manifest.certificates ?? []) {
      const at = lines[certificate.chainSeq - 1];
      if (at === undefined || at.hash !== certificate.chainHead)
        fail(name, PACKAGE_FAILURES.chainBroken, `the chain does not hold the head the certificate ${certificate.path} includes (event ${certificate.chainSeq})`);
    }
    chainSummary = { length: lines.length, headHash: lines.at(-1)?.hash ?? null, linked, hmacChecked: options.auditKey !== undefined };
  }

  // Biometric data against the hashes the chain recorded.
  const recorded = new Map<string, string>();
  for (const line of lines) {
    if (line.type !== 'field.submitted' || !Array.isArray(line.details?.fields)) continue;
    for (const field of line.details.fields as { fieldId: string; biometric?: { strokesSha256: string } }[]) if (field.biometric) recorded.set(field.fieldId, field.biometric.strokesSha256);
  }
  for (const part of manifest.parts.filter((entry) => entry.kind === 'biometric')) {
    if (!entries.has(part.path) || failures.includes(part.path)) continue;
    const content = read(part.path);
    if (content === undefined || content.length === 0) continue;
    try {
      const body = JSON.parse(content.toString('utf8')) as { fieldId: string; strokes: unknown };
      const digest = summariseBiometricValue({ strokes: body.strokes }).strokesSha256;
      const expected = recorded.get(body.fieldId);
      if (expected === undefined) fail(part.path, PACKAGE_FAILURES.biometricMismatch, 'the audit chain records no submission of this field');
      else if (expected !== digest) fail(part.path, PACKAGE_FAILURES.biometricMismatch, 'its strokes do not match the SHA-256 the audit chain recorded');
    } catch (error) {
      fail(part.path, PACKAGE_FAILURES.biometricMismatch, `cannot be read: ${(error as Error).message}`);
    }
  }
  return report(manifest.envelopeId, chainSummary);
}
