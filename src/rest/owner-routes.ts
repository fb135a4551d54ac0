import { type OwnerKind, type OwnerRef, ownerKinds } from '../domain/owner/owner-ref.ts';
import type { RestHandler, RestRoute, RouteDoc } from './router.ts';

/*
 * The routes of what an envelope or a template holds (documents, recipients, fields): one handler
 * each, mounted under `/envelopes/:envelopeId` and `/templates/:templateId`. The handler takes the
 * owner from the path (`ownerInPath`) and the domain applies that owner's rules (domain/owner/);
 * what differs between the owners' routes is only their documentation, given per owner.
 */

const OWNER_PATHS: Record<OwnerKind, string> = { envelope: '/envelopes/:envelopeId', template: '/templates/:templateId' };

/** What a change to an owner's content may answer besides the NotFounds of its path. */
export const OWNER_CHANGE_ERRORS: Record<OwnerKind, string[]> = {
  envelope: ['Envelope.NotDraft', 'Envelope.Busy'],
  template: ['Template.NotOwner'],
};

/**
 * What an envelope's content route says of a sent envelope: the change is a correction (README,
 * "Correcting a sent envelope"), with its own refusals (docs/errors.md).
 */
export const CORRECTION_NOTE = {
  recipients:
    'On a `sent` envelope this is a correction: allowed for a recipient that has not acted (completed, or approved for an approver role), and a new or moved recipient may not come before one that has (`Recipient.AlreadyCompleted`, 409). It moves the envelope’s `revision` and records `envelope.corrected`; replaced agents’ links die and the new people are invited on their turn.',
  fields:
    'On a `sent` envelope this is a correction: allowed for fields of recipients that have not acted (completed, or approved for an approver role); otherwise `Recipient.AlreadyCompleted` (409). It moves the envelope’s `revision` and records `envelope.corrected`.',
  documents:
    'On a `sent` envelope this is a correction, allowed only while nobody has acted on it (no recipient completed, no approval given); otherwise `Envelope.AlreadySigned` (409). It moves the envelope’s `revision` and records `envelope.corrected`.',
};

/** The owner a content route's path names. */
export function ownerInPath(params: Record<string, string>): OwnerRef {
  return params.templateId !== undefined ? { kind: 'template', id: params.templateId } : { kind: 'envelope', id: params.envelopeId };
}

/**
 * A content route: its method, its path below the owner, its documentation for each owner that
 * has it (a route documented for one owner only is mounted for that owner only), and its handler.
 */
export type OwnerContentRoute = { method: string; path: string; docs: Partial<Record<OwnerKind, RouteDoc>>; handler: RestHandler };

/** The routes of each owner, in the order given. */
export function ownerContentRoutes(routes: OwnerContentRoute[]): Record<OwnerKind, RestRoute[]> {
  const mounted = (kind: OwnerKind) =>
    routes.flatMap(({ method, path, docs, handler }) => {
      const doc = docs[kind];
      return doc ? [{ method, path: `${OWNER_PATHS[kind]}${path}`, doc, handler }] : [];
    });
  return Object.fromEntries(ownerKinds.map((kind) => [kind, mounted(kind)])) as Record<OwnerKind, RestRoute[]>;
}
