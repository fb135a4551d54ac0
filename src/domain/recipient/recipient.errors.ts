import { DomainError } from '../../shared/errors.ts';

/** `Recipient.NotFound`: no recipient with this id in this envelope (or template). */
export class RecipientNotFoundError extends DomainError {
  constructor(recipientId: string, owner: 'envelope' | 'template' = 'envelope') {
    super('Recipient.NotFound', `No recipient with this id exists in this ${owner}.`, { recipientId });
  }
}

/** `Recipient.DuplicateIdentifier` (409): identifiers are unique within an envelope. */
export class RecipientDuplicateIdentifierError extends DomainError {
  constructor(identifier: string, owner: 'envelope' | 'template' = 'envelope') {
    super('Recipient.DuplicateIdentifier', `Another recipient of this ${owner} already has the identifier "${identifier}".`, { identifier });
  }
}

/** `Recipient.HostRecipientBound` (409): removal (or a type change) refused, another recipient is hosted by this one. */
export class RecipientHostBoundError extends DomainError {
  constructor(recipientId: string, boundRecipientIds: string[]) {
    super('Recipient.HostRecipientBound', 'This recipient hosts in-person signers; remove or re-host them first.', {
      recipientId,
      boundRecipientIds,
    });
  }
}

/** `Recipient.DelegatorRecipientBound` (409): removal refused, another recipient delegates through this one. */
export class RecipientDelegatorBoundError extends DomainError {
  constructor(recipientId: string, boundRecipientIds: string[]) {
    super('Recipient.DelegatorRecipientBound', 'Another recipient is delegated through this one; change or remove it first.', {
      recipientId,
      boundRecipientIds,
    });
  }
}

/**
 * `Recipient.QuorumExceedsAgents` (422): an approver role's quorum asks for more distinct agents
 * than the role has (on write, and again at send: agents may have changed since).
 */
export class RecipientQuorumExceedsAgentsError extends DomainError {
  constructor(options: { recipientId?: string; quorum: number; agentCount: number }) {
    super('Recipient.QuorumExceedsAgents', `The quorum (${options.quorum}) is larger than the number of agents of the role (${options.agentCount}); add agents or lower the quorum.`, {
      ...(options.recipientId ? { recipientId: options.recipientId } : {}),
      quorum: options.quorum,
      agentCount: options.agentCount,
    });
  }
}

/** `Recipient.QuorumNotApprover` (422): only an approver role has a quorum other than 1. */
export class RecipientQuorumNotApproverError extends DomainError {
  constructor(type: string, quorum: number) {
    super('Recipient.QuorumNotApprover', `Only an approver role may have a quorum other than 1; this role is a ${type}.`, { type, quorum });
  }
}

/** `Recipient.HasFields` (409): a recipient holding fields cannot become a viewer (viewers hold none). */
export class RecipientHasFieldsError extends DomainError {
  constructor(recipientId: string, fieldIds: string[]) {
    super('Recipient.HasFields', 'This recipient holds fields; move or delete them before making it a viewer.', { recipientId, fieldIds });
  }
}

/**
 * `Recipient.AlreadyCompleted` (409): a correction of a sent envelope may not touch a recipient
 * that has completed (or an approver role that any of its agents approved): not its keys, agents
 * or fields, not its removal, and no new recipient may take a turn before it. Nothing changed.
 */
export class RecipientAlreadyCompletedError extends DomainError {
  constructor(options: { recipientIds: string[]; order?: number }) {
    super(
      'Recipient.AlreadyCompleted',
      options.order === undefined
        ? 'This recipient has already acted on the envelope; what it completed cannot be corrected.'
        : `A recipient that has already completed comes after order ${options.order}; a correction cannot place a turn before it.`,
      { recipientIds: options.recipientIds, ...(options.order === undefined ? {} : { order: options.order }) },
    );
  }
}
