/**
 * Request-scoped loaders of the address book's GraphQL face (see graphql/types/contact.ts). The
 * envelope aggregate needs none: its root fields read everything nested in one statement.
 * A fresh object per mutation marks a new generation, so loaders never serve data from before
 * a change made earlier in the same operation.
 */
export type Loaders = Record<string, never>;

export function createLoaders(): Loaders {
  return {};
}
