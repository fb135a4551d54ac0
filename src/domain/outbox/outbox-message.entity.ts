import { defineEntity, p } from '@mikro-orm/core';
import { baseColumns, type JsonObject } from '../../db/columns.ts';

/**
 * A message to deliver (mail, SMS, event), written in the same transaction as the change that
 * causes it, so nothing is sent for a change that rolled back and nothing is lost for one that
 * committed. `dedupeKey` makes "exactly once per reminder window" a unique-index question.
 */
export const OutboxMessageSchema = defineEntity({
  name: 'OutboxMessage',
  tableName: 'outbox_message',
  properties: {
    ...baseColumns(),
    topic: p.string().length(64),
    payload: p.json<JsonObject>(),
    dedupeKey: p.string().length(200).nullable().unique(),
    availableAt: p.datetime().onCreate(() => new Date()),
    attempts: p.integer().default(0),
    lockedUntil: p.datetime().nullable(),
    /** The instance (host/pid) that made the latest claim: with `lockedUntil` ahead, who holds the job now. */
    claimedBy: p.string().length(200).nullable(),
    processedAt: p.datetime().nullable(),
    /** Set when the worker gave up (attempts exhausted or a permanent error): never claimed again. */
    failedAt: p.datetime().nullable(),
    lastError: p.text().nullable(),
    /** The W3C `traceparent` of the span that enqueued it (null with tracing off): the job's span continues that trace. */
    traceParent: p.string().length(100).nullable(),
  },
  indexes: [
    // Workers poll for due, unprocessed messages.
    { name: 'outbox_message_due_idx', properties: ['availableAt'], where: { processedAt: null } },
    // The housekeeping prune finds settled rows by age (housekeeping.ts).
    { name: 'outbox_message_processed_idx', properties: ['processedAt'] },
    { name: 'outbox_message_failed_idx', properties: ['failedAt'] },
  ],
});

export class OutboxMessage extends OutboxMessageSchema.class {}
OutboxMessageSchema.setClass(OutboxMessage);
