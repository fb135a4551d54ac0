import { defineEntity, p } from '@mikro-orm/core';
import { type JsonObject } from '../../db/columns.ts';
import { newId } from '../../shared/ids.ts';

export const auditActorTypes = ['api_key', 'agent', 'system'] as const;
export type AuditActorType = (typeof auditActorTypes)[number];

/**
 * One link of a hash chain. A chain (`streamId`) is an envelope's history, or a team's history
 * of changes outside envelopes (templates, contacts). `seq` grows by one per chain without gaps
 * (unique with `streamId`); `hash` is an HMAC over `prevHash` and the event's canonical content,
 * so rewriting a row without the key breaks the chain.
 */
export const AuditEventSchema = defineEntity({
  name: 'AuditEvent',
  tableName: 'audit_event',
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => newId()),
    teamId: p.uuid().index(),
    streamId: p.uuid(),
    envelopeId: p.uuid().nullable(),
    seq: p.integer(),
    type: p.string().length(64),
    at: p.datetime(),
    actorType: p.enum(auditActorTypes),
    actorId: p.string().length(64).nullable(),
    ip: p.string().length(64).nullable(),
    userAgent: p.string().length(512).nullable(),
    details: p.json<JsonObject>().default('{}'),
    prevHash: p.string().length(64),
    hash: p.string().length(64),
  },
  uniques: [{ name: 'audit_event_stream_seq_unique', properties: ['streamId', 'seq'] }],
});

export class AuditEvent extends AuditEventSchema.class {}
AuditEventSchema.setClass(AuditEvent);
