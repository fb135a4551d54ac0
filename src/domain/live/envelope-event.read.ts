import { sql } from 'kysely';
import type { EnvelopeStatus } from '../envelope/envelope.entity.ts';
import { EnvelopeNotFoundError } from '../envelope/envelope.errors.ts';
import { teamEnvelopes, wellFormedEnvelopeId } from '../envelope/team-envelope.ts';
import { isoTimestamp, type ReadDb } from '../read-model.ts';
import { type EnvelopeEvent, revisionOfEvent, STATUS_SET_BY_EVENT, setsStatus } from './envelope-event.ts';

/** Events read back per statement when a watcher catches up; a longer gap takes several. */
export const REPLAY_PAGE = 500;

const STATUS_EVENT_TYPES = Object.keys(STATUS_SET_BY_EVENT);

export type EnvelopeEventPage = { head: number; events: EnvelopeEvent[] };

/**
 * The team's envelope's events after `afterSequence` (at most REPLAY_PAGE), and the chain's head,
 * in one statement; the tenant filter makes a foreign id read exactly like an unknown one
 * (`Envelope.NotFound`). The status after each event is derived from the chain itself: the last
 * status-setting event at or before `afterSequence` comes along as the starting point.
 * `afterSequence` null: only the head is wanted (a watcher starting from now).
 */
export async function readEnvelopeEventsAfter(reader: ReadDb, teamId: string, envelopeId: string, afterSequence: number | null): Promise<EnvelopeEventPage> {
  wellFormedEnvelopeId(envelopeId);
  const after = afterSequence ?? 2_147_483_647;
  const rows = await teamEnvelopes(reader, teamId)
    .leftJoin(
      (eb) =>
        eb
          .selectFrom('audit_event as a')
          .select((a) => [
            'a.seq',
            'a.type',
            isoTimestamp(a.ref('a.at')).as('at'),
            sql<number | null>`case when a.type = 'envelope.corrected' then (a.details ->> 'revision')::int end`.as('revision'),
          ])
          .where('a.stream_id', '=', envelopeId)
          .where((a) =>
            a.or([
              a('a.seq', '>', after),
              a(
                'a.seq',
                '=',
                a
                  .selectFrom('audit_event as b')
                  .select((b) => b.fn.max('b.seq').as('seq'))
                  .where('b.stream_id', '=', envelopeId)
                  .where('b.seq', '<=', after)
                  .where('b.type', 'in', STATUS_EVENT_TYPES),
              ),
            ]),
          )
          .orderBy('a.seq')
          .limit(REPLAY_PAGE + 1)
          .as('r'),
      (join) => join.onTrue(),
    )
    .select((eb) => [
      'r.seq as seq',
      'r.type as type',
      'r.at as at',
      'r.revision as revision',
      eb
        .selectFrom('audit_event as h')
        .select((h) => h.fn.max('h.seq').as('head'))
        .where('h.stream_id', '=', envelopeId)
        .as('head'),
    ])
    .where('e.id', '=', envelopeId)
    .orderBy('r.seq')
    .execute();
  if (rows.length === 0) throw new EnvelopeNotFoundError(envelopeId);
  let status: EnvelopeStatus | null = null;
  const events: EnvelopeEvent[] = [];
  for (const row of rows) {
    if (row.seq === null || row.type === null || row.at === null) continue;
    if (setsStatus(row.type)) status = STATUS_SET_BY_EVENT[row.type];
    if (row.seq <= after && afterSequence !== null) continue;
    if (afterSequence === null || events.length === REPLAY_PAGE) continue;
    const revision = revisionOfEvent(row.type, { revision: row.revision === null ? null : Number(row.revision) });
    events.push({ envelopeId, teamId, sequence: row.seq, type: row.type, status, at: row.at, ...(revision === undefined ? {} : { revision }) });
  }
  return { head: Number(rows[0].head ?? 0), events };
}

/** The team's envelope's current status (`Envelope.NotFound` for a foreign or unknown id), one statement. */
export async function readEnvelopeStatus(reader: ReadDb, teamId: string, envelopeId: string): Promise<EnvelopeStatus> {
  const row = await teamEnvelopes(reader, teamId).select('e.status').where('e.id', '=', wellFormedEnvelopeId(envelopeId)).executeTakeFirst();
  if (!row) throw new EnvelopeNotFoundError(envelopeId);
  return row.status as EnvelopeStatus;
}
