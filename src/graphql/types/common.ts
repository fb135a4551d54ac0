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
