import { DomainError } from '../../shared/errors.ts';

/** `PublicLink.NotFound` (404): no public link with this id exists for your team (unknown, malformed and other teams' ids alike). */
export class PublicLinkNotFoundError extends DomainError {
  constructor(publicLinkId: string) {
    super('PublicLink.NotFound', 'No public link with this id exists for your team.', { publicLinkId });
  }
}

/**
 * `PublicLink.RoleNotUsable` (400): the role named cannot be a public link's visitor: it is not a
 * role of the template, is fixed (jumpstart gives it the template's person), is not a signer or
 * delegator (who act by themselves), or does not act in the template's first turn (the visitor
 * signs at once). `context.reason` says which.
 */
export class PublicLinkRoleNotUsableError extends DomainError {
  constructor(role: string, reason: 'unknown' | 'fixed' | 'type' | 'not_first') {
    const why = {
      unknown: 'the template has no role with this identifier',
      fixed: 'the role is fixed: the template gives it its own person',
      type: 'only a signer or a delegator role can be filled by a visitor',
      not_first: 'the role does not act in the template’s first turn, so the visitor could not sign at once',
    }[reason];
    super('PublicLink.RoleNotUsable', `The role "${role}" cannot be a public link's visitor: ${why}.`, { path: 'role', role, reason });
  }
}

/**
 * `PublicLink.Unavailable` (404, the visitor's page): the link does not exist or is disabled. The
 * two are one answer on purpose: a guessed slug learns nothing from it.
 */
export class PublicLinkUnavailableError extends DomainError {
  constructor() {
    super('PublicLink.Unavailable', 'This form is not available.');
  }
}

/** `PublicLink.Expired` (410, the visitor's page): the link's `expiresAt` has passed. */
export class PublicLinkExpiredError extends DomainError {
  constructor() {
    super('PublicLink.Expired', 'This form has expired.');
  }
}

/** `PublicLink.Exhausted` (410, the visitor's page): the link was used `maxUses` times. */
export class PublicLinkExhaustedError extends DomainError {
  constructor() {
    super('PublicLink.Exhausted', 'This form has been used as often as it may be.');
  }
}

/** `PublicLink.VisitNotFound` (404, the visitor's page): the code form names no visit of this link (or one already used): start again. */
export class PublicLinkVisitNotFoundError extends DomainError {
  constructor() {
    super('PublicLink.VisitNotFound', 'This visit is unknown or already finished; start again from the form.');
  }
}
