import { envelopeStatuses } from '../../domain/envelope/envelope.entity.ts';
import { readEnvelope, readEnvelopePage, type EnvelopeData, type EnvelopePageData } from '../../domain/envelope/envelope.read.ts';
import { createEnvelope, deleteEnvelope, updateEnvelope } from '../../domain/envelope/envelope.service.ts';
import { builder } from '../builder.ts';
import { connectionNodesOf, envelopeIncludeOf, selectionOf } from '../selection.ts';
import { JSON_VALUE_KEYS, withoutNulls } from '../input.ts';
import { DeletedPayload, keysetConnection, pageArgs } from './common.ts';

export const EnvelopeStatusEnum = builder.enumType('EnvelopeStatus', {
  description: 'draft → sent → finalized | voided | expired. Only drafts can be edited.',
  values: envelopeStatuses,
});

export const EnvelopeType = builder.objectRef<EnvelopeData>('Envelope').implement({
  description: 'One signing session: documents, recipient roles and fields, moving from draft to a closed state.',
  fields: (t) => ({
    id: t.exposeID('id'),
    name: t.exposeString('name', { description: 'Display name, 2–48 characters.' }),
    status: t.field({ type: EnvelopeStatusEnum, resolve: (envelope) => envelope.status }),
    expirationPeriodDays: t.exposeInt('expirationPeriodDays', { description: 'Days from sending until the envelope expires, 1–90.' }),
    reminderInitialDelayDays: t.exposeInt('reminderInitialDelayDays', { description: 'Days after activation before the first reminder, 0–30 (0 = none).' }),
    reminderRepeatIntervalDays: t.exposeInt('reminderRepeatIntervalDays', { description: 'Days between later reminders, 0–30 (0 = none).' }),
    reminderBeforeExpirationDays: t.exposeInt('reminderBeforeExpirationDays', { description: 'Days before expiry for a last reminder, 0–30 (0 = none).' }),
    context: t.field({ type: 'JSONObject', description: 'Your own metadata, returned as given.', resolve: (envelope) => envelope.context }),
    createdAt: t.field({ type: 'DateTime', resolve: (envelope) => envelope.createdAt }),
    updatedAt: t.field({ type: 'DateTime', resolve: (envelope) => envelope.updatedAt }),
    sentAt: t.field({ type: 'DateTime', nullable: true, resolve: (envelope) => envelope.sentAt }),
    expiresAt: t.field({ type: 'DateTime', nullable: true, resolve: (envelope) => envelope.expiresAt }),
    completedAt: t.field({ type: 'DateTime', nullable: true, description: 'Set when the envelope is finalized.', resolve: (envelope) => envelope.completedAt }),
    voidedAt: t.field({ type: 'DateTime', nullable: true, resolve: (envelope) => envelope.voidedAt }),
    templateId: t.id({
      nullable: true,
      description: 'The template it was jumpstarted from (null when created directly, or once that template is deleted).',
      resolve: (envelope) => envelope.templateId,
    }),
  }),
});

const EnvelopeConnection = keysetConnection('Envelope', {
  description: "A page of the team's envelopes, newest first.",
  node: EnvelopeType,
  nodesOf: (page: EnvelopePageData) => page.envelopes,
});

builder.queryFields((t) => ({
  envelope: t.field({
    type: EnvelopeType,
    description: 'One envelope of your team. Unknown and foreign ids give Envelope.NotFound.',
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, context, info) => readEnvelope(context, String(args.id), envelopeIncludeOf(selectionOf(info))),
  }),
  envelopes: t.field({
    type: EnvelopeConnection,
    description: "Your team's envelopes, newest first, optionally of one status.",
    args: {
      ...pageArgs(t.arg),
      status: t.arg({ type: EnvelopeStatusEnum, required: false }),
    },
    resolve: (_root, args, context, info) =>
      readEnvelopePage(
        context,
        { limit: args.first ?? undefined, cursor: args.after ?? undefined, status: args.status ?? undefined },
        envelopeIncludeOf(connectionNodesOf(selectionOf(info))),
      ),
  }),
}));

const CreateEnvelopeInput = builder.inputType('CreateEnvelopeInput', {
  description: 'A new draft envelope (REST: POST /envelopes).',
  fields: (t) => ({
    name: t.string({ required: true, description: '2–48 characters.' }),
    expirationPeriodDays: t.int({ required: false, description: '1–90, default 30.' }),
    reminderInitialDelayDays: t.int({ required: false, description: '0–30, default 0.' }),
    reminderRepeatIntervalDays: t.int({ required: false, description: '0–30, default 0.' }),
    reminderBeforeExpirationDays: t.int({ required: false, description: '0–30, default 0.' }),
    context: t.field({ type: 'JSONObject', required: false }),
  }),
});

const UpdateEnvelopeInput = builder.inputType('UpdateEnvelopeInput', {
  description: 'Only the given settings change. Drafts only.',
  fields: (t) => ({
    name: t.string({ required: false }),
    expirationPeriodDays: t.int({ required: false }),
    reminderInitialDelayDays: t.int({ required: false }),
    reminderRepeatIntervalDays: t.int({ required: false }),
    reminderBeforeExpirationDays: t.int({ required: false }),
    context: t.field({ type: 'JSONObject', required: false }),
  }),
});

builder.mutationFields((t) => ({
  createEnvelope: t.field({
    type: EnvelopeType,
    nullable: true,
    description: 'Creates a draft envelope (REST: POST /envelopes). Honours the Idempotency-Key header.',
    args: { input: t.arg({ type: CreateEnvelopeInput, required: true }) },
    // The envelope as created (every nested list read with it), which is also what a repeat with
    // the same Idempotency-Key answers, even after the envelope changed or was deleted.
    resolve: (_root, args, context) =>
      createEnvelope(context, {
        input: withoutNulls(args.input, { opaque: JSON_VALUE_KEYS }),
        idempotencyKey: context.idempotencyKey,
      }),
  }),
  updateEnvelope: t.field({
    type: EnvelopeType,
    nullable: true,
    description: 'Changes settings of a draft (REST: PATCH /envelopes/{id}).',
    args: { id: t.arg.id({ required: true }), input: t.arg({ type: UpdateEnvelopeInput, required: true }) },
    resolve: async (_root, args, context, info) => {
      await updateEnvelope(context, { envelopeId: String(args.id), input: withoutNulls(args.input, { opaque: JSON_VALUE_KEYS }) });
      return readEnvelope(context, String(args.id), envelopeIncludeOf(selectionOf(info)));
    },
  }),
  deleteEnvelope: t.field({
    type: DeletedPayload,
    nullable: true,
    description: 'Deletes a draft with everything in it (REST: DELETE /envelopes/{id}). Sent envelopes are voided instead.',
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_root, args, context) => {
      await deleteEnvelope(context, { envelopeId: String(args.id) });
      return { id: String(args.id) };
    },
  }),
}));
