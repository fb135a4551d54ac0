import { z } from 'zod';
import { InvalidRequestError } from '../../shared/errors.ts';
import { decodeCursorPosition, keysetPageInput, takePage } from '../pagination.ts';
import { isoTimestamp, type ReadDb } from '../read-model.ts';
import type { ServiceContext } from '../service-context.ts';
import { parseInput } from '../validation.ts';
import type { BulkSendStatus } from './bulk-send.entity.ts';
import { BulkSendNotFoundError } from './bulk-send.errors.ts';
import { teamBulkSends, wellFormedBulkSendId } from './team-bulk-send.ts';

/** A bulk send as both faces show it: counters of rows made into envelopes, sent, and failed. */
export type BulkSendData = {
  id: string;
  templateId: string;
  name: string | null;
  status: BulkSendStatus;
  total: number;
  created: number;
  sent: number;
  failed: number;
  createdAt: string;
  completedAt: string | null;
};

export type BulkSendRowData = {
  index: number;
  status: 'pending' | 'created' | 'sent' | 'failed' | 'cancelled';
  envelopeId: string | null;
  error: { name: string; description: string; context: Record<string, unknown> } | null;
  processedAt: string | null;
};

function bulkSendColumns(query: ReturnType<typeof teamBulkSends>) {
  return query.select((eb) => [
    'b.id as id',
    'b.template_id as templateId',
    'b.name as name',
    'b.status as status',
    'b.total as total',
    'b.created_count as created',
    'b.sent_count as sent',
    'b.failed_count as failed',
    isoTimestamp(eb.ref('b.created_at')).as('createdAt'),
    isoTimestamp(eb.ref('b.completed_at')).as('completedAt'),
  ]);
}

/** One of the caller's team's bulk sends; `BulkSend.NotFound` otherwise. */
export async function readBulkSend(context: Pick<ServiceContext, 'reader' | 'caller'>, bulkSendId: string): Promise<BulkSendData> {
  const caller = await context.caller();
  wellFormedBulkSendId(bulkSendId);
  const row = await bulkSendColumns(teamBulkSends(context.reader, caller.teamId)).where('b.id', '=', bulkSendId).executeTakeFirst();
  if (!row) throw new BulkSendNotFoundError(bulkSendId);
  return row as unknown as BulkSendData;
}

/** The team's bulk sends, newest first, keyset-paginated on (createdAt, id) like every listing. */
export async function readBulkSendPage(context: ServiceContext, options: { limit?: number; cursor?: string }): Promise<{ bulkSends: BulkSendData[]; nextCursor: string | null }> {
  const input = parseInput(keysetPageInput.omit({ search: true }), options);
  const after = input.cursor === undefined ? undefined : decodeCursorPosition(input.cursor);
  let query = bulkSendColumns(teamBulkSends(context.reader, (await context.caller()).teamId));
  if (after) query = query.where((eb) => eb(eb.refTuple('b.created_at', 'b.id'), '<', eb.tuple(after.createdAt, after.id)));
  const rows = (await query
    .orderBy('b.created_at', 'desc')
    .orderBy('b.id', 'desc')
    .limit(input.limit + 1)
    .execute()) as unknown as BulkSendData[];
  const page = takePage(rows, input.limit);
  return { bulkSends: page.rows, nextCursor: page.nextCursor };
}

const rowPageInput = keysetPageInput.omit({ search: true }).extend({
  status: z.enum(['pending', 'created', 'sent', 'failed', 'cancelled'], { error: 'must be one of pending, created, sent, failed, cancelled' }).optional(),
});

/** A row's place, as the opaque cursor of the row listing (rows are listed in request order). */
function rowCursor(index: number): string {
  return Buffer.from(JSON.stringify(['row', index])).toString('base64url');
}

function decodeRowCursor(cursor: string): number {
  try {
    const [kind, index] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as [string, number];
    if (kind !== 'row' || !Number.isInteger(index) || index < 0 || index > 1_000_000) throw new Error('bad cursor');
    return index;
  } catch {
    throw new InvalidRequestError([{ path: 'cursor', message: 'is not a cursor this service returned' }]);
  }
}

/**
 * The rows of one of the team's bulk sends in request order, optionally of one status, each with
 * its envelope or its error; paginated like every listing (`limit` 1–100, an opaque `cursor`,
 * `nextCursor` while more follow). Two statements: the bulk send (the tenant check), then its page.
 */
export async function readBulkSendRows(
  context: Pick<ServiceContext, 'reader' | 'caller'>,
  options: { bulkSendId: string; status?: string; limit?: number; cursor?: string },
): Promise<{ rows: BulkSendRowData[]; nextCursor: string | null }> {
  const input = parseInput(rowPageInput, { limit: options.limit, cursor: options.cursor, status: options.status });
  const after = input.cursor === undefined ? undefined : decodeRowCursor(input.cursor);
  const caller = await context.caller();
  wellFormedBulkSendId(options.bulkSendId);
  const reader: ReadDb = context.reader;
  const found = await teamBulkSends(reader, caller.teamId).select('b.id').where('b.id', '=', options.bulkSendId).executeTakeFirst();
  if (!found) throw new BulkSendNotFoundError(options.bulkSendId);
  let query = reader
    .selectFrom('bulk_send_row as r')
    .select((eb) => ['r.position as index', 'r.status as status', 'r.envelope_id as envelopeId', 'r.error as error', isoTimestamp(eb.ref('r.processed_at')).as('processedAt')])
    .where('r.bulk_send_id', '=', options.bulkSendId);
  if (input.status !== undefined) query = query.where('r.status', '=', input.status);
  if (after !== undefined) query = query.where('r.position', '>', after);
  const rows = (await query
    .orderBy('r.position', 'asc')
    .limit(input.limit + 1)
    .execute()) as unknown as BulkSendRowData[];
  const hasMore = rows.length > input.limit;
  const page = hasMore ? rows.slice(0, input.limit) : rows;
  return { rows: page, nextCursor: hasMore ? rowCursor(page[page.length - 1].index) : null };
}
