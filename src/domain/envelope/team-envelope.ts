/*
 * The tenant gate of envelopes, in one place: an envelope (and everything inside it: documents,
 * recipients, fields, events, artefacts) is visible only to its own team. Unknown, malformed and
 * foreign ids all give the same `Envelope.NotFound`, so another team's envelope is
 * indistinguishable from one that does not exist. Reads start from `teamEnvelopes`, writes from
 * `findTeamEnvelope`; both take the id through `wellFormedEnvelopeId` first.
 */
import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { SelectQueryBuilder } from 'kysely';
import type { IdGate, ReadDatabase, ReadDb } from '../read-model.ts';
import type { TeamCaller } from '../team/team-caller.ts';
import { wellFormedId } from '../tenant.ts';
import { Envelope } from './envelope.entity.ts';
import { EnvelopeNotFoundError } from './envelope.errors.ts';

/** The id, or `Envelope.NotFound` when it cannot name an envelope. */
export function wellFormedEnvelopeId(envelopeId: string): string {
  return wellFormedId(envelopeId, (id) => new EnvelopeNotFoundError(id));
}

/** The id rules of envelopes, for reads through `readRoot`. */
export const envelopeIdGate: IdGate = { wellFormed: wellFormedEnvelopeId, notFound: (id) => new EnvelopeNotFoundError(id) };

/**
 * The team's envelopes as `e`: every read of an envelope, or of anything inside one, starts
 * here. `teamId` is a value, or a compiled statement's slot (read-model.ts `runRead`).
 */
export function teamEnvelopes(db: ReadDb, teamId: unknown): SelectQueryBuilder<ReadDatabase & { e: ReadDatabase['envelope'] }, 'e', {}> {
  return db.selectFrom('envelope as e').where('e.team_id', '=', teamId as string);
}

/** The team's envelope as an entity for a write (with `lock`, its row locked until the transaction ends). */
export async function findTeamEnvelope(em: EntityManager, caller: TeamCaller, envelopeId: string, options: { lock?: boolean } = {}): Promise<Envelope> {
  const envelope = await em.findOne(Envelope, { id: wellFormedEnvelopeId(envelopeId), team: caller.teamId }, options.lock ? { lockMode: LockMode.PESSIMISTIC_WRITE } : {});
  if (!envelope) throw new EnvelopeNotFoundError(envelopeId);
  return envelope;
}
