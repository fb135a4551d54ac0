import { defineEntity, p } from '@mikro-orm/core';
import { baseColumns } from '../../db/columns.ts';
import { Team } from './team.entity.ts';

/**
 * A team's API key. Only the SHA-256 of the key is stored (`keyHash`, unique, the lookup path of
 * every authenticated request); `prefix` keeps the first characters so people can tell keys apart.
 */
export const ApiKeySchema = defineEntity({
  name: 'ApiKey',
  tableName: 'api_key',
  properties: {
    ...baseColumns(),
    team: () => p.manyToOne(Team).ref().deleteRule('cascade').index(),
    keyHash: p.string().length(64).unique(),
    prefix: p.string().length(16),
    label: p.string().length(120).nullable(),
    revokedAt: p.datetime().nullable(),
    lastUsedAt: p.datetime().nullable(),
  },
});

export class ApiKey extends ApiKeySchema.class {}
ApiKeySchema.setClass(ApiKey);
