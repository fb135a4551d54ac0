import { readCallerTeam, type TeamData } from '../../domain/team/team.read.ts';
import { builder } from '../builder.ts';

export const TeamType = builder.objectRef<TeamData>('Team').implement({
  description: 'A team: owns envelopes, templates and contacts; an API key acts for exactly one team.',
  fields: (t) => ({
    id: t.exposeID('id'),
    name: t.exposeString('name'),
    workspaceId: t.id({ description: 'The workspace the team belongs to.', resolve: (team) => team.workspaceId }),
    createdAt: t.field({ type: 'DateTime', resolve: (team) => team.createdAt }),
  }),
});

builder.queryField('viewer', (t) =>
  t.field({
    type: TeamType,
    description: 'The team the API key in X-Service-Api-Key belongs to.',
    resolve: (_root, _args, context) => readCallerTeam(context),
  }),
);
