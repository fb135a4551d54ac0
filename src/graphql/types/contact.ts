import type { PhoneContactMethod } from '../../domain/recipient/agent.entity.ts';
import DataLoader from 'dataloader';
import type { RequestContext } from '../../context.ts';
import type { ContactGroup } from '../../domain/contact/contact-group.entity.ts';
import type { Contact } from '../../domain/contact/contact.entity.ts';
import {
  addContactGroupMember,
  countMembersOfContactGroups,
  createContact,
  createContactGroup,
  deleteContact,
  deleteContactGroup,
  getContact,
  getContactGroup,
  listContactGroups,
  listContacts,
  listMembersOfContactGroups,
  removeContactGroupMember,
  updateContact,
  updateContactGroup,
} from '../../domain/contact/contact.service.ts';
import { createdAtCursor } from '../../domain/pagination.ts';
import type { TeamUser } from '../../domain/team/team-user.entity.ts';
import { createUser, deleteUser, getUser, listUsers, updateUser } from '../../domain/team/team-user.service.ts';
import type { Loaders } from '../../loaders.ts';
import { builder } from '../builder.ts';
import { withoutNulls } from '../input.ts';
import { DeletedPayload, PageInfo } from './common.ts';
import { LocaleEnum, PhoneContactMethodEnum } from './recipient.ts';


// ---------------------------------------------------------------------------------------------
// Batched group members: one statement per request for every group in the response.

type ContactLoaders = {
  membersByGroup: DataLoader<string, Contact[]>;
  memberCountByGroup: DataLoader<string, number>;
};

/**
 * Request-scoped loaders, created on first use and kept on the side of the request context. Each
 * GraphQL mutation starts with fresh `context.loaders` (see schema.ts) because it may change what
 * was already loaded; these follow the same generation, so `a: addContactGroupMember … { members }
 * b: addContactGroupMember … { members }` shows b's member in b.
 */
const contactLoadersByContext = new WeakMap<RequestContext, { generation: Loaders; loaders: ContactLoaders }>();

function contactLoaders(context: RequestContext): ContactLoaders {
  const existing = contactLoadersByContext.get(context);
  if (existing && existing.generation === context.loaders) return existing.loaders;
  const loaders: ContactLoaders = {
    membersByGroup: new DataLoader(async (groupIds) => {
      const members = await listMembersOfContactGroups(context, groupIds);
      return groupIds.map((groupId) => members.get(groupId) ?? []);
    }),
    memberCountByGroup: new DataLoader(async (groupIds) => {
      const counts = await countMembersOfContactGroups(context, groupIds);
      return groupIds.map((groupId) => counts.get(groupId) ?? 0);
    }),
  };
  contactLoadersByContext.set(context, { generation: context.loaders, loaders });
  return loaders;
}

// ---------------------------------------------------------------------------------------------
// Object types.

export const ContactType = builder.objectRef<Contact>('Contact').implement({
  description: "An entry of the team's address book; name it as a recipient's agent by `contactId`.",
  fields: (t) => ({
    id: t.exposeID('id'),
    name: t.exposeString('name', { description: 'Full name, 1–200 characters.' }),
    email: t.string({ nullable: true, description: 'Where signing invitations go.', resolve: (contact) => contact.email ?? null }),
    phone: t.string({ nullable: true, description: 'E.164, for one-time passwords by SMS or WhatsApp.', resolve: (contact) => contact.phone ?? null }),
    locale: t.field({ type: LocaleEnum, nullable: true, description: 'Language of the signing page and emails.', resolve: (contact) => contact.locale ?? null }),
    phoneContactMethod: t.field({
      type: PhoneContactMethodEnum,
      nullable: true,
      description: 'Channel for one-time passwords; only with a phone.',
      resolve: (contact) => (contact.phoneContactMethod as PhoneContactMethod | null | undefined) ?? null,
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
  }),
});

export const ContactGroupType = builder.objectRef<ContactGroup>('ContactGroup').implement({
  description: 'A named set of contacts; naming it as an agent by `groupId` makes every member an agent of the role.',
  fields: (t) => ({
    id: t.exposeID('id'),
    name: t.exposeString('name', { description: '1–200 characters.' }),
    memberCount: t.int({
      description: 'How many contacts are members.',
      resolve: (group, _args, context) => contactLoaders(context).memberCountByGroup.load(group.id),
    }),
    members: t.field({
      type: [ContactType],
      description: 'The member contacts, oldest membership first.',
      resolve: (group, _args, context) => contactLoaders(context).membersByGroup.load(group.id),
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
  }),
});

export const TeamUserType = builder.objectRef<TeamUser>('TeamUser').implement({
  description: 'An internal user of the team; name it as a recipient’s agent by `userId`.',
  fields: (t) => ({
    id: t.exposeID('id'),
    name: t.exposeString('name', { description: 'Full name, 1–200 characters.' }),
    email: t.exposeString('email', { description: 'Unique within the team, ignoring letter case.' }),
    phone: t.string({ nullable: true, description: 'E.164.', resolve: (user) => user.phone ?? null }),
    locale: t.field({ type: LocaleEnum, description: 'Language of the signing page and emails; en-US unless set.', resolve: (user) => user.locale }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
  }),
});

// ---------------------------------------------------------------------------------------------
// Connections.

function pageInfoOf(page: { nextCursor: string | null }) {
  return { hasNextPage: page.nextCursor !== null, endCursor: page.nextCursor };
}

const ContactEdge = builder.objectRef<Contact>('ContactEdge').implement({
  description: 'One node of a page, with its position.',
  fields: (t) => ({
    cursor: t.string({ description: 'Pass as `after` to continue after this node.', resolve: (node) => createdAtCursor(node) }),
    node: t.field({ type: ContactType, resolve: (node) => node }),
  }),
});

const ContactConnection = builder.objectRef<{ nodes: Contact[]; nextCursor: string | null }>('ContactConnection').implement({
  description: "A page of the team's contacts, newest first.",
  fields: (t) => ({
    edges: t.field({ type: [ContactEdge], resolve: (page) => page.nodes }),
    nodes: t.field({ type: [ContactType], resolve: (page) => page.nodes }),
    pageInfo: t.field({ type: PageInfo, resolve: (page) => pageInfoOf(page) }),
  }),
});

const ContactGroupEdge = builder.objectRef<ContactGroup>('ContactGroupEdge').implement({
  description: 'One node of a page, with its position.',
  fields: (t) => ({
    cursor: t.string({ description: 'Pass as `after` to continue after this node.', resolve: (node) => createdAtCursor(node) }),
    node: t.field({ type: ContactGroupType, resolve: (node) => node }),
  }),
});

const ContactGroupConnection = builder.objectRef<{ nodes: ContactGroup[]; nextCursor: string | null }>('ContactGroupConnection').implement({
  description: "A page of the team's contact groups, newest first.",
  fields: (t) => ({
    edges: t.field({ type: [ContactGroupEdge], resolve: (page) => page.nodes }),
    nodes: t.field({ type: [ContactGroupType], resolve: (page) => page.nodes }),
    pageInfo: t.field({ type: PageInfo, resolve: (page) => pageInfoOf(page) }),
  }),
});

const TeamUserEdge = builder.objectRef<TeamUser>('TeamUserEdge').implement({
  description: 'One node of a page, with its position.',
  fields: (t) => ({
    cursor: t.string({ description: 'Pass as `after` to continue after this node.', resolve: (node) => createdAtCursor(node) }),
    node: t.field({ type: TeamUserType, resolve: (node) => node }),
  }),
});

const TeamUserConnection = builder.objectRef<{ nodes: TeamUser[]; nextCursor: string | null }>('TeamUserConnection').implement({
  description: "A page of the team's users, newest first.",
  fields: (t) => ({
    edges: t.field({ type: [TeamUserEdge], resolve: (page) => page.nodes }),
    nodes: t.field({ type: [TeamUserType], resolve: (page) => page.nodes }),
    pageInfo: t.field({ type: PageInfo, resolve: (page) => pageInfoOf(page) }),
  }),
});

// ---------------------------------------------------------------------------------------------
// Queries.

const SEARCH_DESCRIPTION = 'Keeps only entries whose name (or email, for contacts and users) contains this text, ignoring letter case.';

function pageOptions(args: { first?: number | null; after?: string | null; search?: string | null }) {
  return { limit: args.first ?? undefined, cursor: args.after ?? undefined, search: args.search ?? undefined };
}

builder.queryFields((t) => ({
  contact: t.field({
    type: ContactType,
    description: 'One contact of your team (REST: GET /contacts/{id}). Unknown and foreign ids give Contact.NotFound.',
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, context) => getContact(context, String(args.id)),
  }),
  contacts: t.field({
    type: ContactConnection,
    description: "Your team's contacts, newest first (REST: GET /contacts).",
    args: {
      first: t.arg.int({ required: false, description: '1–100, default 20.' }),
      after: t.arg.string({ required: false, description: 'The endCursor of the previous page.' }),
      search: t.arg.string({ required: false, description: SEARCH_DESCRIPTION }),
    },
    resolve: async (_root, args, context) => {
      const page = await listContacts(context, pageOptions(args));
      return { nodes: page.contacts, nextCursor: page.nextCursor };
    },
  }),
  contactGroup: t.field({
    type: ContactGroupType,
    description: 'One contact group of your team (REST: GET /contact-groups/{id}). Unknown and foreign ids give ContactGroup.NotFound.',
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, context) => getContactGroup(context, String(args.id)),
  }),
  contactGroups: t.field({
    type: ContactGroupConnection,
    description: "Your team's contact groups, newest first (REST: GET /contact-groups).",
    args: {
      first: t.arg.int({ required: false, description: '1–100, default 20.' }),
      after: t.arg.string({ required: false, description: 'The endCursor of the previous page.' }),
      search: t.arg.string({ required: false, description: SEARCH_DESCRIPTION }),
    },
    resolve: async (_root, args, context) => {
      const page = await listContactGroups(context, pageOptions(args));
      return { nodes: page.contactGroups, nextCursor: page.nextCursor };
    },
  }),
  user: t.field({
    type: TeamUserType,
    description: 'One user of your team (REST: GET /users/{id}). Unknown and foreign ids give User.NotFound.',
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, context) => getUser(context, String(args.id)),
  }),
  users: t.field({
    type: TeamUserConnection,
    description: "Your team's users, newest first (REST: GET /users).",
    args: {
      first: t.arg.int({ required: false, description: '1–100, default 20.' }),
      after: t.arg.string({ required: false, description: 'The endCursor of the previous page.' }),
      search: t.arg.string({ required: false, description: SEARCH_DESCRIPTION }),
    },
    resolve: async (_root, args, context) => {
      const page = await listUsers(context, pageOptions(args));
      return { nodes: page.users, nextCursor: page.nextCursor };
    },
  }),
}));

// ---------------------------------------------------------------------------------------------
// Inputs and mutations.

const CreateContactInput = builder.inputType('CreateContactInput', {
  description: 'A new contact. phoneContactMethod needs a phone.',
  fields: (t) => ({
    name: t.string({ required: true, description: '1–200 characters, not blank.' }),
    email: t.string({ required: false }),
    phone: t.string({ required: false, description: 'E.164, e.g. +905551234567.' }),
    locale: t.field({ type: LocaleEnum, required: false }),
    phoneContactMethod: t.field({ type: PhoneContactMethodEnum, required: false }),
  }),
});

const UpdateContactInput = builder.inputType('UpdateContactInput', {
  description: 'Only the given keys change; null clears email, phone, locale or phoneContactMethod.',
  fields: (t) => ({
    name: t.string({ required: false }),
    email: t.string({ required: false }),
    phone: t.string({ required: false }),
    locale: t.field({ type: LocaleEnum, required: false }),
    phoneContactMethod: t.field({ type: PhoneContactMethodEnum, required: false }),
  }),
});

const CreateContactGroupInput = builder.inputType('CreateContactGroupInput', {
  description: 'A new, empty contact group.',
  fields: (t) => ({ name: t.string({ required: true, description: '1–200 characters, not blank.' }) }),
});

const UpdateContactGroupInput = builder.inputType('UpdateContactGroupInput', {
  description: 'Only the given keys change.',
  fields: (t) => ({ name: t.string({ required: false }) }),
});

const CreateUserInput = builder.inputType('CreateUserInput', {
  description: 'A new team user.',
  fields: (t) => ({
    name: t.string({ required: true, description: '1–200 characters, not blank.' }),
    email: t.string({ required: true, description: 'Unique within the team, ignoring letter case.' }),
    phone: t.string({ required: false, description: 'E.164.' }),
    locale: t.field({ type: LocaleEnum, required: false, description: 'Default en-US.' }),
  }),
});

const UpdateUserInput = builder.inputType('UpdateUserInput', {
  description: 'Only the given keys change; null clears the phone and puts the locale back to en-US.',
  fields: (t) => ({
    name: t.string({ required: false }),
    email: t.string({ required: false }),
    phone: t.string({ required: false }),
    locale: t.field({ type: LocaleEnum, required: false }),
  }),
});

const CONTACT_CLEARABLE = ['email', 'phone', 'locale', 'phoneContactMethod'];
const USER_CLEARABLE = ['phone', 'locale'];

builder.mutationFields((t) => ({
  createContact: t.field({
    type: ContactType,
    description: 'Adds a contact (REST: POST /contacts). Honours the Idempotency-Key header.',
    args: { input: t.arg({ type: CreateContactInput, required: true }) },
    resolve: (_root, args, context) => createContact(context, { input: withoutNulls(args.input), idempotencyKey: context.idempotencyKey }),
  }),
  updateContact: t.field({
    type: ContactType,
    description: 'Changes a contact (REST: PATCH /contacts/{id}). Sent envelopes keep the person as it was at sending.',
    args: { id: t.arg.id({ required: true }), input: t.arg({ type: UpdateContactInput, required: true }) },
    resolve: (_root, args, context) =>
      updateContact(context, { contactId: String(args.id), input: withoutNulls(args.input, { keepNull: CONTACT_CLEARABLE }) }),
  }),
  deleteContact: t.field({
    type: DeletedPayload,
    description: 'Deletes a contact and its group memberships (REST: DELETE /contacts/{id}); Contact.InUse while a draft or template names it.',
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_root, args, context) => {
      await deleteContact(context, { contactId: String(args.id) });
      return { id: String(args.id) };
    },
  }),
  createContactGroup: t.field({
    type: ContactGroupType,
    description: 'Creates an empty contact group (REST: POST /contact-groups). Honours the Idempotency-Key header.',
    args: { input: t.arg({ type: CreateContactGroupInput, required: true }) },
    resolve: (_root, args, context) => createContactGroup(context, { input: withoutNulls(args.input), idempotencyKey: context.idempotencyKey }),
  }),
  updateContactGroup: t.field({
    type: ContactGroupType,
    description: 'Renames a contact group (REST: PATCH /contact-groups/{id}).',
    args: { id: t.arg.id({ required: true }), input: t.arg({ type: UpdateContactGroupInput, required: true }) },
    resolve: (_root, args, context) => updateContactGroup(context, { groupId: String(args.id), input: withoutNulls(args.input) }),
  }),
  deleteContactGroup: t.field({
    type: DeletedPayload,
    description: 'Deletes a contact group, not its contacts (REST: DELETE /contact-groups/{id}); ContactGroup.InUse while a draft or template names it.',
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_root, args, context) => {
      await deleteContactGroup(context, { groupId: String(args.id) });
      return { id: String(args.id) };
    },
  }),
  addContactGroupMember: t.field({
    type: ContactGroupType,
    description: 'Makes a contact a member of a group (REST: POST /contact-groups/{id}/members/{contactId}). Adding a member again changes nothing.',
    args: { groupId: t.arg.id({ required: true }), contactId: t.arg.id({ required: true }) },
    resolve: (_root, args, context) => addContactGroupMember(context, { groupId: String(args.groupId), contactId: String(args.contactId) }),
  }),
  removeContactGroupMember: t.field({
    type: ContactGroupType,
    description:
      'Removes a contact from a group (REST: DELETE /contact-groups/{id}/members/{contactId}); ContactGroup.MemberNotFound when it is not a member.',
    args: { groupId: t.arg.id({ required: true }), contactId: t.arg.id({ required: true }) },
    resolve: (_root, args, context) => removeContactGroupMember(context, { groupId: String(args.groupId), contactId: String(args.contactId) }),
  }),
  createUser: t.field({
    type: TeamUserType,
    description: 'Adds a user to your team (REST: POST /users); User.DuplicateEmail when the email is taken. Honours the Idempotency-Key header.',
    args: { input: t.arg({ type: CreateUserInput, required: true }) },
    resolve: (_root, args, context) => createUser(context, { input: withoutNulls(args.input), idempotencyKey: context.idempotencyKey }),
  }),
  updateUser: t.field({
    type: TeamUserType,
    description: 'Changes a user (REST: PATCH /users/{id}).',
    args: { id: t.arg.id({ required: true }), input: t.arg({ type: UpdateUserInput, required: true }) },
    resolve: (_root, args, context) => updateUser(context, { userId: String(args.id), input: withoutNulls(args.input, { keepNull: USER_CLEARABLE }) }),
  }),
  deleteUser: t.field({
    type: DeletedPayload,
    description: 'Removes a user from your team (REST: DELETE /users/{id}); User.InUse while a draft or template names the user.',
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_root, args, context) => {
      await deleteUser(context, { userId: String(args.id) });
      return { id: String(args.id) };
    },
  }),
}));
