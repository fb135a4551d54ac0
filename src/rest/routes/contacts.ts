import { readContact, readContactGroup, readContactGroupMembers, readContactGroupPage, readContactPage } from '../../domain/contact/contact.read.ts';
import {
  addContactGroupMember,
  createContact,
  createContactGroup,
  createContactGroupInput,
  createContactInput,
  deleteContact,
  deleteContactGroup,
  removeContactGroupMember,
  updateContact,
  updateContactGroup,
  updateContactGroupInput,
  updateContactInput,
} from '../../domain/contact/contact.service.ts';
import { readUser, readUserPage } from '../../domain/team/team-user.read.ts';
import { createUser, createUserInput, deleteUser, updateUser, updateUserInput } from '../../domain/team/team-user.service.ts';
import { readJsonObject } from '../../http/body.ts';
import { SEARCHABLE_PAGE_QUERY } from '../openapi-shared.ts';
import { integerQuery } from '../query.ts';
import type { RestRoute } from '../router.ts';

function pageQuery(url: URL) {
  return {
    limit: integerQuery(url, 'limit'),
    cursor: url.searchParams.get('cursor') ?? undefined,
    search: url.searchParams.get('search') ?? undefined,
  };
}

/**
 * Contract (docs/reference/contract.md) §3: contacts, contact groups with members, and team users. Bodies are the object
 * itself, as the read model answers it (a group always with its `memberCount`, never its members).
 */
export const contactRoutes: RestRoute[] = [
  {
    method: 'POST',
    path: '/contacts',
    doc: { summary: 'Add a contact', isIdempotent: true, body: { schema: createContactInput, example: { name: 'Ada Lovelace', email: 'ada@example.com' } } },
    async handler({ request, context }) {
      return { contact: await createContact(context, { input: await readJsonObject(request), idempotencyKey: context.idempotencyKey }) };
    },
  },
  {
    method: 'GET',
    path: '/contacts',
    doc: { summary: 'List contacts', query: SEARCHABLE_PAGE_QUERY },
    async handler({ url, context }) {
      return readContactPage(context, pageQuery(url));
    },
  },
  {
    method: 'GET',
    path: '/contacts/:contactId',
    doc: { summary: 'Read a contact' },
    async handler({ params, context }) {
      return { contact: await readContact(context, params.contactId) };
    },
  },
  {
    method: 'PATCH',
    path: '/contacts/:contactId',
    doc: { summary: 'Change a contact', body: { schema: updateContactInput, example: { phone: '+905551112233' } } },
    async handler({ request, params, context }) {
      return { contact: await updateContact(context, { contactId: params.contactId, input: await readJsonObject(request) }) };
    },
  },
  {
    method: 'DELETE',
    path: '/contacts/:contactId',
    doc: { summary: 'Delete a contact', errors: ['Contact.InUse'] },
    async handler({ params, context }) {
      await deleteContact(context, { contactId: params.contactId });
      return { deleted: true };
    },
  },

  {
    method: 'POST',
    path: '/contact-groups',
    doc: { summary: 'Create a contact group', isIdempotent: true, body: { schema: createContactGroupInput, example: { name: 'Board' } } },
    async handler({ request, context }) {
      return { contactGroup: await createContactGroup(context, { input: await readJsonObject(request), idempotencyKey: context.idempotencyKey }) };
    },
  },
  {
    method: 'GET',
    path: '/contact-groups',
    doc: { summary: 'List contact groups', query: SEARCHABLE_PAGE_QUERY },
    async handler({ url, context }) {
      return readContactGroupPage(context, pageQuery(url));
    },
  },
  {
    method: 'GET',
    path: '/contact-groups/:groupId',
    doc: { summary: 'Read a contact group' },
    async handler({ params, context }) {
      return { contactGroup: await readContactGroup(context, params.groupId) };
    },
  },
  {
    method: 'PATCH',
    path: '/contact-groups/:groupId',
    doc: { summary: 'Rename a contact group', body: { schema: updateContactGroupInput, example: { name: 'Board of directors' } } },
    async handler({ request, params, context }) {
      return { contactGroup: await updateContactGroup(context, { groupId: params.groupId, input: await readJsonObject(request) }) };
    },
  },
  {
    method: 'DELETE',
    path: '/contact-groups/:groupId',
    doc: { summary: 'Delete a contact group', errors: ['ContactGroup.InUse'] },
    async handler({ params, context }) {
      await deleteContactGroup(context, { groupId: params.groupId });
      return { deleted: true };
    },
  },
  {
    method: 'GET',
    path: '/contact-groups/:groupId/members',
    doc: { summary: 'List a group’s members', query: SEARCHABLE_PAGE_QUERY },
    async handler({ params, context }) {
      return { members: await readContactGroupMembers(context, { groupId: params.groupId }) };
    },
  },
  {
    method: 'POST',
    path: '/contact-groups/:groupId/members/:contactId',
    doc: { summary: 'Add a contact to a group', errors: ['ContactGroup.CapacityExceeded'] },
    async handler({ params, context }) {
      return { contactGroup: await addContactGroupMember(context, { groupId: params.groupId, contactId: params.contactId }) };
    },
  },
  {
    method: 'DELETE',
    path: '/contact-groups/:groupId/members/:contactId',
    doc: { summary: 'Remove a contact from a group', errors: ['ContactGroup.MemberNotFound'] },
    async handler({ params, context }) {
      await removeContactGroupMember(context, { groupId: params.groupId, contactId: params.contactId });
      return { deleted: true };
    },
  },

  {
    method: 'POST',
    path: '/users',
    doc: {
      summary: 'Add a team user',
      isIdempotent: true,
      body: { schema: createUserInput, example: { name: 'Grace Hopper', email: 'grace@example.com' } },
      errors: ['User.DuplicateEmail'],
    },
    async handler({ request, context }) {
      return { user: await createUser(context, { input: await readJsonObject(request), idempotencyKey: context.idempotencyKey }) };
    },
  },
  {
    method: 'GET',
    path: '/users',
    doc: { summary: 'List team users', query: SEARCHABLE_PAGE_QUERY },
    async handler({ url, context }) {
      return readUserPage(context, pageQuery(url));
    },
  },
  {
    method: 'GET',
    path: '/users/:userId',
    doc: { summary: 'Read a team user' },
    async handler({ params, context }) {
      return { user: await readUser(context, params.userId) };
    },
  },
  {
    method: 'PATCH',
    path: '/users/:userId',
    doc: { summary: 'Change a team user', body: { schema: updateUserInput, example: { name: 'Grace B. Hopper' } }, errors: ['User.DuplicateEmail'] },
    async handler({ request, params, context }) {
      return { user: await updateUser(context, { userId: params.userId, input: await readJsonObject(request) }) };
    },
  },
  {
    method: 'DELETE',
    path: '/users/:userId',
    doc: { summary: 'Delete a team user', errors: ['User.InUse'] },
    async handler({ params, context }) {
      await deleteUser(context, { userId: params.userId });
      return { deleted: true };
    },
  },
];
