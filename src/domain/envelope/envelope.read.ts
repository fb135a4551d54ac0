import { createHash } from 'node:crypto';
import { sql, type AliasableExpression, type AliasedExpression, type Expression, type ExpressionBuilder } from 'kysely';
import { jsonArrayFrom, jsonObjectFrom } from 'kysely/helpers/postgres';
import { z } from 'zod';
import { isUuid } from '../../shared/ids.ts';
import { DocumentNotFoundError } from '../document/document.errors.ts';
import { FieldNotFoundError } from '../field/field.errors.ts';
import { decodeCursorPosition, keysetPageInput, takePage } from '../pagination.ts';
import type { AgentNotificationFailure } from '../recipient/agent.entity.ts';
import { isoTimestamp, readOwnerChild, readOwnerChildItem, runRead, shapeOfKeys, type ReadDatabase, type Slot } from '../read-model.ts';
import { RecipientNotFoundError } from '../recipient/recipient.errors.ts';
import type { ServiceContext } from '../service-context.ts';
import { parseInput } from '../validation.ts';
import { envelopeStatuses, type EnvelopeStatus } from './envelope.entity.ts';
import { EnvelopeNotFoundError } from './envelope.errors.ts';
import { teamEnvelopes, wellFormedEnvelopeId } from './team-envelope.ts';
import { withActorNames } from '../audit/actor-names.ts';

/*
 * The envelope aggregate's read model: an envelope with any of its documents, recipients (with
 * agents), fields (with views) and audit events, each read with ONE statement whatever is nested.
 * The answers are plain data in the faces' shape; REST serialises them as they are and GraphQL
 * resolves its fields from them.
 */

export type PageData = { index: number; width: number; height: number; rotation: number };

export type DocumentData = {
  id: string;
  name: string;
  order: number;
  status: string | null;
  context: Record<string, unknown>;
  pageCount: number;
  pages: PageData[];
  sha256: string;
  byteSize: number;
  createdAt: string;
};

export type AgentInfoData = { name: string; email?: string | null; phone?: string | null; locale?: string | null; phoneContactMethod?: string | null };

/** Exactly one reference key is present, the one of its `kind` (as the REST contract shows agents). */
export type AgentData = {
  id: string;
  kind: 'info' | 'contact' | 'group' | 'user';
  info?: AgentInfoData;
  contactId?: string | null;
  groupId?: string | null;
  userId?: string | null;
  /** Delivery of the messages to this agent's people (invitation, reminders, notices); absent until one was delivered or failed. */
  notification?: AgentNotificationData;
};

export type AgentNotificationData = {
  /** The last time a message to this agent was delivered to its provider. */
  lastDeliveredAt: string | null;
  /** The last message given up for good (a later delivery clears it). */
  failure: AgentNotificationFailure | null;
};

export type RecipientData = {
  id: string;
  identifier: string;
  roleName: string;
  type: string;
  order: number;
  required: boolean;
  color: string;
  hostedById: string | null;
  delegatedById: string | null;
  /** Present when `agents` was asked for. */
  agents?: AgentData[];
  activatedAt: string | null;
  completedAt: string | null;
  delegatedAt: string | null;
  removedAt: string | null;
};

export type FieldPlacementData = {
  documentId: string;
  page: number;
  location: { x: number; y: number };
  size: { width: number; height: number };
};

export type FieldData = {
  id: string;
  identifier: string;
  type: string;
  recipientId: string | null;
  label: string | null;
  tooltip: string | null;
  required: boolean;
  readonly: boolean;
  value: Record<string, unknown> | null;
  config: Record<string, unknown>;
  /** Present when `views` was asked for. */
  views?: FieldPlacementData[];
  submittedAt: string | null;
};

export type AuditEventData = {
  seq: number;
  type: string;
  at: string;
  /** `name` only where asked for (`withActorNames`, audit/actor-names.ts). */
  actor: { type: 'api_key' | 'agent' | 'system'; id: string | null; name?: string | null };
  ip: string | null;
  userAgent: string | null;
  details: Record<string, unknown>;
  prevHash: string;
  hash: string;
};

export type EnvelopeData = {
  id: string;
  name: string;
  status: EnvelopeStatus;
  expirationPeriodDays: number;
  reminderInitialDelayDays: number;
  reminderRepeatIntervalDays: number;
  reminderBeforeExpirationDays: number;
  context: Record<string, unknown>;
  createdAt: string;
  updatedAt: string;
  sentAt: string | null;
  expiresAt: string | null;
  completedAt: string | null;
  voidedAt: string | null;
  /** The template the envelope was jumpstarted from; null when made directly or once that template is deleted. */
  templateId: string | null;
  /** Each nested list is present exactly when the include asked for it. */
  documents?: DocumentData[];
  recipients?: RecipientData[];
  fields?: FieldData[];
  auditEvents?: AuditEventData[];
};

/**
 * What to nest in an envelope read. `agents` applies to recipients and `views` to fields, so a
 * caller that never shows placements does not pay for them.
 */
export type EnvelopeInclude = {
  documents?: boolean;
  recipients?: boolean;
  agents?: boolean;
  fields?: boolean;
  views?: boolean;
  auditEvents?: boolean;
  /** Which audit events to nest: those after `afterSeq` (default 0), at most `limit`. */
  auditEventPage?: AuditEventPage;
  /**
   * The keys to answer for each kind of object, when the caller shows only some (GraphQL's
   * selection): PostgreSQL then neither reads nor formats the others. Every key when absent.
   * Ids (and an envelope's `createdAt`, which its cursor needs) are always read.
   */
  keys?: Partial<Record<'envelope' | 'document' | 'recipient' | 'field' | 'auditEvent', ReadonlySet<string>>>;
};

/** A window of an envelope's audit trail, oldest first. */
export type AuditEventPage = { afterSeq: number; limit: number };

/** The most audit events one read answers (per envelope); the trail itself is unbounded. */
export const MAX_AUDIT_EVENTS_PER_PAGE = 1_000;

const auditEventPageInput = z.strictObject({
  afterSeq: z.number().int('must be an integer').min(0, 'must be 0 or more').max(2_147_483_647, 'is too large').default(0),
  limit: z.number().int('must be an integer').min(1, 'must be at least 1').max(MAX_AUDIT_EVENTS_PER_PAGE, `must be at most ${MAX_AUDIT_EVENTS_PER_PAGE}`).default(MAX_AUDIT_EVENTS_PER_PAGE),
});

/** Checks a caller's audit window (`Request.Invalid` when out of range). */
export function parseAuditEventPage(options: { afterSeq?: number; limit?: number }): AuditEventPage {
  return parseInput(auditEventPageInput, options);
}

/** The envelope keys of the REST `envelope` object: the envelope without nested lists. */
export function envelopeOnly(envelope: EnvelopeData) {
  const { documents: _documents, recipients: _recipients, fields: _fields, auditEvents: _auditEvents, ...rest } = envelope;
  return rest;
}

type Eb = ExpressionBuilder<ReadDatabase & { e: ReadDatabase['envelope'] }, 'e'>;
type AnyEb = ExpressionBuilder<any, any>;
export type Keys = ReadonlySet<string> | undefined;

/** A key of an answer object and how to compute it, built only when the key is wanted. */
export type Column = [key: string, build: () => AliasableExpression<unknown>];

/** The selection of `columns` a caller wants (and the `always` ones), each aliased to its key. */
export function pick(columns: Column[], keys: Keys, always: readonly string[] = ['id']) {
  return columns.filter(([key]) => keys === undefined || keys.has(key) || always.includes(key)).map(([key, build]) => build().as(key));
}

// ---------------------------------------------------------------------------------------------
// Selections. Each takes the SQL reference of its parent's id and returns a correlated subquery
// (nested lists) or the columns of one row.

/** A document row's columns under `alias` (envelope and template documents alike). */
export function documentColumns(eb: AnyEb, alias: string, keys: Keys) {
  const column = (name: string) => () => eb.ref(`${alias}.${name}`);
  return pick(
    [
      ['id', column('id')],
      ['name', column('name')],
      ['order', column('order')],
      ['status', column('status')],
      ['context', column('context')],
      ['pageCount', column('page_count')],
      // Pages carry their index so that field views can name them.
      [
        'pages',
        () => sql<PageData[]>`(select coalesce(json_agg(page_row order by page_row.index), '[]'::json) from (
            select p.i - 1 as index, p.page -> 'width' as width, p.page -> 'height' as height, p.page -> 'rotation' as rotation
            from jsonb_array_elements(${eb.ref(`${alias}.pages`)}) with ordinality as p(page, i)) page_row)`,
      ],
      ['sha256', column('content_sha256')],
      ['byteSize', () => sql<number>`${eb.ref(`${alias}.byte_size`)}::float8`],
      ['createdAt', () => isoTimestamp(eb.ref(`${alias}.created_at`))],
    ],
    keys,
  );
}

export function documentsOf(eb: AnyEb, envelopeId: string, keys: Keys) {
  return jsonArrayFrom(
    eb
      .selectFrom('document as d')
      .select((inner: AnyEb) => documentColumns(inner, 'd', keys))
      .whereRef('d.envelope_id', '=', envelopeId)
      .orderBy('d.order')
      .orderBy('d.created_at')
      .orderBy('d.id'),
  );
}

function agentsOf(eb: AnyEb, recipientId: string) {
  // The reference key shown depends on the kind, as in the REST contract.
  const agent = sql`case a.kind
      when 'info' then (select to_json(info_agent) from (select a.id, a.kind, a.info) info_agent)
      when 'contact' then (select to_json(contact_agent) from (select a.id, a.kind, a.contact_id as "contactId") contact_agent)
      when 'group' then (select to_json(group_agent) from (select a.id, a.kind, a.group_id as "groupId") group_agent)
      else (select to_json(user_agent) from (select a.id, a.kind, a.user_id as "userId") user_agent) end`;
  // Once a message to the agent was delivered or given up, the sender sees it (`notification`);
  // a draft's agents keep the spec's shape.
  const notification = sql`json_build_object('lastDeliveredAt', ${isoTimestamp(sql`a.notified_at`)}, 'failure', a.notification_failure)`;
  return eb
    .selectFrom('agent as a')
    .select(
      sql<AgentData[]>`coalesce(json_agg(case when a.notified_at is null and a.notification_failure is null then ${agent}
          else (${agent}::jsonb || jsonb_build_object('notification', ${notification}))::json end
        order by a.position), '[]'::json)`.as('agents'),
    )
    .whereRef('a.recipient_id', '=', recipientId)
    // A delegated role shows the person it was handed to, not the one whose link died.
    .where('a.revoked_at', 'is', null);
}

function recipientColumns(eb: AnyEb, alias: string, include: Pick<EnvelopeInclude, 'agents'>, keys: Keys) {
  const column = (name: string) => () => eb.ref(`${alias}.${name}`);
  const timestamp = (name: string) => () => isoTimestamp(eb.ref(`${alias}.${name}`));
  return pick(
    [
      ['id', column('id')],
      ['identifier', column('identifier')],
      ['roleName', column('role_name')],
      ['type', column('type')],
      ['order', column('order')],
      ['required', column('required')],
      ['color', column('color')],
      ['hostedById', column('hosted_by_id')],
      ['delegatedById', column('delegated_by_id')],
      ...(include.agents ? [['agents', () => agentsOf(eb, `${alias}.id`)] as Column] : []),
      ['activatedAt', timestamp('activated_at')],
      ['completedAt', timestamp('completed_at')],
      ['delegatedAt', timestamp('delegated_at')],
      ['removedAt', timestamp('removed_at')],
    ],
    keys,
  );
}

function recipientsOf(eb: AnyEb, envelopeId: string, include: Pick<EnvelopeInclude, 'agents'>, keys: Keys) {
  return jsonArrayFrom(
    eb
      .selectFrom('recipient as r')
      .select((inner: AnyEb) => recipientColumns(inner, 'r', include, keys))
      .whereRef('r.envelope_id', '=', envelopeId)
      .orderBy('r.order')
      .orderBy('r.created_at')
      .orderBy('r.id'),
  );
}

export function viewsOf(eb: AnyEb, fieldId: string) {
  return eb
    .selectFrom('field_view as v')
    .select(
      sql<FieldPlacementData[]>`coalesce(json_agg((select view_row from (select v.document_id as "documentId", v.page,
          (select point from (select v.x, v.y) point) as location,
          (select box from (select v.width, v.height) box) as size) view_row) order by v.position), '[]'::json)`.as('views'),
    )
    .whereRef('v.field_id', '=', fieldId);
}

/**
 * A field row's columns under `alias`. A template's field names its role in
 * `template_recipient_id`; both answer it as `recipientId`.
 */
export function fieldColumns(eb: AnyEb, alias: string, include: Pick<EnvelopeInclude, 'views'>, keys: Keys, recipientColumn: 'recipient_id' | 'template_recipient_id' = 'recipient_id') {
  const column = (name: string) => () => eb.ref(`${alias}.${name}`);
  return pick(
    [
      ['id', column('id')],
      ['identifier', column('identifier')],
      ['type', column('type')],
      ['recipientId', column(recipientColumn)],
      ['label', column('label')],
      ['tooltip', column('tooltip')],
      ['required', column('required')],
      ['readonly', column('readonly')],
      ['value', column('value')],
      ['config', column('config')],
      ...(include.views ? [['views', () => viewsOf(eb, `${alias}.id`)] as Column] : []),
      ['submittedAt', () => isoTimestamp(eb.ref(`${alias}.submitted_at`))],
    ],
    keys,
  );
}

function fieldsOf(eb: AnyEb, envelopeId: string, include: Pick<EnvelopeInclude, 'views'>, keys: Keys) {
  return jsonArrayFrom(
    eb
      .selectFrom('field as f')
      .select((inner: AnyEb) => fieldColumns(inner, 'f', include, keys))
      .whereRef('f.envelope_id', '=', envelopeId)
      .orderBy('f.created_at')
      .orderBy('f.identifier'),
  );
}

function auditEventsOf(eb: AnyEb, envelopeId: string, keys: Keys, window: { afterSeq: unknown; limit: unknown }) {
  return jsonArrayFrom(
    eb
      .selectFrom('audit_event as ae')
      .select((inner: AnyEb) =>
        pick(
          [
            ['seq', () => inner.ref('ae.seq')],
            ['type', () => inner.ref('ae.type')],
            ['at', () => isoTimestamp(inner.ref('ae.at'))],
            ['actor', () => sql`(select actor_row from (select ae.actor_type as type, ae.actor_id as id) actor_row)`],
            ['ip', () => inner.ref('ae.ip')],
            ['userAgent', () => inner.ref('ae.user_agent')],
            ['details', () => inner.ref('ae.details')],
            ['prevHash', () => inner.ref('ae.prev_hash')],
            ['hash', () => inner.ref('ae.hash')],
          ],
          keys,
        ),
      )
      .whereRef('ae.stream_id', '=', envelopeId)
      .where('ae.seq', '>', window.afterSeq as number)
      .orderBy('ae.seq')
      .limit(window.limit as number),
  );
}

function envelopeColumns(eb: Eb, include: EnvelopeInclude) {
  const column = (name: keyof ReadDatabase['envelope']) => () => eb.ref(`e.${name}`);
  const timestamp = (name: keyof ReadDatabase['envelope']) => () => isoTimestamp(eb.ref(`e.${name}`) as Expression<Date | null>);
  const keys = include.keys ?? {};
  const nested: Column[] = [];
  if (include.documents) nested.push(['documents', () => documentsOf(eb, 'e.id', keys.document)]);
  if (include.recipients) nested.push(['recipients', () => recipientsOf(eb, 'e.id', include, keys.recipient)]);
  if (include.fields) nested.push(['fields', () => fieldsOf(eb, 'e.id', include, keys.field)]);
  // The window's numbers are part of the statement's shape (a handful of distinct values in practice).
  const window = include.auditEventPage ?? { afterSeq: 0, limit: MAX_AUDIT_EVENTS_PER_PAGE };
  if (include.auditEvents) nested.push(['auditEvents', () => auditEventsOf(eb, 'e.id', keys.auditEvent, { afterSeq: sql.lit(window.afterSeq), limit: sql.lit(window.limit) })]);
  return pick(
    [
      ['id', column('id')],
      ['name', column('name')],
      ['status', column('status')],
      ['expirationPeriodDays', column('expiration_period_days')],
      ['reminderInitialDelayDays', column('reminder_initial_delay_days')],
      ['reminderRepeatIntervalDays', column('reminder_repeat_interval_days')],
      ['reminderBeforeExpirationDays', column('reminder_before_expiration_days')],
      ['context', column('context')],
      ['createdAt', timestamp('created_at')],
      ['updatedAt', timestamp('updated_at')],
      ['sentAt', timestamp('sent_at')],
      ['expiresAt', timestamp('expires_at')],
      ['completedAt', timestamp('completed_at')],
      ['voidedAt', timestamp('voided_at')],
      ['templateId', column('template_id')],
    ],
    keys.envelope,
    // A page's cursor is made of these.
    ['id', 'createdAt'],
  ).concat(nested.map(([key, build]) => build().as(key)));
}

/** The text that decides an envelope read's SQL: nested lists and keys, never ids. */
function shapeOfInclude(include: EnvelopeInclude): string {
  const flags = (['documents', 'recipients', 'agents', 'fields', 'views', 'auditEvents'] as const).map((flag) => (include[flag] ? '1' : '0')).join('');
  const audit = include.auditEvents && include.auditEventPage ? `${include.auditEventPage.afterSeq}+${include.auditEventPage.limit}` : '';
  const keys = include.keys ?? {};
  const keyShapes = (['envelope', 'document', 'recipient', 'field', 'auditEvent'] as const).map((kind) => shapeOfKeys(keys[kind])).join('|');
  return `${flags}|${audit}|${keyShapes}`;
}

// ---------------------------------------------------------------------------------------------
// Reads. Each is one statement, compiled once per shape (runRead): values go in slots.

/** One envelope of the caller's team with what `include` asks for; `Envelope.NotFound` otherwise. */
export async function readEnvelope(context: ServiceContext, envelopeId: string, include: EnvelopeInclude = {}): Promise<EnvelopeData> {
  const caller = await context.caller();
  wellFormedEnvelopeId(envelopeId);
  const [row] = await runRead<EnvelopeData>(
    context.reader,
    `envelope:${shapeOfInclude(include)}`,
    (db, slot) =>
      teamEnvelopes(db, slot(0))
        .select((eb) => envelopeColumns(eb, include))
        .where('e.id', '=', slot(1)),
    [caller.teamId, envelopeId],
  );
  if (!row) throw new EnvelopeNotFoundError(envelopeId);
  return row;
}

/**
 * The REST answer for one envelope (`{ envelope, documents?, recipients?, fields? }`) as JSON text
 * written by PostgreSQL, with a strong validator: the tag hashes exactly that text, so any change
 * to anything in the answer changes it, and a conditional GET whose tag still matches costs one
 * statement and no parsing or serialisation here.
 */
export async function readEnvelopeAnswer(
  context: ServiceContext,
  envelopeId: string,
  include: EnvelopeInclude,
): Promise<{ tag: string; payloadJson: string }> {
  const caller = await context.caller();
  wellFormedEnvelopeId(envelopeId);
  const [row] = await runRead<{ text: string }>(
    context.reader,
    `envelope-answer:${shapeOfInclude(include)}`,
    (db, slot) =>
      teamEnvelopes(db, slot(0))
        .select((eb) => {
          const keys = include.keys ?? {};
          // Rows, not json_build_object: to_json writes a row compactly, as JSON.stringify would.
          const answer: AliasedExpression<unknown, string>[] = [jsonObjectFrom(db.selectNoFrom((inner) => envelopeColumns(inner as Eb, { keys }))).as('envelope')];
          if (include.documents) answer.push(documentsOf(eb, 'e.id', keys.document).as('documents'));
          if (include.recipients) answer.push(recipientsOf(eb, 'e.id', include, keys.recipient).as('recipients'));
          if (include.fields) answer.push(fieldsOf(eb, 'e.id', include, keys.field).as('fields'));
          return sql<string>`${jsonObjectFrom(db.selectNoFrom(answer))}::text`.as('text');
        })
        .where('e.id', '=', slot(1)),
    [caller.teamId, envelopeId],
  );
  if (!row) throw new EnvelopeNotFoundError(envelopeId);
  // Hashing here is microseconds for 50 KB; the tag is what pollers compare.
  const tag = createHash('sha256').update(row.text).digest('base64url').slice(0, 32);
  return { tag, payloadJson: row.text };
}

const pageInput = keysetPageInput.omit({ search: true }).extend({
  status: z.enum(envelopeStatuses, { error: `must be one of ${envelopeStatuses.join(', ')}` }).optional(),
});

export type EnvelopePageData = { envelopes: EnvelopeData[]; nextCursor: string | null };

/**
 * The caller's envelopes, newest first, keyset-paginated on (createdAt, id): stable under
 * concurrent inserts and one index range scan however deep the caller pages.
 */
export async function readEnvelopePage(
  context: ServiceContext,
  options: { status?: EnvelopeStatus | string; limit?: number; cursor?: string },
  include: EnvelopeInclude = {},
): Promise<EnvelopePageData> {
  const input = parseInput(pageInput, options);
  const caller = await context.caller();
  const after = input.cursor === undefined ? undefined : decodeCursorPosition(input.cursor);
  const rows = await runRead<EnvelopeData>(
    context.reader,
    `envelope-page:${input.status ? 'status' : 'any'}:${after ? 'after' : 'first'}:${shapeOfInclude(include)}`,
    (db, slot) => {
      let query = teamEnvelopes(db, slot(0)).select((eb) => envelopeColumns(eb, include));
      if (input.status) query = query.where('e.status', '=', slot(1));
      if (after) query = query.where((eb) => eb(eb.refTuple('e.created_at', 'e.id'), '<', eb.tuple(slot(2), slot(3))));
      return query.orderBy('e.created_at', 'desc').orderBy('e.id', 'desc').limit(slot(4));
    },
    [caller.teamId, input.status, after?.createdAt, after?.id, input.limit + 1],
  );
  const page = takePage(rows, input.limit);
  return { envelopes: page.rows, nextCursor: page.nextCursor };
}

/**
 * Reads one child list (or one child) of a team envelope in one statement: the envelope row
 * decides `Envelope.NotFound`, the child column the rest. `shape` names the child subquery; the
 * child's own values go in slots from 2 on.
 */
function readInEnvelope<T>(
  context: ServiceContext,
  envelopeId: string,
  shape: string,
  child: (eb: Eb, slot: Slot) => ReturnType<typeof jsonArrayFrom>,
  childValues: readonly unknown[] = [],
): Promise<T> {
  return readOwnerChild<T>(context, {
    shape: `in-envelope:${shape}`,
    ownerId: envelopeId,
    notFound: () => new EnvelopeNotFoundError(envelopeId),
    build: (db, slot) =>
      teamEnvelopes(db, slot(0))
        .select((eb) => child(eb, slot).as('child'))
        .where('e.id', '=', slot(1)),
    childValues,
  });
}

/** One item of a team envelope's child list, by id (slot 2): the list subquery filtered to that id. */
function readOneInEnvelope<T>(
  context: ServiceContext,
  envelopeId: string,
  itemId: string,
  shape: string,
  child: (eb: Eb, itemIdSlot: unknown) => ReturnType<typeof jsonArrayFrom>,
  notFound: () => Error,
): Promise<T> {
  return readOwnerChildItem<T>(itemId, (itemIdValue) => readInEnvelope<T[]>(context, envelopeId, shape, (eb, slot) => child(eb, slot(2)), [itemIdValue]), notFound);
}

export function readDocuments(context: ServiceContext, options: { envelopeId: string }): Promise<DocumentData[]> {
  return readInEnvelope(context, options.envelopeId, 'documents', (eb) => documentsOf(eb, 'e.id', undefined));
}

export function readDocument(context: ServiceContext, options: { envelopeId: string; documentId: string }): Promise<DocumentData> {
  return readOneInEnvelope(
    context,
    options.envelopeId,
    options.documentId,
    'document',
    (eb, documentId) =>
      jsonArrayFrom(
        eb
          .selectFrom('document as d')
          .select((inner: AnyEb) => documentColumns(inner, 'd', undefined))
          .whereRef('d.envelope_id', '=', 'e.id')
          .where('d.id', '=', documentId as string),
      ),
    () => new DocumentNotFoundError(options.documentId),
  );
}

export function readRecipients(context: ServiceContext, options: { envelopeId: string }): Promise<RecipientData[]> {
  return readInEnvelope(context, options.envelopeId, 'recipients', (eb) => recipientsOf(eb, 'e.id', { agents: true }, undefined));
}

export function readRecipient(context: ServiceContext, options: { envelopeId: string; recipientId: string }): Promise<RecipientData> {
  return readOneInEnvelope(
    context,
    options.envelopeId,
    options.recipientId,
    'recipient',
    (eb, recipientId) =>
      jsonArrayFrom(
        eb
          .selectFrom('recipient as r')
          .select((inner: AnyEb) => recipientColumns(inner, 'r', { agents: true }, undefined))
          .whereRef('r.envelope_id', '=', 'e.id')
          .where('r.id', '=', recipientId as string),
      ),
    () => new RecipientNotFoundError(options.recipientId),
  );
}

/** Fields of a team envelope; `fieldIds` narrows to those (in listing order), e.g. the ones just created. */
export function readFields(context: ServiceContext, options: { envelopeId: string; fieldIds?: string[] }): Promise<FieldData[]> {
  if (options.fieldIds === undefined) return readInEnvelope(context, options.envelopeId, 'fields', (eb) => fieldsOf(eb, 'e.id', { views: true }, undefined));
  const fieldIds = options.fieldIds.filter(isUuid);
  return readInEnvelope(
    context,
    options.envelopeId,
    'fields-by-id',
    (eb, slot) =>
      jsonArrayFrom(
        eb
          .selectFrom('field as f')
          .select((inner: AnyEb) => fieldColumns(inner, 'f', { views: true }, undefined))
          .whereRef('f.envelope_id', '=', 'e.id')
          .where(sql<boolean>`f.id = any(${slot(2)}::uuid[])`)
          .orderBy('f.created_at')
          .orderBy('f.identifier'),
      ),
    [fieldIds],
  );
}

export function readField(context: ServiceContext, options: { envelopeId: string; fieldId: string }): Promise<FieldData> {
  return readOneInEnvelope(
    context,
    options.envelopeId,
    options.fieldId,
    'field',
    (eb, fieldId) =>
      jsonArrayFrom(
        eb
          .selectFrom('field as f')
          .select((inner: AnyEb) => fieldColumns(inner, 'f', { views: true }, undefined))
          .whereRef('f.envelope_id', '=', 'e.id')
          .where('f.id', '=', fieldId as string),
      ),
    () => new FieldNotFoundError(options.fieldId),
  );
}

/**
 * A window of a team envelope's audit events, oldest first, and where the next one starts
 * (`nextAfterSeq`, null at the end of the trail).
 */
export async function readAuditEvents(
  context: ServiceContext,
  options: { envelopeId: string; afterSeq?: number; limit?: number },
): Promise<{ events: AuditEventData[]; nextAfterSeq: number | null }> {
  const window = parseAuditEventPage({ afterSeq: options.afterSeq, limit: options.limit });
  // One more than asked, to learn whether the trail goes on.
  const events = await readInEnvelope<AuditEventData[]>(
    context,
    options.envelopeId,
    'audit-events',
    (eb, slot) => auditEventsOf(eb, 'e.id', undefined, { afterSeq: slot(2), limit: slot(3) }),
    [window.afterSeq, window.limit + 1],
  );
  const page = await withActorNames(context, events.slice(0, window.limit));
  return { events: page, nextAfterSeq: events.length > window.limit ? page[page.length - 1].seq : null };
}
