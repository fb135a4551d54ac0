/*
 * Who holds documents, recipients and fields: an envelope or a template. Both faces name the
 * owner with one of these (`{ kind: 'envelope', id: envelopeId }`), and the rules for the three
 * kinds of content, their reads and their handlers are written once for both (owner/owner.ts).
 */

export const ownerKinds = ['envelope', 'template'] as const;
export type OwnerKind = (typeof ownerKinds)[number];

/** An envelope or a template, by id, as a request names it (not yet checked). */
export type OwnerRef<K extends OwnerKind = OwnerKind> = { kind: K; id: string };
