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
        'The keys and sections given replace the stored ones; the others stay; `null` clears one. `displayName`: the From name and subject of the team’s mails and the signing page’s sender. `replyTo`: the mails’ Reply-To. `notifications`: `emails` (at most 10) get the `events` asked for (completed, declined, voided, expired, delivery_failed, send_failed: a scheduled send could not go out, bulk_send_completed: a bulk send finished, with its counts; `null`: every event) in `locale` (en-US, tr-TR). `branding`: `logo` as `{ "data": "<base64 PNG or JPEG>" }` (at most 256 KiB and 1024×1024 pixels, checked by content; answered as its stored form with the URL the service serves it at), `accentColor` (#rrggbb), `footer` (plain text, at most 500 characters). `embedding.frameOrigins`: the origins whose pages may frame this team’s signing URLs (`null`: `SIGNING_FRAME_ANCESTORS` decides). `artefacts.stamp`: the default of envelopes’ `stamp` (the envelope id in each sealed page’s margin, a caption under each signature; `null`: on). Every problem is one `Request.Invalid` issue. Recorded as `team.settings_updated`.',
      body: {
        schema: teamSettingsPatch,
        example: {
          displayName: 'Acme Legal',
          replyTo: 'legal@acme.example',
          notifications: { emails: ['contracts@acme.example'], events: ['completed', 'declined', 'delivery_failed'], locale: 'en-US' },
          branding: { accentColor: '#0b5cad', footer: 'Acme Legal, 1 Main St' },
          embedding: { frameOrigins: ['https://app.example.com'] },
        },
      },
    },
    async handler({ request, context }) {
      return { settings: await updateTeamSettings(context, { input: await readJsonObject(request) }) };
    },
  },
];
