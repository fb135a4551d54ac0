/**
 * Visible stamps on sealed documents (issue 23, docs/artefacts.md): whether an envelope carries
 * them (its `stamp`, else its team's default, else on) and what they say: the envelope id for each
 * page's margin, and per recipient the caption under its signatures (the person who completed the
 * role, as the trail's `recipient.completed` names them, and the UTC time of completion).
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { RenderStamp } from '../pdf/render.ts';
import { agentPersonSqlText } from '../recipient/agent-people.ts';

function utcMinute(at: Date): string {
  return `${at.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/** The stamp to draw on an envelope's sealed documents, or undefined when the envelope (or its team) turned stamps off. */
export async function stampOf(em: EntityManager, envelopeId: string): Promise<RenderStamp | undefined> {
  const [envelope] = await em
    .fork()
    .execute<{ stamp: boolean | null; team_stamp: boolean | null }[]>(
      `select e.stamp, (t.settings->'artefacts'->>'stamp')::boolean as team_stamp from envelope e join team t on t.id = e.team_id where e.id = ?`,
      [envelopeId],
    );
  if (envelope === undefined || (envelope.stamp ?? envelope.team_stamp ?? true) === false) return undefined;
  const rows = await em.fork().execute<{ recipient_id: string; completed_at: Date | string; name: string | null; email: string | null; phone: string | null }[]>(
    `select r.id as recipient_id, r.completed_at, person->>'name' as name, person->>'email' as email, person->>'phone' as phone
       from recipient r
       left join lateral (
         select ${agentPersonSqlText('a', "coalesce((ev.details->>'personIndex')::int, 0)")} as person
           from audit_event ev join agent a on a.id::text = ev.details->>'agentId'
          where ev.envelope_id = r.envelope_id and ev.type = 'recipient.completed' and ev.details->>'recipientId' = r.id::text
          order by ev.seq desc limit 1
       ) completed on true
      where r.envelope_id = ? and r.completed_at is not null`,
    [envelopeId],
  );
  const captions: RenderStamp['captions'] = {};
  for (const row of rows) {
    captions[row.recipient_id] = { signer: row.name ?? row.email ?? row.phone ?? '', at: utcMinute(new Date(row.completed_at)) };
  }
  return { envelopeLine: `Envelope ${envelopeId}`, captions };
}
