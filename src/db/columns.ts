import { p } from '@mikro-orm/core';
import { newId } from '../shared/ids.ts';

/** The columns every table starts with: a UUID primary key and a creation time (UTC). */
export function baseColumns() {
  return {
    id: p
      .uuid()
      .primary()
      .onCreate(() => newId()),
    createdAt: p.datetime().onCreate(() => new Date()),
  };
}

/** An updated-at column maintained by the ORM on every flush that changes the row. */
export function updatedAtColumn() {
  return p
    .datetime()
    .onCreate(() => new Date())
    .onUpdate(() => new Date());
}

export type JsonObject = Record<string, unknown>;
