/*
 * The tenant gate of team users, in one place: a user is visible only to its own team. Unknown,
 * malformed and foreign ids all give the same `User.NotFound`. Reads start from `teamUsers`,
 * writes from `findTeamUser`; both take the id through `wellFormedUserId` first.
 */
import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { SelectQueryBuilder } from 'kysely';
import type { ReadDatabase, ReadDb } from '../read-model.ts';
import { wellFormedId } from '../tenant.ts';
import { TeamUser } from './team-user.entity.ts';
import { UserNotFoundError } from './team-user.errors.ts';

export type UsersQuery = SelectQueryBuilder<ReadDatabase & { u: ReadDatabase['team_user'] }, 'u', {}>;

/** The id, or `User.NotFound` when it cannot name a user. */
export function wellFormedUserId(userId: string): string {
  return wellFormedId(userId, (id) => new UserNotFoundError(id));
}

/** The team's users, as `u`: every user read starts here. */
export function teamUsers(reader: ReadDb, teamId: string): UsersQuery {
  return reader.selectFrom('team_user as u').where('u.team_id', '=', teamId);
}

/**
 * The tenant boundary for team users: a user is visible only to its own team. Unknown, malformed
 * and foreign ids all give the same `User.NotFound`.
 */
export async function findTeamUser(em: EntityManager, teamId: string, userId: string, options: { lock?: boolean } = {}): Promise<TeamUser> {
  const user = await em.findOne(TeamUser, { id: wellFormedUserId(userId), team: teamId }, options.lock ? { lockMode: LockMode.PESSIMISTIC_WRITE } : {});
  if (!user) throw new UserNotFoundError(userId);
  return user;
}
