import type { EntityManager } from '@mikro-orm/postgresql';

/**
 * Request-scoped batch loaders for nested GraphQL fields, so that a page of 50 envelopes with
 * their documents, recipients, agents and fields costs the same handful of statements as one.
 * Filled in by the features that need them.
 */
export type Loaders = Record<string, never>;

export function createLoaders(_em: EntityManager): Loaders {
  return {};
}
