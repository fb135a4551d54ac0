/** The keyset paging parameters every listing takes (documented once for the OpenAPI document). */
export const PAGE_QUERY: { name: string; description: string; schema: Record<string, unknown> }[] = [
  { name: 'limit', description: 'Page size, 1–100 (default 20).', schema: { type: 'integer', minimum: 1, maximum: 100 } },
  { name: 'cursor', description: 'The `nextCursor` of the previous page.', schema: { type: 'string' } },
];

/** Listings of the address book also take a `search`. */
export const SEARCHABLE_PAGE_QUERY = [...PAGE_QUERY, { name: 'search', description: 'Only entries whose name (or e-mail) contains this text.', schema: { type: 'string', maxLength: 200 } }];
