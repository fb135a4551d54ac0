import { getTeam } from '../../domain/team/team.service.ts';
import type { Team } from '../../domain/team/team.entity.ts';
import { builder } from '../builder.ts';

export const TeamType = builder.objectRef<Team>('Team').implement({
  description: 'A team: owns envelopes, templates and contacts; an API key acts for exactly one team.',
  fields: (t) => ({
    id: t.exposeID('id'),
    name: t.exposeString('name'),
    workspaceId: t.id({ description: 'The workspace the team belongs to.', resolve: (team) => team.workspace.id }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
  }),
});

builder.queryField('viewer', (t) =>
  t.field({
    type: TeamType,
    description: 'The team the API key in X-Service-Api-Key belongs to.',
    resolve: async (_root, _args, context) => {
      const caller = await context.caller();
      return getTeam(context.em, caller.teamId);
    },
  }),
);
