import type { ArgBuilder, ObjectRef } from '@pothos/core';
import { createdAtCursor, PAGE_SIZE } from '../../domain/pagination.ts';
import { builder } from '../builder.ts';

export const DeletedPayload = builder.objectRef<{ id: string }>('Deleted').implement({
  description: 'The answer to a delete: what was deleted.',
  fields: (t) => ({
    id: t.exposeID('id', { description: 'The id of the deleted object.' }),
    deleted: t.boolean({ resolve: () => true }),
  }),
});

export const PageInfo = builder.objectRef<{ hasNextPage: boolean; endCursor: string | null }>('PageInfo').implement({
  description: 'Where a page of a connection ends and whether more follows.',
  fields: (t) => ({
    hasNextPage: t.exposeBoolean('hasNextPage'),
    endCursor: t.exposeString('endCursor', { nullable: true, description: 'Pass as `after` to get the next page.' }),
  }),
});

type Builder = typeof builder;
type Types = Builder extends PothosSchemaTypes.SchemaBuilder<infer T> ? T : never;

/**
 * A keyset-paged connection of `node`: `<name>Edge { cursor, node }` and `<name>Connection
 * { edges, nodes, pageInfo }`, the one shape every listing of both owners (envelopes, templates,
 * contacts, groups, users, webhooks, deliveries) answers with.
 */
export function keysetConnection<Node extends { id: string; createdAt: Date | string }, Page extends { nextCursor: string | null }>(
  name: string,
  options: { description: string; node: ObjectRef<Types, Node>; nodesOf: (page: Page) => Node[] },
): ObjectRef<Types, Page> {
  const edge = builder.objectRef<Node>(`${name}Edge`).implement({
    description: 'One node of a page, with its position.',
    fields: (t) => ({
      cursor: t.string({ description: 'Pass as `after` to continue after this node.', resolve: (node) => createdAtCursor(node) }),
      node: t.field({ type: options.node, resolve: (node) => node as never }),
    }),
  });
  return builder.objectRef<Page>(`${name}Connection`).implement({
    description: options.description,
    fields: (t) => ({
      edges: t.field({ type: [edge], resolve: (page) => options.nodesOf(page) as never }),
      nodes: t.field({ type: [options.node], resolve: (page) => options.nodesOf(page) as never }),
      pageInfo: t.field({ type: PageInfo, resolve: (page) => ({ hasNextPage: page.nextCursor !== null, endCursor: page.nextCursor }) }),
    }),
  });
}

/** The paging arguments of every listing: `first` (the domain's page sizes) and `after`. */
export function pageArgs(arg: ArgBuilder<Types>) {
  return {
    first: arg.int({ required: false, description: `1–${PAGE_SIZE.max}, default ${PAGE_SIZE.default}.` }),
    after: arg.string({ required: false, description: 'The endCursor of the previous page.' }),
  };
}

/** What a data tag whose path the data lacks does (README "Data merge"): jumpstarts, bulk sends and public links. */
export const MissingDataMode = builder.enumType('MissingDataMode', { values: ['refuse', 'blank'] as const, description: 'What a data tag whose path the data lacks does.' });
