/**
 * Offline verification of a sealed PDF (`npm run cli -- verify FILE.pdf`): each signature's CMS is
 * checked against the bytes its /ByteRange covers (pkijs recomputes the digest and checks the
 * RSA signature), whether the last one covers the whole file, the signer's certificate, any RFC
 * 3161 timestamp, and whether the seal is this service's (the certificate's SHA-256 matches the
 * configured seal) and for which envelope (the seal's /Reason names it).
 *
 * The PAdES level the seal reached (docs/artefacts.md): B-B (the seal), B-T (with a valid
 * signature timestamp), B-LT (a /DSS holding revocation data for every certificate of the seal's
 * chain that is not self-issued), B-LTA (a valid document timestamp over the whole file after
 * it). After the seal only what LTV adds may follow (ltvChangeProblem): a file changed otherwise
 * after sealing is not valid, whatever timestamp was added on top.
 */
import { createHash } from 'node:crypto';
import { decodePDFRawStream, PDFArray, PDFDict, PDFDocument, PDFName, type PDFObject, PDFRawStream, PDFRef } from 'pdf-lib';
import * as pkijs from 'pkijs';
import { type CertificateDescription, describeParsedCertificate, distinguishedNameOf } from './certificate-description.ts';
import { isSelfIssued, issuerOf, parseCertificate } from './ltv.ts';
import { SEAL_REASON_PATTERN } from './seal-reason.ts';
import { toArrayBuffer } from './timestamp.ts';

export type SignatureReport = {
  /** `signature`, or `document-timestamp` for a /DocTimeStamp (SubFilter ETSI.RFC3161). */
  type: 'signature' | 'document-timestamp';
  subFilter: string | null;
  valid: boolean;
  problem: string | null;
  coversWholeFile: boolean;
  /** The four numbers of its /ByteRange: offset and length of the bytes before and after /Contents. */
  byteRange: [number, number, number, number];
  /**
   * The signer's certificate (the first the CMS carries): subject, issuer, serial (hex), validity,
   * SHA-256 of its DER, and, since issue 35, what its QC statements say (`qcStatements`) and the
   * level they claim for a signature made with it (`level`: `qualified` with QcCompliance and
   * QcSSCD, else `advanced`; `qualifiedCertificate`: QcCompliance alone). pdf/certificate-description.ts.
   */
  signer: CertificateDescription | null;
  /**
   * This signature's PAdES baseline level (B-B with a valid CMS; B-T with a valid signature
   * timestamp; B-LT with revocation data in the /DSS for its chain; B-LTA with a valid document
   * timestamp after it); null for a document timestamp or a signature that does not verify.
   */
  level: PadesLevel | null;
  /**
   * The signer's chain validated up to TRUST_ANCHORS at the signature's time (its timestamp's,
   * else now): `trusted` (and the anchor's subject), `untrusted` (why), or `unchecked` (no
   * anchors configured, or no signer certificate).
   */
  chain: { status: 'trusted' | 'untrusted' | 'unchecked'; anchor: string | null; problem: string | null };
  /**
   * The signer certificate's revocation status as the file's /DSS says (an OCSP response or a
   * CRL signed by its issuer): `good`, `revoked`, `unknown` (no such data), or `not-applicable`
   * (a self-issued certificate, its own anchor).
   */
  revocation: { status: 'good' | 'revoked' | 'unknown' | 'not-applicable'; source: 'ocsp' | 'crl' | null };
  /** The /M time the signature claims; for a document timestamp, the token's time. */
  signingTime: string | null;
  /** The RFC 3161 signature timestamp: its time, and whether its token is intact and stamps this signature. */
  timestamp: { time: string; valid: boolean } | null;
  reason: string | null;
  ours: boolean;
  envelopeId: string | null;
  documentId: string | null;
};

export type PadesLevel = 'B-B' | 'B-T' | 'B-LT' | 'B-LTA';

/** Every timestamp of the file: the seal's signature timestamp and each document timestamp. */
export type TimestampReport = { type: 'signature' | 'document'; time: string; valid: boolean };

export type PdfVerification = {
  signatures: SignatureReport[];
  valid: boolean;
  /** Why the file is not valid when no one signature says it (a change after the seal that is not long-term validation data). */
  problem: string | null;
  ours: boolean;
  envelopeId: string | null;
  /** The PAdES baseline level the seal reached; null without a valid seal. */
  level: PadesLevel | null;
  timestamps: TimestampReport[];
  /** What the document security store holds; null without one. */
  dss: { certificates: number; ocspResponses: number; crls: number } | null;
};

/** The signer's chain up to one of `anchors` (pkijs's path validation; revocation is reported apart, from the DSS). */
async function validateChain(signer: pkijs.Certificate, pool: pkijs.Certificate[], anchors: pkijs.Certificate[], at: Date): Promise<SignatureReport['chain']> {
  if (anchors.length === 0) return { status: 'unchecked', anchor: null, problem: 'no trust anchors are configured (TRUST_ANCHORS)' };
  try {
    const engine = new pkijs.CertificateChainValidationEngine({ trustedCerts: anchors, certs: [...pool.filter((candidate) => candidate !== signer), signer], checkDate: at });
    const result = await engine.verify({ passedWhenNotRevValues: true });
    if (!result.result) return { status: 'untrusted', anchor: null, problem: result.resultMessage || 'no path to a trust anchor' };
    const top = result.certificatePath?.at(-1);
    return { status: 'trusted', anchor: top === undefined ? null : distinguishedNameOf(top.subject), problem: null };
  } catch (error) {
    return { status: 'untrusted', anchor: null, problem: (error as { resultMessage?: string; message?: string }).resultMessage ?? (error as Error).message ?? 'no path to a trust anchor' };
  }
}

/** The signer certificate's status as the DSS's OCSP responses and CRLs (signed by its issuer) say. */
async function revocationOf(certificate: pkijs.Certificate, pool: pkijs.Certificate[], dss: DssContent | null): Promise<SignatureReport['revocation']> {
  if (isSelfIssued(certificate)) return { status: 'not-applicable', source: null };
  if (dss === null) return { status: 'unknown', source: null };
  const issuer = await issuerOf(certificate, [...pool, ...dss.certificates]);
  if (issuer === undefined) return { status: 'unknown', source: null };
  for (const response of dss.ocspResponses) {
    try {
      const status = await response.getCertificateStatus(certificate, issuer);
      if (!status.isForCertificate || !(await response.verify({ trustedCerts: [issuer] }))) continue;
      if (status.status === 0) return { status: 'good', source: 'ocsp' };
      if (status.status === 1) return { status: 'revoked', source: 'ocsp' };
    } catch {
      // Not about this certificate, or not signed as it should be.
    }
  }
  for (const crl of dss.crls) {
    try {
      if (!crl.issuer.isEqual(issuer.subject) || !(await crl.verify({ issuerCertificate: issuer }))) continue;
      return { status: crl.isCertificateRevoked(certificate) ? 'revoked' : 'good', source: 'crl' };
    } catch {
      // Not this issuer's.
    }
  }
  return { status: 'unknown', source: null };
}

function pdfString(region: string, key: string): string | null {
  const match = new RegExp(`/${key}\\s*\\(((?:\\\\.|[^\\\\)])*)\\)`).exec(region);
  if (match) return match[1]!.replace(/\\(.)/g, '$1');
  const hex = new RegExp(`/${key}\\s*<([0-9A-Fa-f]*)>`).exec(region);
  if (!hex) return null;
  const bytes = Buffer.from(hex[1]!, 'hex');
  // UTF-16BE with a byte order mark, as pdf-lib writes non-ASCII text.
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return bytes.subarray(2).swap16().toString('utf16le');
  return bytes.toString('latin1');
}

async function checkTimestamp(token: unknown, signerInfo: pkijs.SignerInfo): Promise<{ time: string; valid: boolean }> {
  const signedData = new pkijs.SignedData({ schema: new pkijs.ContentInfo({ schema: token as never }).content });
  const content = signedData.encapContentInfo.eContent!.getValue();
  const tstInfo = pkijs.TSTInfo.fromBER(content);
  const expected = createHash('sha256').update(signerInfo.signature.valueBlock.valueHexView).digest();
  const imprintMatches = Buffer.from(tstInfo.messageImprint.hashedMessage.valueBlock.valueHexView).equals(expected);
  let tokenIntact = false;
  try {
    // For a timestamp token pkijs checks the TSTInfo's imprint against `data`, the stamped bytes:
    // here the seal's signature value.
    tokenIntact = (await signedData.verify({ signer: 0, checkChain: false, data: toArrayBuffer(signerInfo.signature.valueBlock.valueHexView) })) === true;
  } catch {
    tokenIntact = false;
  }
  return { time: tstInfo.genTime.toISOString(), valid: imprintMatches && tokenIntact };
}

/** A document timestamp's token checked against the bytes its /ByteRange covers. */
async function checkDocumentTimestamp(signedData: pkijs.SignedData, signed: Buffer): Promise<{ time: string; valid: boolean }> {
  const tstInfo = pkijs.TSTInfo.fromBER(signedData.encapContentInfo.eContent!.getValue());
  const imprintMatches = Buffer.from(tstInfo.messageImprint.hashedMessage.valueBlock.valueHexView).equals(createHash('sha256').update(signed).digest());
  let tokenIntact = false;
  try {
    tokenIntact = (await signedData.verify({ signer: 0, checkChain: false, data: toArrayBuffer(signed) })) === true;
  } catch {
    tokenIntact = false;
  }
  return { time: tstInfo.genTime.toISOString(), valid: imprintMatches && tokenIntact };
}

function textOf(object: PDFObject | undefined): string {
  if (object === undefined) return '';
  if (object instanceof PDFRawStream) return `${object.dict.toString()}${Buffer.from(object.contents).toString('latin1')}`;
  return object.toString();
}

/**
 * What changed after the seal, if more than long-term validation adds: the catalog may gain /DSS
 * (and /AcroForm), the AcroForm and its /Fields may gain signature fields, and new objects may be
 * the DSS's, document timestamps and their (invisible) fields. Null when that is all.
 */
async function ltvChangeProblem(file: Buffer, sealEnd: number, after: PDFDocument): Promise<string | null> {
  const before = await loadLenient(file.subarray(0, sealEnd));
  const root = after.context.trailerInfo.Root;
  if (!(root instanceof PDFRef) || textOf(before.context.trailerInfo.Root) !== root.toString()) return 'the catalog was replaced after the seal';
  const sameExcept = (old: PDFObject, now: PDFObject, keys: string[]) => {
    if (!(old instanceof PDFDict) || !(now instanceof PDFDict)) return false;
    const names = new Set([...old.keys(), ...now.keys()].map((key) => key.asString()));
    return [...names].every((name) => keys.includes(name) || textOf(old.get(PDFName.of(name.slice(1)))) === textOf(now.get(PDFName.of(name.slice(1)))));
  };
  const appended = (old: PDFObject, now: PDFObject) =>
    old instanceof PDFArray && now instanceof PDFArray && now.size() >= old.size() && old.asArray().every((item, index) => textOf(item) === textOf(now.get(index)));
  for (const [ref, now] of after.context.enumerateIndirectObjects()) {
    const old = before.context.lookup(ref);
    if (old !== undefined) {
      if (textOf(old) === textOf(now)) continue;
      if (ref === root || ref.toString() === root.toString()) {
        const oldForm = (old as PDFDict).get(PDFName.of('AcroForm'));
        const newForm = (now as PDFDict).get(PDFName.of('AcroForm'));
        const formOk =
          oldForm === undefined ||
          textOf(oldForm) === textOf(newForm) ||
          (oldForm instanceof PDFDict && newForm instanceof PDFDict && sameExcept(oldForm, newForm, ['/Fields', '/SigFlags']));
        if (formOk && sameExcept(old, now, ['/DSS', '/AcroForm'])) continue;
      } else if (sameExcept(old, now, ['/Fields', '/SigFlags']) && (old as PDFDict).has(PDFName.of('Fields'))) {
        continue;
      } else if (appended(old, now)) {
        continue;
      }
      return `object ${ref.toString()} was changed after the seal`;
    }
    if (now instanceof PDFDict) {
      const type = now.lookupMaybe(PDFName.of('Type'), PDFName)?.asString();
      if (type === '/Page' || type === '/Pages' || type === '/XObject' || type === '/Font') return `object ${ref.toString()} (${type}) was added after the seal`;
      if (now.lookupMaybe(PDFName.of('Subtype'), PDFName)?.asString() === '/Widget' || type === '/Annot') {
        const rect = now
          .lookupMaybe(PDFName.of('Rect'), PDFArray)
          ?.asArray()
          .map((item) => Number(item.toString())) ?? [0, 0, 0, 0];
        const isSignature = now.lookupMaybe(PDFName.of('FT'), PDFName)?.asString() === '/Sig';
        if (!isSignature || rect[0] !== rect[2] || rect[1] !== rect[3]) return `a visible annotation (${ref.toString()}) was added after the seal`;
      }
    }
  }
  return null;
}

type DssContent = {
  certificates: pkijs.Certificate[];
  ocspResponses: pkijs.BasicOCSPResponse[];
  crls: pkijs.CertificateRevocationList[];
  counts: { certificates: number; ocspResponses: number; crls: number };
};

function loadLenient(bytes: Buffer): Promise<PDFDocument> {
  return PDFDocument.load(bytes, { updateMetadata: false, ignoreEncryption: true, throwOnInvalidObject: false });
}

/** The /DSS of the file's last revision, parsed; null without one. */
function readDss(pdf: PDFDocument): DssContent | null {
  const dss = pdf.catalog.lookupMaybe(PDFName.of('DSS'), PDFDict);
  if (dss === undefined) return null;
  const items = (key: string): Uint8Array[] => {
    const array = dss.lookupMaybe(PDFName.of(key), PDFArray);
    if (array === undefined) return [];
    return array.asArray().flatMap((item) => {
      const stream = pdf.context.lookup(item);
      return stream instanceof PDFRawStream ? [decodePDFRawStream(stream).decode()] : [];
    });
  };
  const certs = items('Certs');
  const ocsps = items('OCSPs');
  const crls = items('CRLs');
  const parsed = <T>(list: Uint8Array[], parse: (bytes: Uint8Array) => T): T[] =>
    list.flatMap((bytes) => {
      try {
        return [parse(bytes)];
      } catch {
        return [];
      }
    });
  return {
    certificates: parsed(certs, parseCertificate),
    ocspResponses: parsed(ocsps, (bytes) => {
      const response = pkijs.OCSPResponse.fromBER(toArrayBuffer(bytes));
      return pkijs.BasicOCSPResponse.fromBER(toArrayBuffer(response.responseBytes!.response.valueBlock.valueHexView));
    }),
    crls: parsed(crls, (bytes) => pkijs.CertificateRevocationList.fromBER(toArrayBuffer(bytes))),
    counts: { certificates: certs.length, ocspResponses: ocsps.length, crls: crls.length },
  };
}

/** Whether the DSS says every certificate of the signer's chain up to a self-issued one was good (OCSP or CRL, signed by its issuer). */
async function chainHasRevocationData(signer: pkijs.Certificate, pool: pkijs.Certificate[], dss: DssContent): Promise<boolean> {
  let certificate = signer;
  for (let depth = 0; depth < 10; depth++) {
    if (isSelfIssued(certificate)) return true;
    const issuer = await issuerOf(certificate, pool);
    if (issuer === undefined) return false;
    let good = false;
    for (const response of dss.ocspResponses) {
      try {
        const status = await response.getCertificateStatus(certificate, issuer);
        if (status.isForCertificate && status.status === 0 && (await response.verify({ trustedCerts: [issuer] }))) good = true;
      } catch {
        // Not about this certificate, or not signed as it should be.
      }
      if (good) break;
    }
    for (const crl of good ? [] : dss.crls) {
      try {
        if (crl.issuer.isEqual(issuer.subject) && (await crl.verify({ issuerCertificate: issuer })) && !crl.isCertificateRevoked(certificate)) good = true;
      } catch {
        // Not this issuer's.
      }
      if (good) break;
    }
    if (!good) return false;
    certificate = issuer;
  }
  return false;
}

/**
 * The CMS inside a signature's `/Contents` hex string. The placeholder is padded with zeros after
 * the CMS, and the CMS may itself end in zero bytes (a signature value's or a timestamp token's
 * last byte is 0x00 once in 256), so its end is read from its DER length instead of found by
 * stripping zeros. A BER indefinite length (not what we write) falls back to stripping them.
 */
export function cmsFromContents(hex: string): Buffer {
  const padded = Buffer.from(hex.length % 2 === 0 ? hex : `${hex}0`, 'hex');
  if (padded.length < 2 || padded[0] !== 0x30) throw new Error('the signature /Contents holds no CMS');
  const first = padded[1]!;
  if (first === 0x80) return Buffer.from(hex.replace(/(00)+$/, ''), 'hex');
  let header = 2;
  let length = first;
  if (first > 0x80) {
    const count = first & 0x7f;
    if (count > 4) throw new Error('the signature /Contents has an impossible length');
    length = 0;
    for (let index = 0; index < count; index += 1) length = length * 256 + padded[2 + index]!;
    header += count;
  }
  if (header + length > padded.length) throw new Error('the signature /Contents is shorter than its CMS says');
  return padded.subarray(0, header + length);
}

/** The file does not begin like a PDF (no `%PDF-` in its first KiB): crosses the thread boundary by this code. */
export const NOT_PDF = 'NOT_PDF';

export async function verifyPdf(file: Buffer, options: { ourCertificateSha256: string[]; trustAnchors?: readonly Uint8Array[]; now?: Date }): Promise<PdfVerification> {
  if (!file.subarray(0, 1024).toString('latin1').includes('%PDF-')) throw Object.assign(new Error('the file is not a PDF (no %PDF- header)'), { code: NOT_PDF });
  const text = file.toString('latin1');
  const signatures: SignatureReport[] = [];
  /** Per signature report: what the chain and revocation checks after the loop need. */
  const parsed = new Map<SignatureReport, { certificate: pkijs.Certificate | undefined; certificates: pkijs.Certificate[] }>();
  let seal: { report: SignatureReport; certificate: pkijs.Certificate | undefined; certificates: pkijs.Certificate[]; end: number } | undefined;
  for (const match of text.matchAll(/\/ByteRange\s*\[\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*\]/g)) {
    const [a, b, c, d] = match.slice(1, 5).map(Number) as [number, number, number, number];
    // The signature dictionary: from its object's start to its end, without the /Contents.
    const objectStart = Math.max(text.lastIndexOf(' obj', match.index), match.index - 4000, 0);
    const objectEnd = text.indexOf('endobj', Math.max(c, match.index));
    const region = text.slice(objectStart, objectEnd === -1 ? Math.min(text.length, c + 4000) : objectEnd).replace(text.slice(b, c), '');
    const subFilter = /\/SubFilter\s*\/([A-Za-z0-9.]+)/.exec(region)?.[1] ?? null;
    const report: SignatureReport = {
      type: subFilter === 'ETSI.RFC3161' || /\/Type\s*\/DocTimeStamp/.test(region) ? 'document-timestamp' : 'signature',
      subFilter,
      valid: false,
      problem: null,
      coversWholeFile: a === 0 && c + d === file.length,
      byteRange: [a, b, c, d],
      signer: null,
      level: null,
      chain: { status: 'unchecked', anchor: null, problem: null },
      revocation: { status: 'unknown', source: null },
      signingTime: pdfString(region, 'M'),
      timestamp: null,
      reason: pdfString(region, 'Reason'),
      ours: false,
      envelopeId: null,
      documentId: null,
    };
    const ids = report.reason === null ? null : (SEAL_REASON_PATTERN.exec(report.reason) ?? /envelope ([0-9a-f-]{36})/.exec(report.reason));
    report.envelopeId = ids?.[1] ?? null;
    report.documentId = ids?.[2] ?? null;
    let certificate: pkijs.Certificate | undefined;
    let certificates: pkijs.Certificate[] = [];
    try {
      if (c > file.length || c + d > file.length || b > c) throw new Error('the /ByteRange points outside the file');
      const cms = cmsFromContents(text.slice(b + 1, c - 1));
      const contentInfo = pkijs.ContentInfo.fromBER(toArrayBuffer(cms));
      const signedData = new pkijs.SignedData({ schema: contentInfo.content });
      const signed = Buffer.concat([file.subarray(a, a + b), file.subarray(c, c + d)]);
      const signerInfo = signedData.signerInfos[0]!;
      certificates = (signedData.certificates ?? []).filter((candidate): candidate is pkijs.Certificate => candidate instanceof pkijs.Certificate);
      certificate = certificates[0];
      if (certificate) {
        report.signer = describeParsedCertificate(certificate);
        report.ours = report.type === 'signature' && options.ourCertificateSha256.includes(report.signer.sha256);
      }
      if (report.type === 'document-timestamp') {
        const stamp = await checkDocumentTimestamp(signedData, signed);
        report.signingTime = stamp.time;
        report.valid = stamp.valid;
        if (!report.valid) report.problem = 'the document timestamp does not match the bytes it covers';
      } else {
        const stamp = (signerInfo.unsignedAttrs?.attributes ?? []).find((attribute) => attribute.type === '1.2.840.113549.1.9.16.2.14');
        if (stamp !== undefined) report.timestamp = await checkTimestamp(stamp.values[0], signerInfo);
        const result = await signedData.verify({ signer: 0, data: toArrayBuffer(signed), checkChain: false, extendedMode: true });
        report.valid = result.signatureVerified === true && (report.timestamp === null || report.timestamp.valid);
        if (!report.valid) report.problem = 'the signature does not match the signed bytes (the file was changed after sealing)';
      }
    } catch (error) {
      report.valid = false;
      report.problem = (error as { message?: string })?.message ?? String(error);
    }
    if (report.type === 'signature') seal = { report, certificate, certificates, end: c + d };
    parsed.set(report, { certificate, certificates });
    signatures.push(report);
  }
  const last = signatures.at(-1);
  let problem: string | null = null;
  let level: PadesLevel | null = null;
  let dssCounts: PdfVerification['dss'] = null;
  let parsedLatest: PDFDocument | undefined;
  if (seal !== undefined && seal.report.valid && last !== undefined && last.coversWholeFile) {
    // Only document timestamps may follow the seal, and only with what long-term validation adds.
    // The file is parsed (pdf-lib) only when something follows the seal or it names a DSS.
    const afterSeal = signatures.slice(signatures.indexOf(seal.report) + 1);
    const updated = seal.end < file.length;
    let latest: PDFDocument | undefined;
    try {
      if (updated || text.includes('/DSS')) latest = await loadLenient(file);
      if (afterSeal.some((signature) => signature.type !== 'document-timestamp')) problem = 'a signature follows the seal';
      else if (updated) problem = await ltvChangeProblem(file, seal.end, latest!);
    } catch (error) {
      problem = `the updates after the seal cannot be read (${(error as Error).message})`;
    }
    parsedLatest = latest;
    let dss: DssContent | null = null;
    try {
      dss = latest === undefined ? null : readDss(latest);
    } catch {
      dss = null;
    }
    dssCounts = dss?.counts ?? null;
    if (problem === null) {
      level = 'B-B';
      if (seal.report.timestamp?.valid === true) level = 'B-T';
      if (level === 'B-T' && dss !== null && seal.certificate !== undefined && (await chainHasRevocationData(seal.certificate, [...seal.certificates, ...dss.certificates], dss)))
        level = 'B-LT';
      if (level === 'B-LT' && last.type === 'document-timestamp' && last.valid) level = 'B-LTA';
    }
  }
  // Every signature on its own: its level, its chain to the anchors, its certificate's status.
  let dssOfFile: DssContent | null = null;
  if (text.includes('/DSS')) {
    try {
      // The file as parsed for the seal's checks above when it was (parsing costs more than the rest).
      dssOfFile = readDss(parsedLatest ?? (await loadLenient(file)));
    } catch {
      dssOfFile = null;
    }
  }
  const anchors = (options.trustAnchors ?? []).map(parseCertificate);
  for (const [index, report] of signatures.entries()) {
    const { certificate, certificates } = parsed.get(report)!;
    if (certificate === undefined) {
      report.chain = { status: 'unchecked', anchor: null, problem: 'the signature carries no certificate' };
      continue;
    }
    const pool = [...certificates, ...(dssOfFile?.certificates ?? [])];
    const at = report.type === 'document-timestamp' ? report.signingTime : report.timestamp?.valid ? report.timestamp.time : null;
    report.chain = await validateChain(certificate, pool, anchors, at === null ? (options.now ?? new Date()) : new Date(at));
    report.revocation = await revocationOf(certificate, pool, dssOfFile);
    if (report.type !== 'signature' || !report.valid) continue;
    let signatureLevel: PadesLevel = 'B-B';
    if (report.timestamp?.valid === true) signatureLevel = 'B-T';
    if (signatureLevel === 'B-T' && dssOfFile !== null && (await chainHasRevocationData(certificate, pool, dssOfFile))) signatureLevel = 'B-LT';
    if (signatureLevel === 'B-LT' && signatures.slice(index + 1).some((later) => later.type === 'document-timestamp' && later.valid)) signatureLevel = 'B-LTA';
    report.level = signatureLevel;
  }
  const timestamps: TimestampReport[] = signatures.flatMap((signature): TimestampReport[] => {
    if (signature.type === 'document-timestamp') return signature.signingTime === null ? [] : [{ type: 'document', time: signature.signingTime, valid: signature.valid }];
    return signature.timestamp === null ? [] : [{ type: 'signature', time: signature.timestamp.time, valid: signature.timestamp.valid }];
  });
  const ours = seal?.report.ours ?? false;
  return {
    signatures,
    valid: last !== undefined && seal !== undefined && signatures.every((signature) => signature.valid) && last.coversWholeFile && problem === null,
    problem,
    ours,
    envelopeId: ours ? seal!.report.envelopeId : null,
    level,
    timestamps,
    dss: dssCounts,
  };
}
