import { DomainError } from '../../shared/errors.ts';
import type { ReferenceUsage } from '../person/references.ts';

/**
 * `User.NotFound` (404): no user with this id exists in your team (unknown, malformed and other
 * teams' ids alike). `context.path` names the request field when the id came from a body (an
 * agent's `userId`).
 */
export class UserNotFoundError extends DomainError {
  constructor(userId: string, path?: string) {
    super('User.NotFound', 'No user with this id exists in your team.', path === undefined ? { userId } : { userId, path });
  }
}

/**
 * `User.DuplicateEmail` (409): another user of your team already has this email address
 * (compared without regard to letter case). Users of other teams do not count.
 */
export class UserDuplicateEmailError extends DomainError {
  constructor(email: string) {
    super('User.DuplicateEmail', 'Another user of your team already has this email address.', { email });
  }
}

/** `User.InUse` (409): deleting a user that an agent of a draft envelope or a template recipient still names; lists where. */
export class UserInUseError extends DomainError {
  constructor(userId: string, usage: ReferenceUsage) {
    super('User.InUse', 'Draft envelopes or templates still name this user; change those agents first.', { userId, ...usage });
  }
}
