import { DomainError } from '../../shared/errors.ts';
import type { ReferenceUsage } from '../person/references.ts';

// Where a contact, group or user is still named: person/references.ts (team-user.errors.ts uses it too).
export type { ReferenceUsage };

/**
 * `Contact.NotFound` (404): no contact with this id exists for your team. Unknown, malformed and
 * other teams' ids all give this same answer. `context.path` names the request field when the id
 * came from a body (an agent's `contactId`).
 */
export class ContactNotFoundError extends DomainError {
  constructor(contactId: string, path?: string) {
    super('Contact.NotFound', 'No contact with this id exists for your team.', path === undefined ? { contactId } : { contactId, path });
  }
}

/**
 * `ContactGroup.NotFound` (404): no contact group with this id exists for your team (unknown,
 * malformed and other teams' ids alike). `context.path` as for `Contact.NotFound`.
 */
export class ContactGroupNotFoundError extends DomainError {
  constructor(groupId: string, path?: string) {
    super('ContactGroup.NotFound', 'No contact group with this id exists for your team.', path === undefined ? { groupId } : { groupId, path });
  }
}

/** `ContactGroup.MemberNotFound` (404): removing a contact of your team from a group it is not a member of. */
export class ContactGroupMemberNotFoundError extends DomainError {
  constructor(groupId: string, contactId: string) {
    super('ContactGroup.MemberNotFound', 'This contact is not a member of this contact group.', { groupId, contactId });
  }
}

/**
 * `Contact.InUse` (409): deleting a contact that an agent of a draft envelope or a template
 * recipient still names; `context.envelopeIds` / `context.templateIds` list where. Sent envelopes
 * do not count: their agents carry their own copy of the person.
 */
export class ContactInUseError extends DomainError {
  constructor(contactId: string, usage: ReferenceUsage) {
    super('Contact.InUse', 'Draft envelopes or templates still name this contact; change those agents first.', { contactId, ...usage });
  }
}

/** `ContactGroup.InUse` (409): as `Contact.InUse`, for deleting a contact group. */
export class ContactGroupInUseError extends DomainError {
  constructor(groupId: string, usage: ReferenceUsage) {
    super('ContactGroup.InUse', 'Draft envelopes or templates still name this contact group; change those agents first.', { groupId, ...usage });
  }
}
