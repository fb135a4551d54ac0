import type { EntityManager } from '@mikro-orm/postgresql';

/**
 * Marks an outbox message delivered, dropping its `secret` part (an invitation's signing link)
 * in the same statement: once a message is sent, no raw signing token stays in the database.
 * For the deliverer (notifications issue); answers false when the message was already
 * delivered (another worker got there first), so nothing is marked twice.
 */
export async function markOutboxMessageDelivered(em: EntityManager, options: { messageId: string; now: Date }): Promise<boolean> {
  const rows = await em.execute<{ id: string }[]>(
    `update outbox_message set processed_at = ?, locked_until = null, payload = payload - 'secret' where id = ? and processed_at is null returning id`,
    [options.now, options.messageId],
  );
  return rows.length === 1;
}
