import { createHash } from 'node:crypto';
import { sql, type AliasedExpression, type Expression, type ExpressionBuilder } from 'kysely';
import { jsonArrayFrom, jsonObjectFrom } from 'kysely/helpers/postgres';
import { z } from 'zod';
import { keysetPageInput } from '../pagination.ts';
import { documentsOf, fieldsOf, pick, readInOwner, recipientsOf, type Column, type ContentInclude, type DocumentData, type FieldData, type Keys, type RecipientData } from '../owner/owner.read.ts';
import { isoTimestamp, readKeysetPage, readRoot, runRead, type RootStatement, shapeOfKeys, type ReadDatabase } from '../read-model.ts';
import type { ServiceContext } from '../service-context.ts';
import { parseInput } from '../validation.ts';
import { envelopeStatuses, type EnvelopeStatus } from './envelope.entity.ts';
import { EnvelopeNotFoundError } from './envelope.errors.ts';
import { envelopeIdGate, teamEnvelopes, wellFormedEnvelopeId } from './team-envelope.ts';
import { withActorNames } from '../audit/actor-names.ts';

/*
 * The envelope aggregate's read model: an envelope with any of its documents, recipients (with
 * agents), fields (with views) and audit events, each read with ONE statement whatever is nested.
 * The answers are plain data in the faces' shape; REST serialises them as they are and GraphQL
 * resolves its fields from them.
 */

export type AuditEventData = {
  seq: number;
  type: string;
  at: string;
  /** `name` only where asked for (`withActorNames`, audit/actor-names.ts). */
  actor: { type: 'api_key' | 'agent' | 'system'; id: string | null; name?: string | null };
  ip: string | null;
  userAgent: string | null;
  details: Record<string, unknown>;
  prevHash: string;
  hash: string;
};

export type EnvelopeData = {
  id: string;
  name: string;
  status: EnvelopeStatus;
  expirationPeriodDays: number;
  reminderInitialDelayDays: number;
  reminderRepeatIntervalDays: number;
  reminderBeforeExpirationDays: number;
  context: Record<string, unknown>;
  createdAt: string;
  updatedAt: string;
  sentAt: string | null;
  expiresAt: string | null;
  completedAt: string | null;
  voidedAt: string | null;
  /** The template the envelope was jumpstarted from; null when made directly or once that template is deleted. */
  templateId: string | null;
  /** Each nested list is present exactly when the include asked for it. */
  documents?: DocumentData[];
  recipients?: RecipientData[];
  fields?: FieldData[];
  auditEvents?: AuditEventData[];
};

/**
 * What to nest in an envelope read. `agents` applies to recipients and `views` to fields, so a
 * caller that never shows placements does not pay for them.
 */
export type EnvelopeInclude = ContentInclude & {
  documents?: boolean;
  recipients?: boolean;
  fields?: boolean;
  auditEvents?: boolean;
  /** Which audit events to nest: those after `afterSeq` (default 0), at most `limit`. */
  auditEventPage?: AuditEventPage;
  /**
   * The keys to answer for each kind of object, when the caller shows only some (GraphQL's
   * selection): PostgreSQL then neither reads nor formats the others. Every key when absent.
   * Ids (and an envelope's `createdAt`, which its cursor needs) are always read.
   */
  keys?: Partial<Record<'envelope' | 'document' | 'recipient' | 'field' | 'auditEvent', ReadonlySet<string>>>;
};

/** A window of an envelope's audit trail, oldest first. */
export type AuditEventPage = { afterSeq: number; limit: number };

/** The most audit events one read answers (per envelope); the trail itself is unbounded. */
export const MAX_AUDIT_EVENTS_PER_PAGE = 1_000;

const auditEventPageInput = z.strictObject({
  afterSeq: z.number().int('must be an integer').min(0, 'must be 0 or more').max(2_147_483_647, 'is too large').default(0),
  limit: z.number().int('must be an integer').min(1, 'must be at least 1').max(MAX_AUDIT_EVENTS_PER_PAGE, `must be at most ${MAX_AUDIT_EVENTS_PER_PAGE}`).default(MAX_AUDIT_EVENTS_PER_PAGE),
});

/** Checks a caller's audit window (`Request.Invalid` when out of range). */
export function parseAuditEventPage(options: { afterSeq?: number; limit?: number }): AuditEventPage {
  return parseInput(auditEventPageInput, options);
}

/** The envelope keys of the REST `envelope` object: the envelope without nested lists. */
export function envelopeOnly(envelope: EnvelopeData) {
  const { documents: _documents, recipients: _recipients, fields: _fields, auditEvents: _auditEvents, ...rest } = envelope;
  return rest;
}

type Eb = ExpressionBuilder<ReadDatabase & { e: ReadDatabase['envelope'] }, 'e'>;
type AnyEb = ExpressionBuilder<any, any>;

// ---------------------------------------------------------------------------------------------
// Selections: the envelope's own columns and its audit events; documents, recipients and fields
// are the owner selections (owner/owner.read.ts).

function auditEventsOf(eb: AnyEb, envelopeId: string, keys: Keys, window: { afterSeq: unknown; limit: unknown }) {
  return jsonArrayFrom(
    eb
      .selectFrom('audit_event as ae')
      .select((inner: AnyEb) =>
        pick(
          [
            ['seq', () => inner.ref('ae.seq')],
            ['type', () => inner.ref('ae.type')],
            ['at', () => isoTimestamp(inner.ref('ae.at'))],
            ['actor', () => sql`(select actor_row from (select ae.actor_type as type, ae.actor_id as id) actor_row)`],
            ['ip', () => inner.ref('ae.ip')],
            ['userAgent', () => inner.ref('ae.user_agent')],
            ['details', () => inner.ref('ae.details')],
            ['prevHash', () => inner.ref('ae.prev_hash')],
            ['hash', () => inner.ref('ae.hash')],
          ],
          keys,
        ),
      )
      .whereRef('ae.stream_id', '=', envelopeId)
      .where('ae.seq', '>', window.afterSeq as number)
      .orderBy('ae.seq')
      .limit(window.limit as number),
  );
}

function envelopeColumns(eb: Eb, include: EnvelopeInclude) {
  const column = (name: keyof ReadDatabase['envelope']) => () => eb.ref(`e.${name}`);
  const timestamp = (name: keyof ReadDatabase['envelope']) => () => isoTimestamp(eb.ref(`e.${name}`) as Expression<Date | null>);
  const keys = include.keys ?? {};
  const nested: Column[] = [];
  if (include.documents) nested.push(['documents', () => documentsOf(eb, 'envelope', 'e.id', keys.document)]);
  if (include.recipients) nested.push(['recipients', () => recipientsOf(eb, 'envelope', 'e.id', include, keys.recipient)]);
  if (include.fields) nested.push(['fields', () => fieldsOf(eb, 'envelope', 'e.id', include, keys.field)]);
  // The window's numbers are part of the statement's shape (a handful of distinct values in practice).
  const window = include.auditEventPage ?? { afterSeq: 0, limit: MAX_AUDIT_EVENTS_PER_PAGE };
  if (include.auditEvents) nested.push(['auditEvents', () => auditEventsOf(eb, 'e.id', keys.auditEvent, { afterSeq: sql.lit(window.afterSeq), limit: sql.lit(window.limit) })]);
  return pick(
    [
      ['id', column('id')],
      ['name', column('name')],
      ['status', column('status')],
      ['expirationPeriodDays', column('expiration_period_days')],
      ['reminderInitialDelayDays', column('reminder_initial_delay_days')],
      ['reminderRepeatIntervalDays', column('reminder_repeat_interval_days')],
      ['reminderBeforeExpirationDays', column('reminder_before_expiration_days')],
      ['context', column('context')],
      ['createdAt', timestamp('created_at')],
      ['updatedAt', timestamp('updated_at')],
      ['sentAt', timestamp('sent_at')],
      ['expiresAt', timestamp('expires_at')],
      ['completedAt', timestamp('completed_at')],
      ['voidedAt', timestamp('voided_at')],
      ['templateId', column('template_id')],
    ],
    keys.envelope,
    // A page's cursor is made of these.
    ['id', 'createdAt'],
  ).concat(nested.map(([key, build]) => build().as(key)));
}

/** The text that decides an envelope read's SQL: nested lists and keys, never ids. */
function shapeOfInclude(include: EnvelopeInclude): string {
  const flags = (['documents', 'recipients', 'agents', 'fields', 'views', 'auditEvents'] as const).map((flag) => (include[flag] ? '1' : '0')).join('');
  const audit = include.auditEvents && include.auditEventPage ? `${include.auditEventPage.afterSeq}+${include.auditEventPage.limit}` : '';
  const keys = include.keys ?? {};
  const keyShapes = (['envelope', 'document', 'recipient', 'field', 'auditEvent'] as const).map((kind) => shapeOfKeys(keys[kind])).join('|');
  return `${flags}|${audit}|${keyShapes}`;
}

// ---------------------------------------------------------------------------------------------
// Reads. Each is one statement, compiled once per shape (runRead): values go in slots.

/** One envelope of the caller's team with what `include` asks for; `Envelope.NotFound` otherwise. */
export function readEnvelope(context: ServiceContext, envelopeId: string, include: EnvelopeInclude = {}): Promise<EnvelopeData> {
  const build: RootStatement = (db, slot) => teamEnvelopes(db, slot(0)).select((eb) => envelopeColumns(eb, include)).where('e.id', '=', slot(1));
  return readRoot<EnvelopeData>(context, envelopeIdGate, { shape: `envelope:${shapeOfInclude(include)}`, id: envelopeId, build });
}

/**
 * The REST answer for one envelope (`{ envelope, documents?, recipients?, fields? }`) as JSON text
 * written by PostgreSQL, with a strong validator: the tag hashes exactly that text, so any change
 * to anything in the answer changes it, and a conditional GET whose tag still matches costs one
 * statement and no parsing or serialisation here.
 */
export async function readEnvelopeAnswer(
  context: ServiceContext,
  envelopeId: string,
  include: EnvelopeInclude,
): Promise<{ tag: string; payloadJson: string }> {
  const caller = await context.caller();
  wellFormedEnvelopeId(envelopeId);
  const [row] = await runRead<{ text: string }>(
    context.reader,
    `envelope-answer:${shapeOfInclude(include)}`,
    (db, slot) =>
      teamEnvelopes(db, slot(0))
        .select((eb) => {
          const keys = include.keys ?? {};
          // Rows, not json_build_object: to_json writes a row compactly, as JSON.stringify would.
          const answer: AliasedExpression<unknown, string>[] = [jsonObjectFrom(db.selectNoFrom((inner) => envelopeColumns(inner as Eb, { keys }))).as('envelope')];
          if (include.documents) answer.push(documentsOf(eb, 'envelope', 'e.id', keys.document).as('documents'));
          if (include.recipients) answer.push(recipientsOf(eb, 'envelope', 'e.id', include, keys.recipient).as('recipients'));
          if (include.fields) answer.push(fieldsOf(eb, 'envelope', 'e.id', include, keys.field).as('fields'));
          return sql<string>`${jsonObjectFrom(db.selectNoFrom(answer))}::text`.as('text');
        })
        .where('e.id', '=', slot(1)),
    [caller.teamId, envelopeId],
  );
  if (!row) throw new EnvelopeNotFoundError(envelopeId);
  // Hashing here is microseconds for 50 KB; the tag is what pollers compare.
  const tag = createHash('sha256').update(row.text).digest('base64url').slice(0, 32);
  return { tag, payloadJson: row.text };
}

const pageInput = keysetPageInput.omit({ search: true }).extend({
  status: z.enum(envelopeStatuses, { error: `must be one of ${envelopeStatuses.join(', ')}` }).optional(),
});

export type EnvelopePageData = { envelopes: EnvelopeData[]; nextCursor: string | null };

/**
 * The caller's envelopes, newest first, keyset-paginated on (createdAt, id): stable under
 * concurrent inserts and one index range scan however deep the caller pages.
 */
export async function readEnvelopePage(
  context: ServiceContext,
  options: { status?: EnvelopeStatus | string; limit?: number; cursor?: string },
  include: EnvelopeInclude = {},
): Promise<EnvelopePageData> {
  const input = parseInput(pageInput, options);
  const page = await readKeysetPage<EnvelopeData>(context, {
    shape: `envelope-page:${input.status ? 'status' : 'any'}:${shapeOfInclude(include)}`,
    page: input,
    filterValues: input.status ? [input.status] : [],
    build: (db, slot, window) => {
      const query = teamEnvelopes(db, slot(0)).select((eb) => envelopeColumns(eb, include));
      return window(input.status ? query.where('e.status', '=', slot(1)) : query, 'e');
    },
  });
  return { envelopes: page.rows, nextCursor: page.nextCursor };
}

/**
 * A window of a team envelope's audit events, oldest first, and where the next one starts
 * (`nextAfterSeq`, null at the end of the trail).
 */
export async function readAuditEvents(
  context: ServiceContext,
  options: { envelopeId: string; afterSeq?: number; limit?: number },
): Promise<{ events: AuditEventData[]; nextAfterSeq: number | null }> {
  const window = parseAuditEventPage({ afterSeq: options.afterSeq, limit: options.limit });
  // One more than asked, to learn whether the trail goes on.
  const events = await readInOwner<AuditEventData[]>(
    context,
    { kind: 'envelope', id: options.envelopeId },
    'audit-events',
    (eb, envelopeId, slot) => auditEventsOf(eb, envelopeId, undefined, { afterSeq: slot(2), limit: slot(3) }),
    [window.afterSeq, window.limit + 1],
  );
  const page = await withActorNames(context, events.slice(0, window.limit));
  return { events: page, nextAfterSeq: events.length > window.limit ? page[page.length - 1].seq : null };
}
