/**
 * A recipient's copy of the sealed documents once the envelope is finalized (issue 13): the
 * signing link dies when the envelope closes, so the finalized signing page, and the completion
 * mail, hand out a final-copy link (final-copy-link.ts) scoped to one recipient's agent. Every
 * fetch is recorded as `artefact.downloaded` with that agent as actor.
 */
import { sql } from 'kysely';
import { hashSecret, isUuid } from '../../shared/ids.ts';
import type { EnvelopeStatus } from '../envelope/envelope.entity.ts';
import { EnvelopeNotFinalizedError, EnvelopeNotFoundError } from '../envelope/envelope.errors.ts';
import type { ServiceContext } from '../service-context.ts';
import { SigningTokenInvalidError, SigningTokenMissingError } from '../signing/signing.errors.ts';
import { documentPdfOf, ensureSealed, envelopeZipOf, locateInTeam } from './download.service.ts';
import type { Download } from './download.ts';
import { DOWNLOAD_URL_TTL_SECONDS, DownloadLinkInvalidError } from './download-url.ts';
import { finalCopyUrl, signFinalCopyLink, verifyFinalCopyLink } from './final-copy-link.ts';

type LinkRow = { envelopeId: string; recipientId: string; agentId: string; status: EnvelopeStatus; diedBeforeClosing: boolean };

/**
 * For the signing page's finalized screen (`signingFinalCopy`, X-Signing-Token): a final-copy URL
 * valid for a few minutes. The link's token is dead by then (every token dies when the envelope
 * closes), so what counts is why it died: a token that died with the closing (revoked at the
 * closing time, its agent still holding the role) gets the copy; one that died earlier (the
 * role was delegated away, so its agent was revoked) is refused as any dead link is.
 */
export async function issueSigningFinalCopyUrl(context: ServiceContext): Promise<{ url: string; expiresAt: Date }> {
  const token = context.signingToken;
  if (!token) throw new SigningTokenMissingError();
  const row = (await context.reader
    .selectFrom('signing_token as t')
    .innerJoin('recipient as r', 'r.id', 't.recipient_id')
    .innerJoin('envelope as e', 'e.id', 'r.envelope_id')
    .innerJoin('agent as a', 'a.id', 't.agent_id')
    .select([
      'e.id as envelopeId',
      'r.id as recipientId',
      'a.id as agentId',
      'e.status as status',
      sql<boolean>`a.revoked_at is not null or (t.revoked_at is not null
        and t.revoked_at < coalesce(e.completed_at, e.voided_at, e.expired_at, 'infinity'::timestamptz))`.as('diedBeforeClosing'),
    ])
    .where(sql<string>`t.token_hash`, '=', hashSecret(token))
    .executeTakeFirst()) as LinkRow | undefined;
  if (!row || row.diedBeforeClosing) throw new SigningTokenInvalidError();
  if (row.status !== 'finalized') throw new EnvelopeNotFinalizedError(row.envelopeId, row.status, 'finalCopy');
  const expiresAt = new Date(context.clock.now().getTime() + DOWNLOAD_URL_TTL_SECONDS * 1000);
  const signed = signFinalCopyLink(context.auditKey, { envelopeId: row.envelopeId, recipientId: row.recipientId, agentId: row.agentId }, expiresAt);
  return { url: finalCopyUrl(context.publicUrl, signed), expiresAt };
}

/**
 * `GET /final-copy/{signed}`: the sealed documents (the PDF when there is one, else a ZIP). Only
 * for a finalized envelope; a document the artefact job has not sealed yet is sealed now, as for
 * the team's own download (Server.Busy when that cannot be done now).
 */
export async function downloadFinalCopy(context: ServiceContext, signed: string): Promise<Download> {
  const target = verifyFinalCopyLink(context.auditKey, signed, context.clock.now());
  if (![target.envelopeId, target.recipientId, target.agentId].every(isUuid)) throw new DownloadLinkInvalidError('malformed');
  const row = await context.reader
    .selectFrom('envelope as e')
    .innerJoin('recipient as r', 'r.envelope_id', 'e.id')
    .innerJoin('agent as a', 'a.recipient_id', 'r.id')
    .select(['e.team_id as teamId', 'e.status as status', 'a.revoked_at as agentRevokedAt'])
    .where('e.id', '=', target.envelopeId)
    .where('r.id', '=', target.recipientId)
    .where('a.id', '=', target.agentId)
    .executeTakeFirst();
  if (!row) throw new EnvelopeNotFoundError(target.envelopeId);
  // An agent that lost the role (delegated away) was never meant to get the copy.
  if (row.agentRevokedAt !== null) throw new DownloadLinkInvalidError('malformed');
  if (row.status !== 'finalized') throw new EnvelopeNotFinalizedError(target.envelopeId, row.status as EnvelopeStatus, 'finalCopy');
  const located = await ensureSealed(context, await locateInTeam(context, row.teamId, target.envelopeId));
  const actor = { type: 'agent' as const, id: target.agentId };
  return located.documents.length === 1 ? documentPdfOf(context, located, located.documents[0]!.documentId, actor) : envelopeZipOf(context, located, actor);
}
