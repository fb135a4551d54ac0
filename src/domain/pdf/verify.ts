/**
 * Offline verification of a sealed PDF (`npm run cli -- verify FILE.pdf`): each signature's CMS is
 * checked against the bytes its /ByteRange covers (pkijs recomputes the digest and checks the
 * RSA signature), whether the last one covers the whole file, the signer's certificate, any RFC
 * 3161 timestamp, and whether the seal is this service's (the certificate's SHA-256 matches the
 * configured seal) and for which envelope (the seal's /Reason names it).
 */
import { createHash, webcrypto } from 'node:crypto';
import * as pkijs from 'pkijs';
import { SEAL_REASON_PATTERN } from './seal-reason.ts';

pkijs.setEngine('node', new pkijs.CryptoEngine({ name: 'node', crypto: webcrypto as unknown as Crypto }));

export type SignatureReport = {
  subFilter: string | null;
  valid: boolean;
  problem: string | null;
  coversWholeFile: boolean;
  signer: { subject: string; notBefore: string; notAfter: string; sha256: string } | null;
  signingTime: string | null;
  /** The RFC 3161 signature timestamp: its time, and whether its token is intact and stamps this signature. */
  timestamp: { time: string; valid: boolean } | null;
  reason: string | null;
  ours: boolean;
  envelopeId: string | null;
  documentId: string | null;
};

export type PdfVerification = { signatures: SignatureReport[]; valid: boolean; ours: boolean; envelopeId: string | null };

const attributeNames: Record<string, string> = { '2.5.4.3': 'CN', '2.5.4.6': 'C', '2.5.4.7': 'L', '2.5.4.8': 'ST', '2.5.4.10': 'O', '2.5.4.11': 'OU' };

function toArrayBuffer(bytes: Uint8Array): ArrayBuffer {
  return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
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

export async function verifyPdf(file: Buffer, options: { ourCertificateSha256: string[] }): Promise<PdfVerification> {
  const text = file.toString('latin1');
  const signatures: SignatureReport[] = [];
  for (const match of text.matchAll(/\/ByteRange\s*\[\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*\]/g)) {
    const [a, b, c, d] = match.slice(1, 5).map(Number) as [number, number, number, number];
    const region = text.slice(Math.max(0, match.index - 4000), Math.min(text.length, c + 4000)).replace(text.slice(b, c), '');
    const report: SignatureReport = {
      subFilter: /\/SubFilter\s*\/([A-Za-z0-9.]+)/.exec(region)?.[1] ?? null,
      valid: false,
      problem: null,
      coversWholeFile: a === 0 && c + d === file.length,
      signer: null,
      signingTime: pdfString(region, 'M'),
      timestamp: null,
      reason: pdfString(region, 'Reason'),
      ours: false,
      envelopeId: null,
      documentId: null,
    };
    const ids = report.reason === null ? null : SEAL_REASON_PATTERN.exec(report.reason) ?? /envelope ([0-9a-f-]{36})/.exec(report.reason);
    report.envelopeId = ids?.[1] ?? null;
    report.documentId = ids?.[2] ?? null;
    try {
      if (c > file.length || c + d > file.length || b > c) throw new Error('the /ByteRange points outside the file');
      const hex = text.slice(b + 1, c - 1).replace(/(00)+$/, '');
      const cms = Buffer.from(hex.length % 2 === 0 ? hex : `${hex}0`, 'hex');
      const contentInfo = pkijs.ContentInfo.fromBER(toArrayBuffer(cms));
      const signedData = new pkijs.SignedData({ schema: contentInfo.content });
      const signed = Buffer.concat([file.subarray(a, a + b), file.subarray(c, c + d)]);
      const signerInfo = signedData.signerInfos[0]!;
      const stamp = (signerInfo.unsignedAttrs?.attributes ?? []).find((attribute) => attribute.type === '1.2.840.113549.1.9.16.2.14');
      if (stamp !== undefined) report.timestamp = await checkTimestamp(stamp.values[0], signerInfo);
      const certificate = (signedData.certificates ?? []).find((candidate): candidate is pkijs.Certificate => candidate instanceof pkijs.Certificate);
      if (certificate) {
        const der = Buffer.from(certificate.toSchema().toBER(false));
        report.signer = {
          subject: certificate.subject.typesAndValues
            .map((entry) => `${attributeNames[entry.type] ?? entry.type}=${(entry.value.valueBlock as { value?: string }).value ?? ''}`)
            .join(', '),
          notBefore: certificate.notBefore.value.toISOString(),
          notAfter: certificate.notAfter.value.toISOString(),
          sha256: createHash('sha256').update(der).digest('hex'),
        };
        report.ours = options.ourCertificateSha256.includes(report.signer.sha256);
      }
      const result = await signedData.verify({ signer: 0, data: toArrayBuffer(signed), checkChain: false, extendedMode: true });
      report.valid = result.signatureVerified === true && (report.timestamp === null || report.timestamp.valid);
      if (!report.valid) report.problem = 'the signature does not match the signed bytes (the file was changed after sealing)';
    } catch (error) {
      report.valid = false;
      report.problem = (error as { message?: string })?.message ?? String(error);
    }
    signatures.push(report);
  }
  const last = signatures.at(-1);
  return {
    signatures,
    valid: last !== undefined && signatures.every((signature) => signature.valid) && last.coversWholeFile,
    ours: last?.ours ?? false,
    envelopeId: last?.ours ? last.envelopeId : null,
  };
}
