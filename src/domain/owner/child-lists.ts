import { type RawBuilder, sql } from 'kysely';
import type { OwnerKind } from './owner-ref.ts';

/*
 * Which rows each child list of an owner holds, and in which order, in one place. Both statements
 * that read the lists derive from here: owner.read.ts's child reads (Kysely) and the GraphQL
 * pass-through's answer statement (envelope/envelope.answer.ts, SQL text), so the two faces can
 * never disagree on what a list holds or how it is sorted.
 */

/** Where an owner's content lives: its tables and the columns naming the owner. */
export const CONTENT_TABLES = {
  envelope: { ownerColumn: 'envelope_id', recipientTable: 'recipient', fieldRecipientColumn: 'recipient_id' },
  template: { ownerColumn: 'template_id', recipientTable: 'template_recipient', fieldRecipientColumn: 'template_recipient_id' },
} as const satisfies Record<OwnerKind, { ownerColumn: string; recipientTable: string; fieldRecipientColumn: string }>;

type ChildList = {
  /** The table, or the owner's table for an owner's own list. */
  table: string | ((kind: OwnerKind) => string);
  alias: string;
  /** The column naming the parent row, or the owner's column. */
  parentColumn: string | ((kind: OwnerKind) => string);
  /** Rows of the list only when this column is null (an agent whose role was delegated away is not shown). */
  whenNull?: string;
  orderBy: readonly string[];
};

export const CHILD_LISTS = {
  documents: { table: 'document', alias: 'd', parentColumn: (kind) => CONTENT_TABLES[kind].ownerColumn, orderBy: ['order', 'created_at', 'id'] },
  recipients: { table: (kind) => CONTENT_TABLES[kind].recipientTable, alias: 'r', parentColumn: (kind) => CONTENT_TABLES[kind].ownerColumn, orderBy: ['order', 'created_at', 'id'] },
  // A batch of fields shares its creation time; the identifier then orders it.
  fields: { table: 'field', alias: 'f', parentColumn: (kind) => CONTENT_TABLES[kind].ownerColumn, orderBy: ['created_at', 'identifier'] },
  // A delegated role shows the person it was handed to, not the one whose link died.
  agents: { table: 'agent', alias: 'a', parentColumn: 'recipient_id', whenNull: 'revoked_at', orderBy: ['position'] },
  views: { table: 'field_view', alias: 'v', parentColumn: 'field_id', orderBy: ['position'] },
} as const satisfies Record<string, ChildList>;

export type ChildListName = keyof typeof CHILD_LISTS;

function resolve(value: string | ((kind: OwnerKind) => string), kind: OwnerKind): string {
  return typeof value === 'function' ? value(kind) : value;
}

/** The list's sort columns, qualified by its alias (`d.order`, …), for Kysely's `orderBy`. */
export function childOrderColumns(name: ChildListName): string[] {
  const list: ChildList = CHILD_LISTS[name];
  return list.orderBy.map((column) => `${list.alias}.${column}`);
}

/** The list's sort order as SQL (`d."order", d."created_at", d."id"`), for `order by` or an aggregate's `order by`. */
export function childOrderSql(name: ChildListName): RawBuilder<unknown> {
  const list: ChildList = CHILD_LISTS[name];
  return sql.raw(list.orderBy.map((column) => `${list.alias}."${column}"`).join(', '));
}

/** The column that must be null for a row to be in the list, qualified, when the list has one. */
export function childWhenNullColumn(name: ChildListName): string | undefined {
  const list: ChildList = CHILD_LISTS[name];
  return list.whenNull === undefined ? undefined : `${list.alias}.${list.whenNull}`;
}

/**
 * `from <table> <alias> where <alias>.<parent column> = <parent> [and <alias>.<column> is null] order by …`:
 * the rows of the list under the row `parent` (`e.id`, `r.id`, `f.id`), as SQL text.
 */
export function childRowsSql(name: ChildListName, kind: OwnerKind, parent: string): RawBuilder<unknown> {
  const list: ChildList = CHILD_LISTS[name];
  const whenNull = list.whenNull === undefined ? '' : ` and ${list.alias}.${list.whenNull} is null`;
  return sql`from ${sql.raw(`${resolve(list.table, kind)} ${list.alias} where ${list.alias}.${resolve(list.parentColumn, kind)} = ${parent}${whenNull}`)} order by ${childOrderSql(name)}`;
}
