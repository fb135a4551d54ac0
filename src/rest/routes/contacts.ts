import type { RequestContext } from '../../context.ts';
import type { ContactGroup } from '../../domain/contact/contact-group.entity.ts';
import {
  addContactGroupMember,
  countMembersOfContactGroups,
  createContact,
  createContactGroup,
  deleteContact,
  deleteContactGroup,
  getContact,
  getContactGroup,
  listContactGroupMembers,
  listContactGroups,
  listContacts,
  removeContactGroupMember,
  updateContact,
  updateContactGroup,
} from '../../domain/contact/contact.service.ts';
import { createUser, deleteUser, getUser, listUsers, updateUser } from '../../domain/team/team-user.service.ts';
import { readJsonObject } from '../body.ts';
import { integerQuery } from '../query.ts';
import type { RestRoute } from '../router.ts';
import { contactGroupJson, contactJson, userJson } from '../serializers.ts';

/** Groups with their member counts, counted for the whole page in one statement. */
async function contactGroupsJson(context: RequestContext, groups: ContactGroup[]) {
  const counts = await countMembersOfContactGroups(context, groups.map((group) => group.id));
  return groups.map((group) => contactGroupJson(group, counts.get(group.id) ?? 0));
}

function pageQuery(url: URL) {
  return {
    limit: integerQuery(url, 'limit'),
    cursor: url.searchParams.get('cursor') ?? undefined,
    search: url.searchParams.get('search') ?? undefined,
  };
}

/** Contract §3: contacts, contact groups with members, and team users. Bodies are the object itself. */
export const contactRoutes: RestRoute[] = [
  {
    method: 'POST',
    path: '/contacts',
    async handler({ request, context }) {
      const contact = await createContact(context, { input: await readJsonObject(request), idempotencyKey: context.idempotencyKey });
      return { contact: contactJson(contact) };
    },
  },
  {
    method: 'GET',
    path: '/contacts',
    async handler({ url, context }) {
      const page = await listContacts(context, pageQuery(url));
      return { contacts: page.contacts.map(contactJson), nextCursor: page.nextCursor };
    },
  },
  {
    method: 'GET',
    path: '/contacts/:contactId',
    async handler({ params, context }) {
      return { contact: contactJson(await getContact(context, params.contactId)) };
    },
  },
  {
    method: 'PATCH',
    path: '/contacts/:contactId',
    async handler({ request, params, context }) {
      const contact = await updateContact(context, { contactId: params.contactId, input: await readJsonObject(request) });
      return { contact: contactJson(contact) };
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
      const group = await createContactGroup(context, { input: await readJsonObject(request), idempotencyKey: context.idempotencyKey });
      return { contactGroup: (await contactGroupsJson(context, [group]))[0] };
    },
  },
  {
    method: 'GET',
    path: '/contact-groups',
    async handler({ url, context }) {
      const page = await listContactGroups(context, pageQuery(url));
      return { contactGroups: await contactGroupsJson(context, page.contactGroups), nextCursor: page.nextCursor };
    },
  },
  {
    method: 'GET',
    path: '/contact-groups/:groupId',
    async handler({ params, context }) {
      const group = await getContactGroup(context, params.groupId);
      return { contactGroup: (await contactGroupsJson(context, [group]))[0] };
    },
  },
  {
    method: 'PATCH',
    path: '/contact-groups/:groupId',
    async handler({ request, params, context }) {
      const group = await updateContactGroup(context, { groupId: params.groupId, input: await readJsonObject(request) });
      return { contactGroup: (await contactGroupsJson(context, [group]))[0] };
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
      const members = await listContactGroupMembers(context, { groupId: params.groupId });
      return { members: members.map(contactJson) };
    },
  },
  {
    method: 'POST',
    path: '/contact-groups/:groupId/members/:contactId',
    async handler({ params, context }) {
      const group = await addContactGroupMember(context, { groupId: params.groupId, contactId: params.contactId });
      return { contactGroup: (await contactGroupsJson(context, [group]))[0] };
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
      const user = await createUser(context, { input: await readJsonObject(request), idempotencyKey: context.idempotencyKey });
      return { user: userJson(user) };
    },
  },
  {
    method: 'GET',
    path: '/users',
    async handler({ url, context }) {
      const page = await listUsers(context, pageQuery(url));
      return { users: page.users.map(userJson), nextCursor: page.nextCursor };
    },
  },
  {
    method: 'GET',
    path: '/users/:userId',
    async handler({ params, context }) {
      return { user: userJson(await getUser(context, params.userId)) };
    },
  },
  {
    method: 'PATCH',
    path: '/users/:userId',
    async handler({ request, params, context }) {
      const user = await updateUser(context, { userId: params.userId, input: await readJsonObject(request) });
      return { user: userJson(user) };
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
