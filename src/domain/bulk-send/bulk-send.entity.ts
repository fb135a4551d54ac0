import { defineEntity, p } from '@mikro-orm/core';
import { baseColumns, type JsonObject, updatedAtColumn } from '../../db/columns.ts';
import { Team } from '../team/team.entity.ts';

export const bulkSendStatuses = ['queued', 'running', 'completed', 'cancelled'] as const;
export type BulkSendStatus = (typeof bulkSendStatuses)[number];

/**
 * A row's life: `pending` (validated, waiting), `created` (its draft envelope exists, recorded in
 * the creation's transaction), `sent` (sent in the send's transaction), `failed` (refused at
 * validation under skipInvalidRows, or by the creation or the send), `cancelled` (the bulk send
 * was cancelled before the row was sent). Every move is a guarded single-row update.
 */
export const bulkSendRowStatuses = ['pending', 'created', 'sent', 'failed', 'cancelled'] as const;
export type BulkSendRowStatus = (typeof bulkSendRowStatuses)[number];

/**
 * One bulk send: a template sent to many people, one envelope per row, by a background job
 * (bulk-send.job.ts). The counters move with the rows, in the rows' own transactions.
 */
export const BulkSendSchema = defineEntity({
  name: 'BulkSend',
  tableName: 'bulk_send',
  properties: {
    ...baseColumns(),
    updatedAt: updatedAtColumn(),
    team: () => p.manyToOne(Team).ref().deleteRule('cascade'),
    /** The template the rows are made from (no foreign key: a deleted template fails the rows left, the record stays). */
    templateId: p.uuid(),
    /** The API key that asked: the actor of every envelope's trail, and whose rate budget the rows spend. */
    apiKeyId: p.uuid(),
    workspaceId: p.uuid(),
    name: p.string().length(200).nullable(),
    status: p.enum(bulkSendStatuses).default('queued'),
    total: p.integer(),
    createdCount: p.integer().default(0),
    sentCount: p.integer().default(0),
    failedCount: p.integer().default(0),
    completedAt: p.datetime().nullable(),
    cancelledAt: p.datetime().nullable(),
  },
  indexes: [{ name: 'bulk_send_team_created_idx', properties: ['team', 'createdAt', 'id'] }],
});

export class BulkSend extends BulkSendSchema.class {}
BulkSendSchema.setClass(BulkSend);

export const BulkSendRowSchema = defineEntity({
  name: 'BulkSendRow',
  tableName: 'bulk_send_row',
  properties: {
    ...baseColumns(),
    bulkSend: () => p.manyToOne(BulkSend).ref().deleteRule('cascade'),
    /** The row's place in the request (0-based). */
    position: p.integer(),
    status: p.enum(bulkSendRowStatuses).default('pending'),
    /** The row as validated: recipients, name, context, values. */
    input: p.json<JsonObject>(),
    envelopeId: p.uuid().nullable(),
    /** Why it failed: `{ name, description, context }`, as an error of the API reads. */
    error: p.json<JsonObject>().nullable(),
    processedAt: p.datetime().nullable(),
  },
  uniques: [{ name: 'bulk_send_row_position_unique', properties: ['bulkSend', 'position'] }],
  indexes: [{ name: 'bulk_send_row_status_idx', properties: ['bulkSend', 'status', 'position'] }],
});

export class BulkSendRow extends BulkSendRowSchema.class {}
BulkSendRowSchema.setClass(BulkSendRow);
