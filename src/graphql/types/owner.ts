import type { OwnerKind, OwnerRef } from '../../domain/owner/owner-ref.ts';

/*
 * How the GraphQL face names the owner of documents, recipients and fields (domain/owner/):
 * the id argument of its mutations and their names. The mutations themselves are built once per
 * content kind (types/document.ts, recipient.ts, field.ts) and registered for each owner.
 */

export type GraphqlOwner<K extends OwnerKind = OwnerKind> = {
  kind: K;
  /** The argument naming the owner: `envelopeId` or `templateId`. */
  idArg: 'envelopeId' | 'templateId';
};

export const GRAPHQL_OWNERS = {
  envelope: { kind: 'envelope', idArg: 'envelopeId' },
  template: { kind: 'template', idArg: 'templateId' },
} as const satisfies Record<OwnerKind, GraphqlOwner>;

/** A content mutation's name: an envelope's `addDocument` is a template's `addTemplateDocument`. */
export function ownerMutationName(owner: GraphqlOwner, verb: 'add' | 'create' | 'update' | 'delete' | 'place', noun: string): string {
  return `${verb}${owner.kind === 'template' ? 'Template' : ''}${noun}`;
}

/**
 * The owner's id argument (`envelopeId: ID!` or `templateId: ID!`), to spread first into a
 * mutation's arguments. Its name depends on the owner, so it is left out of the arguments' static
 * type: resolvers read it only through `ownerOfArgs`.
 */
export function ownerIdArg(owner: GraphqlOwner, arg: unknown): {} {
  return { [owner.idArg]: arg };
}

/** The owner a mutation's arguments name. */
export function ownerOfArgs<K extends OwnerKind>(owner: GraphqlOwner<K>, args: object): OwnerRef<K> {
  return { kind: owner.kind, id: String((args as Record<string, unknown>)[owner.idArg]) };
}
