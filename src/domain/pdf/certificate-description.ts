/**
 * A signer's certificate as the certificate of completion and `verify` name it (issue 35,
 * docs/artefacts.md "Signature levels"): subject, issuer, serial, validity, fingerprint, and the
 * level its QC statements (ETSI EN 319 412-5, extension 1.3.6.1.5.5.7.1.3) claim for a signature
 * made with it. Pure: no network, no trust list; what the certificate says about itself. Whether
 * its issuer really is a qualified trust service is the chain's question (`chain` in verify, to
 * the trusted lists put in TRUST_ANCHORS), not this one's.
 *
 * The level, after ETSI EN 319 102-1's AdES/QC classes:
 * - `qualified`: QcCompliance (0.4.0.1862.1.1, "issued as a qualified certificate") and QcSSCD
 *   (0.4.0.1862.1.4, "the private key is in a qualified signature/seal creation device"): a
 *   signature made with it is a qualified electronic signature (eIDAS Art. 3(12)), or a qualified
 *   seal for a QcType eseal certificate (Art. 3(27));
 * - `advanced`: anything else. With QcCompliance but no QcSSCD (`qcStatements.compliance` true,
 *   `qualifiedCertificate` true) it is an advanced signature supported by a qualified certificate
 *   (AdES/QC): a qualified certificate, but no claim that the key is in a QSCD, so not a QES.
 *   Without QcCompliance it is an advanced signature at most (Art. 26).
 */
import { createHash } from 'node:crypto';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { parseCertificate } from './ltv.ts';
import { toArrayBuffer } from './timestamp.ts';

const QC_STATEMENTS_EXTENSION = '1.3.6.1.5.5.7.1.3';
const QC_COMPLIANCE = '0.4.0.1862.1.1';
const QC_SSCD = '0.4.0.1862.1.4';
const QC_TYPE = '0.4.0.1862.1.6';
const QC_TYPES: Record<string, QcType> = { '0.4.0.1862.1.6.1': 'esign', '0.4.0.1862.1.6.2': 'eseal', '0.4.0.1862.1.6.3': 'eweb' };

export type QcType = 'esign' | 'eseal' | 'eweb';

/** What the certificate's QC statements say: issued as qualified, key in a QSCD, and for what (signatures, seals, web). */
export type QcStatements = { compliance: boolean; sscd: boolean; types: QcType[] };

/** The level a signature made with the certificate can claim, from its QC statements alone. */
export type CertificateLevel = 'qualified' | 'advanced';

export type CertificateDescription = {
  subject: string;
  issuer: string;
  /** Hexadecimal, lower case, the DER integer's bytes: as verify's `signer.serialNumber` and verify-package's `seal.serialNumber` spell it. */
  serialNumber: string;
  notBefore: string;
  notAfter: string;
  /** SHA-256 of the certificate's DER, hexadecimal. */
  sha256: string;
  qcStatements: QcStatements;
  level: CertificateLevel;
  /** QcCompliance: issued as a qualified certificate (with or without a QSCD). */
  qualifiedCertificate: boolean;
};

const attributeNames: Record<string, string> = {
  '2.5.4.3': 'CN',
  '2.5.4.6': 'C',
  '2.5.4.7': 'L',
  '2.5.4.8': 'ST',
  '2.5.4.10': 'O',
  '2.5.4.11': 'OU',
  '2.5.4.5': 'serialNumber',
  '2.5.4.42': 'GN',
  '2.5.4.4': 'SN',
  '2.5.4.97': 'organizationIdentifier',
  '1.2.840.113549.1.9.1': 'emailAddress',
};

/** A distinguished name as `CN=…, O=…` (the attributes in the certificate's order; an unknown attribute by its OID). */
export function distinguishedNameOf(name: pkijs.RelativeDistinguishedNames): string {
  return name.typesAndValues.map((entry) => `${attributeNames[entry.type] ?? entry.type}=${(entry.value.valueBlock as { value?: string }).value ?? ''}`).join(', ');
}

/** The QC statements of a certificate; all false and empty without the extension (or with one that does not parse). */
export function qcStatementsOf(certificate: pkijs.Certificate): QcStatements {
  const extension = certificate.extensions?.find((candidate) => candidate.extnID === QC_STATEMENTS_EXTENSION);
  const found: QcStatements = { compliance: false, sscd: false, types: [] };
  if (extension === undefined) return found;
  let statements: pkijs.QCStatements;
  try {
    statements = extension.parsedValue instanceof pkijs.QCStatements ? extension.parsedValue : pkijs.QCStatements.fromBER(toArrayBuffer(extension.extnValue.valueBlock.valueHexView));
  } catch {
    return found;
  }
  for (const statement of statements.values) {
    if (statement.id === QC_COMPLIANCE) found.compliance = true;
    else if (statement.id === QC_SSCD) found.sscd = true;
    else if (statement.id === QC_TYPE && statement.type instanceof asn1js.Sequence) {
      for (const item of statement.type.valueBlock.value) {
        const type = item instanceof asn1js.ObjectIdentifier ? QC_TYPES[item.valueBlock.toString()] : undefined;
        if (type !== undefined && !found.types.includes(type)) found.types.push(type);
      }
    }
  }
  return found;
}

/** `qualified` with QcCompliance and QcSSCD, else `advanced` (see the module's comment). */
export function certificateLevelOf(statements: QcStatements): CertificateLevel {
  return statements.compliance && statements.sscd ? 'qualified' : 'advanced';
}

/** A parsed certificate described (verify.ts has it parsed already). */
export function describeParsedCertificate(certificate: pkijs.Certificate): CertificateDescription {
  const der = certificate.toSchema().toBER(false);
  const qcStatements = qcStatementsOf(certificate);
  return {
    subject: distinguishedNameOf(certificate.subject),
    issuer: distinguishedNameOf(certificate.issuer),
    serialNumber: Buffer.from(certificate.serialNumber.valueBlock.valueHexView).toString('hex'),
    notBefore: certificate.notBefore.value.toISOString(),
    notAfter: certificate.notAfter.value.toISOString(),
    sha256: createHash('sha256').update(new Uint8Array(der)).digest('hex'),
    qcStatements,
    level: certificateLevelOf(qcStatements),
    qualifiedCertificate: qcStatements.compliance,
  };
}

/** A certificate (DER) described: its names, serial, validity, fingerprint, QC statements and the level they claim. */
export function describeCertificate(der: Uint8Array): CertificateDescription {
  return describeParsedCertificate(parseCertificate(der));
}
