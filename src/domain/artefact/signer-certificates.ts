/**
 * Signers' own signatures at a trust service (issue 35) as the certificate of completion states
 * them: for each `signer_signature` row that is `signed`, the level asked, the trust service, the
 * signer's certificate described from its QC statements (pdf/certificate-description.ts), and
 * whether it validates (docs/artefacts.md, "Signature levels").
 *
 * "Validates" here means what the service can establish on its own, without the network and
 * without a trust list of its own (the certificate of completion is fixed at closing, by a worker):
 * - the sealed documents carry a PAdES signature by this very certificate (its SHA-256) and every
 *   such signature verifies against the bytes it covers: the verify machinery (pdf/verify.ts, in a
 *   PDF worker) run on each sealed file, once per document, only for envelopes that have such rows;
 * - the certificate was within its validity period when the signer signed (`signed_at`).
 * Whether the certificate chains to a trusted list is not stated: the provider's CA is whatever the
 * team configured, and a chain to TRUST_ANCHORS (with revocation from the /DSS) is what `POST
 * /verify` of the sealed file reports. Without sealed documents (a voided or expired envelope, or a
 * certificate rendered without file access) the signature is `unchecked`.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { BlobStore } from '../../shared/blob-store/index.ts';
import type { CertificateTrustSignature } from '../pdf/audit-pdf-layout.ts';
import { type CertificateDescription, describeCertificate } from '../pdf/certificate-description.ts';
import type { SignatureReport } from '../pdf/verify.ts';
import type { PdfWorkers } from '../pdf/worker-pool.ts';
import { teamTrustServices } from '../trust/trust-services.ts';

/** What reading the sealed files needs: the store they are in and a PDF worker to verify them. */
export type SealedFileAccess = { blobStore: BlobStore; pdfWorkers: PdfWorkers };

type SignerSignatureRow = {
  agent_id: string;
  person_index: number;
  level: string;
  trust_service_id: string;
  certificates: string[] | null;
  signed_at: Date | null;
};

type SealedDocument = { id: string; name: string; sealed_sha256: string | null };

const describe = (certificates: string[] | null): CertificateDescription | null => {
  const first = certificates?.[0];
  if (typeof first !== 'string') return null;
  try {
    return describeCertificate(Buffer.from(first, 'base64'));
  } catch {
    return null;
  }
};

/**
 * The envelope's signed signer signatures, keyed `agentId:personIndex`, each with its validation.
 * Each sealed document is verified at most once, and only when there is a signature to look for.
 */
export async function signerSignaturesForCertificate(
  em: EntityManager,
  envelope: { id: string; teamId: string },
  options: { documents: SealedDocument[]; files?: SealedFileAccess },
): Promise<Map<string, CertificateTrustSignature>> {
  const rows = await em.execute<SignerSignatureRow[]>(
    `select agent_id, person_index, level, trust_service_id, certificates, signed_at from signer_signature where envelope_id = ? and status = 'signed' order by signed_at, id`,
    [envelope.id],
  );
  const found = new Map<string, CertificateTrustSignature>();
  if (rows.length === 0) return found;
  const services = await teamTrustServices(em, envelope.teamId);
  const sealed = options.documents.filter((document) => document.sealed_sha256 !== null);
  const reports = options.files === undefined || sealed.length === 0 ? undefined : await sealedSignatures(options.files, envelope.teamId, sealed);
  for (const row of rows) {
    const certificate = describe(row.certificates);
    const signedAt = row.signed_at === null ? null : new Date(row.signed_at).toISOString();
    found.set(`${row.agent_id}:${row.person_index}`, {
      level: row.level === 'qualified' ? 'qualified' : 'advanced',
      trustServiceId: row.trust_service_id,
      trustServiceName: services.find((service) => service.id === row.trust_service_id)?.name ?? null,
      signedAt,
      certificate,
      validation: validationOf(certificate, signedAt, reports),
    });
  }
  return found;
}

/** Every sealed document's signatures, by the verify machinery (a PDF worker each). */
async function sealedSignatures(files: SealedFileAccess, team: string, documents: SealedDocument[]): Promise<{ name: string; signatures: SignatureReport[] }[]> {
  const reports: { name: string; signatures: SignatureReport[] }[] = [];
  for (const document of documents) {
    const copy = await files.blobStore.localCopy(document.sealed_sha256!);
    try {
      const verification = await files.pdfWorkers.verify(copy.path, [], { team });
      reports.push({ name: document.name, signatures: verification.signatures });
    } finally {
      copy.release();
    }
  }
  return reports;
}

function validationOf(
  certificate: CertificateDescription | null,
  signedAt: string | null,
  reports: { name: string; signatures: SignatureReport[] }[] | undefined,
): CertificateTrustSignature['validation'] {
  if (certificate === null) return { status: 'invalid', withinValidity: null, documents: [], reason: 'no-certificate' };
  const withinValidity = signedAt === null ? null : certificate.notBefore <= signedAt && signedAt <= certificate.notAfter;
  if (reports === undefined) return { status: 'unchecked', withinValidity, documents: [], reason: 'no-sealed-document' };
  const documents = reports.flatMap((report) => {
    const mine = report.signatures.filter((signature) => signature.type === 'signature' && signature.signer?.sha256 === certificate.sha256);
    return mine.length === 0 ? [] : [{ name: report.name, valid: mine.every((signature) => signature.valid) }];
  });
  const reason: CertificateTrustSignature['validation']['reason'] =
    documents.length === 0 ? 'not-in-sealed-documents' : documents.some((document) => !document.valid) ? 'signature-mismatch' : withinValidity === false ? 'outside-validity' : null;
  return { status: reason === null ? 'valid' : 'invalid', withinValidity, documents, reason };
}
