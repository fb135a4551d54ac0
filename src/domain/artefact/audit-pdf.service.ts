/**
 * `GET /envelopes/{id}/audit/pdf`: the certificate of completion of a closed envelope (see
 * certificate.service.ts and pdf/audit-pdf-layout.ts). The fixed certificate is answered byte for
 * byte as it was recorded when the envelope closed (produced on this first download for an
 * envelope closed before certificates were fixed); `current` renders an on-demand variant with the
 * trail as it is now, marked on every page as not the fixed certificate. Every download is
 * recorded in the envelope's audit chain (after the fixed file, so never in it).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BlobStoreUnavailableError } from '../../shared/blob-store/index.ts';
import { DomainError, InvalidRequestError, ServerBusyError } from '../../shared/errors.ts';
import type { EnvelopeStatus } from '../envelope/envelope.entity.ts';
import { isClosedEnvelopeStatus } from '../envelope/envelope.entity.ts';
import { EnvelopeNotFinalizedError, EnvelopeNotFoundError } from '../envelope/envelope.errors.ts';
import { teamEnvelopes, wellFormedEnvelopeId } from '../envelope/team-envelope.ts';
import { type AuditPdfLocale, auditPdfLocales } from '../pdf/audit-pdf-layout.ts';
import type { ServiceContext } from '../service-context.ts';
import { type CertificateDependencies, type CertificateRecord, certificateData, fixCertificate, readEnvelopeForCertificate, renderCertificate } from './certificate.service.ts';
import type { Download } from './download.ts';
import { type DownloadDetails, recordDownload } from './download-record.ts';

/** The locale asked for: `locale` (en-US or tr-TR, refused otherwise), else Accept-Language, else en-US. */
export function auditPdfLocaleOf(query: string | null, acceptLanguage: string | null): AuditPdfLocale {
  if (query !== null) {
    if (!(auditPdfLocales as readonly string[]).includes(query)) {
      throw new InvalidRequestError([{ path: 'locale', message: `must be one of ${auditPdfLocales.join(', ')}` }]);
    }
    return query as AuditPdfLocale;
  }
  return /^\s*tr\b/i.test(acceptLanguage ?? '') ? 'tr-TR' : 'en-US';
}

/** `?current=true` (or `1`): the on-demand variant; anything else but `false`/`0`/absent is refused by name. */
export function currentFlagOf(query: string | null): boolean {
  if (query === null || query === 'false' || query === '0') return false;
  if (query === 'true' || query === '1') return true;
  throw new InvalidRequestError([{ path: 'current', message: 'must be true or false' }]);
}

export function certificateDependenciesOf(context: ServiceContext): CertificateDependencies {
  return { em: context.em, blobStore: context.blobStore, pdfWorkers: context.pdfWorkers, seal: context.seal, auditKey: context.auditKey, clock: context.clock, publicUrl: context.publicUrl };
}

/** The caller's team's closed envelope (Envelope.NotFound, Envelope.NotFinalized otherwise). */
export async function closedTeamEnvelope(context: ServiceContext, envelopeId: string): Promise<{ id: string; teamId: string; status: string }> {
  const caller = await context.caller();
  const row = await teamEnvelopes(context.reader, caller.teamId).select(['e.id', 'e.status']).where('e.id', '=', wellFormedEnvelopeId(envelopeId)).executeTakeFirst();
  if (row === undefined) throw new EnvelopeNotFoundError(envelopeId);
  if (!isClosedEnvelopeStatus(row.status)) throw new EnvelopeNotFinalizedError(row.id, row.status as EnvelopeStatus);
  return { id: row.id, teamId: caller.teamId, status: row.status };
}

/**
 * The fixed certificate for a download: recorded, or produced now (sealing a finalized envelope's
 * documents first). Work that fails here (a timestamp authority that is down, say) is retried by
 * the artefact job: the caller is told to come back (Server.Busy), never given another file.
 */
export async function fixedCertificateForDownload(context: ServiceContext, envelopeId: string, locale: AuditPdfLocale): Promise<CertificateRecord> {
  try {
    return await fixCertificate(certificateDependenciesOf(context), envelopeId, locale);
  } catch (error) {
    if (error instanceof DomainError || error instanceof BlobStoreUnavailableError) throw error;
    throw new ServerBusyError('The certificate of completion is still being prepared; retry in a minute.', { envelopeId, retryAfterSeconds: 60 });
  }
}

export async function auditLogPdf(context: ServiceContext, options: { envelopeId: string; locale: AuditPdfLocale; current?: boolean }): Promise<Download> {
  const caller = await context.caller();
  const envelope = await closedTeamEnvelope(context, options.envelopeId);
  const dependencies = certificateDependenciesOf(context);
  const record = (details: DownloadDetails) =>
    recordDownload(context, { teamId: caller.teamId, envelopeId: envelope.id }, { format: 'audit-pdf', locale: options.locale, ...details }, { type: 'api_key', id: caller.apiKeyId });

  if (options.current === true) {
    const data = await certificateData(context.em, context.auditKey, (await readEnvelopeForCertificate(context.em, envelope.id))!, {
      generatedAt: context.clock.now(),
      current: true,
      files: dependencies,
    });
    const directory = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'audit-pdf-'));
    const outputPath = path.join(directory, 'audit.pdf');
    try {
      await renderCertificate(dependencies, { data, locale: options.locale, outputPath, team: envelope.teamId });
    } catch (error) {
      await fs.promises.rm(directory, { recursive: true, force: true });
      throw error;
    }
    await record({ current: true, chainHead: data.chain.headHash ?? '' });
    const stream = fs.createReadStream(outputPath);
    stream.once('close', () => void fs.promises.rm(directory, { recursive: true, force: true }));
    return { fileName: `audit-current-${envelope.id}.pdf`, contentType: 'application/pdf', stream, sealed: true };
  }

  const fixed = await fixedCertificateForDownload(context, envelope.id, options.locale);
  const stream = await context.blobStore.openRead(fixed.sha256);
  await record({ current: false, chainHead: fixed.chainHead, sha256: fixed.sha256 });
  return { fileName: `certificate-${envelope.id}-${options.locale}.pdf`, contentType: 'application/pdf', stream, sealed: true };
}
