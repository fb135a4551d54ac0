import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../../shared/ids.ts';

/*
 * The daily cap on phone messages per person (issue 12 item 3): invitations, reminders and
 * one-time codes sent by SMS or WhatsApp to one person of one agent count together, at most
 * PHONE_MESSAGES_PER_DAY in any 24 hours (0: no cap). Closing notices are not counted: at most
 * one per envelope and person, they cannot be used to flood a phone.
 */

export const PHONE_CAP_WINDOW_MS = 24 * 60 * 60_000;

export type PhoneCapDecision = { allowed: true } | { allowed: false; limit: number; retryAt: Date };

/**
 * Takes a place for one outbox message in the person's daily allowance, or answers when the next
 * place frees up. Must run inside a transaction: the agent's row lock serialises the count and the
 * insert (two messages racing for the last place cannot both take it). A message that already has
 * its place (a retry, or a code whose place was taken when it was requested) keeps it.
 */
export async function reservePhoneMessage(
  em: EntityManager,
  options: { agentId: string; personIndex: number; envelopeId: string; kind: 'invitation' | 'reminder' | 'otp'; outboxMessageId: string; now: Date; perDay: number },
): Promise<PhoneCapDecision> {
  if (!em.isInTransaction()) throw new Error('reservePhoneMessage must run inside a transaction');
  await em.execute('select id from agent where id = ? for update', [options.agentId]);
  const [existing] = await em.execute<{ id: string }[]>('select id from phone_message where outbox_message_id = ?', [options.outboxMessageId]);
  if (existing) return { allowed: true };
  if (options.perDay > 0) {
    const since = new Date(options.now.getTime() - PHONE_CAP_WINDOW_MS);
    const recent = await em.execute<{ created_at: Date }[]>(
      'select created_at from phone_message where agent_id = ? and person_index = ? and created_at > ? order by created_at desc limit ?',
      [options.agentId, options.personIndex, since, options.perDay],
    );
    if (recent.length >= options.perDay) {
      // The oldest of the last `perDay` messages leaves the window first.
      const oldest = new Date(recent[recent.length - 1]!.created_at);
      return { allowed: false, limit: options.perDay, retryAt: new Date(oldest.getTime() + PHONE_CAP_WINDOW_MS) };
    }
  }
  await em.execute('insert into phone_message (id, created_at, agent_id, person_index, envelope_id, kind, outbox_message_id) values (?, ?, ?, ?, ?, ?, ?)', [
    newId(),
    options.now,
    options.agentId,
    options.personIndex,
    options.envelopeId,
    options.kind,
    options.outboxMessageId,
  ]);
  return { allowed: true };
}
