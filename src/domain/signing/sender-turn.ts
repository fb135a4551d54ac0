import type { EntityManager } from '@mikro-orm/postgresql';
import { isUuid } from '../../shared/ids.ts';
import type { Envelope } from '../envelope/envelope.entity.ts';
import { Agent } from '../recipient/agent.entity.ts';
import { Recipient } from '../recipient/recipient.entity.ts';
import { RecipientNotFoundError } from '../recipient/recipient.errors.ts';
import { ensureNotPastExpiry } from './expiry.ts';
import { EnvelopeClosedError, EnvelopeNotSentError } from './signing.errors.ts';
import { ensureMayAct } from './signing.service.ts';

/*
 * What a sender's action on a sent envelope checks first (void, signing URLs, remind, resend), in
 * one place, under the envelope's row lock the caller holds.
 */

/**
 * The envelope is sent and still open now: a draft (or a scheduled one) is `Envelope.NotSent`; a closed one, or one
 * whose `expiresAt` passed before the sweep closed it, is `Envelope.Closed`.
 */
export function ensureSentAndOpen(envelope: Envelope, now: Date): void {
  // A scheduled envelope is not sent yet either (nothing went out): cancel its schedule instead.
  if (envelope.status === 'draft' || envelope.status === 'scheduled') throw new EnvelopeNotSentError(envelope.id, envelope.status);
  if (envelope.status !== 'sent') throw new EnvelopeClosedError(envelope.id, envelope.status);
  ensureNotPastExpiry(envelope, now);
}

/**
 * The envelope's recipient `recipientId`, whose turn it is and who has not completed:
 * `Recipient.NotFound` (a malformed id too), `Signing.NotYourTurn`, `Signing.RecipientCompleted`.
 */
export async function findActingRecipient(em: EntityManager, envelope: Envelope, recipientId: string): Promise<Recipient> {
  const recipient = isUuid(recipientId) ? await em.findOne(Recipient, { id: recipientId.toLowerCase(), envelope }, { refresh: true }) : null;
  if (!recipient) throw new RecipientNotFoundError(recipientId);
  ensureMayAct(recipient);
  return recipient;
}

/** The recipient's agent `agentId`, or its first when none is named; undefined when there is no such live agent. */
export async function findAgentOf(em: EntityManager, recipient: Recipient, agentId: string | undefined): Promise<Agent | undefined> {
  if (agentId === undefined) return (await em.find(Agent, { recipient, revokedAt: null }, { orderBy: { position: 'asc' }, limit: 1, refresh: true }))[0];
  return isUuid(agentId) ? ((await em.findOne(Agent, { id: agentId.toLowerCase(), recipient, revokedAt: null }, { refresh: true })) ?? undefined) : undefined;
}
