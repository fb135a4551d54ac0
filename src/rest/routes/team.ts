import { readCallerTeam } from '../../domain/team/team.read.ts';
import { readTeamSettings, teamSettingsPatch, updateTeamSettings } from '../../domain/team/team-settings.ts';
import { readJsonObject } from '../../http/body.ts';
import type { RestRoute } from '../router.ts';

/** `GET /me`: the calling team, so a caller can check its key (an addition to the spec); the team's settings (issue 21). */
export const teamRoutes: RestRoute[] = [
  {
    method: 'GET',
    path: '/me',
    doc: { summary: 'The calling team' },
    async handler({ context }) {
      return { team: await readCallerTeam(context) };
    },
  },
  {
    method: 'GET',
    path: '/team/settings',
    doc: { summary: 'The calling team’s settings', description: 'Every section with every key; `null` where the team set nothing (the service’s default applies).' },
    async handler({ context }) {
      return { settings: await readTeamSettings(context) };
    },
  },
  {
    method: 'PATCH',
    path: '/team/settings',
    doc: {
      summary: 'Change the calling team’s settings',
      description:
        'The sections and keys given replace the stored ones; the others stay. `embedding.frameOrigins`: the origins whose pages may frame this team’s signing URLs (`null`: `SIGNING_FRAME_ANCESTORS` decides). Recorded as `team.settings_updated`.',
      body: { schema: teamSettingsPatch, example: { embedding: { frameOrigins: ['https://app.example.com'] } } },
    },
    async handler({ request, context }) {
      return { settings: await updateTeamSettings(context, { input: await readJsonObject(request) }) };
    },
  },
];
