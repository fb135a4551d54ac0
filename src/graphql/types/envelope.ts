import { envelopeStatuses } from '../../domain/envelope/envelope.entity.ts';
import { type EnvelopeData, type EnvelopePageData, type EnvelopePageOptions, type EnvelopeProgress, readEnvelope, readEnvelopePage } from '../../domain/envelope/envelope.read.ts';
import { createEnvelope, deleteEnvelope, updateEnvelope } from '../../domain/envelope/envelope.service.ts';
import { builder } from '../builder.ts';
import { JSON_VALUE_KEYS, withoutNulls } from '../input.ts';
import { connectionNodesOf, envelopeIncludeOf, selectionOf } from '../selection.ts';
import { DeletedPayload, keysetConnection, pageArgs } from './common.ts';

export const EnvelopeStatusEnum = builder.enumType('EnvelopeStatus', {
  description:
    'draft → (scheduled →) sent → finalized | voided | expired. Only drafts can be edited; a scheduled envelope goes back to draft when its schedule is cancelled or its send fails.',
  values: envelopeStatuses,
});

const EnvelopeWaitingFor = builder.objectRef<EnvelopeProgress['waitingFor'][number]>('EnvelopeWaitingFor').implement({
  description: 'A role whose turn it is and who has not completed.',
  fields: (t) => ({
    recipientId: t.exposeID('recipientId'),
    roleName: t.exposeString('roleName'),
    names: t.exposeStringList('names', { description: 'The names of the people who may act for the role.' }),
  }),
});

const EnvelopeProgressType = builder.objectRef<EnvelopeProgress>('EnvelopeProgress').implement({
  description:
    'Where the signing stands: the roles that act (signers, in-person signers, delegators; a role handed on counts as its delegate), how many completed, and who is waited for (while sent).',
  fields: (t) => ({
    recipients: t.exposeInt('recipients'),
    completed: t.exposeInt('completed'),
    pending: t.exposeInt('pending'),
    waitingFor: t.field({ type: [EnvelopeWaitingFor], resolve: (progress) => progress.waitingFor }),
  }),
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
    stamp: t.boolean({
      nullable: true,
      description:
        'Visible stamps on the sealed documents: the envelope id in each page’s margin, a caption (signer, UTC date) under each signature. Null: the team’s default (teamSettings.artefacts.stamp, on unless set off).',
      resolve: (envelope) => envelope.stamp,
    }),
    createdAt: t.field({ type: 'DateTime', resolve: (envelope) => envelope.createdAt }),
    updatedAt: t.field({ type: 'DateTime', resolve: (envelope) => envelope.updatedAt }),
    sendAt: t.field({ type: 'DateTime', nullable: true, description: 'When a scheduled envelope will be sent (null unless scheduled).', resolve: (envelope) => envelope.sendAt }),
    sentAt: t.field({ type: 'DateTime', nullable: true, resolve: (envelope) => envelope.sentAt }),
    revision: t.exposeInt('revision', {
      description:
        'The envelope’s revision: 0 at send, one more for every correction of the sent envelope (envelope.corrected). A signing page submits the revision it loaded; an older one is refused with Signing.EnvelopeChanged.',
    }),
    expiresAt: t.field({ type: 'DateTime', nullable: true, resolve: (envelope) => envelope.expiresAt }),
    completedAt: t.field({ type: 'DateTime', nullable: true, description: 'Set when the envelope is finalized.', resolve: (envelope) => envelope.completedAt }),
    voidedAt: t.field({ type: 'DateTime', nullable: true, resolve: (envelope) => envelope.voidedAt }),
    templateId: t.id({
      nullable: true,
      description: 'The template it was jumpstarted from (null when created directly, or once that template is deleted).',
      resolve: (envelope) => envelope.templateId,
    }),
    publicLinkId: t.id({
      nullable: true,
      description: 'The public link a visitor made it through (null otherwise; kept when the link is deleted).',
      resolve: (envelope) => envelope.publicLinkId,
    }),
    progress: t.field({
      type: EnvelopeProgressType,
      description: 'The progress summary, read with the envelope (also on every envelope of a listing).',
      resolve: (envelope) => {
        if (envelope.progress === undefined) throw new Error('Envelope.progress was not read with its parent: the selection look-ahead missed it');
        return envelope.progress;
      },
    }),
  }),
});

const EnvelopeConnection = keysetConnection('Envelope', {
  description: "A page of the team's envelopes, newest first.",
  node: EnvelopeType,
  nodesOf: (page: EnvelopePageData) => page.envelopes,
});

/** The `envelopes` arguments (coerced) as the listing's options; also used by the pass-through (graphql/pass-through.ts). */
export function envelopePageOptionsOf(args: {
  first?: number | null;
  after?: string | null;
  q?: string | null;
  status?: string | null;
  statuses?: readonly string[] | null;
  recipientEmail?: string | null;
  templateId?: string | number | null;
  publicLinkId?: string | number | null;
  createdAfter?: Date | null;
  createdBefore?: Date | null;
  completedAfter?: Date | null;
  completedBefore?: Date | null;
  context?: unknown;
}): EnvelopePageOptions {
  return {
    limit: args.first ?? undefined,
    cursor: args.after ?? undefined,
    q: args.q ?? undefined,
    status: args.status || args.statuses ? [...(args.status ? [args.status] : []), ...(args.statuses ?? [])] : undefined,
    recipientEmail: args.recipientEmail ?? undefined,
    templateId: args.templateId === null || args.templateId === undefined ? undefined : String(args.templateId),
    publicLinkId: args.publicLinkId === null || args.publicLinkId === undefined ? undefined : String(args.publicLinkId),
    createdAfter: args.createdAfter?.toISOString(),
    createdBefore: args.createdBefore?.toISOString(),
    completedAfter: args.completedAfter?.toISOString(),
    completedBefore: args.completedBefore?.toISOString(),
    context: (args.context ?? undefined) as Record<string, string> | undefined,
  };
}

builder.queryFields((t) => ({
  envelope: t.field({
    type: EnvelopeType,
    description: 'One envelope of your team. Unknown and foreign ids give Envelope.NotFound.',
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, context, info) => readEnvelope(context, String(args.id), envelopeIncludeOf(selectionOf(info))),
  }),
  envelopes: t.field({
    type: EnvelopeConnection,
    description: "Your team's envelopes, newest first (REST: GET /envelopes). Every filter given narrows the list; `after` and `before` bounds are inclusive and exclusive.",
    args: {
      ...pageArgs(t.arg),
      q: t.arg.string({ required: false, description: 'Name contains this; letter case, accents and Turkish dotted/dotless i are ignored ("İSTANBUL" finds "istanbul").' }),
      // One status stays `status` (as before, so operations declaring `$status: EnvelopeStatus` keep
      // validating); several go in `statuses`.
      status: t.arg({ type: EnvelopeStatusEnum, required: false, description: 'This status (with `statuses`: any of them all).' }),
      statuses: t.arg({ type: [EnvelopeStatusEnum], required: false, description: 'Any of these statuses (REST: status=sent,finalized).' }),
      recipientEmail: t.arg.string({
        required: false,
        description: 'A person of the envelope has this address (given, or resolved at sending from a contact, user or group); letter case ignored.',
      }),
      templateId: t.arg.id({ required: false, description: 'Jumpstarted from this template.' }),
      publicLinkId: t.arg.id({ required: false, description: 'Made by a visitor of this public link.' }),
      createdAfter: t.arg({ type: 'DateTime', required: false }),
      createdBefore: t.arg({ type: 'DateTime', required: false }),
      completedAfter: t.arg({ type: 'DateTime', required: false }),
      completedBefore: t.arg({ type: 'DateTime', required: false }),
      context: t.arg({ type: 'JSONObject', required: false, description: 'Each key’s string value in the envelope’s context is exactly this (REST: context.<key>=<value>).' }),
    },
    resolve: (_root, args, context, info) => readEnvelopePage(context, envelopePageOptionsOf(args), envelopeIncludeOf(connectionNodesOf(selectionOf(info)))),
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
    stamp: t.boolean({ required: false, description: 'Visible stamps on the sealed documents; left out: the team’s default.' }),
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
    stamp: t.boolean({ required: false, description: 'Visible stamps on the sealed documents; null: back to the team’s default.' }),
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
      // `stamp: null` is a value here (back to the team's default), as in REST's PATCH; other nulls mean "unchanged".
      await updateEnvelope(context, { envelopeId: String(args.id), input: withoutNulls(args.input, { opaque: JSON_VALUE_KEYS, keepNull: ['stamp'] }) });
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
