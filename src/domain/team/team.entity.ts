import { defineEntity, p } from '@mikro-orm/core';
import { baseColumns } from '../../db/columns.ts';
import { Workspace } from './workspace.entity.ts';

/** A team owns envelopes, templates, contacts and users; an API key acts for exactly one team. */
export const TeamSchema = defineEntity({
  name: 'Team',
  tableName: 'team',
  properties: {
    ...baseColumns(),
    workspace: () => p.manyToOne(Workspace).ref().deleteRule('cascade').index(),
    name: p.string().length(120),
    /**
     * The team's settings, one validated document (team-settings.ts): embedding today; display
     * name, reply-to, notifications and branding later. Changed by a guarded update on `settingsVersion`.
     */
    settings: p.json<Record<string, unknown>>().default('{}'),
    settingsVersion: p.integer().default(0),
  },
});

export class Team extends TeamSchema.class {}
TeamSchema.setClass(Team);
