import type { EntityManager } from '@mikro-orm/postgresql';

/**
 * Marks an outbox message delivered, dropping its `secret` part (an invitation's signing link)
 * in the same statement: once a message is sent, no raw signing token stays in the database.
 * For the deliverer (notifications issue); answers false when the message was already
 * delivered (another worker got there first), so nothing is marked twice.
 */
export async function markOutboxMessageDelivered(em: EntityManager, options: { messageId: string; now: Date; attempt?: number }): Promise<boolean> {
  // With `attempt`, the worker's fencing token: a claim whose lease was lost and retaken cannot
  // acknowledge the newer claim.
  const fence = options.attempt === undefined ? '' : ' and attempts = ?';
  const rows = await em.execute<{ id: string }[]>(
    `update outbox_message set processed_at = ?, locked_until = null, last_error = null, payload = payload - 'secret' where id = ? and processed_at is null${fence} returning id`,
    [options.now, options.messageId, ...(options.attempt === undefined ? [] : [options.attempt])],
  );
  return rows.length === 1;
}
