import { type ExpressionBuilder, sql } from 'kysely';
import { jsonArrayFrom } from 'kysely/helpers/postgres';
import { containsPattern, decodeCursorPosition, keysetPageInput, takePage } from '../pagination.ts';
import { isoTimestamp, type ReadDatabase } from '../read-model.ts';
import type { ServiceContext } from '../service-context.ts';
import { parseInput } from '../validation.ts';
import { ContactGroupNotFoundError, ContactNotFoundError } from './contact.errors.ts';
import { teamContactGroups, teamContacts, wellFormedContactGroupId, wellFormedContactId } from './team-contact.ts';

/*
 * The address book's read model: contacts, and contact groups with their member count and (when
 * asked) their members, each read with ONE statement. The answers are plain data in the faces'
 * shape; REST serialises them as they are and GraphQL resolves its fields from them.
 */

export type ContactData = {
  id: string;
  name: string;
  email: string | null;
  phone: string | null;
  locale: string | null;
  phoneContactMethod: string | null;
  createdAt: string;
  updatedAt: string;
};

export type ContactGroupData = {
  id: string;
  name: string;
  memberCount: number;
  createdAt: string;
  updatedAt: string;
  /** The member contacts, oldest membership first; present exactly when the include asked for them. */
  members?: ContactData[];
};

/** What to nest in a contact group read. The REST shape never shows members; GraphQL asks when selected. */
export type ContactGroupInclude = { members?: boolean };

export type ContactPageData = { contacts: ContactData[]; nextCursor: string | null };
export type ContactGroupPageData = { contactGroups: ContactGroupData[]; nextCursor: string | null };

type GroupEb = ExpressionBuilder<ReadDatabase & { g: ReadDatabase['contact_group'] }, 'g'>;
type AnyEb = ExpressionBuilder<any, any>;

// ---------------------------------------------------------------------------------------------
// Selections.

/** The columns of one contact row under `alias`, in the order the REST contract shows them. */
function contactColumns(eb: AnyEb, alias: string) {
  const column = (name: string) => eb.ref(`${alias}.${name}`);
  return [
    column('id').as('id'),
    column('name').as('name'),
    column('email').as('email'),
    column('phone').as('phone'),
    column('locale').as('locale'),
    column('phone_contact_method').as('phoneContactMethod'),
    isoTimestamp(column('created_at')).as('createdAt'),
    isoTimestamp(column('updated_at')).as('updatedAt'),
  ];
}

/**
 * The members of the group row under `groupAlias`, oldest membership first (the contact id breaks
 * ties between memberships of the same instant). The group row carries the tenant check: a
 * membership only ever joins a group and a contact of the same team (addContactGroupMember finds
 * both in the caller's team), so the member count and the member list agree.
 */
function membersOf(eb: AnyEb, groupAlias: string) {
  return jsonArrayFrom(
    eb
      .selectFrom('contact_group_member as m')
      .innerJoin('contact as mc', 'mc.id', 'm.contact_id')
      .select((inner: AnyEb) => contactColumns(inner, 'mc'))
      .whereRef('m.group_id', '=', `${groupAlias}.id`)
      .orderBy('m.created_at')
      .orderBy('mc.id'),
  );
}

/** How many memberships the group row under `groupAlias` has (a range count on the primary key). */
function memberCountOf(eb: AnyEb, groupAlias: string) {
  return eb.selectFrom('contact_group_member as counted').select(sql<number>`count(*)::int`.as('memberCount')).whereRef('counted.group_id', '=', `${groupAlias}.id`);
}

function contactGroupColumns(eb: GroupEb, include: ContactGroupInclude) {
  return [
    eb.ref('g.id').as('id'),
    eb.ref('g.name').as('name'),
    memberCountOf(eb, 'g').as('memberCount'),
    isoTimestamp(eb.ref('g.created_at')).as('createdAt'),
    isoTimestamp(eb.ref('g.updated_at')).as('updatedAt'),
    ...(include.members ? [membersOf(eb, 'g').as('members')] : []),
  ];
}

// ---------------------------------------------------------------------------------------------
// The tenant boundary of every address book read, in one place.

// ---------------------------------------------------------------------------------------------
// Reads.

/** One contact of the caller's team; `Contact.NotFound` otherwise. */
export async function readContact(context: ServiceContext, contactId: string): Promise<ContactData> {
  const caller = await context.caller();
  wellFormedContactId(contactId);
  const row = await teamContacts(context.reader, caller.teamId)
    .select((eb) => contactColumns(eb, 'c'))
    .where('c.id', '=', contactId)
    .executeTakeFirst();
  if (!row) throw new ContactNotFoundError(contactId);
  return row as unknown as ContactData;
}

/**
 * The caller's contacts, newest first, keyset-paginated on (createdAt, id). `search` keeps
 * contacts whose name or email contains the text, ignoring letter case (`%`, `_` and `\` match
 * themselves).
 */
export async function readContactPage(context: ServiceContext, options: { limit?: number; cursor?: string; search?: string }): Promise<ContactPageData> {
  const input = parseInput(keysetPageInput, options);
  const caller = await context.caller();
  const after = input.cursor === undefined ? undefined : decodeCursorPosition(input.cursor);
  const pattern = containsPattern(input.search);
  let query = teamContacts(context.reader, caller.teamId).select((eb) => contactColumns(eb, 'c'));
  if (pattern !== undefined) query = query.where((eb) => eb.or([eb('c.name', 'ilike', pattern), eb('c.email', 'ilike', pattern)]));
  if (after) query = query.where((eb) => eb(eb.refTuple('c.created_at', 'c.id'), '<', eb.tuple(after.createdAt, after.id)));
  const rows = (await query
    .orderBy('c.created_at', 'desc')
    .orderBy('c.id', 'desc')
    .limit(input.limit + 1)
    .execute()) as unknown as ContactData[];
  const page = takePage(rows, input.limit);
  return { contacts: page.rows, nextCursor: page.nextCursor };
}

/** One contact group of the caller's team with its member count (and members when asked); `ContactGroup.NotFound` otherwise. */
export async function readContactGroup(context: ServiceContext, groupId: string, include: ContactGroupInclude = {}): Promise<ContactGroupData> {
  const caller = await context.caller();
  wellFormedContactGroupId(groupId);
  const row = await teamContactGroups(context.reader, caller.teamId)
    .select((eb) => contactGroupColumns(eb, include))
    .where('g.id', '=', groupId)
    .executeTakeFirst();
  if (!row) throw new ContactGroupNotFoundError(groupId);
  return row as unknown as ContactGroupData;
}

/**
 * The caller's contact groups, newest first, keyset-paginated; `search` matches the name ignoring
 * case. Every group carries its member count, and its members when `include` asks.
 */
export async function readContactGroupPage(
  context: ServiceContext,
  options: { limit?: number; cursor?: string; search?: string },
  include: ContactGroupInclude = {},
): Promise<ContactGroupPageData> {
  const input = parseInput(keysetPageInput, options);
  const caller = await context.caller();
  const after = input.cursor === undefined ? undefined : decodeCursorPosition(input.cursor);
  const pattern = containsPattern(input.search);
  let query = teamContactGroups(context.reader, caller.teamId).select((eb) => contactGroupColumns(eb, include));
  if (pattern !== undefined) query = query.where('g.name', 'ilike', pattern);
  if (after) query = query.where((eb) => eb(eb.refTuple('g.created_at', 'g.id'), '<', eb.tuple(after.createdAt, after.id)));
  const rows = (await query
    .orderBy('g.created_at', 'desc')
    .orderBy('g.id', 'desc')
    .limit(input.limit + 1)
    .execute()) as unknown as ContactGroupData[];
  const page = takePage(rows, input.limit);
  return { contactGroups: page.rows, nextCursor: page.nextCursor };
}

/** The members of one group of the caller's team, oldest membership first; the group row decides `ContactGroup.NotFound`. */
export async function readContactGroupMembers(context: ServiceContext, options: { groupId: string }): Promise<ContactData[]> {
  const caller = await context.caller();
  wellFormedContactGroupId(options.groupId);
  const row = await teamContactGroups(context.reader, caller.teamId)
    .select((eb) => membersOf(eb, 'g').as('members'))
    .where('g.id', '=', options.groupId)
    .executeTakeFirst();
  if (!row) throw new ContactGroupNotFoundError(options.groupId);
  return row.members as unknown as ContactData[];
}
