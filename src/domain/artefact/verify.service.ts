/**
 * `POST /verify` and GraphQL `verifySealedPdf`: the offline check of `npm run cli -- verify` on an
 * uploaded file (in a PDF worker thread, under the verify task's time and memory limits), plus,
 * when the seal is ours and names one of the caller's envelopes, that envelope's audit-chain
 * verification. Another team's envelope is not disclosed: the chain is null. Every signature is
 * reported (issue 35): its byte range, level, chain to TRUST_ANCHORS and revocation status.
 */
import type { Readable } from 'node:stream';
import { ServerBusyError } from '../../shared/errors.ts';
import type { ChainVerification } from '../audit/audit.service.ts';
import { DocumentInspectionLimitExceededError, DocumentNotPdfError } from '../document/document.errors.ts';
import { stageUploadedFile } from '../document/document.service.ts';
import { EnvelopeNotFoundError } from '../envelope/envelope.errors.ts';
import { verifyEnvelopeAuditChain } from '../envelope/envelope-audit-chain.ts';
import { NOT_PDF, type PdfVerification } from '../pdf/verify.ts';
import { PdfWorkersBusyError, PdfWorkLimitError } from '../pdf/worker-pool.ts';
import type { ServiceContext } from '../service-context.ts';

export async function verifyUploadedPdf(context: ServiceContext, options: { stream: Readable }): Promise<PdfVerification & { auditChain: ChainVerification | null }> {
  const caller = await context.caller();
  const staged = await stageUploadedFile(context, options.stream);
  let verification: PdfVerification;
  try {
    verification = await context.pdfWorkers.verify(staged.stagingPath, [context.seal.fingerprintSha256], { team: caller.teamId, trustAnchors: context.trustAnchors });
  } catch (error) {
    if ((error as { code?: unknown }).code === NOT_PDF) throw new DocumentNotPdfError();
    if (error instanceof PdfWorkLimitError) throw new DocumentInspectionLimitExceededError(error.limit, error.value);
    if (error instanceof PdfWorkersBusyError) throw new ServerBusyError('The service is checking too many documents right now. Retry in a few seconds.', { reason: error.reason });
    throw error;
  } finally {
    await staged.discard();
  }
  let auditChain: ChainVerification | null = null;
  if (verification.ours && verification.envelopeId !== null) {
    try {
      auditChain = await verifyEnvelopeAuditChain(context, { envelopeId: verification.envelopeId });
    } catch (error) {
      if (!(error instanceof EnvelopeNotFoundError)) throw error;
    }
  }
  return { ...verification, auditChain };
}
