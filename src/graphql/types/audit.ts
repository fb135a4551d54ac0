import { actorName } from '../../domain/audit/actor-names.ts';
import type { ChainVerification } from '../../domain/audit/audit.service.ts';
import { auditActorTypes } from '../../domain/audit/audit-event.entity.ts';
import type { AuditEventData } from '../../domain/envelope/envelope.read.ts';
import { verifyEnvelopeAuditChain } from '../../domain/envelope/envelope-audit-chain.ts';
import { builder } from '../builder.ts';
import { auditEventWindow, nested } from '../selection.ts';
import { EnvelopeType } from './envelope.ts';

const AuditActorTypeEnum = builder.enumType('AuditActorType', {
  description: 'api_key: a team key; agent: a recipient’s person; system: the service itself (expiry, reminders).',
  values: auditActorTypes,
});

const AuditActor = builder.objectRef<{ type: (typeof auditActorTypes)[number]; id: string | null }>('AuditActor').implement({
  description: 'Who acted: an API key (its id), a recipient’s agent, or the system.',
  fields: (t) => ({
    type: t.field({ type: AuditActorTypeEnum, resolve: (actor) => actor.type }),
    id: t.id({ nullable: true, resolve: (actor) => actor.id }),
    name: t.string({
      nullable: true,
      description: 'The API key’s label (its prefix when unlabelled) or the person’s name; null for the system.',
      resolve: (actor, _args, context) => actorName(context, actor),
    }),
  }),
});

const AuditEventType = builder.objectRef<AuditEventData>('AuditEvent').implement({
  description: 'One link of the envelope’s hash-chained audit trail.',
  fields: (t) => ({
    seq: t.exposeInt('seq', { description: 'Grows by one per event of this envelope, without gaps.' }),
    type: t.exposeString('type', { description: 'Dotted lower-case name, e.g. recipient.added.' }),
    at: t.field({ type: 'DateTime', resolve: (event) => event.at }),
    actor: t.field({ type: AuditActor, resolve: (event) => event.actor }),
    ip: t.string({ nullable: true, resolve: (event) => event.ip }),
    userAgent: t.string({ nullable: true, resolve: (event) => event.userAgent }),
    details: t.field({ type: 'JSONObject', resolve: (event) => event.details }),
    prevHash: t.exposeString('prevHash'),
    hash: t.exposeString('hash'),
  }),
});

builder.objectField(EnvelopeType, 'auditEvents', (t) =>
  t.field({
    type: [AuditEventType],
    description: 'Recorded actions on this envelope, oldest first: at most `first` (1–1000, default 1000) after `afterSeq` (REST: GET /envelopes/{id}/audit?limit&afterSeq).',
    args: {
      first: t.arg.int({ required: false, description: '1–1000, default 1000.' }),
      afterSeq: t.arg.int({ required: false, description: 'Only events after this sequence number (the last seq you have).' }),
    },
    resolve: (envelope, args) => auditEventWindow(nested(envelope.auditEvents, 'Envelope.auditEvents'), args),
  }),
);

export const AuditChainVerification = builder.objectRef<ChainVerification>('AuditChainVerification').implement({
  description: 'The result of recomputing an envelope’s audit hash chain.',
  fields: (t) => ({
    valid: t.boolean({ resolve: (result) => result.valid }),
    length: t.int({ nullable: true, description: 'Events checked, when the chain is valid.', resolve: (result) => (result.valid ? result.length : null) }),
    headHash: t.string({ nullable: true, description: 'The hash of the last event, when the chain is valid.', resolve: (result) => (result.valid ? result.headHash : null) }),
    brokenAtSeq: t.int({ nullable: true, description: 'The first event that does not fit the chain.', resolve: (result) => (result.valid ? null : result.brokenAtSeq) }),
    reason: t.string({ nullable: true, resolve: (result) => (result.valid ? null : result.reason) }),
  }),
});

builder.queryField('verifyAuditChain', (t) =>
  t.field({
    type: AuditChainVerification,
    description: 'Recomputes an envelope’s audit chain and reports the first broken link (REST: GET /envelopes/{id}/audit/verify).',
    args: { envelopeId: t.arg.id({ required: true }) },
    resolve: (_root, args, context) => verifyEnvelopeAuditChain(context, { envelopeId: String(args.envelopeId) }),
  }),
);
