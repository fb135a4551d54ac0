/**
 * Offline check of an evidence package (`npm run cli -- verify-package FILE.zip`; evidence.service.ts
 * makes them): needs neither the service nor its database. Every finding names the part it is
 * about, so one flipped byte anywhere is reported against the part that holds it:
 *
 * - the ZIP itself: each entry inflates and matches its CRC-32;
 * - manifest.json: its detached CMS signature (manifest.json.p7s) verifies, and it lists exactly
 *   the parts present;
 * - every part: its SHA-256 and size match the manifest;
 * - every PDF: its PAdES seal is valid and covers the whole file (pdf/verify.ts);
 * - the audit chain: seq 1..n without gaps, each prevHash the previous hash, the last hash the
 *   manifest's head, each certificate's recorded head at its seq; with the audit key, every HMAC;
 * - every biometric file: the SHA-256 of its strokes is the one the chain recorded for that field.
 */
import { createHash, webcrypto } from 'node:crypto';
import { crc32, inflateRawSync } from 'node:zlib';
import * as pkijs from 'pkijs';
import { GENESIS_HASH, hashAuditEvent } from '../audit/audit.service.ts';
import { summariseBiometricValue } from '../field/field-values.ts';
import { verifyPdf } from '../pdf/verify.ts';

export const EVIDENCE_FORMAT = 'envelope-evidence-package/1';

/** One part of the package as the manifest lists it. */
export type EvidencePart = { path: string; kind: 'document' | 'certificate' | 'audit-chain' | 'biometric' | 'readme'; sha256: string; byteSize: number; locale?: string; documentId?: string; fieldId?: string };

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

export type PartFinding = { path: string; valid: boolean; problems: string[] };
export type PackageReport = {
  valid: boolean;
  envelopeId: string | null;
  parts: PartFinding[];
  chain: { length: number; headHash: string | null; linked: boolean; hmacChecked: boolean } | null;
  /** The failing parts' paths, in the order found. */
  failures: string[];
};

/** The entries of a ZIP (stored or deflated), each checked against its CRC-32. */
export function readZip(bytes: Buffer): { entries: Map<string, Buffer>; problems: { path: string; problem: string }[] } {
  let end = -1;
  for (let offset = bytes.length - 22; offset >= Math.max(0, bytes.length - 65_557); offset--) {
    if (bytes.readUInt32LE(offset) === 0x06054b50) {
      end = offset;
      break;
    }
  }
  if (end === -1) throw new Error('not a ZIP file (no end of central directory)');
  const count = bytes.readUInt16LE(end + 10);
  let cursor = bytes.readUInt32LE(end + 16);
  const entries = new Map<string, Buffer>();
  const problems: { path: string; problem: string }[] = [];
  for (let index = 0; index < count; index++) {
    if (bytes.readUInt32LE(cursor) !== 0x02014b50) throw new Error('the ZIP central directory is damaged');
    const method = bytes.readUInt16LE(cursor + 10);
    const crc = bytes.readUInt32LE(cursor + 16);
    const compressedSize = bytes.readUInt32LE(cursor + 20);
    const nameLength = bytes.readUInt16LE(cursor + 28);
    const extraLength = bytes.readUInt16LE(cursor + 30);
    const commentLength = bytes.readUInt16LE(cursor + 32);
    const localOffset = bytes.readUInt32LE(cursor + 42);
    const name = bytes.toString('utf8', cursor + 46, cursor + 46 + nameLength);
    cursor += 46 + nameLength + extraLength + commentLength;
    if (name.endsWith('/')) continue;
    try {
      if (bytes.readUInt32LE(localOffset) !== 0x04034b50) throw new Error('its local header is damaged');
      const start = localOffset + 30 + bytes.readUInt16LE(localOffset + 26) + bytes.readUInt16LE(localOffset + 28);
      const raw = bytes.subarray(start, start + compressedSize);
      const data = method === 0 ? Buffer.from(raw) : method === 8 ? inflateRawSync(raw) : undefined;
      if (data === undefined) throw new Error(`compression method ${method} is not supported`);
      if (crc32(data) >>> 0 !== crc) throw new Error('its bytes do not match the ZIP checksum (CRC-32)');
      entries.set(name, data);
    } catch (error) {
      problems.push({ path: name, problem: `cannot be read from the ZIP: ${(error as Error).message}` });
      entries.set(name, Buffer.alloc(0));
    }
  }
  return { entries, problems };
}

/**
 * Checks the detached CMS signature over manifest.json. When it does not verify, the signed
 * message-digest attribute tells which side changed: it still matches manifest.json, so the
 * signature file is damaged; it does not, so manifest.json was changed.
 */
async function cmsVerifies(signature: Buffer, content: Buffer): Promise<{ valid: boolean; signerSha256: string | null; culprit: 'manifest.json' | 'manifest.json.p7s' | null; problem: string | null }> {
  let signedData: pkijs.SignedData;
  try {
    const buffer = signature.buffer.slice(signature.byteOffset, signature.byteOffset + signature.byteLength) as ArrayBuffer;
    signedData = new pkijs.SignedData({ schema: pkijs.ContentInfo.fromBER(buffer).content });
  } catch (error) {
    return { valid: false, signerSha256: null, culprit: 'manifest.json.p7s', problem: `the signature cannot be read: ${(error as Error).message}` };
  }
  const certificate = (signedData.certificates ?? []).find((candidate): candidate is pkijs.Certificate => candidate instanceof pkijs.Certificate);
  const signerSha256 = certificate ? createHash('sha256').update(Buffer.from(certificate.toSchema().toBER(false))).digest('hex') : null;
  const digestAttribute = signedData.signerInfos[0]?.signedAttrs?.attributes.find((attribute) => attribute.type === '1.2.840.113549.1.9.4');
  const signedDigest = digestAttribute ? Buffer.from((digestAttribute.values[0] as { valueBlock: { valueHexView: Uint8Array } }).valueBlock.valueHexView).toString('hex') : null;
  const contentDigest = createHash('sha256').update(content).digest('hex');
  let verified = false;
  try {
    const data = content.buffer.slice(content.byteOffset, content.byteOffset + content.byteLength) as ArrayBuffer;
    verified = (await signedData.verify({ signer: 0, data, checkChain: false, extendedMode: true })).signatureVerified === true;
  } catch {
    verified = false;
  }
  if (verified) return { valid: true, signerSha256, culprit: null, problem: null };
  return signedDigest === contentDigest
    ? { valid: false, signerSha256, culprit: 'manifest.json.p7s', problem: 'its signature value does not verify (the signature file was changed)' }
    : { valid: false, signerSha256, culprit: 'manifest.json', problem: 'it does not match its signature in manifest.json.p7s (manifest.json was changed)' };
}

type ChainLine = Parameters<typeof hashAuditEvent>[1] & { hash: string; details: Record<string, unknown> };

export async function verifyEvidencePackage(bytes: Buffer, options: { auditKey?: Buffer; ourCertificateSha256?: string[] } = {}): Promise<PackageReport> {
  const findings = new Map<string, PartFinding>();
  const failures: string[] = [];
  const fail = (path: string, problem: string) => {
    const finding = findings.get(path) ?? { path, valid: true, problems: [] };
    finding.valid = false;
    finding.problems.push(problem);
    findings.set(path, finding);
    if (!failures.includes(path)) failures.push(path);
  };
  const ok = (path: string) => {
    if (!findings.has(path)) findings.set(path, { path, valid: true, problems: [] });
  };
  const report = (envelopeId: string | null, chain: PackageReport['chain']): PackageReport => ({ valid: failures.length === 0, envelopeId, parts: [...findings.values()], chain, failures });

  let zip: ReturnType<typeof readZip>;
  try {
    zip = readZip(bytes);
  } catch (error) {
    fail('(zip)', (error as Error).message);
    return report(null, null);
  }
  for (const problem of zip.problems) fail(problem.path, problem.problem);
  const { entries } = zip;

  // The manifest, and its signature.
  const manifestBytes = entries.get('manifest.json');
  const signature = entries.get('manifest.json.p7s');
  if (manifestBytes === undefined) {
    fail('manifest.json', 'missing');
    return report(null, null);
  }
  let manifest: EvidenceManifest;
  try {
    manifest = JSON.parse(manifestBytes.toString('utf8')) as EvidenceManifest;
    if (manifest.format !== EVIDENCE_FORMAT || !Array.isArray(manifest.parts)) throw new Error(`not a ${EVIDENCE_FORMAT} manifest`);
  } catch (error) {
    fail('manifest.json', `cannot be read: ${(error as Error).message}`);
    return report(null, null);
  }
  let manifestSigner: string | null = null;
  if (signature === undefined) fail('manifest.json.p7s', 'missing');
  else {
    const checked = await cmsVerifies(signature, manifestBytes);
    if (!checked.valid) fail(checked.culprit!, checked.problem!);
    else {
      ok('manifest.json');
      ok('manifest.json.p7s');
      manifestSigner = checked.signerSha256;
      if (options.ourCertificateSha256 !== undefined && options.ourCertificateSha256.length > 0 && !options.ourCertificateSha256.includes(checked.signerSha256 ?? '')) {
        fail('manifest.json.p7s', 'signed by a certificate that is not this installation’s seal');
      }
    }
  }

  // Every part: present, listed, its hash and size.
  const listed = new Set(manifest.parts.map((part) => part.path));
  for (const name of entries.keys()) {
    if (name !== 'manifest.json' && name !== 'manifest.json.p7s' && !listed.has(name)) fail(name, 'not listed in manifest.json');
  }
  for (const part of manifest.parts) {
    const content = entries.get(part.path);
    if (content === undefined) {
      fail(part.path, 'listed in manifest.json but missing from the package');
      continue;
    }
    const digest = createHash('sha256').update(content).digest('hex');
    if (digest !== part.sha256 || content.length !== part.byteSize) fail(part.path, `its SHA-256 (${digest}) does not match manifest.json (${part.sha256})`);
    else ok(part.path);
  }

  // Every PDF: its seal.
  const sealSigners = new Set<string>();
  for (const part of manifest.parts.filter((entry) => entry.kind === 'document' || entry.kind === 'certificate')) {
    const content = entries.get(part.path);
    if (content === undefined || content.length === 0) continue;
    const verification = await verifyPdf(content, { ourCertificateSha256: options.ourCertificateSha256 ?? [] });
    const signer = verification.signatures.at(-1)?.signer?.sha256;
    if (verification.valid && signer !== undefined && !failures.includes(part.path)) sealSigners.add(signer);
    if (!verification.valid) fail(part.path, `its PAdES seal does not verify: ${verification.signatures.find((entry) => !entry.valid)?.problem ?? 'the last signature does not cover the whole file'}`);
    const named = verification.signatures.at(-1)?.envelopeId;
    if (verification.valid && named !== null && named !== undefined && named !== manifest.envelopeId) fail(part.path, `sealed for envelope ${named}, not ${manifest.envelopeId}`);
  }

  // The manifest is signed with the certificate that sealed the PDFs (a changed certificate in the
  // signature file can leave the signature verifying under its own key).
  if (manifestSigner !== null && sealSigners.size > 0 && !sealSigners.has(manifestSigner)) fail('manifest.json.p7s', 'signed by a certificate other than the one that sealed the PDFs');

  // The audit chain.
  let chainSummary: PackageReport['chain'] = null;
  const chainPart = manifest.parts.find((part) => part.kind === 'audit-chain');
  const chainBytes = chainPart ? entries.get(chainPart.path) : undefined;
  let lines: ChainLine[] = [];
  if (chainPart === undefined || chainBytes === undefined) fail(chainPart?.path ?? 'audit/audit-chain.jsonl', 'missing');
  else {
    const name = chainPart.path;
    try {
      lines = chainBytes.toString('utf8').split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as ChainLine);
    } catch (error) {
      fail(name, `a line is not JSON: ${(error as Error).message}`);
    }
    let previous = GENESIS_HASH;
    let linked = lines.length > 0;
    for (const [index, line] of lines.entries()) {
      if (line.seq !== index + 1) {
        fail(name, `event ${index + 1} is missing (found seq ${line.seq})`);
        linked = false;
        break;
      }
      if (line.prevHash !== previous) {
        fail(name, `event ${line.seq} does not link to the event before it`);
        linked = false;
        break;
      }
      if (line.streamId !== manifest.envelopeId) fail(name, `event ${line.seq} belongs to another chain`);
      if (options.auditKey !== undefined && hashAuditEvent(options.auditKey, line) !== line.hash) {
        fail(name, `event ${line.seq} does not match its hash (HMAC with the given audit key)`);
        linked = false;
        break;
      }
      previous = line.hash;
    }
    if (linked && previous !== manifest.chain.headHash) fail(name, `the chain ends at ${previous}, not at the head manifest.json names`);
    for (const certificate of manifest.certificates ?? []) {
      const at = lines[certificate.chainSeq - 1];
      if (at === undefined || at.hash !== certificate.chainHead) fail(name, `the chain does not hold the head the certificate ${certificate.path} includes (event ${certificate.chainSeq})`);
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
    const content = entries.get(part.path);
    if (content === undefined || content.length === 0) continue;
    try {
      const body = JSON.parse(content.toString('utf8')) as { fieldId: string; strokes: unknown };
      const digest = summariseBiometricValue({ strokes: body.strokes }).strokesSha256;
      const expected = recorded.get(body.fieldId);
      if (expected === undefined) fail(part.path, 'the audit chain records no submission of this field');
      else if (expected !== digest) fail(part.path, 'its strokes do not match the SHA-256 the audit chain recorded');
    } catch (error) {
      fail(part.path, `cannot be read: ${(error as Error).message}`);
    }
  }
  return report(manifest.envelopeId, chainSummary);
}
