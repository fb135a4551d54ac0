/*
 * The tenant gate of the address book, in one place: a contact or contact group is visible only
 * to its own team. Unknown, malformed and foreign ids all give the same `Contact.NotFound` /
 * `ContactGroup.NotFound`. Reads start from `teamContacts` / `teamContactGroups`, writes from
 * `findTeamContact` / `findTeamContactGroup`; all take the id through `wellFormed…Id` first.
 */
import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { SelectQueryBuilder } from 'kysely';
import type { ReadDatabase, ReadDb } from '../read-model.ts';
import { wellFormedId } from '../tenant.ts';
import { Contact } from './contact.entity.ts';
import { ContactGroupNotFoundError, ContactNotFoundError } from './contact.errors.ts';
import { ContactGroup } from './contact-group.entity.ts';

export type ContactsQuery = SelectQueryBuilder<ReadDatabase & { c: ReadDatabase['contact'] }, 'c', {}>;
export type GroupsQuery = SelectQueryBuilder<ReadDatabase & { g: ReadDatabase['contact_group'] }, 'g', {}>;

/** The id, or `Contact.NotFound` when it cannot name a contact. */
export function wellFormedContactId(contactId: string): string {
  return wellFormedId(contactId, (id) => new ContactNotFoundError(id));
}

/** The id, or `ContactGroup.NotFound` when it cannot name a group. */
export function wellFormedContactGroupId(groupId: string): string {
  return wellFormedId(groupId, (id) => new ContactGroupNotFoundError(id));
}

/**
 * The team's contacts, as `c`, and contact groups, as `g`: every contact or group read starts
 * from one of these, so another team's row is never found.
 */
export function teamContacts(reader: ReadDb, teamId: string): ContactsQuery {
  return reader.selectFrom('contact as c').where('c.team_id', '=', teamId);
}

export function teamContactGroups(reader: ReadDb, teamId: string): GroupsQuery {
  return reader.selectFrom('contact_group as g').where('g.team_id', '=', teamId);
}

/**
 * The tenant boundary for contacts, in one place: a contact is visible only to its own team.
 * Unknown, malformed and foreign ids all give the same `Contact.NotFound`.
 */
export async function findTeamContact(em: EntityManager, teamId: string, contactId: string, options: { lock?: 'share' | 'write' } = {}): Promise<Contact> {
  const contact = await em.findOne(Contact, { id: wellFormedContactId(contactId), team: teamId }, lockOptions(options.lock));
  if (!contact) throw new ContactNotFoundError(contactId);
  return contact;
}

/** The tenant boundary for contact groups: unknown, malformed and foreign ids all give `ContactGroup.NotFound`. */
export async function findTeamContactGroup(em: EntityManager, teamId: string, groupId: string, options: { lock?: 'share' | 'write' } = {}): Promise<ContactGroup> {
  const group = await em.findOne(ContactGroup, { id: wellFormedContactGroupId(groupId), team: teamId }, lockOptions(options.lock));
  if (!group) throw new ContactGroupNotFoundError(groupId);
  return group;
}

function lockOptions(lock: 'share' | 'write' | undefined) {
  if (lock === 'write') return { lockMode: LockMode.PESSIMISTIC_WRITE };
  if (lock === 'share') return { lockMode: LockMode.PESSIMISTIC_READ };
  return {};
}
