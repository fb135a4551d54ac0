/*
 * The tenant gate of public links, in one place: visible only to their own team. Unknown,
 * malformed and foreign ids all give the same `PublicLink.NotFound`. Reads start from
 * `teamPublicLinks`; writes (one guarded statement each, public-link.service.ts) filter on the
 * team in the same statement through `teamPublicLinkRow`.
 */
import type { ReadDb } from '../read-model.ts';
import { wellFormedId } from '../tenant.ts';
import { PublicLinkNotFoundError } from './public-link.errors.ts';

/** The id, or `PublicLink.NotFound` when it cannot name a link. */
export function wellFormedPublicLinkId(publicLinkId: string): string {
  return wellFormedId(publicLinkId, (id) => new PublicLinkNotFoundError(id));
}

/** The team's links, as `l`: every read starts here. */
export function teamPublicLinks(reader: ReadDb, teamId: string) {
  return reader.selectFrom('public_link as l').where('l.team_id', '=', teamId);
}

/** The team's link `publicLinkId` as the row `alias` of a guarded write: another team's link is never touched. */
export function teamPublicLinkRow(alias: string, teamId: string, publicLinkId: string): { sql: string; parameters: unknown[] } {
  return { sql: `${alias}.id = ? and ${alias}.team_id = ?`, parameters: [publicLinkId, teamId] };
}
