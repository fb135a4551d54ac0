import { readContact, readContactGroup, readContactGroupMembers, readContactGroupPage, readContactPage } from '../../domain/contact/contact.read.ts';
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
import { readUser, readUserPage } from '../../domain/team/team-user.read.ts';
import { createUser, deleteUser, updateUser } from '../../domain/team/team-user.service.ts';
import { readJsonObject } from '../body.ts';
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
 * Contract §3: contacts, contact groups with members, and team users. Bodies are the object
 * itself, as the read model answers it (a group always with its `memberCount`, never its members).
 */
export const contactRoutes: RestRoute[] = [
  {
    method: 'POST',
    path: '/contacts',
    async handler({ request, context }) {
      return { contact: await createContact(context, { input: await readJsonObject(request), idempotencyKey: context.idempotencyKey }) };
    },
  },
  {
    method: 'GET',
    path: '/contacts',
    async handler({ url, context }) {
      return readContactPage(context, pageQuery(url));
    },
  },
  {
    method: 'GET',
    path: '/contacts/:contactId',
    async handler({ params, context }) {
      return { contact: await readContact(context, params.contactId) };
    },
  },
  {
    method: 'PATCH',
    path: '/contacts/:contactId',
    async handler({ request, params, context }) {
      return { contact: await updateContact(context, { contactId: params.contactId, input: await readJsonObject(request) }) };
    },
  },
  {
    method: 'DELETE',
    path: '/contacts/:contactId',
    async handler({ params, context }) {
      await deleteContact(context, { contactId: params.contactId });
      return { deleted: true };
    },
  },

  {
    method: 'POST',
    path: '/contact-groups',
    async handler({ request, context }) {
      return { contactGroup: await createContactGroup(context, { input: await readJsonObject(request), idempotencyKey: context.idempotencyKey }) };
    },
  },
  {
    method: 'GET',
    path: '/contact-groups',
    async handler({ url, context }) {
      return readContactGroupPage(context, pageQuery(url));
    },
  },
  {
    method: 'GET',
    path: '/contact-groups/:groupId',
    async handler({ params, context }) {
      return { contactGroup: await readContactGroup(context, params.groupId) };
    },
  },
  {
    method: 'PATCH',
    path: '/contact-groups/:groupId',
    async handler({ request, params, context }) {
      return { contactGroup: await updateContactGroup(context, { groupId: params.groupId, input: await readJsonObject(request) }) };
    },
  },
  {
    method: 'DELETE',
    path: '/contact-groups/:groupId',
    async handler({ params, context }) {
      await deleteContactGroup(context, { groupId: params.groupId });
      return { deleted: true };
    },
  },
  {
    method: 'GET',
    path: '/contact-groups/:groupId/members',
    async handler({ params, context }) {
      return { members: await readContactGroupMembers(context, { groupId: params.groupId }) };
    },
  },
  {
    method: 'POST',
    path: '/contact-groups/:groupId/members/:contactId',
    async handler({ params, context }) {
      return { contactGroup: await addContactGroupMember(context, { groupId: params.groupId, contactId: params.contactId }) };
    },
  },
  {
    method: 'DELETE',
    path: '/contact-groups/:groupId/members/:contactId',
    async handler({ params, context }) {
      await removeContactGroupMember(context, { groupId: params.groupId, contactId: params.contactId });
      return { deleted: true };
    },
  },

  {
    method: 'POST',
    path: '/users',
    async handler({ request, context }) {
      return { user: await createUser(context, { input: await readJsonObject(request), idempotencyKey: context.idempotencyKey }) };
    },
  },
  {
    method: 'GET',
    path: '/users',
    async handler({ url, context }) {
      return readUserPage(context, pageQuery(url));
    },
  },
  {
    method: 'GET',
    path: '/users/:userId',
    async handler({ params, context }) {
      return { user: await readUser(context, params.userId) };
    },
  },
  {
    method: 'PATCH',
    path: '/users/:userId',
    async handler({ request, params, context }) {
      return { user: await updateUser(context, { userId: params.userId, input: await readJsonObject(request) }) };
    },
  },
  {
    method: 'DELETE',
    path: '/users/:userId',
    async handler({ params, context }) {
      await deleteUser(context, { userId: params.userId });
      return { deleted: true };
    },
  },
];
