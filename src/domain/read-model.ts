import type { EntityManager } from '@mikro-orm/postgresql';
import { type Compilable, CompiledQuery, type Expression, type Kysely, type RawBuilder, type SelectQueryBuilder, sql } from 'kysely';
import { LRUCache } from 'lru-cache';
import { directReadsOf, queryDirect } from '../db/direct-reads.ts';
import { isUuid } from '../shared/ids.ts';
import { decodeCursorPosition, takePage } from './pagination.ts';

/*
 * The read model's common parts. Reads never hydrate entities: each read function builds one SQL
 * statement with Kysely (bound to the request's entity manager, so a read inside a write's
 * transaction sees that transaction) in which PostgreSQL assembles the nested answer with its JSON
 * functions, and returns plain data already shaped for the faces (timestamps as ISO 8601 strings,
 * camelCase keys). Writes keep entities, the unit of work and their locks.
 */

type Timestamp = Date;
type Json = unknown;

/** The columns the read model selects, per table (the migrations are the authority). */
export type ReadDatabase = {
  api_key: {
    id: string;
    team_id: string;
    prefix: string;
    label: string | null;
  };
  team: {
    id: string;
    created_at: Timestamp;
    workspace_id: string;
    name: string;
    settings: Json;
    settings_version: number;
  };
  envelope: {
    id: string;
    created_at: Timestamp;
    updated_at: Timestamp;
    team_id: string;
    template_id: string | null;
    public_link_id: string | null;
    name: string;
    status: string;
    expiration_period_days: number;
    reminder_initial_delay_days: number;
    reminder_repeat_interval_days: number;
    reminder_before_expiration_days: number;
    context: Json;
    send_at: Timestamp | null;
    sent_at: Timestamp | null;
    revision: number;
    expires_at: Timestamp | null;
    completed_at: Timestamp | null;
    voided_at: Timestamp | null;
    expired_at: Timestamp | null;
    void_reason: string | null;
    stamp: boolean | null;
  };
  template: {
    id: string;
    created_at: Timestamp;
    updated_at: Timestamp;
    team_id: string;
    name: string;
    description: string | null;
    team_scope: string[];
  };
  template_recipient: {
    id: string;
    created_at: Timestamp;
    template_id: string;
    identifier: string;
    role_name: string;
    type: string;
    order: number;
    required: boolean;
    color: string;
    fixed: boolean;
    hosted_by_id: string | null;
    delegated_by_id: string | null;
    user_id: string | null;
    contact_id: string | null;
    contact_group_id: string | null;
  };
  document: {
    id: string;
    created_at: Timestamp;
    envelope_id: string | null;
    template_id: string | null;
    name: string;
    order: number;
    context: Json;
    status: string | null;
    page_count: number;
    pages: Json;
    content_sha256: string;
    byte_size: string;
    sealed_sha256: string | null;
  };
  recipient: {
    id: string;
    created_at: Timestamp;
    envelope_id: string;
    identifier: string;
    role_name: string;
    type: string;
    order: number;
    required: boolean;
    color: string;
    hosted_by_id: string | null;
    delegated_by_id: string | null;
    activated_at: Timestamp | null;
    completed_at: Timestamp | null;
    delegated_at: Timestamp | null;
    declined_at: Timestamp | null;
    removed_at: Timestamp | null;
  };
  agent: {
    id: string;
    recipient_id: string;
    position: number;
    kind: string;
    info: Json;
    contact_id: string | null;
    group_id: string | null;
    user_id: string | null;
    snapshot: Json;
    revoked_at: Timestamp | null;
  };
  approval: {
    id: string;
    created_at: Timestamp;
    recipient_id: string;
    agent_id: string;
    person_index: number;
    comment: string | null;
  };
  signing_token: {
    id: string;
    recipient_id: string;
    agent_id: string;
    person_index: number;
    revoked_at: Timestamp | null;
  };
  field: {
    id: string;
    created_at: Timestamp;
    envelope_id: string | null;
    template_id: string | null;
    recipient_id: string | null;
    template_recipient_id: string | null;
    identifier: string;
    type: string;
    label: string | null;
    tooltip: string | null;
    required: boolean;
    readonly: boolean;
    value: Json;
    config: Json;
    submitted_at: Timestamp | null;
  };
  field_view: {
    id: string;
    field_id: string;
    document_id: string;
    position: number;
    page: number;
    x: number;
    y: number;
    width: number;
    height: number;
  };
  field_attachment: {
    id: string;
    created_at: Timestamp;
    envelope_id: string;
    field_id: string;
    recipient_id: string;
    name: string;
    content_type: string;
    byte_size: number;
    sha256: string;
  };
  audit_event: {
    id: string;
    team_id: string;
    stream_id: string;
    envelope_id: string | null;
    seq: number;
    type: string;
    at: Timestamp;
    actor_type: string;
    actor_id: string | null;
    ip: string | null;
    user_agent: string | null;
    details: Json;
    prev_hash: string;
    hash: string;
  };
  contact: {
    id: string;
    created_at: Timestamp;
    updated_at: Timestamp;
    team_id: string;
    name: string;
    email: string | null;
    phone: string | null;
    locale: string | null;
    phone_contact_method: string | null;
  };
  contact_group: {
    id: string;
    created_at: Timestamp;
    updated_at: Timestamp;
    team_id: string;
    name: string;
  };
  contact_group_member: {
    group_id: string;
    contact_id: string;
    created_at: Timestamp;
  };
  team_user: {
    id: string;
    created_at: Timestamp;
    updated_at: Timestamp;
    team_id: string;
    name: string;
    email: string;
    phone: string | null;
    locale: string;
  };
  bulk_send: {
    id: string;
    created_at: Timestamp;
    team_id: string;
    template_id: string;
    name: string | null;
    status: string;
    total: number;
    created_count: number;
    sent_count: number;
    failed_count: number;
    completed_at: Timestamp | null;
  };
  bulk_send_row: {
    id: string;
    bulk_send_id: string;
    position: number;
    status: string;
    envelope_id: string | null;
    error: Json;
    processed_at: Timestamp | null;
  };
  public_link: {
    id: string;
    created_at: Timestamp;
    updated_at: Timestamp;
    team_id: string;
    template_id: string;
    role: string;
    name: string | null;
    slug: string;
    verify_email: boolean;
    max_uses: number | null;
    uses: number;
    expires_at: Timestamp | null;
    disabled_at: Timestamp | null;
    redirect_url: string | null;
    prefill: Json;
  };
  webhook_endpoint: {
    id: string;
    created_at: Timestamp;
    updated_at: Timestamp;
    team_id: string;
    url: string;
    event_types: string[];
    enabled: boolean;
    description: string | null;
    disabled_reason: string | null;
    disabled_at: Timestamp | null;
  };
  webhook_delivery: {
    id: string;
    created_at: Timestamp;
    team_id: string;
    endpoint_id: string;
    event_id: string;
    event_type: string;
    payload: Json;
    state: string;
    attempt_count: number;
    last_status_code: number | null;
    last_error_code: string | null;
    last_error: string | null;
    last_attempt_at: Timestamp | null;
    next_attempt_at: Timestamp | null;
    delivered_at: Timestamp | null;
    failed_at: Timestamp | null;
  };
  webhook_attempt: {
    id: string;
    created_at: Timestamp;
    delivery_id: string;
    status_code: number | null;
    duration_ms: number;
    error_code: string | null;
    error: string | null;
    next_retry_at: Timestamp | null;
  };
};

export type ReadDb = Kysely<ReadDatabase>;

/** The Kysely instance of the request's entity manager (its transaction, when inside one). */
export function readerOf(em: EntityManager): ReadDb {
  return em.getKysely<ReadDatabase>() as unknown as ReadDb;
}

/**
 * A timestamp as JavaScript's `toISOString()` writes it (UTC, milliseconds, `Z`), formatted by
 * PostgreSQL so that nested JSON and top-level columns carry the same text on both faces.
 */
export function isoTimestamp(column: Expression<Timestamp | null> | RawBuilder<unknown>): RawBuilder<string> {
  return sql<string>`to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
}

/**
 * The keyset cursor of the row `alias` (its createdAt and id) as `createdAtCursor` (pagination.ts)
 * writes it, for answers PostgreSQL writes whole: base64url of `["<createdAt>","<id>"]`, unpadded.
 */
export function rowCursorSql(alias: string): RawBuilder<string> {
  return sql<string>`rtrim(translate(encode(convert_to('["' || ${isoTimestamp(sql.ref(`${alias}.created_at`))} || '","' || ${sql.ref(`${alias}.id`)}::text || '"]', 'UTF8'), 'base64'), E'+/\\n', '-_'), '=')`;
}

/**
 * A placeholder for a value in a statement built once per shape. The builder receives `slot(n)`
 * wherever the n-th value of the call goes; the compiled text is kept and later calls only bind
 * their values. Text and positions of the placeholders are all that is remembered: the values of
 * the call that first built a shape never reach another call.
 */
export type Slot = (index: number) => any;

const SLOT_MARK = '\u0000read-model-slot:';

type CompiledShape = { sql: string; parameters: ({ slot: number } | { constant: unknown })[] };

/** Compiled statements by shape (bounded: GraphQL selections can be spelled many ways). */
const compiledShapes = new LRUCache<string, CompiledShape>({ max: 2_000 });

/**
 * Runs a read statement whose SQL depends only on `shape` (what is read, never who or which
 * row): built and compiled by Kysely the first time a shape is seen, reused after that. Building a
 * nested query costs more CPU than PostgreSQL spends running it once it is prepared, so this
 * keeps Kysely's safety (no hand-concatenated SQL) without paying for it on every request.
 */
export async function runRead<Row>(reader: ReadDb, shape: string, build: (db: ReadDb, slot: Slot) => Compilable<unknown>, values: readonly unknown[]): Promise<Row[]> {
  let compiled = compiledShapes.get(shape);
  if (!compiled) {
    const query = build(reader, (index) => `${SLOT_MARK}${index}`).compile();
    compiled = {
      sql: query.sql,
      parameters: query.parameters.map((parameter) =>
        typeof parameter === 'string' && parameter.startsWith(SLOT_MARK) ? { slot: Number(parameter.slice(SLOT_MARK.length)) } : { constant: parameter },
      ),
    };
    compiledShapes.set(shape, compiled);
  }
  const parameters = compiled.parameters.map((parameter) => ('slot' in parameter ? values[parameter.slot] : parameter.constant));
  // Outside a transaction, straight on the pool: no Kysely executor per read (db/direct-reads.ts).
  const direct = directReadsOf(reader);
  if (direct) return queryDirect<Row>(direct, compiled.sql, parameters);
  const result = await reader.executeQuery<Row>(CompiledQuery.raw(compiled.sql, parameters));
  return result.rows;
}

/** A stable text for a set of keys, for shape names. */
export function shapeOfKeys(keys: ReadonlySet<string> | undefined): string {
  return keys === undefined ? '*' : [...keys].sort().join(',');
}

/** An id that matches nothing, for a malformed child id: the owner is still checked first, so errors keep their order. */
const NO_ROW_ID = '00000000-0000-0000-0000-000000000000';

// A listing's query, whatever its tables: the window only adds conditions on its own alias.
type AnySelect = SelectQueryBuilder<any, any, any>;

/**
 * One page of a newest-first listing, in one statement: `build` selects the gated rows (the
 * caller's team in slot 0, the listing's own filters in the slots after it, `filterValues`) and
 * hands its query to `window`, which continues after the cursor's row, orders by (createdAt, id)
 * descending and cuts one row more than the page, to tell whether another page follows.
 */
export async function readKeysetPage<Row extends { createdAt: Date | string; id: string }>(
  context: { reader: ReadDb; caller(): Promise<{ teamId: string }> },
  options: {
    shape: string;
    page: { cursor?: string; limit: number };
    filterValues?: readonly unknown[];
    build: (db: ReadDb, slot: Slot, window: KeysetWindow) => Compilable<unknown>;
  },
): Promise<{ rows: Row[]; nextCursor: string | null }> {
  const keyset = await keysetStatement(context, options);
  const rows = await runRead<Row>(context.reader, keyset.shape, (db, slot) => options.build(db, slot, keyset.window(slot)), keyset.values);
  return takePage(rows, options.page.limit);
}

/** Continues a listing's query (alias `alias`) after the cursor's row, newest first, one row more than the page. */
export type KeysetWindow = <Query extends AnySelect>(query: Query, alias: string) => Query;

/**
 * The same page as `readKeysetPage` as one JSON text written by PostgreSQL (the exact answer of a
 * face, see envelope.answer.ts): `build` gets the window and the slot holding the page size, and
 * selects the text as the column `text`.
 */
export async function readKeysetAnswer(
  context: { reader: ReadDb; caller(): Promise<{ teamId: string }> },
  options: {
    shape: string;
    page: { cursor?: string; limit: number };
    filterValues?: readonly unknown[];
    build: (db: ReadDb, slot: Slot, window: KeysetWindow, pageSize: unknown) => Compilable<unknown>;
  },
): Promise<string> {
  const keyset = await keysetStatement(context, options);
  const pageSizeSlot = keyset.values.length;
  const [row] = await runRead<{ text: string }>(context.reader, `${keyset.shape}:answer`, (db, slot) => options.build(db, slot, keyset.window(slot), slot(pageSizeSlot)), [
    ...keyset.values,
    options.page.limit,
  ]);
  return row.text;
}

async function keysetStatement(context: { caller(): Promise<{ teamId: string }> }, options: { shape: string; page: { cursor?: string; limit: number }; filterValues?: readonly unknown[] }) {
  const caller = await context.caller();
  const after = options.page.cursor === undefined ? undefined : decodeCursorPosition(options.page.cursor);
  const filters = options.filterValues ?? [];
  const cursorSlot = 1 + filters.length;
  const window =
    (slot: Slot): KeysetWindow =>
    (query, alias) => {
      const createdAt = sql.ref(`${alias}.created_at`);
      const id = sql.ref(`${alias}.id`);
      const continued = after ? query.where(sql<boolean>`(${createdAt}, ${id}) < (${slot(cursorSlot)}, ${slot(cursorSlot + 1)})`) : query;
      return continued
        .orderBy(createdAt, 'desc')
        .orderBy(id, 'desc')
        .limit(slot(cursorSlot + 2)) as typeof query;
    };
  return {
    shape: `${options.shape}:${after ? 'after' : 'first'}`,
    window,
    values: [caller.teamId, ...filters, after?.createdAt, after?.id, options.page.limit + 1] as unknown[],
  };
}

/**
 * One aggregate root (an envelope, a template) in one statement: `build` selects the rows the
 * caller may see through the aggregate's tenant gate (the caller's team in slot 0), narrowed to
 * the id in slot 1. A malformed id (the gate's `wellFormed` throws), an unknown one and another
 * team's all end in the gate's `notFound`.
 */
export async function readRoot<T>(
  context: { reader: ReadDb; caller(): Promise<{ teamId: string }> },
  gate: IdGate,
  options: { shape: string; id: string; build: RootStatement },
): Promise<T> {
  const caller = await context.caller();
  gate.wellFormed(options.id);
  const [row] = await runRead<T>(context.reader, options.shape, options.build, [caller.teamId, options.id]);
  if (!row) throw gate.notFound(options.id);
  return row;
}

/** The statement of a root read: the gated rows (the caller's team in slot 0) narrowed to the id in slot 1. */
export type RootStatement = (db: ReadDb, slot: Slot) => Compilable<unknown>;

/** An aggregate's id rules, from its tenant gate: the malformed-id check and the not-found error. */
export type IdGate = { wellFormed: (id: string) => string; notFound: (id: string) => Error };

/**
 * One child list of an owner row (an envelope, a template) in one statement. `build` selects the
 * owner rows the caller may see (its tenant filter, the caller's team in slot 0), narrowed to the
 * owner id in slot 1, with the child list as the column `child`; the child's own values go in
 * slots from 2 on. No owner row (unknown, malformed or another team's id) is `notFound()`, so all
 * three read the same.
 */
export async function readOwnerChild<T>(
  context: { reader: ReadDb; caller(): Promise<{ teamId: string }> },
  options: { shape: string; ownerId: string; notFound: () => Error; build: (db: ReadDb, slot: Slot) => Compilable<unknown>; childValues?: readonly unknown[] },
): Promise<T> {
  const caller = await context.caller();
  if (!isUuid(options.ownerId)) throw options.notFound();
  const [row] = await runRead<{ child: T }>(context.reader, options.shape, options.build, [caller.teamId, options.ownerId, ...(options.childValues ?? [])]);
  if (!row) throw options.notFound();
  return row.child;
}

/**
 * One item of an owner's child list by id: `readChild` reads the list with the item id as its slot
 * 2 value (a malformed id becomes one that matches nothing, after the owner check), and an empty
 * list is the item's `notFound()`.
 */
export async function readOwnerChildItem<T>(itemId: string, readChild: (itemIdValue: string) => Promise<T[]>, notFound: () => Error): Promise<T> {
  const items = await readChild(isUuid(itemId) ? itemId : NO_ROW_ID);
  if (items.length === 0) throw notFound();
  return items[0];
}
