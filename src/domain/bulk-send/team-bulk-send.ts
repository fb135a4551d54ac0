/*
 * The tenant gate of bulk sends: visible only to their own team. Unknown, malformed and foreign
 * ids all give the same `BulkSend.NotFound`. Reads start from `teamBulkSends`, writes from
 * `findTeamBulkSend`.
 */
import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { IdGate, ReadDb } from '../read-model.ts';
import type { TeamCaller } from '../team/team-caller.ts';
import { wellFormedId } from '../tenant.ts';
import { BulkSend } from './bulk-send.entity.ts';
import { BulkSendNotFoundError } from './bulk-send.errors.ts';

/** The id, or `BulkSend.NotFound` when it cannot name a bulk send. */
export function wellFormedBulkSendId(bulkSendId: string): string {
  return wellFormedId(bulkSendId, (id) => new BulkSendNotFoundError(id));
}

export const bulkSendIdGate: IdGate = { wellFormed: wellFormedBulkSendId, notFound: (id) => new BulkSendNotFoundError(id) };

/** The team's bulk sends, as `b`: every read starts here (the team in the statement's slot). */
export function teamBulkSends(reader: ReadDb, teamId: unknown) {
  return reader.selectFrom('bulk_send as b').where('b.team_id', '=', teamId as string);
}

/** One of the caller's team's bulk sends for a write, row-locked with `lock`. */
export async function findTeamBulkSend(em: EntityManager, caller: TeamCaller, bulkSendId: string, options: { lock?: boolean } = {}): Promise<BulkSend> {
  const bulkSend = await em.findOne(BulkSend, { id: wellFormedBulkSendId(bulkSendId), team: caller.teamId }, options.lock ? { lockMode: LockMode.PESSIMISTIC_WRITE } : {});
  if (!bulkSend) throw new BulkSendNotFoundError(bulkSendId);
  return bulkSend;
}
