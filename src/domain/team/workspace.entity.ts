import { defineEntity, p } from '@mikro-orm/core';
import { baseColumns } from '../../db/columns.ts';

/** A workspace holds teams; templates may be shared between the teams of one workspace. */
export const WorkspaceSchema = defineEntity({
  name: 'Workspace',
  tableName: 'workspace',
  properties: {
    ...baseColumns(),
    name: p.string().length(120),
  },
});

export class Workspace extends WorkspaceSchema.class {}
WorkspaceSchema.setClass(Workspace);
