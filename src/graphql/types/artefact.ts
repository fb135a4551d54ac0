import type { Upload } from 'graphql-upload-minimal';
import { issueAuditPdfUrl, issueDownloadUrl, issueEvidencePackageUrl } from '../../domain/artefact/download.service.ts';
import { issueSigningFinalCopyUrl } from '../../domain/artefact/final-copy.service.ts';
import { verifyUploadedPdf } from '../../domain/artefact/verify.service.ts';
import type { CertificateDescription } from '../../domain/pdf/certificate-description.ts';
import type { SignatureReport, TimestampReport } from '../../domain/pdf/verify.ts';
import { builder } from '../builder.ts';
import { AuditChainVerification } from './audit.ts';
import { openUpload } from './document.ts';

export const DownloadUrl = builder.objectRef<{ url: string; expiresAt: Date }>('DownloadUrl').implement({
  description: 'A short-lived signed URL a browser can fetch without the key header.',
  fields: (t) => ({
    url: t.exposeString('url', { description: 'GET it for the file (application/pdf, or application/zip for the whole envelope).' }),
    expiresAt: t.field({ type: 'DateTime', resolve: (link) => link.expiresAt }),
  }),
});

builder.queryField('downloadUrl', (t) =>
  t.field({
    type: DownloadUrl,
    description:
      'A signed URL, valid for 5 minutes, for one document’s PDF (REST: GET /envelopes/{id}/documents/{documentId}/pdf) or, without documentId, ' +
      'the ZIP of every document (GET /envelopes/{id}/pdf). Before finalization the files are draft copies; after it, the sealed files. ' +
      'Each fetch is recorded as artefact.downloaded.',
    args: { envelopeId: t.arg.id({ required: true }), documentId: t.arg.id({ required: false }) },
    resolve: (_root, args, context) =>
      issueDownloadUrl(context, { envelopeId: String(args.envelopeId), documentId: args.documentId === null || args.documentId === undefined ? null : String(args.documentId) }),
  }),
);

builder.queryField('signingFinalCopy', (t) =>
  t.field({
    type: DownloadUrl,
    description:
      'For a signing page (X-Signing-Token, no team key) once its envelope is finalized: a URL, valid for 5 minutes, for this recipient’s copy of the sealed documents ' +
      '(GET /api/v1/key/final-copy/{link}: the PDF, or a ZIP for several). Envelope.NotFinalized before (status in context); Signing.InvalidToken for a link that died before ' +
      'the envelope closed (its role was delegated away). Each fetch is recorded as artefact.downloaded with the recipient’s agent as actor.',
    resolve: (_root, _args, context) => issueSigningFinalCopyUrl(context),
  }),
);

const AuditPdfLocaleEnum = builder.enumType('AuditPdfLocale', {
  description: 'The language of the audit-log PDF.',
  values: { EN_US: { value: 'en-US' }, TR_TR: { value: 'tr-TR' } } as const,
});

builder.queryField('auditLogPdfUrl', (t) =>
  t.field({
    type: DownloadUrl,
    description:
      'A signed URL, valid for 5 minutes, for the certificate of completion (REST: GET /envelopes/{id}/audit/pdf?locale=): the file fixed when the envelope closed, ' +
      'the same bytes at every download; with current: true, a variant rendered now with every event so far, marked as not the fixed certificate. ' +
      'Only for finalized, voided or expired envelopes: Envelope.NotFinalized otherwise, with the status in context.',
    args: {
      envelopeId: t.arg.id({ required: true }),
      locale: t.arg({ type: AuditPdfLocaleEnum, required: false }),
      current: t.arg.boolean({ required: false, description: 'true: the on-demand variant, not the fixed certificate (REST: ?current=true).' }),
    },
    resolve: (_root, args, context) => issueAuditPdfUrl(context, { envelopeId: String(args.envelopeId), locale: args.locale ?? 'en-US', current: args.current === true }),
  }),
);

builder.queryField('evidencePackageUrl', (t) =>
  t.field({
    type: DownloadUrl,
    description:
      'A signed URL, valid for 5 minutes, for the evidence package (REST: GET /envelopes/{id}/evidence): a ZIP with every sealed document, the fixed certificate of completion, ' +
      'the audit chain as JSON lines, the raw biometric data, README.txt and a signed manifest; npm run cli -- verify-package FILE.zip checks it offline. ' +
      'Only for finalized, voided or expired envelopes: Envelope.NotFinalized otherwise.',
    args: { envelopeId: t.arg.id({ required: true }) },
    resolve: (_root, args, context) => issueEvidencePackageUrl(context, { envelopeId: String(args.envelopeId) }),
  }),
);

const PdfSignatureTimestamp = builder.objectRef<{ time: string; valid: boolean }>('PdfSignatureTimestamp').implement({
  description: 'An RFC 3161 signature timestamp embedded in a seal.',
  fields: (t) => ({
    time: t.field({ type: 'DateTime', resolve: (stamp) => new Date(stamp.time) }),
    valid: t.exposeBoolean('valid', { description: 'The token is intact and stamps this signature.' }),
  }),
});

const PdfSignatureType = builder.enumType('PdfSignatureType', {
  description: 'A signature, or a document timestamp (/DocTimeStamp, SubFilter ETSI.RFC3161: PAdES B-LTA).',
  values: { SIGNATURE: { value: 'signature' }, DOCUMENT_TIMESTAMP: { value: 'document-timestamp' } } as const,
});

const PadesLevelEnum = builder.enumType('PadesLevel', {
  description: 'The PAdES baseline level a seal reached (ETSI EN 319 142-1; docs/artefacts.md).',
  values: {
    B_B: { value: 'B-B', description: 'The seal alone.' },
    B_T: { value: 'B-T', description: 'With a valid RFC 3161 signature timestamp.' },
    B_LT: { value: 'B-LT', description: 'And a /DSS with revocation data for every certificate of the seal’s chain that is not self-issued.' },
    B_LTA: { value: 'B-LTA', description: 'And a valid document timestamp over the whole file.' },
  } as const,
});

const PdfTimestampType = builder.enumType('PdfTimestampType', {
  description: 'A signature timestamp (in the seal’s CMS) or a document timestamp (a /DocTimeStamp of its own).',
  values: { SIGNATURE: { value: 'signature' }, DOCUMENT: { value: 'document' } } as const,
});

const PdfTimestamp = builder.objectRef<TimestampReport>('PdfTimestamp').implement({
  description: 'One RFC 3161 timestamp of the file.',
  fields: (t) => ({
    type: t.field({ type: PdfTimestampType, resolve: (stamp) => stamp.type }),
    time: t.field({ type: 'DateTime', resolve: (stamp) => new Date(stamp.time) }),
    valid: t.exposeBoolean('valid', { description: 'The token is intact and stamps what it should (the seal’s signature value, or the bytes the document timestamp covers).' }),
  }),
});

const PdfDssSummary = builder.objectRef<{ certificates: number; ocspResponses: number; crls: number }>('PdfDssSummary').implement({
  description: 'What the document security store (/DSS) holds.',
  fields: (t) => ({
    certificates: t.exposeInt('certificates'),
    ocspResponses: t.exposeInt('ocspResponses'),
    crls: t.exposeInt('crls'),
  }),
});

const PdfChainStatus = builder.enumType('PdfChainStatus', {
  description: 'The signer certificate’s chain, validated up to the trust anchors (TRUST_ANCHORS) at the signature’s time.',
  values: {
    TRUSTED: { value: 'trusted', description: 'A valid path to one of the anchors.' },
    UNTRUSTED: { value: 'untrusted', description: 'No valid path (an unknown issuer, an expired or not yet valid certificate, a bad signature in the chain).' },
    UNCHECKED: { value: 'unchecked', description: 'No anchors configured, or no certificate in the signature.' },
  } as const,
});

const PdfChainValidation = builder.objectRef<SignatureReport['chain']>('PdfChainValidation').implement({
  fields: (t) => ({
    status: t.field({ type: PdfChainStatus, resolve: (chain) => chain.status }),
    anchor: t.string({ nullable: true, description: 'The subject of the anchor the path ends at.', resolve: (chain) => chain.anchor }),
    problem: t.string({ nullable: true, resolve: (chain) => chain.problem }),
  }),
});

const PdfRevocationStatus = builder.enumType('PdfRevocationStatus', {
  description: 'The signer certificate’s status as the file’s /DSS says (an OCSP response or CRL signed by its issuer).',
  values: {
    GOOD: { value: 'good' },
    REVOKED: { value: 'revoked' },
    UNKNOWN: { value: 'unknown', description: 'The /DSS holds no revocation data for it.' },
    NOT_APPLICABLE: { value: 'not-applicable', description: 'A self-issued certificate: its own anchor.' },
  } as const,
});

const PdfRevocationSource = builder.enumType('PdfRevocationSource', { values: { OCSP: { value: 'ocsp' }, CRL: { value: 'crl' } } as const });

const PdfRevocation = builder.objectRef<SignatureReport['revocation']>('PdfRevocation').implement({
  fields: (t) => ({
    status: t.field({ type: PdfRevocationStatus, resolve: (revocation) => revocation.status }),
    source: t.field({ type: PdfRevocationSource, nullable: true, resolve: (revocation) => revocation.source }),
  }),
});

const CertificateLevelEnum = builder.enumType('CertificateLevel', {
  description:
    'The level a signature made with a certificate can claim from the certificate’s QC statements (ETSI EN 319 412-5; docs/artefacts.md, "Signature levels"). ' +
    'What the certificate says about itself: whether its issuer is a qualified trust service is the chain’s question (TRUST_ANCHORS).',
  values: {
    QUALIFIED: {
      value: 'qualified',
      description: 'QcCompliance and QcSSCD: a qualified certificate whose key is in a qualified creation device (a qualified electronic signature or seal, eIDAS Art. 3(12), 3(27)).',
    },
    ADVANCED: {
      value: 'advanced',
      description: 'Anything else: an advanced signature at most (eIDAS Art. 26); with QcCompliance but no QcSSCD (qualifiedCertificate true) one supported by a qualified certificate.',
    },
  } as const,
});

const QcTypeEnum = builder.enumType('QcType', {
  description: 'QcType (0.4.0.1862.1.6): what the certificate is for.',
  values: {
    ESIGN: { value: 'esign', description: 'Electronic signatures (a natural person).' },
    ESEAL: { value: 'eseal', description: 'Electronic seals (a legal person).' },
    EWEB: { value: 'eweb', description: 'Website authentication.' },
  } as const,
});

const QcStatementsSummary = builder.objectRef<CertificateDescription['qcStatements']>('QcStatements').implement({
  description: 'What a certificate’s QC statements extension (1.3.6.1.5.5.7.1.3) says.',
  fields: (t) => ({
    compliance: t.exposeBoolean('compliance', { description: 'QcCompliance (0.4.0.1862.1.1): issued as a qualified certificate.' }),
    sscd: t.exposeBoolean('sscd', { description: 'QcSSCD (0.4.0.1862.1.4): the private key is in a qualified signature or seal creation device.' }),
    types: t.field({ type: [QcTypeEnum], resolve: (statements) => statements.types }),
  }),
});

const SignerCertificate = builder.objectRef<CertificateDescription>('SignerCertificate').implement({
  description: 'A signer’s certificate: its names, serial, validity, fingerprint, QC statements and the level they claim.',
  fields: (t) => ({
    subject: t.exposeString('subject'),
    issuer: t.exposeString('issuer'),
    serialNumber: t.exposeString('serialNumber', { description: 'Hexadecimal, lower case.' }),
    notBefore: t.field({ type: 'DateTime', resolve: (certificate) => new Date(certificate.notBefore) }),
    notAfter: t.field({ type: 'DateTime', resolve: (certificate) => new Date(certificate.notAfter) }),
    sha256: t.exposeString('sha256', { description: 'SHA-256 of the certificate’s DER, hexadecimal.' }),
    level: t.field({ type: CertificateLevelEnum, resolve: (certificate) => certificate.level }),
    qualifiedCertificate: t.exposeBoolean('qualifiedCertificate', { description: 'QcCompliance: a qualified certificate, whether or not its key is declared in a QSCD.' }),
    qcStatements: t.field({ type: QcStatementsSummary, resolve: (certificate) => certificate.qcStatements }),
  }),
});

const PdfSignatureReport = builder.objectRef<SignatureReport>('PdfSignatureReport').implement({
  description: 'One signature of a PDF, checked against the bytes its /ByteRange covers.',
  fields: (t) => ({
    type: t.field({ type: PdfSignatureType, resolve: (report) => report.type }),
    subFilter: t.string({ nullable: true, resolve: (report) => report.subFilter }),
    valid: t.exposeBoolean('valid', { description: 'The CMS signature matches the covered bytes (and its timestamp, if any, is valid).' }),
    problem: t.string({ nullable: true, resolve: (report) => report.problem }),
    coversWholeFile: t.exposeBoolean('coversWholeFile'),
    byteRange: t.field({
      type: ['Int'],
      description: 'The /ByteRange: offset and length of the covered bytes before and after the signature’s /Contents.',
      resolve: (report) => report.byteRange,
    }),
    signingTime: t.string({ nullable: true, description: 'The time the signature claims (/M, a PDF date); a document timestamp’s token time.', resolve: (report) => report.signingTime }),
    level: t.field({
      type: PadesLevelEnum,
      nullable: true,
      description: 'This signature’s PAdES level; null for a document timestamp or a signature that does not verify.',
      resolve: (report) => report.level,
    }),
    chain: t.field({ type: PdfChainValidation, resolve: (report) => report.chain }),
    revocation: t.field({ type: PdfRevocation, resolve: (report) => report.revocation }),
    signerSubject: t.string({ nullable: true, resolve: (report) => report.signer?.subject ?? null }),
    signerIssuer: t.string({ nullable: true, resolve: (report) => report.signer?.issuer ?? null }),
    signerSerialNumber: t.string({ nullable: true, description: 'Hexadecimal.', resolve: (report) => report.signer?.serialNumber ?? null }),
    signerNotAfter: t.field({ type: 'DateTime', nullable: true, resolve: (report) => (report.signer ? new Date(report.signer.notAfter) : null) }),
    signerCertificateSha256: t.string({ nullable: true, resolve: (report) => report.signer?.sha256 ?? null }),
    signerCertificate: t.field({
      type: SignerCertificate,
      nullable: true,
      description: 'The signer’s certificate with the level its QC statements claim (qualified, advanced); null when the signature carries none.',
      resolve: (report) => report.signer,
    }),
    timestamp: t.field({ type: PdfSignatureTimestamp, nullable: true, resolve: (report) => report.timestamp }),
    reason: t.string({ nullable: true, resolve: (report) => report.reason }),
    ours: t.exposeBoolean('ours', { description: 'Signed with this service’s seal certificate.' }),
    envelopeId: t.id({ nullable: true, resolve: (report) => report.envelopeId }),
    documentId: t.id({ nullable: true, resolve: (report) => report.documentId }),
  }),
});

const SealedPdfVerification = builder.objectRef<Awaited<ReturnType<typeof verifyUploadedPdf>>>('SealedPdfVerification').implement({
  description: 'What npm run cli -- verify reports, and the audit chain of the envelope the seal names.',
  fields: (t) => ({
    valid: t.exposeBoolean('valid', {
      description: 'Every signature is valid, the last one covers the whole file, and nothing but long-term validation data (a /DSS, document timestamps) was added after the seal.',
    }),
    problem: t.string({ nullable: true, description: 'Why the file is not valid when no one signature says it (a change after the seal).', resolve: (report) => report.problem }),
    level: t.field({ type: PadesLevelEnum, nullable: true, description: 'The PAdES level the seal reached; null without a valid seal.', resolve: (report) => report.level }),
    timestamps: t.field({ type: [PdfTimestamp], description: 'Every timestamp: the seal’s signature timestamp and each document timestamp.', resolve: (report) => report.timestamps }),
    dss: t.field({ type: PdfDssSummary, nullable: true, resolve: (report) => report.dss }),
    ours: t.exposeBoolean('ours'),
    envelopeId: t.id({ nullable: true, resolve: (report) => report.envelopeId }),
    signatures: t.field({ type: [PdfSignatureReport], resolve: (report) => report.signatures }),
    auditChain: t.field({
      type: AuditChainVerification,
      nullable: true,
      description: 'The named envelope’s audit chain, when the seal is ours and the envelope is your team’s; null otherwise.',
      resolve: (report) => report.auditChain,
    }),
  }),
});

builder.queryField('verifySealedPdf', (t) =>
  t.field({
    type: SealedPdfVerification,
    description:
      'Checks any uploaded PDF (a multipart request, at most 48 MB) as npm run cli -- verify does (REST: POST /verify): every signature with its signer (subject, issuer, serial, and the level its certificate’s QC statements claim: signerCertificate), time, ' +
      'integrity, byte range, whole-file coverage, its own PAdES level, its chain to the trust anchors (TRUST_ANCHORS) and its revocation status from the /DSS; every timestamp, the level the file reached ' +
      '(B-B, B-T, B-LT, B-LTA), whether the last signature is this service’s seal and for which envelope; and that envelope’s audit chain. Not a PDF: Document.NotPdf.',
    args: { file: t.arg({ type: 'Upload', required: true }) },
    resolve: async (_root, args, context) => verifyUploadedPdf(context, { stream: (await openUpload(args.file as Upload)).stream }),
  }),
);
