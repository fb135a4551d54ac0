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
  },
});

export class Team extends TeamSchema.class {}
TeamSchema.setClass(Team);
