/**
 * The two reads under comparison, in one place: the GraphQL text our service and the bare
 * handler answer (the bare handler refuses any other text), PostGraphile's equivalent, and the
 * single SQL statements of the bare handlers. The answer checks and the load use these same
 * constants, so what is checked is what is timed.
 */

/** Envelopes per page: one team's newest. */
export const PAGE_SIZE = 20;

/** Read 1 on our service (and on the bare handler, which must give the same `data`). */
export const GRAPHQL_PAGE_QUERY = `query EnvelopePage($first: Int!) {
  envelopes(first: $first) {
    nodes {
      id name status createdAt
      documents { id name order pageCount }
      recipients { id identifier roleName type order agents { id kind info { name email } } }
      fields { id identifier type required recipientId views { documentId page location { x y } size { width height } } }
    }
  }
}`;

/**
 * Read 1 on PostGraphile: the same rows and columns through its generated relation fields.
 * `rowId` is the primary key (its `id` is the global node id). Envelopes are ordered as ours
 * (created_at desc, id desc). Children are ordered by what PostGraphile offers: it only orders
 * by indexed columns, so documents go by `order`, agents and views by `position` as ours do, while
 * recipients and fields (ours: order/created_at/id and created_at/identifier, not indexed) come
 * in primary key order. The check therefore compares child ids as sets.
 */
export const POSTGRAPHILE_PAGE_QUERY = `query EnvelopePage($teamId: UUID!, $first: Int!) {
  allEnvelopes(condition: { teamId: $teamId }, orderBy: [CREATED_AT_DESC, ROW_ID_DESC], first: $first) {
    nodes {
      rowId name status createdAt
      documentsByEnvelopeId(orderBy: [ORDER_ASC, ROW_ID_ASC]) { nodes { rowId name order pageCount } }
      recipientsByEnvelopeId { nodes { rowId identifier roleName type order agentsByRecipientId(orderBy: [POSITION_ASC]) { nodes { rowId kind info } } } }
      fieldsByEnvelopeId { nodes { rowId identifier type required recipientId fieldViewsByFieldId(orderBy: [POSITION_ASC]) { nodes { documentId page x y width height } } } }
    }
  }
}`;

/** Timestamps as JavaScript's toISOString() writes them (UTC, milliseconds, `Z`), as ours answer. */
const iso = (column: string) => `to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** The caller's team from the API key's SHA-256, as the service authenticates (revoked keys fail). */
const CALLER = `select team_id from api_key where key_hash = $1 and revoked_at is null`;

/**
 * Read 1 for the bare handler, one statement: $1 the key hash, $2 the page size. Returns
 * `authenticated` and `nodes`, which is exactly our answer's `data.envelopes.nodes`: same keys in
 * the same order, same child order as the service's batch loaders, `[]` for no children.
 *
 * Objects are built as json_agg over subselects whose column aliases are the keys (and one-row
 * subselects for the small nested objects) rather than with json_build_object: on PostgreSQL 15
 * that costs about a quarter less CPU for this page, and the point of this peer is the floor.
 * The row aliases (`person`, `point`, `document_row`, ...) must not be column names in scope,
 * or PostgreSQL would take the column (a.info) instead of the row. The team's page is an index
 * range scan (team_id, created_at, id) read backwards.
 */
export const BARE_PAGE_SQL = `with caller as (${CALLER})
select exists (select 1 from caller) as authenticated,
  (select coalesce(json_agg(envelope_row), '[]'::json) from (
    select e.id, e.name, e.status, ${iso('e.created_at')} as "createdAt",
      (select coalesce(json_agg(document_row), '[]'::json) from (
        select d.id, d.name, d."order", d.page_count as "pageCount"
        from document d where d.envelope_id = e.id
        order by d."order", d.created_at, d.id) document_row) as documents,
      (select coalesce(json_agg(recipient_row), '[]'::json) from (
        select r.id, r.identifier, r.role_name as "roleName", r.type, r."order",
          (select coalesce(json_agg(agent_row), '[]'::json) from (
            select a.id, a.kind,
              case when a.info is null then null
                else (select person from (select a.info->>'name' as name, a.info->>'email' as email) person) end as info
            from agent a where a.recipient_id = r.id
            order by a.position) agent_row) as agents
        from recipient r where r.envelope_id = e.id
        order by r."order", r.created_at, r.id) recipient_row) as recipients,
      (select coalesce(json_agg(field_row), '[]'::json) from (
        select f.id, f.identifier, f.type, f.required, f.recipient_id as "recipientId",
          (select coalesce(json_agg(view_row), '[]'::json) from (
            select v.document_id as "documentId", v.page,
              (select point from (select v.x, v.y) point) as location,
              (select box from (select v.width, v.height) box) as size
            from field_view v where v.field_id = f.id
            order by v.position) view_row) as views
        from field f where f.envelope_id = e.id
        order by f.created_at, f.identifier) field_row) as fields
    from envelope e
    where e.team_id = (select team_id from caller)
    order by e.created_at desc, e.id desc
    limit $2) envelope_row) as nodes`;

/** Read 2: `GET /api/v1/key/envelopes/{id}?includeDocuments=true` (heavy) or the envelope alone (light). */
export const restEnvelopePath = (envelopeId: string, { light = false }: { light?: boolean } = {}) => `/api/v1/key/envelopes/${envelopeId}${light ? '' : '?includeDocuments=true'}`;

/**
 * Read 2 for the bare handler, one statement: $1 the key hash, $2 the envelope id. Returns the
 * `payload` of src/rest/serializers.ts (envelopeJson, documentJson) with keys in the same order,
 * or no row for an unknown, foreign or unauthenticated id.
 */
const ENVELOPE_JSON = `json_build_object(
    'id', e.id, 'name', e.name, 'status', e.status,
    'expirationPeriodDays', e.expiration_period_days,
    'reminderInitialDelayDays', e.reminder_initial_delay_days,
    'reminderRepeatIntervalDays', e.reminder_repeat_interval_days,
    'reminderBeforeExpirationDays', e.reminder_before_expiration_days,
    'context', e.context, 'stamp', e.stamp,
    'createdAt', ${iso('e.created_at')}, 'updatedAt', ${iso('e.updated_at')}, 'sendAt', ${iso('e.send_at')}, 'sentAt', ${iso('e.sent_at')}, 'revision', e.revision,
    'expiresAt', ${iso('e.expires_at')}, 'completedAt', ${iso('e.completed_at')}, 'voidedAt', ${iso('e.voided_at')},
    'templateId', e.template_id, 'publicLinkId', e.public_link_id
  )`;

export const BARE_ENVELOPE_SQL = `with caller as (${CALLER})
select json_build_object(
  'envelope', ${ENVELOPE_JSON},
  'documents', (select coalesce(json_agg(json_build_object(
      'id', d.id, 'name', d.name, 'order', d."order", 'status', d.status, 'context', d.context, 'pageCount', d.page_count,
      'pages', (select coalesce(json_agg(json_build_object(
          'index', p.i - 1, 'width', p.page->'width', 'height', p.page->'height', 'rotation', p.page->'rotation'
        ) order by p.i), '[]'::json)
        from jsonb_array_elements(d.pages) with ordinality as p(page, i)),
      'sha256', d.content_sha256, 'byteSize', d.byte_size, 'createdAt', ${iso('d.created_at')}
    ) order by d."order", d.created_at, d.id), '[]'::json)
    from document d where d.envelope_id = e.id)
) as payload
from envelope e join caller c on e.team_id = c.team_id
where e.id = $2`;

/** Read 2, light: the envelope alone (`GET /api/v1/key/envelopes/{id}`), one statement as above. */
export const BARE_ENVELOPE_LIGHT_SQL = `with caller as (${CALLER})
select json_build_object('envelope', ${ENVELOPE_JSON}) as payload
from envelope e join caller c on e.team_id = c.team_id
where e.id = $2`;
