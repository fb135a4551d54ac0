import { readCallerTeam, type TeamData } from '../../domain/team/team.read.ts';
import { readTeamSettings, updateTeamSettings, type TeamSettingsData } from '../../domain/team/team-settings.ts';
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

// The team's settings (issue 21): one document, read and changed as a whole (REST: GET/PATCH /team/settings).
const TeamEmbeddingSettingsType = builder.objectRef<TeamSettingsData['embedding']>('TeamEmbeddingSettings').implement({
  description: 'Embedded signing.',
  fields: (t) => ({
    frameOrigins: t.stringList({
      nullable: true,
      description: 'Origins whose pages may frame this team’s signing URLs; null: SIGNING_FRAME_ANCESTORS decides.',
      resolve: (embedding) => embedding.frameOrigins,
    }),
  }),
});

const TeamSettingsType = builder.objectRef<TeamSettingsData>('TeamSettings').implement({
  description: 'The team’s settings: every section, null where the team set nothing.',
  fields: (t) => ({
    embedding: t.field({ type: TeamEmbeddingSettingsType, resolve: (settings) => settings.embedding }),
    version: t.exposeInt('version', { description: 'How many times the settings were changed (0: never).' }),
  }),
});

const TeamEmbeddingSettingsInput = builder.inputType('TeamEmbeddingSettingsInput', {
  fields: (t) => ({
    frameOrigins: t.stringList({ required: false, description: 'Replaces the list; null clears it (SIGNING_FRAME_ANCESTORS then decides).' }),
  }),
});

const TeamSettingsInput = builder.inputType('TeamSettingsInput', {
  description: 'The sections and keys to change; those left out stay as they are.',
  fields: (t) => ({
    embedding: t.field({ type: TeamEmbeddingSettingsInput, required: false }),
  }),
});

builder.queryField('teamSettings', (t) =>
  t.field({
    type: TeamSettingsType,
    description: 'The calling team’s settings (REST: GET /team/settings).',
    resolve: (_root, _args, context) => readTeamSettings(context),
  }),
);

builder.mutationField('updateTeamSettings', (t) =>
  t.field({
    type: TeamSettingsType,
    // Like every mutation: a refusal nulls this field only, never a sibling mutation's answer.
    nullable: true,
    description: 'Changes the calling team’s settings (REST: PATCH /team/settings): the keys given replace the stored ones. Recorded as team.settings_updated.',
    args: { input: t.arg({ type: TeamSettingsInput, required: true }) },
    resolve: (_root, args, context) => {
      // A key left out stays; a key given as null is cleared: only what the caller wrote is passed on.
      const input: Record<string, unknown> = {};
      const embedding = args.input.embedding;
      if (embedding != null) input.embedding = 'frameOrigins' in embedding ? { frameOrigins: embedding.frameOrigins ?? null } : {};
      return updateTeamSettings(context, { input });
    },
  }),
);
