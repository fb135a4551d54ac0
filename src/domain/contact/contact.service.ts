import { z } from 'zod';
import { CONTACT_GROUP_CAPACITY, ensureCapacity } from '../capacity.ts';
import { auditChange, inTransaction } from '../change.ts';
import { answerOf, runIdempotently } from '../idempotency/idempotency.service.ts';
import { agentInfoSchema } from '../person/person.ts';
import { findDraftReferences, isReferenced } from '../person/references.ts';
import type { ServiceContext } from '../service-context.ts';
import { Team } from '../team/team.entity.ts';
import { parseInput, readableName } from '../validation.ts';
import { Contact } from './contact.entity.ts';
import { ContactGroupInUseError, ContactGroupMemberNotFoundError, ContactInUseError } from './contact.errors.ts';
import { type ContactData, type ContactGroupData, type ContactGroupInclude, readContact, readContactGroup } from './contact.read.ts';
import { ContactGroup, ContactGroupMember } from './contact-group.entity.ts';
import { findTeamContact, findTeamContactGroup } from './team-contact.ts';

// ---------------------------------------------------------------------------------------------
// Contacts.

export const createContactInput = agentInfoSchema;

export const updateContactInput = z.strictObject({
  name: agentInfoSchema.shape.name.optional(),
  email: agentInfoSchema.shape.email,
  phone: agentInfoSchema.shape.phone,
  locale: agentInfoSchema.shape.locale,
  phoneContactMethod: agentInfoSchema.shape.phoneContactMethod,
});

export type CreateContactInput = z.input<typeof createContactInput>;
export type UpdateContactInput = z.input<typeof updateContactInput>;

const contactKeys = ['name', 'email', 'phone', 'locale', 'phoneContactMethod'] as const;

function contactDetails(contact: Contact) {
  return {
    name: contact.name,
    email: contact.email ?? null,
    phone: contact.phone ?? null,
    locale: contact.locale ?? null,
    phoneContactMethod: contact.phoneContactMethod ?? null,
  };
}

/** Adds a contact to the team's address book. Idempotent per `Idempotency-Key`. */
export async function createContact(context: ServiceContext, options: { input: unknown; idempotencyKey?: string }): Promise<ContactData> {
  const input = parseInput(createContactInput, options.input);
  const caller = await context.caller();
  const outcome = await context.em.transactional((em) =>
    runIdempotently(
      em,
      { teamId: caller.teamId, key: options.idempotencyKey, fingerprintOf: { operation: 'createContact', input: options.input } },
      {
        perform: async () => {
          const now = context.clock.now();
          const contact = em.create(Contact, {
            team: em.getReference(Team, caller.teamId),
            name: input.name,
            email: input.email ?? null,
            phone: input.phone ?? null,
            locale: input.locale ?? null,
            phoneContactMethod: input.phoneContactMethod ?? null,
            createdAt: now,
            updatedAt: now,
          });
          await em.persist(contact).flush();
          await auditChange(context, { em, caller, now }, { envelopeId: null, type: 'contact.created', details: { contactId: contact.id, name: contact.name } });
          return contact.id;
        },
        answer: (contactId) => readContact(inTransaction(context, em), contactId),
      },
    ),
  );
  return answerOf(outcome, (contactId) => readContact(context, contactId));
}

/**
 * Changes a contact; only the given keys change, `null` clears an optional one. The agent rules
 * are checked on the result, so clearing the phone of a contact that has a `phoneContactMethod`
 * is refused unless the method is cleared too. Agents of sent envelopes keep their snapshot.
 */
export async function updateContact(context: ServiceContext, options: { contactId: string; input: unknown }): Promise<ContactData> {
  const input = parseInput(updateContactInput, options.input);
  const caller = await context.caller();
  const contactId = await context.em.transactional(async (em) => {
    const contact = await findTeamContact(em, caller.teamId, options.contactId, { lock: 'write' });
    const changed = contactKeys.filter((key) => input[key] !== undefined);
    const merged = parseInput(agentInfoSchema, { ...contactDetails(contact), ...Object.fromEntries(changed.map((key) => [key, input[key]])) });
    const now = context.clock.now();
    em.assign(contact, {
      name: merged.name,
      email: merged.email ?? null,
      phone: merged.phone ?? null,
      locale: merged.locale ?? null,
      phoneContactMethod: merged.phoneContactMethod ?? null,
      updatedAt: now,
    });
    await auditChange(context, { em, caller, now }, { envelopeId: null, type: 'contact.updated', details: { contactId: contact.id, changed } });
    return contact.id;
  });
  return readContact(context, contactId);
}

/**
 * Deletes a contact and its group memberships. Refused with `Contact.InUse` while an agent of a
 * draft envelope or a template recipient names it: the foreign key would silently turn those
 * agents into nobody.
 */
export async function deleteContact(context: ServiceContext, options: { contactId: string }): Promise<void> {
  const caller = await context.caller();
  await context.em.transactional(async (em) => {
    const contact = await findTeamContact(em, caller.teamId, options.contactId, { lock: 'write' });
    const usage = await findDraftReferences(em, caller.teamId, { agentColumn: 'contact_id', templateColumn: 'contact_id', id: contact.id });
    if (isReferenced(usage)) throw new ContactInUseError(contact.id, usage);
    await auditChange(
      context,
      { em, caller, now: context.clock.now() },
      {
        envelopeId: null,
        type: 'contact.removed',
        details: { contactId: contact.id, name: contact.name },
      },
    );
    await em.nativeDelete(Contact, { id: contact.id, team: caller.teamId });
  });
}

// ---------------------------------------------------------------------------------------------
// Contact groups and their members.

const groupName = readableName(1, 200);

export const createContactGroupInput = z.strictObject({ name: groupName });
export const updateContactGroupInput = z.strictObject({ name: groupName.optional() });

export type CreateContactGroupInput = z.input<typeof createContactGroupInput>;
export type UpdateContactGroupInput = z.input<typeof updateContactGroupInput>;

/**
 * Creates an empty contact group. Idempotent per `Idempotency-Key`. Like every group change below,
 * it answers the group as the read model shows it, with what `include` asks nested.
 */
export async function createContactGroup(context: ServiceContext, options: { input: unknown; idempotencyKey?: string }, include: ContactGroupInclude = {}): Promise<ContactGroupData> {
  const input = parseInput(createContactGroupInput, options.input);
  const caller = await context.caller();
  const outcome = await context.em.transactional((em) =>
    runIdempotently(
      em,
      { teamId: caller.teamId, key: options.idempotencyKey, fingerprintOf: { operation: 'createContactGroup', input: options.input } },
      {
        perform: async () => {
          const now = context.clock.now();
          const group = em.create(ContactGroup, { team: em.getReference(Team, caller.teamId), name: input.name, createdAt: now, updatedAt: now });
          await em.persist(group).flush();
          await auditChange(context, { em, caller, now }, { envelopeId: null, type: 'contact_group.created', details: { groupId: group.id, name: group.name } });
          return group.id;
        },
        // Members included (none yet), so that any GraphQL selection can be answered from the stored answer.
        answer: (groupId) => readContactGroup(inTransaction(context, em), groupId, { members: true }),
      },
    ),
  );
  const group = await answerOf(outcome, (groupId) => readContactGroup(context, groupId, { members: true }));
  if (include.members) return group;
  const { members: _members, ...withoutMembers } = group;
  return withoutMembers;
}

/** Renames a contact group. */
export async function updateContactGroup(context: ServiceContext, options: { groupId: string; input: unknown }, include: ContactGroupInclude = {}): Promise<ContactGroupData> {
  const input = parseInput(updateContactGroupInput, options.input);
  const caller = await context.caller();
  const groupId = await context.em.transactional(async (em) => {
    const group = await findTeamContactGroup(em, caller.teamId, options.groupId, { lock: 'write' });
    const now = context.clock.now();
    const changed = input.name === undefined ? [] : ['name'];
    if (input.name !== undefined) em.assign(group, { name: input.name, updatedAt: now });
    await auditChange(context, { em, caller, now }, { envelopeId: null, type: 'contact_group.updated', details: { groupId: group.id, changed } });
    return group.id;
  });
  return readContactGroup(context, groupId, include);
}

/**
 * Deletes a contact group and its memberships (the contacts stay). Refused with
 * `ContactGroup.InUse` while an agent of a draft envelope or a template recipient names it.
 */
export async function deleteContactGroup(context: ServiceContext, options: { groupId: string }): Promise<void> {
  const caller = await context.caller();
  await context.em.transactional(async (em) => {
    const group = await findTeamContactGroup(em, caller.teamId, options.groupId, { lock: 'write' });
    const usage = await findDraftReferences(em, caller.teamId, { agentColumn: 'group_id', templateColumn: 'contact_group_id', id: group.id });
    if (isReferenced(usage)) throw new ContactGroupInUseError(group.id, usage);
    await auditChange(
      context,
      { em, caller, now: context.clock.now() },
      {
        envelopeId: null,
        type: 'contact_group.removed',
        details: { groupId: group.id, name: group.name },
      },
    );
    await em.nativeDelete(ContactGroup, { id: group.id, team: caller.teamId });
  });
}

/**
 * Makes a contact of the team a member of a group of the team. Adding a member twice is not an
 * error and changes nothing (one membership, one audit event).
 *
 * Both rows are read under a share lock, so a concurrent delete of either waits for this
 * transaction (and then removes the new membership with it) instead of failing our insert.
 */
export async function addContactGroupMember(context: ServiceContext, options: { groupId: string; contactId: string }, include: ContactGroupInclude = {}): Promise<ContactGroupData> {
  const caller = await context.caller();
  const groupId = await context.em.transactional(async (em) => {
    // A write lock on the group: member additions to one group take turns, so the cap below
    // holds under concurrent requests.
    const group = await findTeamContactGroup(em, caller.teamId, options.groupId, { lock: 'write' });
    const contact = await findTeamContact(em, caller.teamId, options.contactId, { lock: 'share' });
    const now = context.clock.now();
    const [{ members, present }] = await em.execute<{ members: number; present: boolean }[]>(
      `select count(*)::int as members, bool_or(contact_id = ?) as present from contact_group_member where group_id = ?`,
      [contact.id, group.id],
    );
    if (!present) ensureCapacity('ContactGroup', { what: 'members', limit: CONTACT_GROUP_CAPACITY.members, current: members, adding: 1 });
    const inserted = await em.execute<{ group_id: string }[]>(
      `insert into contact_group_member (group_id, contact_id, created_at) values (?, ?, ?)
       on conflict (group_id, contact_id) do nothing
       returning group_id`,
      [group.id, contact.id, now],
    );
    if (inserted.length === 1) {
      await auditChange(
        context,
        { em, caller, now },
        {
          envelopeId: null,
          type: 'contact_group.member_added',
          details: { groupId: group.id, contactId: contact.id },
        },
      );
    }
    return group.id;
  });
  return readContactGroup(context, groupId, include);
}

/** Removes a contact from a group; the contact itself stays. `ContactGroup.MemberNotFound` when it is not a member. */
export async function removeContactGroupMember(context: ServiceContext, options: { groupId: string; contactId: string }, include: ContactGroupInclude = {}): Promise<ContactGroupData> {
  const caller = await context.caller();
  const groupId = await context.em.transactional(async (em) => {
    const group = await findTeamContactGroup(em, caller.teamId, options.groupId, { lock: 'share' });
    const contact = await findTeamContact(em, caller.teamId, options.contactId);
    const removed = await em.nativeDelete(ContactGroupMember, { group: group.id, contact: contact.id });
    if (removed === 0) throw new ContactGroupMemberNotFoundError(group.id, contact.id);
    await auditChange(
      context,
      { em, caller, now: context.clock.now() },
      {
        envelopeId: null,
        type: 'contact_group.member_removed',
        details: { groupId: group.id, contactId: contact.id },
      },
    );
    return group.id;
  });
  return readContactGroup(context, groupId, include);
}
