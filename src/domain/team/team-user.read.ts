import type { ExpressionBuilder } from 'kysely';
import { containsPattern, decodeCursorPosition, keysetPageInput, takePage } from '../pagination.ts';
import { isoTimestamp, type ReadDatabase } from '../read-model.ts';
import type { ServiceContext } from '../service-context.ts';
import { parseInput } from '../validation.ts';
import { UserNotFoundError } from './team-user.errors.ts';
import { teamUsers, wellFormedUserId } from './team-users.ts';

/*
 * The team users' read model: one user or a page of users, each read with ONE statement, as plain
 * data in the faces' shape.
 */

export type TeamUserData = {
  id: string;
  name: string;
  email: string;
  phone: string | null;
  locale: string;
  createdAt: string;
  updatedAt: string;
};

export type TeamUserPageData = { users: TeamUserData[]; nextCursor: string | null };

type UserEb = ExpressionBuilder<ReadDatabase & { u: ReadDatabase['team_user'] }, 'u'>;

/** The columns of a user row, in the order the REST contract shows them. */
function userColumns(eb: UserEb) {
  return [
    eb.ref('u.id').as('id'),
    eb.ref('u.name').as('name'),
    eb.ref('u.email').as('email'),
    eb.ref('u.phone').as('phone'),
    eb.ref('u.locale').as('locale'),
    isoTimestamp(eb.ref('u.created_at')).as('createdAt'),
    isoTimestamp(eb.ref('u.updated_at')).as('updatedAt'),
  ];
}

/** One user of the caller's team; `User.NotFound` otherwise. */
export async function readUser(context: ServiceContext, userId: string): Promise<TeamUserData> {
  const caller = await context.caller();
  wellFormedUserId(userId);
  const row = await teamUsers(context.reader, caller.teamId).select(userColumns).where('u.id', '=', userId).executeTakeFirst();
  if (!row) throw new UserNotFoundError(userId);
  return row as unknown as TeamUserData;
}

/**
 * The caller's team's users, newest first, keyset-paginated on (createdAt, id); `search` matches
 * name or email ignoring case (`%`, `_` and `\` match themselves).
 */
export async function readUserPage(context: ServiceContext, options: { limit?: number; cursor?: string; search?: string }): Promise<TeamUserPageData> {
  const input = parseInput(keysetPageInput, options);
  const caller = await context.caller();
  const after = input.cursor === undefined ? undefined : decodeCursorPosition(input.cursor);
  const pattern = containsPattern(input.search);
  let query = teamUsers(context.reader, caller.teamId).select(userColumns);
  if (pattern !== undefined) query = query.where((eb) => eb.or([eb('u.name', 'ilike', pattern), eb('u.email', 'ilike', pattern)]));
  if (after) query = query.where((eb) => eb(eb.refTuple('u.created_at', 'u.id'), '<', eb.tuple(after.createdAt, after.id)));
  const rows = (await query
    .orderBy('u.created_at', 'desc')
    .orderBy('u.id', 'desc')
    .limit(input.limit + 1)
    .execute()) as unknown as TeamUserData[];
  const page = takePage(rows, input.limit);
  return { users: page.rows, nextCursor: page.nextCursor };
}
