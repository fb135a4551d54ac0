import { defineEntity, p } from '@mikro-orm/core';
import { baseColumns, updatedAtColumn } from '../../db/columns.ts';
import { Team } from './team.entity.ts';

/** An internal user of a team; can be named as an agent by `userId`. */
export const TeamUserSchema = defineEntity({
  name: 'TeamUser',
  tableName: 'team_user',
  properties: {
    ...baseColumns(),
    updatedAt: updatedAtColumn(),
    team: () => p.manyToOne(Team).ref().deleteRule('cascade'),
    name: p.string().length(200),
    email: p.string().length(320),
    phone: p.string().length(20).nullable(),
    locale: p.string().length(5).default('en-US'),
  },
  indexes: [{ name: 'team_user_team_created_idx', properties: ['team', 'createdAt', 'id'] }],
  uniques: [{ name: 'team_user_team_email_unique', properties: ['team', 'email'] }],
});

export class TeamUser extends TeamUserSchema.class {}
TeamUserSchema.setClass(TeamUser);
