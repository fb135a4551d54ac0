import { defineEntity, p } from '@mikro-orm/core';
import { baseColumns, type JsonObject } from '../../db/columns.ts';

/**
 * The remembered outcome of a creating write sent with an `Idempotency-Key` (docs/reference/contract.md §5).
 * Unique per team and key: the insert of this row is what claims the key, so two concurrent
 * requests with one key cannot both create. `fingerprint` is a hash of the operation and body.
 */
export const IdempotencyRecordSchema = defineEntity({
  name: 'IdempotencyRecord',
  tableName: 'idempotency_record',
  properties: {
    ...baseColumns(),
    teamId: p.uuid(),
    key: p.string().length(255),
    fingerprint: p.string().length(64),
    response: p.json<JsonObject>().nullable(),
    completedAt: p.datetime().nullable(),
  },
  uniques: [{ name: 'idempotency_record_team_key_unique', properties: ['teamId', 'key'] }],
  indexes: [{ name: 'idempotency_record_created_idx', properties: ['createdAt'] }],
});

export class IdempotencyRecord extends IdempotencyRecordSchema.class {}
IdempotencyRecordSchema.setClass(IdempotencyRecord);
