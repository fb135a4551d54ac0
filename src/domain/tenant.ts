import { isUuid } from '../shared/ids.ts';

/*
 * What every tenant gate shares (envelope/team-envelope.ts, template/team-template.ts,
 * contact/team-contact.ts, webhook/team-webhook.ts, team/team-users.ts): the malformed-id rule.
 */

/**
 * An id that cannot name a row (not a UUID) is refused with the aggregate's own `*.NotFound`,
 * the answer an unknown or another team's id gets, before any SQL runs: a caller learns nothing
 * from the shape of the answer, and PostgreSQL is never asked to cast text that is not a UUID.
 */
export function wellFormedId<NotFound extends Error>(id: string, notFound: (id: string) => NotFound): string {
  if (!isUuid(id)) throw notFound(id);
  return id;
}
