import { type BulkSendProgressItem, subscribeBulkSendProgress } from '../../domain/bulk-send/bulk-send.live.ts';
import { type BulkSendData, type BulkSendRowData, readBulkSend, readBulkSendPage, readBulkSendRows } from '../../domain/bulk-send/bulk-send.read.ts';
import { cancelBulkSend, createBulkSend } from '../../domain/bulk-send/bulk-send.service.ts';
import { InvalidRequestError } from '../../shared/errors.ts';
import { builder } from '../builder.ts';
import { withoutNulls } from '../input.ts';
import { keysetConnection, MissingDataMode, pageArgs } from './common.ts';
import { AgentInput } from './recipient.ts';

/*
 * Bulk send on the GraphQL face (REST: /templates/{id}/bulk-sends, /bulk-sends). Rule-free: the
 * domain (bulk-send.service.ts) checks and records, the job sends.
 */

const BulkSendStatusEnum = builder.enumType('BulkSendStatus', {
  values: { queued: { value: 'queued' }, running: { value: 'running' }, completed: { value: 'completed' }, cancelled: { value: 'cancelled' } } as const,
});

const BulkSendRowStatusEnum = builder.enumType('BulkSendRowStatus', {
  description: 'pending: waiting; created: its draft exists, not yet sent; sent; failed (see error); cancelled before it was sent.',
  values: { pending: { value: 'pending' }, created: { value: 'created' }, sent: { value: 'sent' }, failed: { value: 'failed' }, cancelled: { value: 'cancelled' } } as const,
});

const BulkSendRowErrorType = builder.objectRef<NonNullable<BulkSendRowData['error']>>('BulkSendRowError').implement({
  description: 'Why a row failed, as an error of the API: its stable name, a description and its context.',
  fields: (t) => ({
    name: t.exposeString('name'),
    description: t.exposeString('description'),
    context: t.field({ type: 'JSONObject', resolve: (error) => error.context }),
  }),
});

const BulkSendRowType = builder.objectRef<BulkSendRowData>('BulkSendRow').implement({
  description: 'One row of a bulk send: its envelope once made, or its error.',
  fields: (t) => ({
    index: t.exposeInt('index', { description: 'The row’s place in the request (0-based).' }),
    status: t.field({ type: BulkSendRowStatusEnum, resolve: (row) => row.status }),
    envelopeId: t.id({ nullable: true, resolve: (row) => row.envelopeId }),
    error: t.field({ type: BulkSendRowErrorType, nullable: true, resolve: (row) => row.error }),
    processedAt: t.field({ type: 'DateTime', nullable: true, resolve: (row) => row.processedAt }),
  }),
});

const BulkSendRowPage = builder.objectRef<{ rows: BulkSendRowData[]; nextCursor: string | null }>('BulkSendRowPage').implement({
  description: 'A page of a bulk send’s rows, in request order.',
  fields: (t) => ({
    rows: t.field({ type: [BulkSendRowType], resolve: (page) => page.rows }),
    nextCursor: t.string({ nullable: true, description: 'Pass as `after` for the next page; null on the last.', resolve: (page) => page.nextCursor }),
  }),
});

export const BulkSendType = builder.objectRef<BulkSendData>('BulkSend').implement({
  description: 'A template sent to many people, one envelope per row, by a background job (README, "Bulk send").',
  fields: (t) => ({
    id: t.exposeID('id'),
    templateId: t.id({ resolve: (bulkSend) => bulkSend.templateId }),
    name: t.string({ nullable: true, resolve: (bulkSend) => bulkSend.name }),
    status: t.field({ type: BulkSendStatusEnum, resolve: (bulkSend) => bulkSend.status }),
    total: t.exposeInt('total', { description: 'Rows in the request (invalid ones skipped with skipInvalidRows included, as failed).' }),
    created: t.exposeInt('created', { description: 'Rows made into an envelope.' }),
    sent: t.exposeInt('sent', { description: 'Rows whose envelope was sent.' }),
    failed: t.exposeInt('failed'),
    createdAt: t.field({ type: 'DateTime', resolve: (bulkSend) => bulkSend.createdAt }),
    completedAt: t.field({ type: 'DateTime', nullable: true, description: 'When every row was sent or failed, or when it was cancelled.', resolve: (bulkSend) => bulkSend.completedAt }),
    rows: t.field({
      type: BulkSendRowPage,
      description: 'The rows in request order, optionally of one status (REST: GET /bulk-sends/{id}/rows).',
      args: { status: t.arg({ type: BulkSendRowStatusEnum, required: false }), ...pageArgs(t.arg) },
      resolve: (bulkSend, args, context) =>
        readBulkSendRows(context, { bulkSendId: bulkSend.id, status: args.status ?? undefined, limit: args.first ?? undefined, cursor: args.after ?? undefined }),
    }),
  }),
});

const BulkSendConnection = keysetConnection('BulkSend', {
  description: 'A page of your team’s bulk sends, newest first.',
  node: BulkSendType,
  nodesOf: (page: { bulkSends: BulkSendData[]; nextCursor: string | null }) => page.bulkSends,
});

const BulkSendRecipientInput = builder.inputType('BulkSendRecipientInput', {
  description: 'The people of one role of the template for this row. A role without an entry keeps the template’s person; a fixed role always does.',
  fields: (t) => ({
    identifier: t.string({ required: true, description: 'The role identifier, exactly as in the template.' }),
    agents: t.field({ type: [AgentInput], required: false }),
  }),
});

const BulkSendRowInput = builder.inputType('BulkSendRowInput', {
  description: 'One envelope of a bulk send.',
  fields: (t) => ({
    recipients: t.field({ type: [BulkSendRecipientInput], required: false }),
    name: t.string({ required: false, description: "The envelope's name (2–48 characters); default the template's." }),
    context: t.field({ type: 'JSONObject', required: false }),
    values: t.field({ type: 'JSONObject', required: false, description: 'Field identifier → value (docs/fields.md), prefilled; a read-only field of the template stays read-only.' }),
    data: t.field({ type: 'JSONObject', required: false, description: 'Values for the template documents’ {{data:PATH}} tags, as jumpstartEnvelope’s data (README "Data merge").' }),
  }),
});

const CreateBulkSendInput = builder.inputType('CreateBulkSendInput', {
  description: 'Exactly one of rows or csv (REST: POST /templates/{id}/bulk-sends, JSON or multipart).',
  fields: (t) => ({
    name: t.string({ required: false, description: 'Your name for it, up to 200 characters.' }),
    skipInvalidRows: t.boolean({
      required: false,
      description: 'true: send the valid rows and record the invalid ones as failed; false (default): one invalid row refuses the whole request.',
    }),
    rows: t.field({ type: [BulkSendRowInput], required: false, description: 'At most 1,000.' }),
    csv: t.string({
      required: false,
      description: 'The rows as CSV text: columns <role>.name, .email, .phone, .locale, envelope.name, field.<identifier>, data.<path> (README, "Bulk send", "Data merge").',
    }),
    missingData: t.field({ type: MissingDataMode, required: false, description: 'refuse (default): a row whose data lacks a data tag’s path is invalid; blank: that value is left blank.' }),
  }),
});

builder.queryFields((t) => ({
  bulkSend: t.field({
    type: BulkSendType,
    description: 'One of your team’s bulk sends and its progress (REST: GET /bulk-sends/{id}). Unknown and foreign ids give BulkSend.NotFound.',
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, context) => readBulkSend(context, String(args.id)),
  }),
  bulkSends: t.field({
    type: BulkSendConnection,
    description: 'Your team’s bulk sends, newest first (REST: GET /bulk-sends).',
    args: { ...pageArgs(t.arg) },
    resolve: (_root, args, context) => readBulkSendPage(context, { limit: args.first ?? undefined, cursor: args.after ?? undefined }),
  }),
}));

builder.mutationFields((t) => ({
  createBulkSend: t.field({
    type: BulkSendType,
    nullable: true,
    description:
      'Sends a template to many people, one envelope per row, by a background job; answers the queued bulk send. Every row is checked first: Request.Invalid lists the invalid rows by index in extensions.context.rows (nothing created) unless skipInvalidRows. More than 1,000 rows: BulkSend.TooManyRows. Honours the Idempotency-Key header.',
    args: { templateId: t.arg.id({ required: true }), input: t.arg({ type: CreateBulkSendInput, required: true }) },
    resolve: async (_root, args, context) => {
      const input = withoutNulls(args.input, { opaque: ['context', 'values', 'info', 'data'] }) as {
        name?: string;
        skipInvalidRows?: boolean;
        missingData?: string;
        rows?: unknown[];
        csv?: string;
      };
      if ((input.rows === undefined) === (input.csv === undefined)) throw new InvalidRequestError([{ path: 'input', message: 'give exactly one of rows or csv' }]);
      const { csv, ...rest } = input;
      const source =
        csv === undefined
          ? { kind: 'json' as const, body: rest }
          : {
              kind: 'csv' as const,
              text: csv,
              fields: {
                ...(rest.name === undefined ? {} : { name: rest.name }),
                ...(rest.skipInvalidRows === undefined ? {} : { skipInvalidRows: String(rest.skipInvalidRows) }),
                ...(rest.missingData === undefined ? {} : { missingData: rest.missingData }),
              },
            };
      const { bulkSendId } = await createBulkSend(context, { templateId: String(args.templateId), source, idempotencyKey: context.idempotencyKey });
      return readBulkSend(context, bulkSendId);
    },
  }),
  cancelBulkSend: t.field({
    type: BulkSendType,
    nullable: true,
    description:
      'Cancels a bulk send: no row not yet sent is sent (drafts already made stay drafts). Again on a cancelled one: no change; on a completed one: BulkSend.Finished (REST: POST /bulk-sends/{id}/cancel).',
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_root, args, context) => {
      await cancelBulkSend(context, { bulkSendId: String(args.id) });
      return readBulkSend(context, String(args.id));
    },
  }),
}));

/** The last item of an ended subscription carries its error: raised here, it reaches the client by name. */
function progressOf(item: BulkSendProgressItem): BulkSendData {
  if ('ended' in item) throw item.ended;
  return item;
}

builder.subscriptionField('bulkSendProgress', (t) =>
  t.field({
    type: BulkSendType,
    description:
      'The bulk send now, then each time its counters or status change; the completed or cancelled answer comes last and the subscription completes. A foreign or unknown id: BulkSend.NotFound.',
    args: { id: t.arg.id({ required: true }) },
    subscribe: (_root, args, context) => subscribeBulkSendProgress(context, { bulkSendId: String(args.id) }),
    resolve: (item: BulkSendProgressItem) => progressOf(item),
  }),
);
