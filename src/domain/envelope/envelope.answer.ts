import { type RawBuilder, sql } from 'kysely';
import { childRowsSql } from '../owner/child-lists.ts';
import { isoTimestamp, readKeysetAnswer, rowCursorSql } from '../read-model.ts';
import type { ServiceContext } from '../service-context.ts';
import { type EnvelopePageOptions, envelopeListing } from './envelope.read.ts';

/*
 * A page of envelopes as its exact JSON answer, written by PostgreSQL in one statement: the keys
 * a face asked for, in its order and under its names, each value already in the face's format
 * (timestamps as toISOString writes them, numbers as JSON.stringify writes them). A face that can
 * describe its answer this way (the GraphQL face for plain selections, graphql/pass-through.ts)
 * sends the text as it is, with no parsing or serialising in this process. The rows, their order
 * and the tenant filter are those of `readEnvelopePage` (the same listing and window); the nested
 * lists are those of owner.read.ts, a differential test holds the two together
 * (test/graphql-passthrough.test.ts).
 */

/** One key of an answer object: a field of the object (with the shape of its value when that is an object or a list of them), or a constant string. */
export type AnswerEntry = { key: string; field: string; shape?: AnswerShape } | { key: string; constant: string };

/** The keys of an answer object, in answer order. */
export type AnswerShape = readonly AnswerEntry[];

/** The kinds of object an answer is made of. */
export type AnswerKind = 'envelopePage' | 'envelopeEdge' | 'pageInfo' | 'envelope' | 'document' | 'recipient' | 'agent' | 'agentInfo' | 'field' | 'fieldView' | 'point' | 'size';

/**
 * Every field an exact answer can give, per kind: `null` for a value, else the kind of its object
 * (or list of objects). Fields left out (JSON objects such as `context`, whose key order and spacing
 * PostgreSQL would change, and the rarely read ones) make a face fall back to its ordinary path.
 */
export const ANSWER_FIELDS: Record<AnswerKind, Record<string, AnswerKind | null>> = {
  envelopePage: { nodes: 'envelope', edges: 'envelopeEdge', pageInfo: 'pageInfo' },
  envelopeEdge: { cursor: null, node: 'envelope' },
  pageInfo: { hasNextPage: null, endCursor: null },
  envelope: {
    id: null,
    name: null,
    status: null,
    expirationPeriodDays: null,
    reminderInitialDelayDays: null,
    reminderRepeatIntervalDays: null,
    reminderBeforeExpirationDays: null,
    stamp: null,
    createdAt: null,
    updatedAt: null,
    sendAt: null,
    sentAt: null,
    revision: null,
    expiresAt: null,
    completedAt: null,
    voidedAt: null,
    templateId: null,
    publicLinkId: null,
    documents: 'document',
    recipients: 'recipient',
    fields: 'field',
  },
  document: { id: null, name: null, order: null, status: null, pageCount: null, sha256: null, byteSize: null, createdAt: null },
  recipient: {
    id: null,
    identifier: null,
    roleName: null,
    type: null,
    order: null,
    required: null,
    color: null,
    hostedById: null,
    delegatedById: null,
    agents: 'agent',
    activatedAt: null,
    completedAt: null,
    delegatedAt: null,
    removedAt: null,
  },
  agent: { id: null, kind: null, info: 'agentInfo', contactId: null, groupId: null, userId: null },
  // Not `locale`: the face answers it as its enum's name (tr_TR for tr-TR).
  agentInfo: { name: null, email: null, phone: null, phoneContactMethod: null, embedded: null },
  field: { id: null, identifier: null, type: null, recipientId: null, label: null, tooltip: null, required: null, readonly: null, submittedAt: null, views: 'fieldView' },
  fieldView: { documentId: null, page: null, location: 'point', size: 'size' },
  point: { x: null, y: null },
  size: { width: null, height: null },
};

type Expression = RawBuilder<unknown>;
type Column = (shape: AnswerShape | undefined) => Expression;
type Columns = Record<string, Column>;

/**
 * A double as JSON.stringify writes it. PostgreSQL writes the same shortest digits inside
 * [1e-4, 1e15) (and 0 for -0 plus 0), which is inline; the rare rest (an exponent where JavaScript
 * writes none, or the other way round) is `js_number_json`, a function of the migrations: written
 * inline, its rewrite set up a dozen sub-plans at every execution of a page statement, whose cost
 * then was 1.8× as much (docs/performance.md, "What survived young collections").
 */
function double(column: string): Column {
  const value = sql.ref(column);
  return () => sql`(case when ${value} = 0 or abs(${value}) >= 1e-4 and abs(${value}) < 1e15 then to_json(${value} + 0) else js_number_json(${value}) end)`;
}

/** One object, as a row: its keys in order (PostgreSQL writes a row compactly, as JSON.stringify does). */
function objectOf(shape: AnswerShape, columns: Columns): Expression {
  return sql`(select answer_row from (select ${columnsOf(shape, columns)}) answer_row)`;
}

function columnsOf(shape: AnswerShape, columns: Columns): RawBuilder<unknown> {
  return sql.join(
    shape.map((entry) => {
      if ('constant' in entry) return sql`${sql.lit(entry.constant)}::text as ${sql.id(entry.key)}`;
      const column = columns[entry.field];
      if (!column) throw new Error(`no answer column ${entry.field}`);
      return sql`${column(entry.shape)} as ${sql.id(entry.key)}`;
    }),
  );
}

/**
 * A list of objects from `rows` (a FROM/WHERE/ORDER BY text, the order kept as the aggregate reads
 * a sorted subquery). array_to_json, not json_agg, which puts ", " between the elements.
 */
function listOf(shape: AnswerShape | undefined, columns: Columns, rows: Expression): Expression {
  return sql`(select coalesce(array_to_json(array_agg(answer_row)), '[]'::json) from (select ${columnsOf(shape ?? [], columns)} ${rows}) answer_row)`;
}

const timestamp = (column: string) => () => isoTimestamp(sql.ref(column));
const ref = (column: string) => () => sql.ref(column);

// The nested lists read what owner.read.ts's documentsOf, recipientsOf (with agentsOf), fieldsOf
// and viewsOf read, in their order: both derive rows and order from owner/child-lists.ts.
const POINT: Columns = { x: double('v.x'), y: double('v.y') };
const SIZE: Columns = { width: double('v.width'), height: double('v.height') };
const FIELD_VIEW: Columns = {
  documentId: ref('v.document_id'),
  page: ref('v.page'),
  location: (shape) => objectOf(shape ?? [], POINT),
  size: (shape) => objectOf(shape ?? [], SIZE),
};
const FIELD: Columns = {
  id: ref('f.id'),
  identifier: ref('f.identifier'),
  type: ref('f.type'),
  // The GraphQL face answers a missing recipient as an empty id.
  recipientId: () => sql`coalesce(f.recipient_id::text, '')`,
  label: ref('f.label'),
  tooltip: ref('f.tooltip'),
  required: ref('f.required'),
  readonly: ref('f.readonly'),
  submittedAt: timestamp('f.submitted_at'),
  views: (shape) => listOf(shape, FIELD_VIEW, childRowsSql('views', 'envelope', 'f.id')),
};
// An agent shows the reference of its kind only (agentsOf): `info` for info agents, and so on.
const AGENT_INFO: Columns = {
  name: () => sql`a.info ->> 'name'`,
  email: () => sql`a.info ->> 'email'`,
  phone: () => sql`a.info ->> 'phone'`,
  phoneContactMethod: () => sql`a.info ->> 'phoneContactMethod'`,
  embedded: () => sql`coalesce(a.info -> 'embedded' = 'true'::jsonb, false)`,
};
const AGENT: Columns = {
  id: ref('a.id'),
  kind: ref('a.kind'),
  info: (shape) => sql`(case when a.kind = 'info' and jsonb_typeof(a.info) = 'object' then ${objectOf(shape ?? [], AGENT_INFO)} end)`,
  contactId: () => sql`(case when a.kind = 'contact' then a.contact_id end)`,
  groupId: () => sql`(case when a.kind = 'group' then a.group_id end)`,
  userId: () => sql`(case when a.kind not in ('info', 'contact', 'group') then a.user_id end)`,
};
const RECIPIENT: Columns = {
  id: ref('r.id'),
  identifier: ref('r.identifier'),
  roleName: ref('r.role_name'),
  type: ref('r.type'),
  order: ref('r.order'),
  required: ref('r.required'),
  color: ref('r.color'),
  hostedById: ref('r.hosted_by_id'),
  delegatedById: ref('r.delegated_by_id'),
  agents: (shape) => listOf(shape, AGENT, childRowsSql('agents', 'envelope', 'r.id')),
  activatedAt: timestamp('r.activated_at'),
  completedAt: timestamp('r.completed_at'),
  delegatedAt: timestamp('r.delegated_at'),
  removedAt: timestamp('r.removed_at'),
};
const DOCUMENT: Columns = {
  id: ref('d.id'),
  name: ref('d.name'),
  order: ref('d.order'),
  status: ref('d.status'),
  pageCount: ref('d.page_count'),
  sha256: ref('d.content_sha256'),
  // A byte count is an integer far below 2^53: PostgreSQL's digits are JavaScript's.
  byteSize: ref('d.byte_size'),
  createdAt: timestamp('d.created_at'),
};
const ENVELOPE: Columns = {
  id: ref('e.id'),
  name: ref('e.name'),
  status: ref('e.status'),
  expirationPeriodDays: ref('e.expiration_period_days'),
  reminderInitialDelayDays: ref('e.reminder_initial_delay_days'),
  reminderRepeatIntervalDays: ref('e.reminder_repeat_interval_days'),
  reminderBeforeExpirationDays: ref('e.reminder_before_expiration_days'),
  stamp: ref('e.stamp'),
  createdAt: timestamp('e.created_at'),
  updatedAt: timestamp('e.updated_at'),
  sendAt: timestamp('e.send_at'),
  sentAt: timestamp('e.sent_at'),
  revision: ref('e.revision'),
  expiresAt: timestamp('e.expires_at'),
  completedAt: timestamp('e.completed_at'),
  voidedAt: timestamp('e.voided_at'),
  templateId: ref('e.template_id'),
  publicLinkId: ref('e.public_link_id'),
  documents: (shape) => listOf(shape, DOCUMENT, childRowsSql('documents', 'envelope', 'e.id')),
  recipients: (shape) => listOf(shape, RECIPIENT, childRowsSql('recipients', 'envelope', 'e.id')),
  fields: (shape) => listOf(shape, FIELD, childRowsSql('fields', 'envelope', 'e.id')),
};

/** The cursor `createdAtCursor` hands out for the row `e` (base64url of `["<createdAt>","<id>"]`), written by PostgreSQL. */
const ROW_CURSOR = rowCursorSql('e');

/** A stable text for a shape, part of the statement's cache key. */
export function shapeText(shape: AnswerShape): string {
  return shape
    .map((entry) => ('constant' in entry ? `${entry.key}=${JSON.stringify(entry.constant)}` : `${entry.key}:${entry.field}${entry.shape ? `{${shapeText(entry.shape)}}` : ''}`))
    .join(',');
}

/**
 * A page of the caller's envelopes (the same as `readEnvelopePage` with the same options) as the
 * JSON text of `shape`, an `envelopePage` object (nodes, edges with cursors, pageInfo): one
 * statement, compiled once per shape and filters. Errors are readEnvelopePage's (a bad cursor,
 * bad filters, no caller).
 */
export async function readEnvelopePageAnswer(context: ServiceContext, options: EnvelopePageOptions, shape: AnswerShape): Promise<string> {
  const listing = envelopeListing(options);
  return readKeysetAnswer(context, {
    shape: `envelope-page-answer:${listing.present.join(',')}:${shapeText(shape)}`,
    page: listing.page,
    filterValues: listing.filterValues,
    build: (db, slot, window, pageSize) => {
      // The window's rows (one more than the page) are `e` here too; a node, and a cursor, is
      // built only for the rows of the page: an aggregate's filter comes before its argument.
      const inPage = sql`filter (where e.position <= ${pageSize}::int)`;
      const edge: Columns = {
        cursor: () => ROW_CURSOR,
        node: (nodeShape) => objectOf(nodeShape ?? [], ENVELOPE),
      };
      const pageInfo: Columns = {
        hasNextPage: () => sql`(count(e.position) > ${pageSize}::int)`,
        endCursor: () => sql`(case when count(e.position) > ${pageSize}::int then max(${ROW_CURSOR}) filter (where e.position = ${pageSize}::int) end)`,
      };
      const page: Columns = {
        nodes: (nodeShape) => sql`coalesce(array_to_json(array_agg(${objectOf(nodeShape ?? [], ENVELOPE)} order by e.position) ${inPage}), '[]'::json)`,
        edges: (edgeShape) => sql`coalesce(array_to_json(array_agg((select edge_row from (select ${columnsOf(edgeShape ?? [], edge)}) edge_row) order by e.position) ${inPage}), '[]'::json)`,
        pageInfo: (infoShape) => sql`(select info_row from (select ${columnsOf(infoShape ?? [], pageInfo)}) info_row)`,
      };
      const rows = listing.numberedRows(db, slot, window);
      return db.selectFrom(rows.as('e')).select(sql<string>`(select to_json(answer_row)::text from (select ${columnsOf(shape, page)}) answer_row)`.as('text'));
    },
  });
}
