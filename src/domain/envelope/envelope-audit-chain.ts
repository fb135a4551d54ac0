/**
 * An envelope's audit chain, checked for the caller's team. With the envelope, not the trail:
 * it reads through the envelope's tenant gate, and the trail (audit/) sits below the envelope,
 * imported by it and importing none of it.
 */
import type { ExpressionBuilder } from 'kysely';
import { type ChainLink, type ChainVerification, chainColumns, checkAuditChain } from '../audit/audit.service.ts';
import type { ReadDatabase } from '../read-model.ts';
import type { ServiceContext } from '../service-context.ts';
import { EnvelopeNotFoundError } from './envelope.errors.ts';
import { teamEnvelopes, wellFormedEnvelopeId } from './team-envelope.ts';

/**
 * Verifies an envelope's audit chain for its own team (unknown and foreign ids: Envelope.NotFound).
 * One statement: the team's envelope, left-joined to its events, so the tenant check and the chain
 * are read together and an envelope without events still answers.
 */
export async function verifyEnvelopeAuditChain(context: ServiceContext, options: { envelopeId: string }): Promise<ChainVerification> {
  const caller = await context.caller();
  const rows = await teamEnvelopes(context.reader, caller.teamId)
    .leftJoin('audit_event as a', 'a.stream_id', 'e.id')
    .select((eb) => chainColumns(eb as unknown as ExpressionBuilder<ReadDatabase & { a: ReadDatabase['audit_event'] }, 'a'>))
    .where('e.id', '=', wellFormedEnvelopeId(options.envelopeId))
    .orderBy('a.seq')
    .execute();
  if (rows.length === 0) throw new EnvelopeNotFoundError(options.envelopeId);
  const events = (rows as (ChainLink | { seq: null })[]).filter((row): row is ChainLink => row.seq !== null);
  return checkAuditChain(context.auditKey, events);
}
