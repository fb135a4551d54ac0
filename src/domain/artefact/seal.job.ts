/**
 * The `artefact.seal` job: seals a finalized envelope's documents, then fixes its certificate of
 * completion, then (with the acknowledgement) queues the completion notices. One job, one order:
 * the certificate lists the sealed hashes, so it is fixed here, after sealing, and never left to
 * whoever wires the worker (an optional callback let the tests run a seal job production did not).
 * A voided or expired envelope's certificate, with nothing to seal, is the `artefact.certificate`
 * job's (certificate.service.ts).
 */

import type { Metrics } from '../../shared/metrics.ts';
import { DELIVERY_FAILURES } from '../outbox/delivery-failures.ts';
import { type OutboxHandler, PermanentOutboxError } from '../outbox/outbox-worker.ts';
import { queueCompletionNotices } from '../signing/workflow.ts';
import { queueTeamNotice } from '../team/team-notices.ts';
import { type ArtefactDependencies, sealEnvelopeArtefacts } from './artefact.service.ts';
import { fixCertificates } from './certificate.service.ts';

/** The `artefact.seal` handler for the outbox worker. */
export function artefactSealHandler(dependencies: Omit<ArtefactDependencies, 'em'>, metrics?: Pick<Metrics, 'sealDuration'>): OutboxHandler<'artefact.seal'> {
  return async (message, context) => {
    const envelopeId = message.payload.envelopeId;
    if (typeof envelopeId !== 'string') throw new PermanentOutboxError(DELIVERY_FAILURES.messageIncomplete, 'the message names no envelopeId');
    // Timed whether it succeeds or fails: a seal that fails slowly (a stalled timestamp authority) is the one to see.
    const endTimer = metrics?.sealDuration.startTimer();
    let count: number;
    // The job's documents and certificate queue for the PDF thread as of its start: with several
    // seal jobs in hand (workers.ts), the one started first finishes first.
    const jobDependencies = { ...dependencies, em: context.em, pdfQueuedSince: Date.now() };
    try {
      count = await sealEnvelopeArtefacts(jobDependencies, envelopeId);
      // The certificate of completion, fixed now that the sealed hashes it lists exist. A retry
      // after a failure here seals nothing again (sealed documents are skipped) and fixes it then.
      await fixCertificates(jobDependencies, envelopeId);
    } catch (error) {
      endTimer?.({ outcome: 'error' });
      throw error;
    }
    endTimer?.({ outcome: 'sealed' });
    context.logger.info({ envelopeId, sealedDocuments: count }, 'sealed the envelope artefacts and fixed the certificate of completion');
    // With the acknowledgement (once, whoever sealed): everyone gets the final copy now that it exists.
    const teamId = String(message.payload.teamId);
    return async (tx) => {
      await queueCompletionNotices(tx, { teamId, envelopeId, now: context.now });
      await queueTeamNotice(tx, { teamId, envelopeId, event: 'completed', now: context.now });
    };
  };
}
