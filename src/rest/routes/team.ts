import { readCallerTeam } from '../../domain/team/team.read.ts';
import type { RestRoute } from '../router.ts';

/** `GET /me`: the calling team, so a caller can check its key (an addition to the spec). */
export const teamRoutes: RestRoute[] = [
  {
    method: 'GET',
    path: '/me',
    doc: { summary: 'The calling team' },
    async handler({ context }) {
      return { team: await readCallerTeam(context) };
    },
  },
];
