import { hash } from 'node:crypto';
import { type AliasedExpression, type Expression, type ExpressionBuilder, sql } from 'kysely';
import { jsonArrayFrom, jsonObjectFrom } from 'kysely/helpers/postgres';
import { z } from 'zod';
import { withActorNames } from '../audit/actor-names.ts';
import {
  type Column,
  type ContentInclude,
  type DocumentData,
  documentsOf,
  type FieldData,
  fieldsOf,
  type Keys,
  pick,
  type RecipientData,
  readInOwner,
  recipientsOf,
} from '../owner/owner.read.ts';
import { keysetPageInput } from '../pagination.ts';
import {
  isoTimestamp,
  type KeysetWindow,
  type ReadDatabase,
  type ReadDb,
  type RootStatement,
  readKeysetAnswer,
  readKeysetPage,
  readRoot,
  rowCursorSql,
  runRead,
  type Slot,
  shapeOfKeys,
} from '../read-model.ts';
import type { ServiceContext } from '../service-context.ts';
import { parseInput } from '../validation.ts';
import { type EnvelopeStatus, envelopeStatuses } from './envelope.entity.ts';
import { EnvelopeNotFoundError } from './envelope.errors.ts';
import { envelopeIdGate, teamEnvelopes, wellFormedEnvelopeId } from './team-envelope.ts';

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
  /** Visible stamps on the sealed documents; null: the team's default (on unless the team set it off). */
  stamp: boolean | null;
  createdAt: string;
  updatedAt: string;
  /** A scheduled envelope's send time (null unless `scheduled`). */
  sendAt: string | null;
  sentAt: string | null;
  /** 0 at send, one more for every correction of the sent envelope. */
  revision: number;
  expiresAt: string | null;
  completedAt: string | null;
  voidedAt: string | null;
  /** The template the envelope was jumpstarted from; null when made directly or once that template is deleted. */
  templateId: string | null;
  /** The public link a visitor made it through (issue 36); null otherwise. */
  publicLinkId: string | null;
  /** Each nested list is present exactly when the include asked for it. */
  documents?: DocumentData[];
  attachments?: EnvelopeAttachmentData[];
  recipients?: RecipientData[];
  fields?: FieldData[];
  auditEvents?: AuditEventData[];
  /** Present when the include asked for it (the listing's summary). */
  progress?: EnvelopeProgress;
};

/**
 * Where an envelope's signing stands, for a listing: the roles that act (signers, in-person
 * signers, delegators; not hosts, who act through their hosted signers, nor viewers, nor a role
 * handed on by delegation, whose delegate counts instead), how many completed, and whose turn it
 * is now (only while the envelope is sent).
 */
export type EnvelopeProgress = {
  recipients: number;
  completed: number;
  pending: number;
  waitingFor: { recipientId: string; roleName: string; names: string[] }[];
};

/**
 * What to nest in an envelope read. `agents` applies to recipients and `views` to fields, so a
 * caller that never shows placements does not pay for them.
 */
export type EnvelopeInclude = ContentInclude & {
  documents?: boolean;
  /** The files signers uploaded for attachment fields and kept (docs/fields.md#attachment). */
  attachments?: boolean;
  recipients?: boolean;
  fields?: boolean;
  auditEvents?: boolean;
  /** The progress summary (`EnvelopeProgress`). */
  progress?: boolean;
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

/**
 * The progress summary of the envelope `e`, one correlated subquery over its recipients (the
 * recipient's envelope index). Names are the live agents' people: the send-time snapshot, else
 * the inline info.
 */
function progressOf() {
  return sql<EnvelopeProgress>`(select json_build_object(
      'recipients', count(*)::int,
      'completed', (count(*) filter (where r.completed_at is not null))::int,
      'pending', (count(*) filter (where r.completed_at is null))::int,
      'waitingFor', coalesce(json_agg(json_build_object(
          'recipientId', r.id,
          'roleName', r.role_name,
          'names', (select coalesce(json_agg(person.name order by a.position, person.ordinal), '[]'::json)
            from agent a
            cross join lateral (
              select p.value ->> 'name' as name, p.ordinal from jsonb_array_elements(a.snapshot) with ordinality p(value, ordinal) where jsonb_typeof(a.snapshot) = 'array'
              union all select a.info ->> 'name', 0 where a.snapshot is null and a.info is not null
            ) person
            where a.recipient_id = r.id and a.revoked_at is null and person.name is not null)
        ) order by r."order", r.created_at, r.id)
        filter (where e.status = 'sent' and r.activated_at is not null and r.completed_at is null and r.declined_at is null), '[]'::json))
    from recipient r
    where r.envelope_id = e.id and r.removed_at is null and r.delegated_at is null and r.type in ('signer', 'in_person_signer', 'delegator', 'approver'))`;
}

/** A file a signer uploaded for an attachment field and kept, as the sender reads it. */
export type EnvelopeAttachmentData = {
  id: string;
  fieldId: string;
  /** The attachment field's identifier. */
  fieldIdentifier: string;
  recipientId: string;
  name: string;
  contentType: string;
  size: number;
  sha256: string;
  createdAt: string;
};

/**
 * The envelope's attachments, oldest first, as one nested list of the envelope's statement. Only
 * the files a field's submitted value names: an upload its signer did not keep (replaced, removed
 * from the value, or of a field hidden by its conditions) is never the sender's to see.
 */
function attachmentsOf(eb: Eb) {
  const file = sql`json_build_object('id', fa.id, 'fieldId', fa.field_id, 'fieldIdentifier', af.identifier, 'recipientId', fa.recipient_id, 'name', fa.name,
    'contentType', fa.content_type, 'size', fa.byte_size, 'sha256', fa.sha256, 'createdAt', ${isoTimestamp(sql<Date>`fa.created_at`)})`;
  return eb
    .selectFrom('field_attachment as fa')
    .innerJoin('field as af', 'af.id', 'fa.field_id')
    .select(sql<EnvelopeAttachmentData[]>`coalesce(json_agg(${file} order by fa.created_at, fa.id), '[]'::json)`.as('attachments'))
    .whereRef('fa.envelope_id', '=', 'e.id')
    .where(sql<boolean>`af.value -> 'files' @> jsonb_build_array(jsonb_build_object('id', fa.id::text))`);
}

function envelopeColumns(eb: Eb, include: EnvelopeInclude) {
  const column = (name: keyof ReadDatabase['envelope']) => () => eb.ref(`e.${name}`);
  const timestamp = (name: keyof ReadDatabase['envelope']) => () => isoTimestamp(eb.ref(`e.${name}`) as Expression<Date | null>);
  const keys = include.keys ?? {};
  const nested: Column[] = [];
  if (include.documents) nested.push(['documents', () => documentsOf(eb, { kind: 'envelope', ownerId: 'e.id' }, { keys: keys.document })]);
  if (include.recipients) nested.push(['recipients', () => recipientsOf(eb, { kind: 'envelope', ownerId: 'e.id' }, { include, keys: keys.recipient })]);
  if (include.fields) nested.push(['fields', () => fieldsOf(eb, { kind: 'envelope', ownerId: 'e.id' }, { include, keys: keys.field })]);
  if (include.attachments) nested.push(['attachments', () => attachmentsOf(eb)]);
  // The window's numbers are part of the statement's shape (a handful of distinct values in practice).
  const window = include.auditEventPage ?? { afterSeq: 0, limit: MAX_AUDIT_EVENTS_PER_PAGE };
  if (include.progress) nested.push(['progress', () => progressOf()]);
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
      ['stamp', column('stamp')],
      ['createdAt', timestamp('created_at')],
      ['updatedAt', timestamp('updated_at')],
      ['sendAt', timestamp('send_at')],
      ['sentAt', timestamp('sent_at')],
      ['revision', column('revision')],
      ['expiresAt', timestamp('expires_at')],
      ['completedAt', timestamp('completed_at')],
      ['voidedAt', timestamp('voided_at')],
      ['templateId', column('template_id')],
      ['publicLinkId', column('public_link_id')],
    ],
    keys.envelope,
    // A page's cursor is made of these.
    ['id', 'createdAt'],
  ).concat(nested.map(([key, build]) => build().as(key)));
}

/** The text that decides an envelope read's SQL: nested lists and keys, never ids. */
function shapeOfInclude(include: EnvelopeInclude): string {
  // Every read of an envelope asks for this first (the statement's cache key): plain loops, no arrays made.
  let flags = '';
  for (const flag of INCLUDE_FLAGS) flags += include[flag] ? '1' : '0';
  const audit = include.auditEvents && include.auditEventPage ? `${include.auditEventPage.afterSeq}+${include.auditEventPage.limit}` : '';
  const keys = include.keys;
  let keyShapes = ALL_KEYS_SHAPE;
  if (keys !== undefined) {
    keyShapes = shapeOfKeys(keys.envelope);
    for (const kind of KEYED_KINDS) keyShapes += `|${shapeOfKeys(keys[kind])}`;
  }
  return `${flags}|${audit}|${keyShapes}`;
}
const INCLUDE_FLAGS = ['documents', 'recipients', 'agents', 'fields', 'views', 'auditEvents', 'progress', 'attachments'] as const;
/** The kinds after `envelope` whose keys a read may narrow, in the shape's order. */
const KEYED_KINDS = ['document', 'recipient', 'field', 'auditEvent'] as const;
/** No keys narrowed: every kind's shape is `*`. */
const ALL_KEYS_SHAPE = ['envelope', ...KEYED_KINDS].map(() => shapeOfKeys(undefined)).join('|');

// ---------------------------------------------------------------------------------------------
// Reads. Each is one statement, compiled once per shape (runRead): values go in slots.

/** One envelope of the caller's team with what `include` asks for; `Envelope.NotFound` otherwise. */
export function readEnvelope(context: ServiceContext, envelopeId: string, include: EnvelopeInclude = {}): Promise<EnvelopeData> {
  const build: RootStatement = (db, slot) =>
    teamEnvelopes(db, slot(0))
      .select((eb) => envelopeColumns(eb, include))
      .where('e.id', '=', slot(1));
  return readRoot<EnvelopeData>(context, envelopeIdGate, { shape: `envelope:${shapeOfInclude(include)}`, id: envelopeId, build });
}

/**
 * The REST answer for one envelope (`{ envelope, documents?, recipients?, fields? }`) as JSON text
 * written by PostgreSQL, with a strong validator: the tag hashes exactly that text, so any change
 * to anything in the answer changes it, and a conditional GET whose tag still matches costs one
 * statement and no parsing or serialisation here.
 */
export async function readEnvelopeAnswer(context: ServiceContext, envelopeId: string, include: EnvelopeInclude): Promise<{ tag: string; payloadJson: string }> {
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
          if (include.documents) answer.push(documentsOf(eb, { kind: 'envelope', ownerId: 'e.id' }, { keys: keys.document }).as('documents'));
          if (include.recipients) answer.push(recipientsOf(eb, { kind: 'envelope', ownerId: 'e.id' }, { include, keys: keys.recipient }).as('recipients'));
          if (include.fields) answer.push(fieldsOf(eb, { kind: 'envelope', ownerId: 'e.id' }, { include, keys: keys.field }).as('fields'));
          return sql<string>`${jsonObjectFrom(db.selectNoFrom(answer))}::text`.as('text');
        })
        .where('e.id', '=', slot(1)),
    [caller.teamId, envelopeId],
  );
  if (!row) throw new EnvelopeNotFoundError(envelopeId);
  // Hashing here is microseconds for 50 KB; the tag is what pollers compare.
  const tag = hash('sha256', row.text, 'base64url').slice(0, 32);
  return { tag, payloadJson: row.text };
}

/** The most `context.<key>=<value>` pairs one listing matches on. */
export const MAX_CONTEXT_FILTERS = 10;

const instant = z.iso.datetime({ offset: true, error: 'must be an ISO 8601 date-time with a time zone (2026-01-31T00:00:00Z)' });

const pageInput = keysetPageInput.omit({ search: true }).extend({
  /** Name contains this, letter case, accents and Turkish dotted/dotless i ignored. */
  q: keysetPageInput.shape.search,
  status: z
    .array(z.enum(envelopeStatuses, { error: `must be one of ${envelopeStatuses.join(', ')}` }))
    .max(envelopeStatuses.length)
    .optional(),
  recipientEmail: z.string().trim().min(1, 'must not be empty').max(254, 'must be at most 254 characters').optional(),
  templateId: z.uuid({ error: 'must be a template id' }).optional(),
  publicLinkId: z.uuid({ error: 'must be a public link id' }).optional(),
  createdAfter: instant.optional(),
  createdBefore: instant.optional(),
  completedAfter: instant.optional(),
  completedBefore: instant.optional(),
  context: z
    .record(z.string().min(1, 'must not be empty').max(100), z.string().max(500, 'must be at most 500 characters'))
    .refine((pairs) => Object.keys(pairs).length <= MAX_CONTEXT_FILTERS, `must have at most ${MAX_CONTEXT_FILTERS} keys`)
    .optional(),
});

/** What a face hands over as it came: `parseInput` checks it (`Request.Invalid` with the paths). */
export type EnvelopePageOptions = Omit<z.input<typeof pageInput>, 'status' | 'context'> & { status?: readonly string[]; context?: Record<string, unknown> };

export type EnvelopePageData = { envelopes: EnvelopeData[]; nextCursor: string | null };

/** The filters a listing was given, in a fixed order: each present one adds a condition and a slot. */
const FILTERS = ['q', 'status', 'recipientEmail', 'templateId', 'publicLinkId', 'createdAfter', 'createdBefore', 'completedAfter', 'completedBefore', 'context'] as const;
type Filter = (typeof FILTERS)[number];

function filterCondition(eb: Eb, filter: Filter, value: unknown) {
  switch (filter) {
    case 'q':
      // Folded on both sides by the migration's function; the trigram index serves "contains".
      return sql<boolean>`envelope_search_key(e.name) like '%' || envelope_search_key(${value}::text) || '%'`;
    case 'status':
      return sql<boolean>`e.status = any(${value}::text[])`;
    case 'recipientEmail':
      // The address an agent was given or, once sent, resolved to (contacts, users, group members).
      // An array computed once from the agents' address index, each agent's recipient looked up by
      // its key: as a join the planner ran it per envelope in page order (every agent read for a
      // rare address) or hashed the whole recipient table (docs/performance.md, bench:finding).
      return sql<boolean>`e.id = any(array(select (select r.envelope_id from recipient r where r.id = a.recipient_id and r.removed_at is null)
        from agent a where agent_emails(a.info, a.snapshot) @> array[lower(${value}::text)] and a.revoked_at is null))`;
    case 'templateId':
      return eb('e.template_id', '=', value as string);
    case 'publicLinkId':
      return eb('e.public_link_id', '=', value as string);
    case 'createdAfter':
      return sql<boolean>`e.created_at >= ${value}::timestamptz`;
    case 'createdBefore':
      return sql<boolean>`e.created_at < ${value}::timestamptz`;
    case 'completedAfter':
      return sql<boolean>`e.completed_at >= ${value}::timestamptz`;
    case 'completedBefore':
      return sql<boolean>`e.completed_at < ${value}::timestamptz`;
    case 'context':
      return sql<boolean>`e.context @> ${value}::jsonb`;
  }
}

/** A LIKE pattern's own characters match themselves: the search is "contains", never a pattern. */
function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (character) => `\\${character}`);
}

/**
 * The caller's envelopes, newest first, keyset-paginated on (createdAt, id): stable under
 * concurrent inserts and one index range scan however deep the caller pages. Every filter given
 * narrows (they combine with "and"; `status` takes several, any of them); still one statement,
 * its text decided by which filters are present, never by their values.
 */
export async function readEnvelopePage(context: ServiceContext, options: EnvelopePageOptions, include: EnvelopeInclude = {}): Promise<EnvelopePageData> {
  const listing = envelopeListing(options);
  const page = await readKeysetPage<EnvelopeData>(context, {
    shape: `envelope-page:${listing.present.join(',')}:${shapeOfInclude(include)}`,
    page: listing.page,
    filterValues: listing.filterValues,
    build: (db, slot, window) =>
      window(
        listing.filtered(
          teamEnvelopes(db, slot(0)).select((eb) => envelopeColumns(eb, include)),
          slot,
        ),
        'e',
      ),
  });
  return { envelopes: page.rows, nextCursor: page.nextCursor };
}

/**
 * The same page as `readEnvelopePage` (the same listing, window and envelope objects) as the REST
 * listing's payload, `{"envelopes":[…],"nextCursor":…}`, written by PostgreSQL in one statement:
 * the REST face splices it into its body (after canonicalJson) instead of parsing rows and writing
 * them again, which for a 100-envelope page is milliseconds of the event loop per request that
 * every other team's reads would wait behind (docs/performance.md, "Issue 37, fourth round").
 */
export async function readEnvelopeListingAnswer(context: ServiceContext, options: EnvelopePageOptions, include: EnvelopeInclude = {}): Promise<string> {
  const listing = envelopeListing(options);
  return readKeysetAnswer(context, {
    shape: `envelope-listing-answer:${listing.present.join(',')}:${shapeOfInclude(include)}`,
    page: listing.page,
    filterValues: listing.filterValues,
    build: (db, slot, window, pageSize) => {
      const rows = listing.numberedRows(db, slot, window);
      const envelope = jsonObjectFrom(db.selectNoFrom((inner) => envelopeColumns(inner as Eb, include)));
      return db.selectFrom(rows.as('e')).select(
        sql<string>`(select to_json(answer_row)::text from (select
            coalesce(array_to_json(array_agg(${envelope} order by e.position) filter (where e.position <= ${pageSize}::int)), '[]'::json) as "envelopes",
            (case when count(e.position) > ${pageSize}::int then max(${rowCursorSql('e')}) filter (where e.position = ${pageSize}::int) end) as "nextCursor"
          ) answer_row)`.as('text'),
      );
    },
  });
}

/**
 * A listing's checked input: its page, the filters present (in FILTERS order: they decide the
 * statement's text) with their values, and `filtered`, which adds their conditions to a query of
 * the team's envelopes (`e`), each value in its slot after the team's. Shared by the page read and
 * its exact answer (envelope.answer.ts), so both list the same envelopes.
 */
export function envelopeListing(options: EnvelopePageOptions) {
  const input = parseInput(pageInput, options);
  const values: Partial<Record<Filter, unknown>> = {
    q: input.q === undefined || input.q.trim() === '' ? undefined : escapeLike(input.q.trim()),
    status: input.status === undefined || input.status.length === 0 ? undefined : input.status,
    recipientEmail: input.recipientEmail,
    templateId: input.templateId,
    publicLinkId: input.publicLinkId,
    createdAfter: input.createdAfter,
    createdBefore: input.createdBefore,
    completedAfter: input.completedAfter,
    completedBefore: input.completedBefore,
    context: input.context === undefined || Object.keys(input.context).length === 0 ? undefined : JSON.stringify(input.context),
  };
  const present = FILTERS.filter((filter) => values[filter] !== undefined);
  return {
    page: { limit: input.limit, cursor: input.cursor },
    present,
    filterValues: present.map((filter) => values[filter]),
    filtered<Query extends { where(...args: any[]): Query }>(query: Query, slot: Slot): Query {
      let narrowed = query;
      present.forEach((filter, index) => {
        narrowed = narrowed.where((eb: Eb) => filterCondition(eb, filter, slot(1 + index)));
      });
      return narrowed;
    },
    /**
     * The window's rows (one more than the page), every column as `e` plus `position` (1 for the
     * first row after the cursor): what answers written whole by PostgreSQL aggregate, building a
     * node (and a cursor) only for the rows of the page.
     */
    numberedRows(db: ReadDb, slot: Slot, window: KeysetWindow) {
      return window(this.filtered(teamEnvelopes(db, slot(0)).selectAll('e').select(sql<number>`row_number() over (order by e.created_at desc, e.id desc)`.as('position')), slot), 'e');
    },
  };
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
    {
      shape: 'audit-events',
      child: (eb, envelopeId, slot) => auditEventsOf(eb, envelopeId, undefined, { afterSeq: slot(2), limit: slot(3) }),
      childValues: [window.afterSeq, window.limit + 1],
    },
  );
  const page = await withActorNames(context, events.slice(0, window.limit));
  return { events: page, nextAfterSeq: events.length > window.limit ? page[page.length - 1].seq : null };
}
