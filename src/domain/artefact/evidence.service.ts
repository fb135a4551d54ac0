/**
 * The evidence package of a closed envelope (`GET /envelopes/{id}/evidence`, GraphQL
 * `evidencePackageUrl`; docs/artefacts.md, "The evidence package"): one streamed ZIP with every
 * sealed document, the fixed certificate of completion in each locale, the audit chain as JSON
 * lines (exactly the rows `audit verify` hashes), the raw data of each biometric signature, a
 * README on verifying each part offline, and `manifest.json` (the SHA-256 of every part) with a
 * detached CMS signature by the service's seal certificate (`manifest.json.p7s`).
 * `npm run cli -- verify-package FILE.zip` (evidence-check.ts) checks all of it offline.
 */
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { ZipArchive } from 'archiver';
import { sortedKeysJson } from '../../shared/sorted-keys-json.ts';
import { summariseBiometricValue } from '../field/field-values.ts';
import { auditPdfLocales } from '../pdf/audit-pdf-layout.ts';
import { PadesSigner } from '../pdf/seal.ts';
import type { ServiceContext } from '../service-context.ts';
import { keptAttachmentsOf } from './attachment-download.service.ts';
import { closedTeamEnvelope, fixedCertificateForDownload } from './audit-pdf.service.ts';
import { readChain } from './certificate.service.ts';
import type { Download } from './download.ts';
import { recordDownload } from './download-record.ts';
import { EVIDENCE_FORMAT, type EvidenceManifest, type EvidencePart } from './evidence-check.ts';
import { safeAttachmentNames, safeFileNames } from './file-names.ts';
import { sealMaterialOf } from './seal-certificate.ts';
import { nextEntryWritten } from './zip-entry.ts';

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

const README = (manifest: { envelopeId: string; chainLength: number; chainHead: string }) => `Evidence package of envelope ${manifest.envelopeId}
=====================================================================

What is in it
- documents/*.pdf: every document as sealed when the envelope was finalized (none when it was
  voided or expired: only finalized envelopes are sealed).
- certificate/certificate-en-US.pdf, certificate/certificate-tr-TR.pdf: the certificate of
  completion, fixed and sealed when the envelope closed.
- audit/audit-chain.jsonl: the envelope's audit chain, one event per line, every field the
  chain's hash covers plus the hash itself (${manifest.chainLength} events when this package was made, head
  ${manifest.chainHead}).
- attachments/*: the files signers uploaded for attachment fields and kept, as uploaded (each
  one's SHA-256 is also in the field.submitted event that named it, and in the certificate).
- biometrics/*.json: the raw pen data of each biometric signature: strokes of points with
  position (x, y), time in milliseconds (t) and pressure (p, 0 to 1).
- manifest.json: the SHA-256 and size of every part; manifest.json.p7s: a detached CMS
  (PKCS #7) signature over manifest.json by the service's seal certificate.

Checking it all at once (no service, no database needed)
    npm run cli -- verify-package FILE.zip [--audit-key KEY] [--seal-cert SEAL.pem]
prints a JSON report naming the certificate that sealed the package, and exits 2 when any part
fails (naming the part) or when neither the installation's seal nor SEAL.pem sealed it.

Checking each part by hand
1. The manifest: openssl cms -verify -binary -inform DER -in manifest.json.p7s
   -content manifest.json -noverify -out /dev/null  (add -CAfile with the seal's issuer instead
   of -noverify when the seal certificate comes from a CA you trust). Then compare each part with
   its manifest entry: sha256sum PART.
2. Every PDF (documents and certificates) carries a PAdES seal covering the whole file: open it
   in a PDF signature validator (Adobe Acrobat Reader, pdfsig from poppler-utils) or run
   npm run cli -- verify FILE.pdf. One changed byte makes the seal invalid.
3. The audit chain: line n has seq n; its prevHash is line n-1's hash (64 zeros for line 1);
   the certificate of completion prints the chain head it includes, which is the hash of the
   line with that seq. Each hash is HMAC-SHA256, keyed by the service's audit key
   (AUDIT_HMAC_KEY), over the canonical JSON (keys sorted, no spaces) of the line without its
   hash field. Without the key the links and the head can be checked; with it (verify-package
   --audit-key, or the service's own GET /api/v1/key/envelopes/{id}/audit/verify) every hash is
   recomputed, so an edited event is found.
4. Biometric data: the SHA-256 of the canonical strokes JSON is recorded in the chain, in the
   field.submitted event of that field (details.fields[].biometric.strokesSha256), and printed in
   the certificate; verify-package recomputes it.
`;

/** The evidence package as a streamed ZIP; its download is recorded in the chain (after the chain it carries was read). */
export async function evidencePackage(context: ServiceContext, options: { envelopeId: string }): Promise<Download> {
  const caller = await context.caller();
  const envelope = await closedTeamEnvelope(context, options.envelopeId);
  const certificates = [];
  for (const locale of auditPdfLocales) certificates.push({ locale, ...(await fixedCertificateForDownload(context, envelope.id, locale)) });

  const db = context.em.fork();
  const [info] = await db.execute<{ name: string; closed_at: Date | string | null }[]>(`select name, coalesce(completed_at, voided_at, expired_at) as closed_at from envelope where id = ?`, [
    envelope.id,
  ]);
  const documents = await db.execute<{ id: string; name: string; sealed_sha256: string | null; byte_size: number | null }[]>(
    `select id, name, sealed_sha256, null::int as byte_size from document where envelope_id = ? order by "order", id`,
    [envelope.id],
  );
  const biometricFields = await db.execute<{ id: string; identifier: string; recipient_id: string | null; value: Record<string, unknown> }[]>(
    `select id, identifier, recipient_id, value from field where envelope_id = ? and type = 'biometric_signature' and value is not null order by identifier, id`,
    [envelope.id],
  );
  const chain = await readChain(context.em, envelope.id);
  const chainBytes = Buffer.from(chain.map((event) => `${sortedKeysJson(event)}\n`).join(''), 'utf8');

  const parts: EvidencePart[] = [];
  const sources: { path: string; open: () => Promise<Readable> | Readable }[] = [];
  const names = safeFileNames(documents.map((document) => document.name));
  for (const [index, document] of documents.entries()) {
    if (document.sealed_sha256 === null) continue;
    const stat = await context.blobStore.stat(document.sealed_sha256);
    const entry = `documents/${names[index]}`;
    parts.push({ path: entry, kind: 'document', sha256: document.sealed_sha256, byteSize: stat?.byteSize ?? 0, documentId: document.id });
    const hash = document.sealed_sha256;
    sources.push({ path: entry, open: () => context.blobStore.openRead(hash) });
  }
  // Signers' kept attachments, as uploaded: the manifest names each with its hash (docs/fields.md#attachment).
  const attachments = await keptAttachmentsOf(context.reader, envelope.id);
  const attachmentNames = safeAttachmentNames(attachments);
  for (const [index, attachment] of attachments.entries()) {
    const entry = `attachments/${attachmentNames[index]}`;
    parts.push({ path: entry, kind: 'attachment', sha256: attachment.sha256, byteSize: attachment.size, attachmentId: attachment.id, name: attachment.name });
    sources.push({ path: entry, open: () => context.blobStore.openRead(attachment.sha256) });
  }
  for (const certificate of certificates) {
    const entry = `certificate/certificate-${certificate.locale}.pdf`;
    parts.push({ path: entry, kind: 'certificate', sha256: certificate.sha256, byteSize: certificate.byteSize, locale: certificate.locale });
    sources.push({ path: entry, open: () => context.blobStore.openRead(certificate.sha256) });
  }
  const inMemory = (entry: string, kind: EvidencePart['kind'], bytes: Buffer, extra: Partial<EvidencePart> = {}) => {
    parts.push({ path: entry, kind, sha256: sha256(bytes), byteSize: bytes.length, ...extra });
    sources.push({ path: entry, open: () => Readable.from([bytes]) });
  };
  inMemory('audit/audit-chain.jsonl', 'audit-chain', chainBytes);
  const biometricNames = safeFileNames(biometricFields.map((field) => field.identifier)).map((name) => name.replace(/\.pdf$/, '.json'));
  for (const [index, field] of biometricFields.entries()) {
    const summary = summariseBiometricValue(field.value);
    const body = { fieldId: field.id, identifier: field.identifier, recipientId: field.recipient_id, strokesSha256: summary.strokesSha256, summary, strokes: field.value.strokes };
    inMemory(`biometrics/${biometricNames[index]}`, 'biometric', Buffer.from(`${JSON.stringify(body, null, 1)}\n`, 'utf8'), { fieldId: field.id });
  }
  const head = chain.at(-1)!;
  inMemory('README.txt', 'readme', Buffer.from(README({ envelopeId: envelope.id, chainLength: chain.length, chainHead: head.hash }), 'utf8'));

  const manifest: EvidenceManifest = {
    format: EVIDENCE_FORMAT,
    envelopeId: envelope.id,
    envelopeName: info!.name,
    status: envelope.status,
    generatedAt: context.clock.now().toISOString(),
    chain: { length: chain.length, headHash: head.hash },
    certificates: certificates.map((certificate) => ({
      locale: certificate.locale,
      path: `certificate/certificate-${certificate.locale}.pdf`,
      sha256: certificate.sha256,
      chainSeq: certificate.chainSeq,
      chainHead: certificate.chainHead,
    })),
    parts,
  };
  const manifestBytes = Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`, 'utf8');
  const signature = await new PadesSigner(sealMaterialOf(context.seal), undefined, context.seal.signer.signDigest).sign(manifestBytes);

  await recordDownload(
    context,
    { teamId: caller.teamId, envelopeId: envelope.id },
    { format: 'evidence', chainHead: head.hash, manifestSha256: sha256(manifestBytes) },
    { type: 'api_key', id: caller.apiKeyId },
  );

  const date = info!.closed_at === null ? context.clock.now() : new Date(info!.closed_at);
  const archive = new ZipArchive({ zlib: { level: 6 } });
  const entries = [{ path: 'manifest.json', open: () => Readable.from([manifestBytes]) }, { path: 'manifest.json.p7s', open: () => Readable.from([signature]) }, ...sources];
  const feed = async () => {
    for (const entry of entries) {
      if (archive.destroyed) return;
      const stream = await entry.open();
      const written = nextEntryWritten(archive);
      archive.append(stream, { name: entry.path, date });
      await written;
      if (archive.destroyed) {
        stream.destroy();
        return;
      }
    }
    await archive.finalize();
  };
  feed().catch((error: unknown) => archive.destroy(error instanceof Error ? error : new Error(String(error))));
  return { fileName: `evidence-${envelope.id}.zip`, contentType: 'application/zip', stream: archive, sealed: true };
}
