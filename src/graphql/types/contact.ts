import {
  type ContactData,
  type ContactGroupData,
  type ContactGroupPageData,
  type ContactPageData,
  readContact,
  readContactGroup,
  readContactGroupPage,
  readContactPage,
} from '../../domain/contact/contact.read.ts';
import {
  addContactGroupMember,
  createContact,
  createContactGroup,
  deleteContact,
  deleteContactGroup,
  removeContactGroupMember,
  updateContact,
  updateContactGroup,
} from '../../domain/contact/contact.service.ts';
import type { PhoneContactMethod } from '../../domain/recipient/agent.entity.ts';
import { readUser, readUserPage, type TeamUserData, type TeamUserPageData } from '../../domain/team/team-user.read.ts';
import { createUser, deleteUser, updateUser } from '../../domain/team/team-user.service.ts';
import { builder } from '../builder.ts';
import { withoutNulls } from '../input.ts';
import { connectionNodesOf, contactGroupIncludeOf, nested, selectionOf } from '../selection.ts';
import { DeletedPayload, keysetConnection, pageArgs } from './common.ts';
import { LocaleEnum, PhoneContactMethodEnum } from './recipient.ts';

/*
 * The address book's GraphQL face. Root fields and mutations read through the read model, asking
 * for a group's members exactly when the selection shows them, so every query or mutation answer
 * is one statement; the object types only pick fields out of that plain data.
 */

// ---------------------------------------------------------------------------------------------
// Object types.

export const ContactType = builder.objectRef<ContactData>('Contact').implement({
  description: "An entry of the team's address book; name it as a recipient's agent by `contactId`.",
  fields: (t) => ({
    id: t.exposeID('id'),
    name: t.exposeString('name', { description: 'Full name, 1–200 characters.' }),
    email: t.string({ nullable: true, description: 'Where signing invitations go.', resolve: (contact) => contact.email }),
    phone: t.string({ nullable: true, description: 'E.164, for one-time passwords by SMS or WhatsApp.', resolve: (contact) => contact.phone }),
    locale: t.field({ type: LocaleEnum, nullable: true, description: 'Language of the signing page and emails.', resolve: (contact) => contact.locale }),
    phoneContactMethod: t.field({
      type: PhoneContactMethodEnum,
      nullable: true,
      description: 'Channel for one-time passwords; only with a phone.',
      resolve: (contact) => contact.phoneContactMethod as PhoneContactMethod | null,
    }),
    createdAt: t.field({ type: 'DateTime', resolve: (contact) => contact.createdAt }),
    updatedAt: t.field({ type: 'DateTime', resolve: (contact) => contact.updatedAt }),
  }),
});

export const ContactGroupType = builder.objectRef<ContactGroupData>('ContactGroup').implement({
  description: 'A named set of contacts; naming it as an agent by `groupId` makes every member an agent of the role.',
  fields: (t) => ({
    id: t.exposeID('id'),
    name: t.exposeString('name', { description: '1–200 characters.' }),
    memberCount: t.exposeInt('memberCount', { description: 'How many contacts are members.' }),
    members: t.field({
      type: [ContactType],
      description: 'The member contacts, oldest membership first.',
      resolve: (group) => nested(group.members, 'ContactGroup.members'),
    }),
    createdAt: t.field({ type: 'DateTime', resolve: (group) => group.createdAt }),
    updatedAt: t.field({ type: 'DateTime', resolve: (group) => group.updatedAt }),
  }),
});

export const TeamUserType = builder.objectRef<TeamUserData>('TeamUser').implement({
  description: 'An internal user of the team; name it as a recipient’s agent by `userId`.',
  fields: (t) => ({
    id: t.exposeID('id'),
    name: t.exposeString('name', { description: 'Full name, 1–200 characters.' }),
    email: t.exposeString('email', { description: 'Unique within the team, ignoring letter case.' }),
    phone: t.string({ nullable: true, description: 'E.164.', resolve: (user) => user.phone }),
    locale: t.field({ type: LocaleEnum, description: 'Language of the signing page and emails; en-US unless set.', resolve: (user) => user.locale }),
    createdAt: t.field({ type: 'DateTime', resolve: (user) => user.createdAt }),
    updatedAt: t.field({ type: 'DateTime', resolve: (user) => user.updatedAt }),
  }),
});

// ---------------------------------------------------------------------------------------------
// Connections.

const ContactConnection = keysetConnection('Contact', {
  description: "A page of the team's contacts, newest first.",
  node: ContactType,
  nodesOf: (page: ContactPageData) => page.contacts,
});

const ContactGroupConnection = keysetConnection('ContactGroup', {
  description: "A page of the team's contact groups, newest first.",
  node: ContactGroupType,
  nodesOf: (page: ContactGroupPageData) => page.contactGroups,
});

const TeamUserConnection = keysetConnection('TeamUser', {
  description: "A page of the team's users, newest first.",
  node: TeamUserType,
  nodesOf: (page: TeamUserPageData) => page.users,
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
    resolve: (_root, args, context) => readContact(context, String(args.id)),
  }),
  contacts: t.field({
    type: ContactConnection,
    description: "Your team's contacts, newest first (REST: GET /contacts).",
    args: {
      ...pageArgs(t.arg),
      search: t.arg.string({ required: false, description: SEARCH_DESCRIPTION }),
    },
    resolve: (_root, args, context) => readContactPage(context, pageOptions(args)),
  }),
  contactGroup: t.field({
    type: ContactGroupType,
    description: 'One contact group of your team (REST: GET /contact-groups/{id}). Unknown and foreign ids give ContactGroup.NotFound.',
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, context, info) => readContactGroup(context, String(args.id), contactGroupIncludeOf(selectionOf(info))),
  }),
  contactGroups: t.field({
    type: ContactGroupConnection,
    description: "Your team's contact groups, newest first (REST: GET /contact-groups).",
    args: {
      ...pageArgs(t.arg),
      search: t.arg.string({ required: false, description: SEARCH_DESCRIPTION }),
    },
    resolve: (_root, args, context, info) => readContactGroupPage(context, pageOptions(args), contactGroupIncludeOf(connectionNodesOf(selectionOf(info)))),
  }),
  user: t.field({
    type: TeamUserType,
    description: 'One user of your team (REST: GET /users/{id}). Unknown and foreign ids give User.NotFound.',
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, context) => readUser(context, String(args.id)),
  }),
  users: t.field({
    type: TeamUserConnection,
    description: "Your team's users, newest first (REST: GET /users).",
    args: {
      ...pageArgs(t.arg),
      search: t.arg.string({ required: false, description: SEARCH_DESCRIPTION }),
    },
    resolve: (_root, args, context) => readUserPage(context, pageOptions(args)),
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
    nullable: true,
    description: 'Adds a contact (REST: POST /contacts). Honours the Idempotency-Key header.',
    args: { input: t.arg({ type: CreateContactInput, required: true }) },
    resolve: (_root, args, context) => createContact(context, { input: withoutNulls(args.input), idempotencyKey: context.idempotencyKey }),
  }),
  updateContact: t.field({
    type: ContactType,
    nullable: true,
    description: 'Changes a contact (REST: PATCH /contacts/{id}). Sent envelopes keep the person as it was at sending.',
    args: { id: t.arg.id({ required: true }), input: t.arg({ type: UpdateContactInput, required: true }) },
    resolve: (_root, args, context) => updateContact(context, { contactId: String(args.id), input: withoutNulls(args.input, { keepNull: CONTACT_CLEARABLE }) }),
  }),
  deleteContact: t.field({
    type: DeletedPayload,
    nullable: true,
    description: 'Deletes a contact and its group memberships (REST: DELETE /contacts/{id}); Contact.InUse while a draft or template names it.',
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_root, args, context) => {
      await deleteContact(context, { contactId: String(args.id) });
      return { id: String(args.id) };
    },
  }),
  createContactGroup: t.field({
    type: ContactGroupType,
    nullable: true,
    description: 'Creates an empty contact group (REST: POST /contact-groups). Honours the Idempotency-Key header.',
    args: { input: t.arg({ type: CreateContactGroupInput, required: true }) },
    resolve: (_root, args, context, info) =>
      createContactGroup(context, { input: withoutNulls(args.input), idempotencyKey: context.idempotencyKey }, contactGroupIncludeOf(selectionOf(info))),
  }),
  updateContactGroup: t.field({
    type: ContactGroupType,
    nullable: true,
    description: 'Renames a contact group (REST: PATCH /contact-groups/{id}).',
    args: { id: t.arg.id({ required: true }), input: t.arg({ type: UpdateContactGroupInput, required: true }) },
    resolve: (_root, args, context, info) => updateContactGroup(context, { groupId: String(args.id), input: withoutNulls(args.input) }, contactGroupIncludeOf(selectionOf(info))),
  }),
  deleteContactGroup: t.field({
    type: DeletedPayload,
    nullable: true,
    description: 'Deletes a contact group, not its contacts (REST: DELETE /contact-groups/{id}); ContactGroup.InUse while a draft or template names it.',
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_root, args, context) => {
      await deleteContactGroup(context, { groupId: String(args.id) });
      return { id: String(args.id) };
    },
  }),
  addContactGroupMember: t.field({
    type: ContactGroupType,
    nullable: true,
    description: 'Makes a contact a member of a group (REST: POST /contact-groups/{id}/members/{contactId}). Adding a member again changes nothing.',
    args: { groupId: t.arg.id({ required: true }), contactId: t.arg.id({ required: true }) },
    resolve: (_root, args, context, info) => addContactGroupMember(context, { groupId: String(args.groupId), contactId: String(args.contactId) }, contactGroupIncludeOf(selectionOf(info))),
  }),
  removeContactGroupMember: t.field({
    type: ContactGroupType,
    nullable: true,
    description: 'Removes a contact from a group (REST: DELETE /contact-groups/{id}/members/{contactId}); ContactGroup.MemberNotFound when it is not a member.',
    args: { groupId: t.arg.id({ required: true }), contactId: t.arg.id({ required: true }) },
    resolve: (_root, args, context, info) =>
      removeContactGroupMember(context, { groupId: String(args.groupId), contactId: String(args.contactId) }, contactGroupIncludeOf(selectionOf(info))),
  }),
  createUser: t.field({
    type: TeamUserType,
    nullable: true,
    description: 'Adds a user to your team (REST: POST /users); User.DuplicateEmail when the email is taken. Honours the Idempotency-Key header.',
    args: { input: t.arg({ type: CreateUserInput, required: true }) },
    resolve: (_root, args, context) => createUser(context, { input: withoutNulls(args.input), idempotencyKey: context.idempotencyKey }),
  }),
  updateUser: t.field({
    type: TeamUserType,
    nullable: true,
    description: 'Changes a user (REST: PATCH /users/{id}).',
    args: { id: t.arg.id({ required: true }), input: t.arg({ type: UpdateUserInput, required: true }) },
    resolve: (_root, args, context) => updateUser(context, { userId: String(args.id), input: withoutNulls(args.input, { keepNull: USER_CLEARABLE }) }),
  }),
  deleteUser: t.field({
    type: DeletedPayload,
    nullable: true,
    description: 'Removes a user from your team (REST: DELETE /users/{id}); User.InUse while a draft or template names the user.',
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_root, args, context) => {
      await deleteUser(context, { userId: String(args.id) });
      return { id: String(args.id) };
    },
  }),
}));
