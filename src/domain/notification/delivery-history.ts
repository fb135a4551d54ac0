/**
 * Keeps the delivery history from growing without end: settled queue rows (delivered, or given up),
 * settled webhook deliveries (with their attempts), and the phone-message ledger and one-time
 * code rows (which matter for 24 hours and one hour), and public links' visits (a visitor's name,
 * address and code HMAC; what a visit made is in the envelope's trail) older than the retention are deleted, in
 * batches, by a sweep every instance with a worker runs (several at once only share the work:
 * `skip locked` keeps them off each other's rows). What is still pending is never touched, and
 * the audit trail (the record of what was sent) is not part of this: it is kept for good.
 *
 * Safe because nothing reads a settled row again: reminder windows are decided from the audit
 * trail (`reminder.queued`), the final copy is queued once by its seal job, and a webhook
 * redelivery needs its delivery row, which is kept as long as its log is shown.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { deleteInBatches, pruneSettledOutboxMessages, retentionCutoff } from '../outbox/housekeeping.ts';

const BATCH = 1000;

export type PruneOptions = {
  em: EntityManager;
  now: Date;
  retentionDays: number;
  /** Only this team's rows: tests on a shared database keep a sweep to their own. */
  teamId?: string;
};

/** Deletes settled history older than the retention; answers how many rows of each kind went. */
export async function pruneDeliveryHistory(
  options: PruneOptions,
): Promise<{ outboxMessages: number; webhookDeliveries: number; phoneMessages: number; signingOtps: number; publicLinkVisits: number }> {
  const cutoff = retentionCutoff(options.now, options.retentionDays);
  const em = options.em.fork();
  const deliveryTeam = options.teamId === undefined ? '' : 'and team_id = ?';
  const team = options.teamId === undefined ? [] : [options.teamId];
  const outboxMessages = await pruneSettledOutboxMessages({ em, cutoff, teamId: options.teamId });
  let webhookDeliveries = 0;
  for (;;) {
    // Attempts go with their delivery (on delete cascade).
    const rows = await em.execute<{ id: string }[]>(
      `delete from webhook_delivery where id in (
         select id from webhook_delivery
          where state in ('delivered', 'failed') and created_at < ? ${deliveryTeam}
          limit ${BATCH} for update skip locked)
       returning id`,
      [cutoff, ...team],
    );
    webhookDeliveries += rows.length;
    if (rows.length < BATCH) break;
  }
  const teamEnvelopes = 'select id from envelope where team_id = ?';
  const phoneMessages = await deleteInBatches(
    em,
    `select id from phone_message where created_at < ? ${options.teamId === undefined ? '' : `and envelope_id in (${teamEnvelopes})`}`,
    'phone_message',
    [cutoff, ...team],
  );
  const signingOtps = await deleteInBatches(
    em,
    `select id from signing_otp where created_at < ? ${
      options.teamId === undefined ? '' : `and agent_id in (select a.id from agent a join recipient r on r.id = a.recipient_id where r.envelope_id in (${teamEnvelopes}))`
    }`,
    'signing_otp',
    [cutoff, ...team],
  );
  // Abandoned visits (a code never entered) included: personal data kept no longer than the rest.
  const publicLinkVisits = await deleteInBatches(
    em,
    `select id from public_link_visit where created_at < ? ${options.teamId === undefined ? '' : 'and public_link_id in (select id from public_link where team_id = ?)'}`,
    'public_link_visit',
    [cutoff, ...team],
  );
  return { outboxMessages, webhookDeliveries, phoneMessages, signingOtps, publicLinkVisits };
}
