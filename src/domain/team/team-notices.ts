/**
 * The sending side is told (issue 24): an envelope event a team asked for in its notification
 * settings queues one `team.notice` per address, in the transaction of the change that caused it,
 * like every other mail. Dedupe keys make a second call for the same event (a retried seal job's
 * acknowledgement, a failure hook run again) a no-op.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { enqueue } from '../outbox/outbox.ts';
import { OUTBOX_TOPICS, type TeamNoticePayload } from '../outbox/topics.ts';
import type { TeamNoticeEvent } from './team-settings.ts';

type Notice = Omit<TeamNoticePayload, 'teamId' | 'envelopeId' | 'event' | 'to'>;

/**
 * Queues the event's notice to each of the team's addresses that asked for it; answers how many.
 * Envelope events name their envelope; `bulk_send_completed` names none (its bulk send is in
 * `notice.bulkSend`, and `dedupe` is the bulk send's id).
 */
export async function queueTeamNotice(
  em: EntityManager,
  options: { teamId: string; envelopeId: string | null; event: TeamNoticeEvent; now: Date; notice?: Notice; dedupe?: string },
): Promise<number> {
  const [row] = await em.execute<{ notifications: { emails?: unknown; events?: unknown; locale?: unknown } | null }[]>(
    `select settings->'notifications' as notifications from team where id = ?`,
    [options.teamId],
  );
  const settings = row?.notifications ?? null;
  const emails = Array.isArray(settings?.emails) ? settings.emails.map(String) : [];
  // No event list: every event.
  const wanted = !Array.isArray(settings?.events) || settings.events.includes(options.event);
  if (emails.length === 0 || !wanted) return 0;
  const locale = typeof settings?.locale === 'string' ? settings.locale : null;
  let queued = 0;
  for (const email of emails) {
    const id = await enqueue(
      em,
      OUTBOX_TOPICS.teamNotice,
      { teamId: options.teamId, envelopeId: options.envelopeId, event: options.event, to: { email, locale }, ...options.notice },
      { now: options.now, dedupeKey: `team-notice:${options.event}:${options.dedupe ?? options.envelopeId ?? ''}:${email}`, skipDuplicate: true },
    );
    if (id !== undefined) queued += 1;
  }
  return queued;
}
