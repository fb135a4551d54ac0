import { type AliasableExpression, type AliasedExpression, type Compilable, type ExpressionBuilder, sql } from 'kysely';
import { jsonArrayFrom } from 'kysely/helpers/postgres';
import { isUuid } from '../../shared/ids.ts';
import { EnvelopeNotFoundError } from '../envelope/envelope.errors.ts';
import { teamEnvelopes } from '../envelope/team-envelope.ts';
import { isoTimestamp, type ReadDb, readOwnerChild, readOwnerChildItem, type Slot } from '../read-model.ts';
import type { AgentNotificationFailure } from '../recipient/agent.entity.ts';
import { agentPersonSql } from '../recipient/agent-people.ts';
import { RecipientNotFoundError } from '../recipient/recipient.errors.ts';
import type { ServiceContext } from '../service-context.ts';
import { visibleTemplates } from '../template/team-template.ts';
import { TemplateNotFoundError } from '../template/template.errors.ts';
import { type ChildListName, CONTENT_TABLES, childOrderColumns, childOrderSql, childWhenNullColumn } from './child-lists.ts';
import { DocumentNotFoundError, FieldNotFoundError } from './owner.errors.ts';
import type { OwnerKind, OwnerRef } from './owner-ref.ts';

/*
 * The read model of what an owner (an envelope or a template) holds: its documents, recipients
 * (an envelope's with agents, a template's roles with their pre-assignment) and fields (with
 * views). The selections are written once and nested by both owners' reads (envelope.read.ts,
 * template.read.ts, signing.read.ts), so both answer the same shapes; the child reads below
 * (one list, or one item by id) take the owner and start from its tenant gate, one statement each.
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

export type AgentInfoData = { name: string; email?: string | null; phone?: string | null; locale?: string | null; phoneContactMethod?: string | null; embedded?: boolean };

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

/** The keys every recipient has, an envelope's or a template's role. */
export type RecipientCoreData = {
  id: string;
  identifier: string;
  roleName: string;
  type: string;
  order: number;
  required: boolean;
  /** An approver role's quorum (1 for every other type). */
  quorum: number;
  /** simple, advanced or qualified (issue 35). */
  signatureLevel: string;
  /** The team's trust service it signs at; null: the team's first offering its level. */
  trustServiceId: string | null;
  color: string;
  hostedById: string | null;
  delegatedById: string | null;
};

/** One agent's approval of an approver role: who stands behind the agent (the person who approved), when, and their comment. */
export type RecipientApprovalData = { agentId: string; name: string | null; approvedAt: string; comment: string | null };

/** A recipient of an envelope. */
export type RecipientData = RecipientCoreData & {
  /** Present when `agents` was asked for. */
  agents?: AgentData[];
  /** An approver role's approvals so far, oldest first; empty for every other type. */
  approvals: RecipientApprovalData[];
  activatedAt: string | null;
  completedAt: string | null;
  delegatedAt: string | null;
  removedAt: string | null;
};

/** A role of a template. */
export type TemplateRecipientData = RecipientCoreData & {
  /** A fixed role always gets its pre-assigned person at jumpstart; a variable one may be given others. */
  fixed: boolean;
  /** The pre-assigned person: at most one of these is set. */
  userId: string | null;
  contactId: string | null;
  contactGroupId: string | null;
  createdAt: string;
};

/** The recipient answer of each owner. */
export type RecipientDataOf = { envelope: RecipientData; template: TemplateRecipientData };

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
  /** Conditions under which the field is shown (docs/fields.md); null: always. */
  visibleWhen: Record<string, unknown> | null;
  /** Present when `views` was asked for. */
  views?: FieldPlacementData[];
  submittedAt: string | null;
};

/** What to nest below an owner's content: `agents` applies to an envelope's recipients, `views` to fields. */
export type ContentInclude = { agents?: boolean; views?: boolean };

type AnyEb = ExpressionBuilder<any, any>;
export type Keys = ReadonlySet<string> | undefined;

/** A key of an answer object and how to compute it, built only when the key is wanted. */
export type Column = [key: string, build: () => AliasableExpression<unknown>];

/** The selection of `columns` a caller wants (and the `always` ones), each aliased to its key. */
export function pick(columns: Column[], keys: Keys, always: readonly string[] = ['id']) {
  return columns.filter(([key]) => keys === undefined || keys.has(key) || always.includes(key)).map(([key, build]) => build().as(key));
}

/** Where each owner's content lives: the owner's column, its recipients' table, a field's recipient column. */

/** The query in its list's order (child-lists.ts). */
function ordered<Q extends { orderBy(column: any): Q }>(query: Q, name: ChildListName): Q {
  return childOrderColumns(name).reduce((sorted, column) => sorted.orderBy(column), query);
}

/**
 * Which rows of a child list to answer: all, one by id, or those whose id is in an array (each a
 * value or a statement's slot).
 */
export type Narrowing = { id: unknown } | { anyId: unknown } | undefined;

function narrowed<Q extends { where(...args: any[]): Q }>(query: Q, alias: string, only: Narrowing): Q {
  if (only === undefined) return query;
  if ('id' in only) return query.where(`${alias}.id`, '=', only.id);
  return query.where(sql<boolean>`${sql.ref(`${alias}.id`)} = any(${only.anyId}::uuid[])`);
}

// ---------------------------------------------------------------------------------------------
// Selections. Each takes the SQL reference of its owner's id and returns a correlated subquery
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

/** An owner's documents in display order. */
export function documentsOf(eb: AnyEb, owner: { kind: OwnerKind; ownerId: string }, select: { keys?: Keys; only?: Narrowing }) {
  const { kind, ownerId } = owner;
  const { keys, only } = select;
  const query = eb
    .selectFrom('document as d')
    .select((inner: AnyEb) => documentColumns(inner, 'd', keys))
    .whereRef(`d.${CONTENT_TABLES[kind].ownerColumn}`, '=', ownerId);
  return jsonArrayFrom(ordered(narrowed(query, 'd', only), 'documents'));
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
  return (
    eb
      .selectFrom('agent as a')
      .select(
        sql<AgentData[]>`coalesce(json_agg(case when a.notified_at is null and a.notification_failure is null then ${agent}
          else (${agent}::jsonb || jsonb_build_object('notification', ${notification}))::json end
        order by ${childOrderSql('agents')}), '[]'::json)`.as('agents'),
      )
      .whereRef('a.recipient_id', '=', recipientId)
      // A delegated role shows the person it was handed to, not the one whose link died (child-lists.ts).
      .where(childWhenNullColumn('agents')!, 'is', null)
  );
}

/**
 * The approvals of the recipient `recipientId`, oldest first (only an approver role has any). The
 * name is the person of the agent who approved (a group agent's approving person), as
 * agent-people.ts says who an agent stands for.
 */
function approvalsOf(eb: AnyEb, recipientId: string) {
  const name = sql<string | null>`${agentPersonSql('approving_agent', 'ap.person_index')} ->> 'name'`;
  return eb
    .selectFrom('approval as ap')
    .innerJoin('agent as approving_agent', 'approving_agent.id', 'ap.agent_id')
    .select(
      sql<RecipientApprovalData[]>`coalesce(json_agg((select approval_row from (select ap.agent_id as "agentId", ${name} as name,
          ${isoTimestamp(sql`ap.created_at`)} as "approvedAt", ap.comment) approval_row) order by ap.created_at, ap.id), '[]'::json)`.as('approvals'),
    )
    .whereRef('ap.recipient_id', '=', recipientId);
}

/**
 * A recipient row's columns under `alias`: the keys both owners share, then the owner's own (an
 * envelope recipient's agents and progress, a template role's pre-assignment).
 */
function recipientColumns(eb: AnyEb, row: { kind: OwnerKind; alias: string }, select: { include: Pick<ContentInclude, 'agents'>; keys?: Keys }) {
  const { kind, alias } = row;
  const { include, keys } = select;
  const column = (name: string) => () => eb.ref(`${alias}.${name}`);
  const timestamp = (name: string) => () => isoTimestamp(eb.ref(`${alias}.${name}`));
  const own: Column[] =
    kind === 'envelope'
      ? [
          ...(include.agents ? [['agents', () => agentsOf(eb, `${alias}.id`)] as Column] : []),
          ['approvals', () => approvalsOf(eb, `${alias}.id`)],
          ['activatedAt', timestamp('activated_at')],
          ['completedAt', timestamp('completed_at')],
          ['delegatedAt', timestamp('delegated_at')],
          ['removedAt', timestamp('removed_at')],
        ]
      : [
          ['fixed', column('fixed')],
          ['userId', column('user_id')],
          ['contactId', column('contact_id')],
          ['contactGroupId', column('contact_group_id')],
          ['createdAt', timestamp('created_at')],
        ];
  return pick(
    [
      ['id', column('id')],
      ['identifier', column('identifier')],
      ['roleName', column('role_name')],
      ['type', column('type')],
      ['order', column('order')],
      ['required', column('required')],
      ['quorum', column('quorum')],
      ['signatureLevel', column('signature_level')],
      ['trustServiceId', column('trust_service_id')],
      ['color', column('color')],
      ['hostedById', column('hosted_by_id')],
      ['delegatedById', column('delegated_by_id')],
      ...own,
    ],
    keys,
  );
}

/** An owner's recipients (an envelope's recipients, a template's roles) in signing order. */
export function recipientsOf(eb: AnyEb, owner: { kind: OwnerKind; ownerId: string }, select: { include: Pick<ContentInclude, 'agents'>; keys?: Keys; only?: Narrowing }) {
  const { kind, ownerId } = owner;
  const { include, keys, only } = select;
  const tables = CONTENT_TABLES[kind];
  const query = eb
    .selectFrom(`${tables.recipientTable} as r`)
    .select((inner: AnyEb) => recipientColumns(inner, { kind: kind, alias: 'r' }, { include: include, keys: keys }))
    .whereRef(`r.${tables.ownerColumn}`, '=', ownerId);
  return jsonArrayFrom(ordered(narrowed(query, 'r', only), 'recipients'));
}

export function viewsOf(eb: AnyEb, fieldId: string) {
  return eb
    .selectFrom('field_view as v')
    .select(
      sql<FieldPlacementData[]>`coalesce(json_agg((select view_row from (select v.document_id as "documentId", v.page,
          (select point from (select v.x, v.y) point) as location,
          (select box from (select v.width, v.height) box) as size) view_row) order by ${childOrderSql('views')}), '[]'::json)`.as('views'),
    )
    .whereRef('v.field_id', '=', fieldId);
}

/**
 * A field row's columns under `alias`. A template's field names its role in
 * `template_recipient_id`; both answer it as `recipientId`.
 */
export function fieldColumns(eb: AnyEb, row: { kind: OwnerKind; alias: string }, select: { include: Pick<ContentInclude, 'views'>; keys?: Keys }) {
  const { kind, alias } = row;
  const { include, keys } = select;
  const column = (name: string) => () => eb.ref(`${alias}.${name}`);
  return pick(
    [
      ['id', column('id')],
      ['identifier', column('identifier')],
      ['type', column('type')],
      ['recipientId', column(CONTENT_TABLES[kind].fieldRecipientColumn)],
      ['label', column('label')],
      ['tooltip', column('tooltip')],
      ['required', column('required')],
      ['readonly', column('readonly')],
      ['value', column('value')],
      ['config', column('config')],
      ['visibleWhen', column('visible_when')],
      ...(include.views ? [['views', () => viewsOf(eb, `${alias}.id`)] as Column] : []),
      ['submittedAt', () => isoTimestamp(eb.ref(`${alias}.submitted_at`))],
    ],
    keys,
  );
}

/** An owner's fields, in creation order (a batch by identifier). */
export function fieldsOf(eb: AnyEb, owner: { kind: OwnerKind; ownerId: string }, select: { include: Pick<ContentInclude, 'views'>; keys?: Keys; only?: Narrowing }) {
  const { kind, ownerId } = owner;
  const { include, keys, only } = select;
  const query = eb
    .selectFrom('field as f')
    .select((inner: AnyEb) => fieldColumns(inner, { kind: kind, alias: 'f' }, { include: include, keys: keys }))
    .whereRef(`f.${CONTENT_TABLES[kind].ownerColumn}`, '=', ownerId);
  return jsonArrayFrom(ordered(narrowed(query, 'f', only), 'fields'));
}

// ---------------------------------------------------------------------------------------------
// Child reads. Each is one statement: the owner's row through its tenant gate (the caller's team
// in slot 0, the owner id in slot 1) with the child list as its one column.

type ChildSelection = (eb: AnyEb, ownerId: string, slot: Slot) => AliasableExpression<unknown>;

/** Each owner's tenant gate for reads, narrowed to one owner row, and its NotFound. */
const OWNER_GATES: Record<
  OwnerKind,
  { select(db: ReadDb, slot: Slot, child: (eb: AnyEb) => AliasedExpression<unknown, 'child'>): Compilable<unknown>; ownerId: string; notFound(id: string): Error }
> = {
  envelope: {
    select: (db, slot, child) => teamEnvelopes(db, slot(0)).select(child).where('e.id', '=', slot(1)),
    ownerId: 'e.id',
    notFound: (id) => new EnvelopeNotFoundError(id),
  },
  template: {
    select: (db, slot, child) => visibleTemplates(db, slot(0)).select(child).where('t.id', '=', slot(1)),
    ownerId: 't.id',
    notFound: (id) => new TemplateNotFoundError(id),
  },
};

/**
 * One child list (or any one column) of an owner the caller may see, in one statement: the
 * owner row decides the owner's NotFound, the child column the rest. `shape` names the child
 * subquery; the child's own values go in slots from 2 on.
 */
export function readInOwner<T>(context: ServiceContext, owner: OwnerRef, read: { shape: string; child: ChildSelection; childValues?: readonly unknown[] }): Promise<T> {
  const { shape, child, childValues = [] } = read;
  const gate = OWNER_GATES[owner.kind];
  return readOwnerChild<T>(context, {
    shape: `in-${owner.kind}:${shape}`,
    ownerId: owner.id,
    notFound: () => gate.notFound(owner.id),
    build: (db, slot) => gate.select(db, slot, (eb) => child(eb, gate.ownerId, slot).as('child')),
    childValues,
  });
}

/** One item of an owner's child list by id (slot 2): the list subquery narrowed to that id. */
function readOneInOwner<T>(
  context: ServiceContext,
  owner: OwnerRef,
  item: { itemId: string; shape: string; child: (eb: AnyEb, ownerId: string, only: Narrowing) => AliasableExpression<unknown>; notFound: () => Error },
): Promise<T> {
  const { itemId, shape, child, notFound } = item;
  return readOwnerChildItem<T>(
    itemId,
    (itemIdValue) => readInOwner<T[]>(context, owner, { shape, child: (eb, ownerId, slot) => child(eb, ownerId, { id: slot(2) }), childValues: [itemIdValue] }),
    notFound,
  );
}

/** An owner's documents. */
export function readDocuments(context: ServiceContext, options: { owner: OwnerRef }): Promise<DocumentData[]> {
  return readInOwner(context, options.owner, { shape: 'documents', child: (eb, ownerId) => documentsOf(eb, { kind: options.owner.kind, ownerId }, {}) });
}

/** One document of an owner; `Document.NotFound` when the owner has none with this id. */
export function readDocument(context: ServiceContext, options: { owner: OwnerRef; documentId: string }): Promise<DocumentData> {
  const { owner } = options;
  return readOneInOwner(context, owner, {
    itemId: options.documentId,
    shape: 'document',
    child: (eb, ownerId, only) => documentsOf(eb, { kind: owner.kind, ownerId }, { only }),
    notFound: () => new DocumentNotFoundError(options.documentId, owner.kind),
  });
}

/** An owner's recipients, an envelope's with their agents. */
export function readRecipients<K extends OwnerKind>(context: ServiceContext, options: { owner: OwnerRef<K> }): Promise<RecipientDataOf[K][]> {
  return readInOwner(context, options.owner, { shape: 'recipients', child: (eb, ownerId) => recipientsOf(eb, { kind: options.owner.kind, ownerId }, { include: { agents: true } }) });
}

/** One recipient of an owner (an envelope's with its agents); `Recipient.NotFound` when the owner has none with this id. */
export function readRecipient<K extends OwnerKind>(context: ServiceContext, options: { owner: OwnerRef<K>; recipientId: string }): Promise<RecipientDataOf[K]> {
  const { owner } = options;
  return readOneInOwner(context, owner, {
    itemId: options.recipientId,
    shape: 'recipient',
    child: (eb, ownerId, only) => recipientsOf(eb, { kind: owner.kind, ownerId }, { include: { agents: true }, only }),
    notFound: () => new RecipientNotFoundError(options.recipientId, owner.kind),
  });
}

/** An owner's fields with their views; `fieldIds` narrows to those (in listing order), e.g. the ones just created. */
export function readFields(context: ServiceContext, options: { owner: OwnerRef; fieldIds?: string[] }): Promise<FieldData[]> {
  const { owner } = options;
  if (options.fieldIds === undefined)
    return readInOwner(context, owner, { shape: 'fields', child: (eb, ownerId) => fieldsOf(eb, { kind: owner.kind, ownerId }, { include: { views: true } }) });
  return readInOwner(context, owner, {
    shape: 'fields-by-id',
    child: (eb, ownerId, slot) => fieldsOf(eb, { kind: owner.kind, ownerId }, { include: { views: true }, only: { anyId: slot(2) } }),
    childValues: [options.fieldIds.filter(isUuid)],
  });
}

/** One field of an owner with its views; `Field.NotFound` when the owner has none with this id. */
export function readField(context: ServiceContext, options: { owner: OwnerRef; fieldId: string }): Promise<FieldData> {
  const { owner } = options;
  return readOneInOwner(context, owner, {
    itemId: options.fieldId,
    shape: 'field',
    child: (eb, ownerId, only) => fieldsOf(eb, { kind: owner.kind, ownerId }, { include: { views: true }, only }),
    notFound: () => new FieldNotFoundError(options.fieldId, owner.kind),
  });
}
