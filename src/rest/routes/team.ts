import { getTeam } from '../../domain/team/team.service.ts';
import type { RestRoute } from '../router.ts';

/** `GET /me`: the calling team, so a caller can check its key (an addition to the spec). */
export const teamRoutes: RestRoute[] = [
  {
    method: 'GET',
    path: '/me',
    async handler({ context }) {
      const caller = await context.caller();
      const team = await getTeam(context.em, caller.teamId);
      return { team: { id: team.id, name: team.name, workspaceId: caller.workspaceId, createdAt: team.createdAt.toISOString() } };
    },
  },
];
