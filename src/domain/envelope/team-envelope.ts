import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { isUuid } from '../../shared/ids.ts';
import type { TeamCaller } from '../team/team-caller.ts';
import { Envelope } from './envelope.entity.ts';
import { EnvelopeNotFoundError } from './envelope.errors.ts';

/**
 * The tenant boundary for envelopes, for writes: an envelope is visible only to its own team.
 * Unknown, malformed and foreign ids all give the same `Envelope.NotFound`, so another team's
 * envelope is indistinguishable from one that does not exist. (Reads use the read model's
 * `teamEnvelopes`, the same rule as a query fragment.)
 */
export async function findTeamEnvelope(
  em: EntityManager,
  caller: TeamCaller,
  envelopeId: string,
  options: { lock?: boolean } = {},
): Promise<Envelope> {
  if (!isUuid(envelopeId)) throw new EnvelopeNotFoundError(envelopeId);
  const envelope = await em.findOne(
    Envelope,
    { id: envelopeId, team: caller.teamId },
    options.lock ? { lockMode: LockMode.PESSIMISTIC_WRITE } : {},
  );
  if (!envelope) throw new EnvelopeNotFoundError(envelopeId);
  return envelope;
}
