/**
 * Downloads of an envelope's documents (docs/artefacts.md): after finalization the stored sealed
 * files, before it (and for voided or expired envelopes, which are never finalized) a draft copy
 * rendered now: the values submitted so far drawn in, unsealed, every page marked as a draft.
 * Every download appends `artefact.downloaded` to the envelope's audit chain.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { ZipArchive } from 'archiver';
import { BlobMissingError, BlobStoreUnavailableError } from '../../shared/blob-store/index.ts';
import { contentDisposition } from '../../shared/content-disposition.ts';
import { ServerBusyError } from '../../shared/errors.ts';
import { isUuid } from '../../shared/ids.ts';
import type { Metrics } from '../../shared/metrics.ts';
import { DocumentNotFoundError } from '../document/document.errors.ts';
import type { EnvelopeStatus } from '../envelope/envelope.entity.ts';
import { isClosedEnvelopeStatus } from '../envelope/envelope.entity.ts';
import { EnvelopeNotFinalizedError, EnvelopeNotFoundError } from '../envelope/envelope.errors.ts';
import { teamEnvelopes, wellFormedEnvelopeId } from '../envelope/team-envelope.ts';
import type { AuditPdfLocale } from '../pdf/audit-pdf-layout.ts';
import type { ServiceContext } from '../service-context.ts';
import { renderDraftCopy, sealEnvelopeArtefacts } from './artefact.service.ts';
import { downloadAttachment, keptAttachmentsOf } from './attachment-download.service.ts';
import { auditLogPdf } from './audit-pdf.service.ts';
import type { Download } from './download.ts';
import { type Downloader, recordDownload } from './download-record.ts';
import { DOWNLOAD_URL_TTL_SECONDS, signDownloadToken, verifyDownloadToken } from './download-url.ts';
import { evidencePackage } from './evidence.service.ts';
import { safeAttachmentNames, safeFileNames } from './file-names.ts';
import { nextEntryWritten } from './zip-entry.ts';

type DocumentRow = { documentId: string; name: string; contentSha256: string; sealedSha256: string | null };
export type Located = {
  envelopeId: string;
  teamId: string;
  status: string;
  /** When the envelope was finalized, voided or expired (null while it is open): the ZIP entries' time. */
  closedAt: Date | null;
  documents: DocumentRow[];
};

/** The team's envelope and its documents, in order (one statement; foreign and unknown ids alike are not found). */
async function locate(context: ServiceContext, envelopeId: string): Promise<Located> {
  const caller = await context.caller();
  return locateInTeam(context, caller.teamId, envelopeId);
}

/** As `locate`, for a team known otherwise (a recipient's final-copy link). */
export async function locateInTeam(context: ServiceContext, teamId: string, envelopeId: string): Promise<Located> {
  const rows = await teamEnvelopes(context.reader, teamId)
    .leftJoin('document as d', 'd.envelope_id', 'e.id')
    .select([
      'e.id as envelopeId',
      'e.status as status',
      'e.completed_at as completedAt',
      'e.voided_at as voidedAt',
      'e.expired_at as expiredAt',
      'd.id as documentId',
      'd.name as name',
      'd.content_sha256 as contentSha256',
      'd.sealed_sha256 as sealedSha256',
    ])
    .where('e.id', '=', wellFormedEnvelopeId(envelopeId))
    .orderBy('d.order')
    .orderBy('d.id')
    .execute();
  if (rows.length === 0) throw new EnvelopeNotFoundError(envelopeId);
  return {
    envelopeId,
    teamId,
    status: rows[0]!.status,
    closedAt: closedAtOf(rows[0]!),
    documents: rows
      .filter((row) => row.documentId !== null)
      .map((row) => ({ documentId: row.documentId!, name: row.name!, contentSha256: row.contentSha256!, sealedSha256: row.sealedSha256 })),
  };
}

function closedAtOf(row: { completedAt: unknown; voidedAt: unknown; expiredAt: unknown }): Date | null {
  const at = row.completedAt ?? row.voidedAt ?? row.expiredAt;
  return at === null || at === undefined ? null : new Date(at as string | Date);
}

/**
 * After finalization, every document has its sealed file: a document the artefact job has not
 * reached yet is sealed now (the job's own idempotent step, so it is still sealed once).
 */
export async function ensureSealed(context: ServiceContext, located: Located): Promise<Located> {
  if (located.status !== 'finalized' || located.documents.every((document) => document.sealedSha256 !== null)) return located;
  try {
    await sealEnvelopeArtefacts(
      { em: context.em, blobStore: context.blobStore, pdfWorkers: context.pdfWorkers, seal: context.seal, auditKey: context.auditKey, clock: context.clock, publicUrl: context.publicUrl },
      located.envelopeId,
    );
  } catch (error) {
    // A store that cannot be reached, or an original that is gone from it, keeps its own name
    // (Storage.Unavailable, Storage.ObjectMissing): retrying later would not help the caller know.
    if (error instanceof BlobStoreUnavailableError || error instanceof BlobMissingError) throw error;
    // The job retries what failed here (a timestamp authority that is down, say): the caller is
    // told to come back rather than given a file that is not the final one.
    throw new ServerBusyError('The signed documents are still being prepared; retry in a minute.', { envelopeId: located.envelopeId, retryAfterSeconds: 60 });
  }
  return locateInTeam(context, located.teamId, located.envelopeId);
}

/**
 * How long a presigned object-store URL (DOWNLOAD_REDIRECT) stays valid: long enough for the
 * browser to follow the redirect, short enough that a leaked URL is soon useless.
 */
export const REDIRECT_URL_TTL_SECONDS = 60;

export type { Downloader } from './download-record.ts';

async function keyDownloader(context: ServiceContext): Promise<Downloader> {
  return { type: 'api_key', id: (await context.caller()).apiKeyId };
}

/** A file to send: its stream, and what to remove once it has been sent (a rendered draft copy). */
type Source = { stream: Readable; cleanup(): Promise<void> };

async function openSource(context: ServiceContext, located: Located, document: DocumentRow): Promise<Source> {
  if (located.status === 'finalized' && document.sealedSha256 !== null) {
    return { stream: await context.blobStore.openRead(document.sealedSha256), cleanup: async () => undefined };
  }
  const directory = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'draft-'));
  const cleanup = () => fs.promises.rm(directory, { recursive: true, force: true });
  try {
    const outputPath = path.join(directory, 'draft.pdf');
    await renderDraftCopy(context, { id: document.documentId, contentSha256: document.contentSha256, teamId: located.teamId }, outputPath);
    const stream = fs.createReadStream(outputPath);
    stream.once('close', () => void cleanup());
    return { stream, cleanup };
  } catch (error) {
    await cleanup();
    throw error;
  }
}

export { safeFileNames } from './file-names.ts';

/**
 * A signed URL for one document's PDF (or, without `documentId`, the ZIP), valid for a few
 * minutes; the target is checked now, so an unknown one is refused as the download would be.
 */
export async function issueDownloadUrl(context: ServiceContext, options: { envelopeId: string; documentId?: string | null }): Promise<{ url: string; expiresAt: Date }> {
  const located = await locate(context, options.envelopeId);
  const documentId = options.documentId ?? null;
  if (documentId !== null && (!isUuid(documentId) || !located.documents.some((document) => document.documentId === documentId))) {
    throw new DocumentNotFoundError(documentId);
  }
  const expiresAt = new Date(context.clock.now().getTime() + DOWNLOAD_URL_TTL_SECONDS * 1000);
  const token = signDownloadToken(context.auditKey, await context.caller(), { envelopeId: located.envelopeId, documentId }, expiresAt);
  return { url: `${context.publicUrl}/api/v1/key/downloads/${token}`, expiresAt };
}

/** The download a signed URL names, as the key that asked for it. */
export async function downloadBySignedUrl(context: ServiceContext, token: string): Promise<Download> {
  const claims = verifyDownloadToken(context.auditKey, token, context.clock.now());
  const asIssuer: ServiceContext = Object.assign(Object.create(Object.getPrototypeOf(context) as object) as ServiceContext, context, { caller: async () => claims.caller });
  if (claims.evidence) return evidencePackage(asIssuer, { envelopeId: claims.envelopeId });
  if (claims.attachmentId !== undefined) return downloadAttachment(asIssuer, { envelopeId: claims.envelopeId, fileId: claims.attachmentId });
  if (claims.auditLocale !== undefined) return auditLogPdf(asIssuer, { envelopeId: claims.envelopeId, locale: claims.auditLocale as AuditPdfLocale, current: claims.current });
  return claims.documentId === null
    ? downloadEnvelopeZip(asIssuer, { envelopeId: claims.envelopeId })
    : downloadDocumentPdf(asIssuer, { envelopeId: claims.envelopeId, documentId: claims.documentId });
}

/** A signed URL for the audit-log PDF; refused now as the download would be (Envelope.NotFinalized before the envelope closes). */
export async function issueAuditPdfUrl(context: ServiceContext, options: { envelopeId: string; locale: AuditPdfLocale; current?: boolean }): Promise<{ url: string; expiresAt: Date }> {
  const located = await locate(context, options.envelopeId);
  if (!isClosedEnvelopeStatus(located.status)) throw new EnvelopeNotFinalizedError(located.envelopeId, located.status as EnvelopeStatus);
  const expiresAt = new Date(context.clock.now().getTime() + DOWNLOAD_URL_TTL_SECONDS * 1000);
  const token = signDownloadToken(
    context.auditKey,
    await context.caller(),
    { envelopeId: located.envelopeId, documentId: null, auditLocale: options.locale, current: options.current === true },
    expiresAt,
  );
  return { url: `${context.publicUrl}/api/v1/key/downloads/${token}`, expiresAt };
}

/** A signed URL for the evidence package; refused now as the download would be (Envelope.NotFinalized before the envelope closes). */
export async function issueEvidencePackageUrl(context: ServiceContext, options: { envelopeId: string }): Promise<{ url: string; expiresAt: Date }> {
  const located = await locate(context, options.envelopeId);
  if (!isClosedEnvelopeStatus(located.status)) throw new EnvelopeNotFinalizedError(located.envelopeId, located.status as EnvelopeStatus);
  const expiresAt = new Date(context.clock.now().getTime() + DOWNLOAD_URL_TTL_SECONDS * 1000);
  const token = signDownloadToken(context.auditKey, await context.caller(), { envelopeId: located.envelopeId, documentId: null, evidence: true }, expiresAt);
  return { url: `${context.publicUrl}/api/v1/key/downloads/${token}`, expiresAt };
}

/** One signed link of `issueDownloadLinks`. */
export type DownloadLink = { url: string; expiresAt: Date };

/** Every signed link an envelope has now: `issueDownloadLinks`' answer. */
export type DownloadLinks = {
  envelopeId: string;
  status: string;
  /** Sealed files once finalized; draft copies (every page marked) before. */
  sealed: boolean;
  documents: (DownloadLink & { documentId: string; name: string })[];
  /** Every document in one ZIP. */
  zip: DownloadLink;
  /** The certificate of completion (en-US) and the evidence package: only once the envelope is closed, else null. */
  auditLogPdf: DownloadLink | null;
  evidencePackage: DownloadLink | null;
  /** When every link above stops working. */
  expiresAt: Date;
};

/**
 * Every short-lived signed URL of an envelope at once (the MCP face's `download_links`): each
 * document's PDF, the ZIP and, once closed, the certificate of completion and the evidence
 * package. One locate, the same tokens `issueDownloadUrl`, `issueAuditPdfUrl` and
 * `issueEvidencePackageUrl` sign (so each fetch is recorded as those are), never a file's bytes
 * and never a recipient's signing link.
 */
export async function issueDownloadLinks(context: ServiceContext, options: { envelopeId: string }): Promise<DownloadLinks> {
  const located = await locate(context, options.envelopeId);
  const caller = await context.caller();
  const expiresAt = new Date(context.clock.now().getTime() + DOWNLOAD_URL_TTL_SECONDS * 1000);
  const link = (target: Parameters<typeof signDownloadToken>[2]): DownloadLink => ({
    url: `${context.publicUrl}/api/v1/key/downloads/${signDownloadToken(context.auditKey, caller, target, expiresAt)}`,
    expiresAt,
  });
  const closed = isClosedEnvelopeStatus(located.status);
  return {
    envelopeId: located.envelopeId,
    status: located.status,
    sealed: located.status === 'finalized',
    documents: located.documents.map((document) => ({ documentId: document.documentId, name: document.name, ...link({ envelopeId: located.envelopeId, documentId: document.documentId }) })),
    zip: link({ envelopeId: located.envelopeId, documentId: null }),
    auditLogPdf: closed ? link({ envelopeId: located.envelopeId, documentId: null, auditLocale: 'en-US' }) : null,
    evidencePackage: closed ? link({ envelopeId: located.envelopeId, documentId: null, evidence: true }) : null,
    expiresAt,
  };
}

/** `GET /envelopes/{id}/documents/{documentId}/pdf`. */
export async function downloadDocumentPdf(context: ServiceContext, options: { envelopeId: string; documentId: string }): Promise<Download> {
  const located = await locate(context, options.envelopeId);
  if (!isUuid(options.documentId) || !located.documents.some((document) => document.documentId === options.documentId)) {
    throw new DocumentNotFoundError(options.documentId);
  }
  return documentPdfOf(context, await ensureSealed(context, located), options.documentId, await keyDownloader(context));
}

/** One located document's PDF, its download recorded as `actor`'s. */
export async function documentPdfOf(context: ServiceContext, located: Located, documentId: string, actor: Downloader): Promise<Download> {
  const index = located.documents.findIndex((document) => document.documentId === documentId);
  const document = located.documents[index]!;
  const sealed = located.status === 'finalized';
  const fileName = safeFileNames(located.documents.map((entry) => entry.name))[index]!;
  const presign = context.blobStore.presignedDownloadUrl;
  if (context.downloadRedirect && sealed && document.sealedSha256 !== null && presign !== undefined) {
    // The stored sealed file is served by the object store itself; the URL is checked to name an
    // object first (a missing one is Storage.ObjectMissing here, not the store's 404 page later).
    if ((await context.blobStore.stat(document.sealedSha256)) === undefined) throw new BlobMissingError(document.sealedSha256);
    const redirectUrl = await presign.call(context.blobStore, document.sealedSha256, { expiresInSeconds: REDIRECT_URL_TTL_SECONDS, filename: fileName, contentType: 'application/pdf' });
    await recordDownload(context, located, { format: 'pdf', documentIds: [document.documentId], sealed }, actor);
    return { fileName, contentType: 'application/pdf', redirectUrl, sealed };
  }
  const source = await openSource(context, located, document);
  await recordDownload(context, located, { format: 'pdf', documentIds: [document.documentId], sealed }, actor);
  return { fileName, contentType: 'application/pdf', stream: source.stream, sealed };
}

/**
 * `GET /envelopes/{id}/pdf`: one ZIP entry per document, streamed. Each document is opened (or
 * rendered) only when the previous entry is written, so memory stays flat, the first bytes leave
 * before the last document is read, and a client that goes away (the stream is destroyed) stops
 * the work before the next document.
 */
export async function downloadEnvelopeZip(context: ZipContext, options: { envelopeId: string }): Promise<Download> {
  return envelopeZipOf(context, await ensureSealed(context, await locate(context, options.envelopeId)), await keyDownloader(context));
}

/** A ZIP's context: the service's, and the app's metrics where the face has them (how each ZIP ended is counted). */
type ZipContext = ServiceContext & { metrics?: Pick<Metrics, 'zipDownloads'> };

/** Every located document in one streamed ZIP, its download recorded as `actor`'s. */
export async function envelopeZipOf(context: ZipContext, located: Located, actor: Downloader): Promise<Download> {
  const names = safeFileNames(located.documents.map((document) => document.name));
  const sealed = located.status === 'finalized';
  // Signers' kept attachments follow the documents, under attachments/ (docs/artefacts.md).
  const attachments = await keptAttachmentsOf(context.reader, located.envelopeId);
  const attachmentNames = safeAttachmentNames(attachments).map((name) => `attachments/${name}`);
  // Entries are opened one at a time once the answer has started, when a missing object could only
  // cut the ZIP short. Every object the entries will read is looked up first, so a missing one is
  // answered as Storage.ObjectMissing (and no download recorded) instead.
  await Promise.all(
    located.documents.map(async (document) => {
      const sha256 = sealed && document.sealedSha256 !== null ? document.sealedSha256 : document.contentSha256;
      if ((await context.blobStore.stat(sha256)) === undefined) throw new BlobMissingError(sha256);
    }),
  );
  await Promise.all(
    attachments.map(async (attachment) => {
      if ((await context.blobStore.stat(attachment.sha256)) === undefined) throw new BlobMissingError(attachment.sha256);
    }),
  );
  await recordDownload(context, located, { format: 'zip', documentIds: located.documents.map((document) => document.documentId), sealed }, actor);
  // PDFs barely compress; a low level keeps the CPU for the next request.
  const archive = new ZipArchive({ zlib: { level: 1 } });
  const feed = async (): Promise<'completed' | 'client_gone'> => {
    for (const [index, document] of located.documents.entries()) {
      if (archive.destroyed) return 'client_gone';
      const source = await openSource(context, located, document);
      const written = nextEntryWritten(archive);
      // The entry's time is when the envelope was finalized (or closed): a fixed time, so the same
      // envelope always gives the same entries, and a true one (not the ZIP format's 1980 default).
      archive.append(source.stream, { name: names[index]!, date: located.closedAt ?? context.clock.now() });
      await written;
      if (archive.destroyed) {
        source.stream.destroy();
        await source.cleanup();
        return 'client_gone';
      }
    }
    for (const [index, attachment] of attachments.entries()) {
      if (archive.destroyed) return 'client_gone';
      const stream = await context.blobStore.openRead(attachment.sha256);
      const written = nextEntryWritten(archive);
      archive.append(stream, { name: attachmentNames[index]!, date: located.closedAt ?? context.clock.now() });
      await written;
      if (archive.destroyed) {
        stream.destroy();
        return 'client_gone';
      }
    }
    await archive.finalize();
    return 'completed';
  };
  feed().then(
    (outcome) => context.metrics?.zipDownloads.inc({ outcome }),
    (error: unknown) => {
      context.metrics?.zipDownloads.inc({ outcome: 'failed' });
      archive.destroy(error instanceof Error ? error : new Error(String(error)));
    },
  );
  return { fileName: `${names.length === 1 ? names[0]!.replace(/\.pdf$/, '') : 'envelope'}-${located.envelopeId}.zip`, contentType: 'application/zip', stream: archive, sealed };
}

/** A web Response streaming the download (REST and signed-URL downloads), or redirecting to the object store. */
export function downloadResponse(download: Download): Response {
  if (download.redirectUrl !== undefined) {
    return new Response(null, { status: 302, headers: { location: download.redirectUrl, 'cache-control': 'private, no-store', 'x-artefact-sealed': String(download.sealed) } });
  }
  return new Response(Readable.toWeb(download.stream) as ReadableStream, {
    status: 200,
    headers: {
      'content-type': download.contentType,
      'content-disposition': contentDisposition(download.fileName),
      'cache-control': 'private, no-store',
      'x-artefact-sealed': String(download.sealed),
    },
  });
}
