import type { ContactGroup } from '../domain/contact/contact-group.entity.ts';
import type { Contact } from '../domain/contact/contact.entity.ts';
import type { TeamUser } from '../domain/team/team-user.entity.ts';

/** The REST shapes of the spec's resources. Timestamps are ISO 8601 strings, absent ones null. */

export function contactJson(contact: Contact) {
  return {
    id: contact.id,
    name: contact.name,
    email: contact.email ?? null,
    phone: contact.phone ?? null,
    locale: contact.locale ?? null,
    phoneContactMethod: contact.phoneContactMethod ?? null,
    createdAt: contact.createdAt.toISOString(),
    updatedAt: contact.updatedAt.toISOString(),
  };
}

export function contactGroupJson(group: ContactGroup, memberCount: number) {
  return {
    id: group.id,
    name: group.name,
    memberCount,
    createdAt: group.createdAt.toISOString(),
    updatedAt: group.updatedAt.toISOString(),
  };
}

export function userJson(user: TeamUser) {
  return {
    id: user.id,
    name: user.name,
    email: user.email,
    phone: user.phone ?? null,
    locale: user.locale,
    createdAt: user.createdAt.toISOString(),
    updatedAt: user.updatedAt.toISOString(),
  };
}
