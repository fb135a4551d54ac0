import { defineEntity, p } from '@mikro-orm/core';
import { baseColumns, updatedAtColumn } from '../../db/columns.ts';
import { Team } from '../team/team.entity.ts';

/**
 * A reusable blueprint of documents, recipient roles and fields. `teamScope` lists other teams
 * of the same workspace allowed to use it (docs/reference/interface-spec.md §2.6); the owning team always may.
 */
export const TemplateSchema = defineEntity({
  name: 'Template',
  tableName: 'template',
  properties: {
    ...baseColumns(),
    updatedAt: updatedAtColumn(),
    team: () => p.manyToOne(Team).ref().deleteRule('cascade'),
    name: p.string().length(48),
    description: p.text().nullable(),
    teamScope: p.array<string>().default([]),
    version: p.integer().version(),
  },
  indexes: [
    { name: 'template_team_created_idx', properties: ['team', 'createdAt', 'id'] },
    // Shared templates are found by "my team id is in teamScope".
    { name: 'template_team_scope_idx', properties: ['teamScope'], type: 'gin' },
  ],
});

export class Template extends TemplateSchema.class {}
TemplateSchema.setClass(Template);
