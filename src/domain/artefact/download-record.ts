import { appendAuditEvent } from '../audit/audit.service.ts';
import type { ServiceContext } from '../service-context.ts';

/** Who downloads: the team key that asked, or (a final-copy link) the recipient's agent. */
export type Downloader = { type: 'api_key' | 'agent'; id: string };

/** What a download's trail event says about what was sent (the format, and what identifies the bytes). */
export type DownloadDetails = Record<string, string | number | boolean | string[]>;

/**
 * Appends `artefact.downloaded` to the envelope's audit chain, in a transaction of its own: every
 * download (documents, ZIP, certificate, evidence package) is recorded by this one rule.
 */
export async function recordDownload(context: ServiceContext, envelope: { teamId: string; envelopeId: string }, details: DownloadDetails, actor: Downloader): Promise<void> {
  await context.em.fork().transactional(async (em) => {
    await appendAuditEvent(em, context.auditKey, {
      teamId: envelope.teamId,
      envelopeId: envelope.envelopeId,
      type: 'artefact.downloaded',
      actor,
      request: context.metadata,
      details,
      at: context.clock.now(),
    });
  });
}
