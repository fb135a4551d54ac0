import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { InvalidRequestError } from '../../shared/errors.ts';
import { inEnvelopeTransaction } from '../envelope/envelope-lock.ts';
import { findTeamEnvelope } from '../envelope/team-envelope.ts';
import type { MessageChannel } from '../outbox/topics.ts';
import { type AgentInfo, isEmbedded } from '../recipient/agent.entity.ts';
import { e164Phone } from '../recipient/agent-input.ts';
import { peopleOf } from '../recipient/agent-people.ts';
import { Recipient } from '../recipient/recipient.entity.ts';
import type { ServiceContext } from '../service-context.ts';
import { parseInput } from '../validation.ts';
import { ensureSentAndOpen, findActingRecipient, findAgentOf } from './sender-turn.ts';
import { EnvelopeRemindTooSoonError, SigningAlreadyApprovedError, SigningEmbeddedAgentError } from './signing.errors.ts';
import { agentsWhoApproved, apiKeyWorkflow, inviteRecipient, recordEvent } from './workflow.ts';

/*
 * The sender's nudges (issue 24): remind everyone whose turn it is now, and send one agent's
 * invitation again, optionally to a corrected address (a mistyped address is the most common
 * support ticket). Both run under the envelope's row lock, so the rate limit's look at the trail
 * and the event that starts the next window cannot interleave with a second request.
 */

/**
 * At most one manual reminder per envelope, and one plain resend per agent, in this many minutes:
 * a sender's button pressed twice (or a script's loop) must not flood people. Kept in the trail
 * (`reminder.requested`, `invitation.resent`) rather than a column: the events are written anyway.
 */
export const REMIND_INTERVAL_MINUTES = 60;
const INTERVAL_MS = REMIND_INTERVAL_MINUTES * 60_000;

export type RemindedData = { recipientId: string; agentId: string; channel: MessageChannel };

/** Seconds until the window that began at the envelope's latest event of `type` (for `agentId`, when given) closes; 0 when it has. */
async function secondsUntilAllowed(em: EntityManager, now: Date, last: { envelopeId: string; type: string; agentId?: string }): Promise<number> {
  const { envelopeId, type, agentId } = last;
  const [row] = await em.execute<{ last: Date | string | null }[]>(
    `select max(at) as last from audit_event where envelope_id = ? and type = ?${agentId ? ` and details ->> 'agentId' = ?` : ''}`,
    [envelopeId, type, ...(agentId ? [agentId] : [])],
  );
  if (!row?.last) return 0;
  const wait = new Date(row.last).getTime() + INTERVAL_MS - now.getTime();
  return wait > 0 ? Math.ceil(wait / 1000) : 0;
}

/**
 * Reminds now every person whose turn it is and who has not completed (signers, delegators,
 * hosts and approvers who have not approved yet, as the scheduled reminders: in-person signers are reached through their host, viewers
 * never act). Embedded people are skipped (nothing is ever mailed or texted to them) and so not
 * listed. `Envelope.RemindTooSoon` within `REMIND_INTERVAL_MINUTES` of the last manual reminder.
 * Each reminder carries a fresh link on the reminder topic, like a scheduled one; the request is
 * recorded as `reminder.requested` (who was reminded), the deliveries as `reminder.sent`.
 */
export async function remindEnvelope(context: ServiceContext, options: { envelopeId: string }): Promise<{ reminded: RemindedData[] }> {
  const caller = await context.caller();
  return inEnvelopeTransaction(context, caller.teamId, options.envelopeId, async (em) => {
    const envelope = await findTeamEnvelope(em, caller, options.envelopeId, { lock: true });
    const now = context.clock.now();
    ensureSentAndOpen(envelope, now);
    const wait = await secondsUntilAllowed(em, now, { envelopeId: envelope.id, type: 'reminder.requested' });
    if (wait > 0) throw new EnvelopeRemindTooSoonError(envelope.id, wait, 'remind');
    const waiting = await em.find(
      Recipient,
      { envelope, activatedAt: { $ne: null }, completedAt: null, type: { $in: ['signer', 'delegator', 'host', 'approver'] } },
      { orderBy: { order: 'asc', createdAt: 'asc', id: 'asc' }, refresh: true },
    );
    const workflow = apiKeyWorkflow(context, { em, caller, envelopeId: envelope.id, now });
    // The window key makes each manual reminder its own (dedupe keys are per window and person).
    const window = `manual:${now.toISOString()}`;
    const reminded: RemindedData[] = [];
    for (const recipient of waiting) {
      for (const queued of await inviteRecipient(workflow, recipient, { reminderWindow: window })) {
        reminded.push({ recipientId: queued.recipientId, agentId: queued.agentId, channel: queued.channel });
      }
    }
    // Nothing sent (everyone embedded): nothing happened, and the next request is not held back.
    if (reminded.length > 0) await recordEvent(workflow, 'reminder.requested', { window, reminded });
    return { reminded };
  });
}

export const resendInput = z.strictObject({
  agentId: z.string().optional(),
  email: z.email('must be an email address').max(320).optional(),
  phone: e164Phone.optional(),
});

export type ResentData = { recipientId: string; agentId: string; channel: MessageChannel; revokedLinks: number };

/**
 * Sends one agent's invitation again (the agent named, or the role's first), optionally to a
 * corrected `email` and/or `phone`: every invitation link the agent's people held dies (an
 * embedded session opened from a signing URL is the integrator's and stays), and a new link is
 * sent. The correction changes the agent's send-time snapshot (and its inline info), not a
 * contact or team user it came from: the address book is not this envelope's to edit. Recorded as
 * `invitation.resent` (the links that died, the old and new address) and `invitation.queued`.
 * Refused: `Signing.EmbeddedAgent` (never mailed), `Signing.AlreadyApproved` (an approver's agent
 * who approved: nothing is left for it to do), `Signing.NotYourTurn`,
 * `Signing.RecipientCompleted`, `Envelope.NotSent`, `Envelope.Closed`, and `Envelope.RemindTooSoon`
 * for a resend to the same address within `REMIND_INTERVAL_MINUTES` of the last (a corrected
 * address is never held back: nothing useful reached the old one).
 */
export async function resendInvitation(context: ServiceContext, options: { envelopeId: string; recipientId: string; input: unknown }): Promise<ResentData> {
  const input = parseInput(resendInput, options.input);
  const caller = await context.caller();
  return inEnvelopeTransaction(context, caller.teamId, options.envelopeId, async (em) => {
    const envelope = await findTeamEnvelope(em, caller, options.envelopeId, { lock: true });
    const now = context.clock.now();
    ensureSentAndOpen(envelope, now);
    const recipient = await findActingRecipient(em, envelope, options.recipientId);
    // In-person signers are reached through their host; viewers are never invited to act.
    if (recipient.type === 'in_person_signer' || recipient.type === 'viewer') {
      throw new InvalidRequestError([{ path: 'recipientId', message: `a ${recipient.type} is not sent an invitation (resend the host's instead)` }]);
    }
    const agent = await findAgentOf(em, recipient, input.agentId);
    const people = agent ? peopleOf(agent) : [];
    if (!agent || people.length === 0) {
      throw new InvalidRequestError([{ path: 'agentId', message: input.agentId === undefined ? 'the recipient has no agent to invite' : 'is not an agent of this recipient' }]);
    }
    // An approver's agent who approved has nothing left to do (inviteRecipient's rule for reminders too).
    if ((await agentsWhoApproved(em, recipient)).has(agent.id)) throw new SigningAlreadyApprovedError(recipient.id, agent.id);
    if (people.some(isEmbedded)) throw new SigningEmbeddedAgentError(recipient.id, agent.id);
    const correcting = input.email !== undefined || input.phone !== undefined;
    // A group agent is several people; which one's address was wrong would be a guess.
    if (correcting && people.length !== 1) {
      throw new InvalidRequestError([{ path: input.email !== undefined ? 'email' : 'phone', message: 'can be corrected only for an agent that is one person (not a contact group)' }]);
    }
    const before = people[0]!;
    const changed: Record<string, { from: string | null; to: string }> = {};
    if (input.email !== undefined && input.email !== (before.email ?? null)) changed.email = { from: before.email ?? null, to: input.email };
    if (input.phone !== undefined && input.phone !== (before.phone ?? null)) changed.phone = { from: before.phone ?? null, to: input.phone };
    const corrected = Object.keys(changed).length > 0;
    if (!corrected) {
      const wait = await secondsUntilAllowed(em, now, { envelopeId: envelope.id, type: 'invitation.resent', agentId: agent.id });
      if (wait > 0) throw new EnvelopeRemindTooSoonError(envelope.id, wait, 'resend');
    } else {
      const fixed: AgentInfo = { ...before, ...(changed.email ? { email: changed.email.to } : {}), ...(changed.phone ? { phone: changed.phone.to } : {}) };
      // New objects, so the unit of work sees the json columns change.
      agent.snapshot = [fixed];
      if (agent.kind === 'info' && agent.info) agent.info = { ...agent.info, ...(changed.email ? { email: changed.email.to } : {}), ...(changed.phone ? { phone: changed.phone.to } : {}) };
    }
    await em.flush();
    // The old links die before the new one exists. An invitation still in the outbox for a dead
    // link is acknowledged unsent by the deliverer, so the wrong address gets nothing more.
    const revoked = await em.execute<{ id: string }[]>('update signing_token set revoked_at = ? where agent_id = ? and revoked_at is null and embedding is null returning id', [
      now,
      agent.id,
    ]);
    const workflow = apiKeyWorkflow(context, { em, caller, envelopeId: envelope.id, now });
    await recordEvent(workflow, 'invitation.resent', { recipientId: recipient.id, agentId: agent.id, revokedTokenIds: revoked.map((row) => row.id), ...(corrected ? { changed } : {}) });
    const [queued] = await inviteRecipient(workflow, recipient, { agent, resend: true });
    return { recipientId: recipient.id, agentId: agent.id, channel: queued?.channel ?? 'none', revokedLinks: revoked.length };
  });
}
