import { isoTimestamp, runRead } from '../read-model.ts';
import type { ServiceContext } from '../service-context.ts';
import { TeamNotFoundError } from './team.errors.ts';

export type TeamData = { id: string; name: string; workspaceId: string; createdAt: string };

/** The calling team (REST `GET /me`, GraphQL `viewer`): one statement, plain data. */
export async function readCallerTeam(context: ServiceContext): Promise<TeamData> {
  const caller = await context.caller();
  const [team] = await runRead<TeamData>(
    context.reader,
    'caller-team',
    (db, slot) =>
      db
        .selectFrom('team as t')
        .select((eb) => [eb.ref('t.id').as('id'), eb.ref('t.name').as('name'), eb.ref('t.workspace_id').as('workspaceId'), isoTimestamp(eb.ref('t.created_at')).as('createdAt')])
        .where('t.id', '=', slot(0)),
    [caller.teamId],
  );
  // A key whose team was removed while it was cached.
  if (!team) throw new TeamNotFoundError(caller.teamId);
  return team;
}
