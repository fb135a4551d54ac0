import { DomainError } from '../../shared/errors.ts';

/**
 * `Template.NotFound` (404): no template with this id is visible to your team. Unknown, malformed
 * and other teams' ids (teams the template is not shared with) all give this same answer.
 */
export class TemplateNotFoundError extends DomainError {
  constructor(templateId: string) {
    super('Template.NotFound', 'No template with this id exists for your team.', { templateId });
  }
}

/**
 * `Template.NotOwner` (403): the template is shared with your team through its `teamScope`, so you
 * may read it and jumpstart envelopes from it, but only its owning team may change or delete it.
 */
export class TemplateNotOwnerError extends DomainError {
  constructor(templateId: string) {
    super('Template.NotOwner', 'This template is shared with your team; only the team that owns it can change or delete it.', { templateId });
  }
}

export type TemplateReadinessIssue = { path: string; message: string };

/**
 * `Template.NotReady` (409): a jumpstart from a template that lacks a document, a role, or a field
 * placed on a document and assigned to a role (docs/reference/interface-spec.md §4.7 rule 3). `context.issues` lists every
 * missing thing; nothing was created.
 */
export class TemplateNotReadyError extends DomainError {
  constructor(templateId: string, issues: TemplateReadinessIssue[]) {
    super('Template.NotReady', 'The template is not ready for a jumpstart; see context.issues for everything missing.', { templateId, issues });
  }
}

/**
 * `Jumpstart.UnknownRecipient` (400): an entry of the jumpstart's `recipients` names, by
 * `identifier` or `id`, no role of the template. `context.entries` lists every such entry.
 */
export class JumpstartUnknownRecipientError extends DomainError {
  constructor(entries: { path: string; identifier?: string; id?: string }[]) {
    super('Jumpstart.UnknownRecipient', 'A recipients entry names no role of this template; see context.entries.', { entries });
  }
}

/**
 * `Jumpstart.DuplicateRecipient` (409): two entries of the jumpstart's `recipients` name the same
 * role of the template (by identifier, by id, or one of each). `context.entries` lists them.
 */
export class JumpstartDuplicateRecipientError extends DomainError {
  constructor(entries: { path: string; recipientId: string; identifier: string }[]) {
    super('Jumpstart.DuplicateRecipient', 'Two recipients entries name the same role of this template; give each role at most one entry.', { entries });
  }
}

export type DataTagProblem = { documentId: string; tag: string; page: number; reason: string };

/**
 * `Template.DataTagsInvalid` (422): a data tag of the template's documents (`{{data:…}}`, README
 * "Data merge") cannot be merged: its syntax is wrong, it does not read left to right, or its text
 * cannot be removed from the page. `context.tags` lists every such tag; nothing was made. Fix
 * the template's document (upload a corrected one).
 */
export class TemplateDataTagsInvalidError extends DomainError {
  constructor(templateId: string, tags: DataTagProblem[]) {
    super('Template.DataTagsInvalid', 'A data tag of the template cannot be merged; see context.tags for every such tag. Nothing was made.', { templateId, tags });
  }
}
