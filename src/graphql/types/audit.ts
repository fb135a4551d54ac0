import { auditActorTypes, type AuditEvent } from '../../domain/audit/audit-event.entity.ts';
import { builder } from '../builder.ts';
import { EnvelopeType } from './envelope.ts';

const AuditActorTypeEnum = builder.enumType('AuditActorType', { values: auditActorTypes });

const AuditActor = builder.objectRef<{ type: (typeof auditActorTypes)[number]; id: string | null }>('AuditActor').implement({
  description: 'Who acted: an API key (its id), a recipient’s agent, or the system.',
  fields: (t) => ({
    type: t.field({ type: AuditActorTypeEnum, resolve: (actor) => actor.type }),
    id: t.id({ nullable: true, resolve: (actor) => actor.id }),
  }),
});

const AuditEventType = builder.objectRef<AuditEvent>('AuditEvent').implement({
  description: 'One link of the envelope’s hash-chained audit trail.',
  fields: (t) => ({
    seq: t.exposeInt('seq', { description: 'Grows by one per event of this envelope, without gaps.' }),
    type: t.exposeString('type', { description: 'Dotted lower-case name, e.g. recipient.added.' }),
    at: t.expose('at', { type: 'DateTime' }),
    actor: t.field({ type: AuditActor, resolve: (event) => ({ type: event.actorType, id: event.actorId ?? null }) }),
    ip: t.string({ nullable: true, resolve: (event) => event.ip ?? null }),
    userAgent: t.string({ nullable: true, resolve: (event) => event.userAgent ?? null }),
    details: t.field({ type: 'JSONObject', resolve: (event) => event.details }),
    prevHash: t.exposeString('prevHash'),
    hash: t.exposeString('hash'),
  }),
});

builder.objectField(EnvelopeType, 'auditEvents', (t) =>
  t.field({
    type: [AuditEventType],
    description: 'Every recorded action on this envelope, oldest first (REST: GET /envelopes/{id}/audit).',
    // The envelope itself came through the tenant filter, so its events may be batch-loaded.
    resolve: (envelope, _args, context) => context.loaders.auditEventsByEnvelope.load(envelope.id),
  }),
);
