import { type ExpressionBuilder, sql } from 'kysely';
import { decodeCursorPosition, keysetPageInput, takePage } from '../pagination.ts';
import { isoTimestamp } from '../read-model.ts';
import type { ServiceContext } from '../service-context.ts';
import { parseInput } from '../validation.ts';
import { PublicLinkNotFoundError } from './public-link.errors.ts';
import { teamPublicLinks, wellFormedPublicLinkId } from './team-public-link.ts';

/*
 * The public links' read model: each read ONE statement that starts from the caller's team's
 * links. `status` is worked out in the statement on the service clock, so it is never stale:
 * disabled first, then expired, then exhausted, else active.
 */

export const publicLinkStatuses = ['active', 'disabled', 'exhausted', 'expired'] as const;
export type PublicLinkStatus = (typeof publicLinkStatuses)[number];

export type PublicLinkData = {
  id: string;
  url: string;
  templateId: string;
  role: string;
  name: string | null;
  uses: number;
  maxUses: number | null;
  expiresAt: string | null;
  verifyEmail: boolean;
  redirectUrl: string | null;
  prefill: Record<string, unknown>;
  /** Values for the template's data tags; null: none given. */
  data: Record<string, unknown> | null;
  missingData: 'refuse' | 'blank';
  status: PublicLinkStatus;
  createdAt: string;
  updatedAt: string;
};

export type PublicLinkPageData = { publicLinks: PublicLinkData[]; nextCursor: string | null };

type AnyEb = ExpressionBuilder<any, any>;

/** The visitors' address of a link. */
export function publicLinkUrl(publicUrl: string, slug: string): string {
  return `${publicUrl}/f/${slug}`;
}

function linkColumns(eb: AnyEb, publicUrl: string, now: Date) {
  return [
    eb.ref('l.id').as('id'),
    sql<string>`${publicUrl + '/f/'} || l.slug`.as('url'),
    eb.ref('l.template_id').as('templateId'),
    eb.ref('l.role').as('role'),
    eb.ref('l.name').as('name'),
    eb.ref('l.uses').as('uses'),
    eb.ref('l.max_uses').as('maxUses'),
    isoTimestamp(eb.ref('l.expires_at')).as('expiresAt'),
    eb.ref('l.verify_email').as('verifyEmail'),
    eb.ref('l.redirect_url').as('redirectUrl'),
    eb.ref('l.prefill').as('prefill'),
    eb.ref('l.data').as('data'),
    sql<'refuse' | 'blank'>`l.missing_data`.as('missingData'),
    sql<PublicLinkStatus>`case when l.disabled_at is not null then 'disabled'
      when l.expires_at is not null and l.expires_at <= ${now}::timestamptz then 'expired'
      when l.max_uses is not null and l.uses >= l.max_uses then 'exhausted'
      else 'active' end`.as('status'),
    isoTimestamp(eb.ref('l.created_at')).as('createdAt'),
    isoTimestamp(eb.ref('l.updated_at')).as('updatedAt'),
  ];
}

/** One link of the caller's team; `PublicLink.NotFound` otherwise. */
export async function readPublicLink(context: ServiceContext, publicLinkId: string): Promise<PublicLinkData> {
  const query = teamPublicLinks(context.reader, (await context.caller()).teamId);
  wellFormedPublicLinkId(publicLinkId);
  const row = await query
    .select((eb) => linkColumns(eb as AnyEb, context.publicUrl, context.clock.now()))
    .where('l.id', '=', publicLinkId)
    .executeTakeFirst();
  if (!row) throw new PublicLinkNotFoundError(publicLinkId);
  return row as unknown as PublicLinkData;
}

/** The caller's links, newest first, keyset-paginated on (createdAt, id). */
export async function readPublicLinkPage(context: ServiceContext, options: { limit?: number; cursor?: string }): Promise<PublicLinkPageData> {
  const input = parseInput(keysetPageInput, options);
  const after = input.cursor === undefined ? undefined : decodeCursorPosition(input.cursor);
  let query = teamPublicLinks(context.reader, (await context.caller()).teamId).select((eb) => linkColumns(eb as AnyEb, context.publicUrl, context.clock.now()));
  if (after) query = query.where((eb) => eb(eb.refTuple('l.created_at', 'l.id'), '<', eb.tuple(after.createdAt, after.id)));
  const rows = (await query
    .orderBy('l.created_at', 'desc')
    .orderBy('l.id', 'desc')
    .limit(input.limit + 1)
    .execute()) as unknown as PublicLinkData[];
  const page = takePage(rows, input.limit);
  return { publicLinks: page.rows, nextCursor: page.nextCursor };
}
