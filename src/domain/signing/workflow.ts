import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { hashSecret, newSecret } from '../../shared/ids.ts';
import type { RequestMetadata } from '../../shared/request-metadata.ts';
import { type AuditActor, appendAuditEvent } from '../audit/audit.service.ts';
import { apiKeyActor } from '../change.ts';
import { Document } from '../document/document.entity.ts';
import { Envelope } from '../envelope/envelope.entity.ts';
import { enqueue } from '../outbox/outbox.ts';
import { type Addressee, type MessageChannel, OUTBOX_TOPICS } from '../outbox/topics.ts';
import { Agent, type AgentInfo, isEmbedded } from '../recipient/agent.entity.ts';
import { peopleOf } from '../recipient/agent-people.ts';
import { Recipient, type RecipientType } from '../recipient/recipient.entity.ts';
import type { ServiceContext } from '../service-context.ts';
import type { TeamCaller } from '../team/team-caller.ts';
import { queueTeamNotice } from '../team/team-notices.ts';
import { Approval } from './approval.entity.ts';
import { SigningToken } from './signing-token.entity.ts';

/*
 * The envelope state machine after sending (docs/reference/workflow.md "Turns" and "Closing"). Every function
 * here runs inside a transaction that holds the envelope's row lock (`select ... for update`), so
 * the changes of one envelope happen one at a time; the status itself still only moves through
 * guarded single-row updates (`where status = 'sent'`), which is what makes "finalized exactly
 * once" hold even for a caller that forgot the lock.
 */

/** Recipient types that act; hosts act through their hosted signers, viewers never act. */
export const SIGNING_TYPES: readonly RecipientType[] = ['signer', 'in_person_signer', 'delegator'];
/** Recipient types that take a turn in `order`: the signing ones, and approvers (who approve or reject, holding no fields). */
export const TURN_TYPES: readonly RecipientType[] = [...SIGNING_TYPES, 'approver'];

export type Workflow = {
  em: EntityManager;
  auditKey: Buffer;
  publicUrl: string;
  teamId: string;
  envelopeId: string;
  now: Date;
  actor: AuditActor;
  /** The request behind the change; null for the sweeper (actor `system`). */
  request: RequestMetadata | null;
  /**
   * The envelope's recipients and agents as this transaction read them under the envelope's lock
   * (a send: sendProblems), so the turns and invitations need not read them again. Absent: read.
   */
  known?: { recipients: Recipient[]; agents: Agent[] };
};

/** The workflow of a change made by the calling team's API key (send, void). */
export function apiKeyWorkflow(
  context: Pick<ServiceContext, 'auditKey' | 'publicUrl' | 'metadata'>,
  options: { em: EntityManager; caller: TeamCaller; envelopeId: string; now: Date },
): Workflow {
  return {
    em: options.em,
    auditKey: context.auditKey,
    publicUrl: context.publicUrl,
    teamId: options.caller.teamId,
    envelopeId: options.envelopeId,
    now: options.now,
    actor: apiKeyActor(options.caller),
    request: context.metadata,
  };
}

/** Appends one event to the envelope's chain and flushes, so the next event sees it as the head. */
export async function recordEvent(workflow: Workflow, type: string, details: Record<string, unknown>, actor: AuditActor = workflow.actor) {
  await workflow.em.flush();
  await appendAuditEvent(workflow.em, workflow.auditKey, {
    teamId: workflow.teamId,
    envelopeId: workflow.envelopeId,
    type,
    actor,
    request: actor.type === 'system' ? null : workflow.request,
    details,
    at: workflow.now,
  });
  await workflow.em.flush();
}

/**
 * Takes the envelope's row lock in this transaction and answers its current row: one statement
 * (`select … for update`; the row it answers is the one locked, read after any change that held
 * the lock before, as PostgreSQL rereads a locked row once its lock is granted).
 */
export async function lockEnvelope(em: EntityManager, envelopeId: string): Promise<Envelope | null> {
  return em.findOne(Envelope, { id: envelopeId }, { refresh: true, lockMode: LockMode.PESSIMISTIC_WRITE });
}

/**
 * Makes a signing link for one person of one agent: a 256-bit random token of which only the
 * SHA-256 is stored. The raw token leaves this function once, in the outbox message (or the
 * host's answer), and nowhere else.
 */
export function createSigningToken(em: EntityManager, person: { recipient: Recipient; agent: Agent; personIndex: number }, now: Date): { token: string; entity: SigningToken } {
  const { recipient, agent, personIndex } = person;
  const token = newSecret('sgn');
  const entity = em.create(SigningToken, { recipient, agent, personIndex, tokenHash: hashSecret(token), createdAt: now });
  em.persist(entity);
  return { token, entity };
}

export function signingLink(publicUrl: string, token: string): string {
  return `${publicUrl}/sign/${token}`;
}

/**
 * Invites every person of the recipient's live agents: a token each, and an invitation in the
 * outbox in this same transaction (nothing is sent for a change that rolls back, nothing lost
 * for one that commits). The link sits under `secret` so the deliverer can drop it once sent.
 */
export type QueuedMessage = { recipientId: string; agentId: string; personIndex: number; channel: MessageChannel };

/**
 * The agents of an approver role who already approved it (none for any other type). They have
 * nothing left to do: no reminder (scheduled or the sender's) and no resent invitation reaches
 * them. The one place that rule is read, by inviteRecipient and resendInvitation alike.
 */
export async function agentsWhoApproved(em: EntityManager, recipient: Recipient): Promise<Set<string>> {
  if (recipient.type !== 'approver') return new Set();
  return new Set((await em.find(Approval, { recipient })).map((approval) => approval.agent.id));
}

export async function inviteRecipient(
  workflow: Workflow,
  recipient: Recipient,
  options: { onBehalfOf?: Recipient; reminderWindow?: string; delegatedBy?: string | null; agent?: Agent; resend?: boolean } = {},
): Promise<QueuedMessage[]> {
  // A resend names one agent of the role; every other path invites all of its live agents.
  const live = options.agent
    ? [options.agent]
    : workflow.known
      ? workflow.known.agents.filter((agent) => agent.recipient.id === recipient.id && !agent.revokedAt).sort((a, b) => a.position - b.position)
      : await workflow.em.find(Agent, { recipient, revokedAt: null }, { orderBy: { position: 'asc' } });
  // An approver's agent that approved has nothing left to do: no reminder or resend for it.
  const approved = options.reminderWindow !== undefined || options.resend ? await agentsWhoApproved(workflow.em, recipient) : new Set<string>();
  const agents = live.filter((agent) => !approved.has(agent.id));
  const envelope = await workflow.em.findOneOrFail(Envelope, { id: workflow.envelopeId });
  const queued: QueuedMessage[] = [];
  for (const agent of agents) {
    for (const [personIndex, person] of peopleOf(agent).entries()) {
      // An embedded person signs in the integrator's application, through a signing URL the
      // integrator asks for (signing-url.service.ts): no link is made and nothing is sent, for
      // the first turn, a later one ("your turn"), a reminder or a delegation alike. The turn
      // itself shows to the sender (activatedAt, recipient.activated and its webhook).
      if (isEmbedded(person)) continue;
      const { token, entity } = createSigningToken(workflow.em, { recipient, agent, personIndex }, workflow.now);
      const channel = channelOf(person);
      const reminder = options.reminderWindow;
      await enqueue(
        workflow.em,
        reminder ? OUTBOX_TOPICS.reminder : OUTBOX_TOPICS.invitation,
        {
          teamId: workflow.teamId,
          envelopeId: workflow.envelopeId,
          envelopeName: envelope.name,
          // The first invitations go out with the send; later ones tell the person it is their turn.
          // A resend says what the first one said: "everyone before you has signed" may be untrue.
          kind: reminder
            ? 'reminder'
            : options.resend
              ? 'invitation'
              : options.delegatedBy !== undefined
                ? 'delegated'
                : envelope.sentAt && envelope.sentAt.getTime() < workflow.now.getTime()
                  ? 'your_turn'
                  : 'invitation',
          ...(reminder ? { window: reminder } : {}),
          ...(options.delegatedBy !== undefined ? { from: options.delegatedBy } : {}),
          recipientId: recipient.id,
          roleName: recipient.roleName,
          hostFor: options.onBehalfOf ? options.onBehalfOf.id : null,
          agentId: agent.id,
          personIndex,
          tokenId: entity.id,
          channel,
          to: addressee(person),
          expiresAt: envelope.expiresAt?.toISOString() ?? null,
          secret: { link: signingLink(workflow.publicUrl, token) },
        },
        // One reminder per window and person, whatever raced: the unique key refuses a second.
        { now: workflow.now, dedupeKey: reminder ? `reminder:${recipient.id}:${reminder}:${agent.id}:${personIndex}` : null },
      );
      if (!reminder) await recordEvent(workflow, 'invitation.queued', { recipientId: recipient.id, agentId: agent.id, personIndex, tokenId: entity.id, channel });
      queued.push({ recipientId: recipient.id, agentId: agent.id, personIndex, channel });
    }
  }
  return queued;
}

async function activate(workflow: Workflow, recipient: Recipient, recipients: Recipient[]) {
  recipient.activatedAt = workflow.now;
  await recordEvent(workflow, 'recipient.activated', { recipientId: recipient.id, identifier: recipient.identifier, order: recipient.order });
  if (recipient.type !== 'in_person_signer') {
    await inviteRecipient(workflow, recipient);
    return;
  }
  // An in-person signer is reached through its host: the host is invited (once) and its session
  // lists the hosted signers whose turn it is.
  const host = recipients.find((candidate) => candidate.id === recipient.hostedBy?.id);
  if (host && !host.activatedAt) {
    host.activatedAt = workflow.now;
    await recordEvent(workflow, 'recipient.activated', { recipientId: host.id, identifier: host.identifier, order: host.order, hostFor: recipient.id });
    await inviteRecipient(workflow, host, { onBehalfOf: recipient });
  }
}

/**
 * Moves the turns on after a send or a completion: every acting recipient up to the first order
 * that still has an incomplete required recipient is active (non-required ones never hold the
 * line); when no required recipient is left, the envelope finalizes. Answers whether it did.
 */
export async function advanceTurns(workflow: Workflow): Promise<{ finalized: boolean }> {
  const recipients = workflow.known?.recipients ?? (await workflow.em.find(Recipient, { envelope: workflow.envelopeId }, { orderBy: { order: 'asc', createdAt: 'asc', id: 'asc' } }));
  const signing = recipients.filter((recipient) => TURN_TYPES.includes(recipient.type));
  const pending = signing.filter((recipient) => recipient.required && !recipient.completedAt);
  if (pending.length === 0) return { finalized: await finalizeEnvelope(workflow) };
  const currentOrder = Math.min(...pending.map((recipient) => recipient.order));
  for (const recipient of signing) {
    if (recipient.order <= currentOrder && !recipient.activatedAt) await activate(workflow, recipient, recipients);
  }
  await workflow.em.flush();
  return { finalized: false };
}

/** Every live link of the envelope dies (it closed). */
async function revokeTokens(workflow: Workflow) {
  await workflow.em.execute('update signing_token set revoked_at = ? where revoked_at is null and recipient_id in (select id from recipient where envelope_id = ?)', [
    workflow.now,
    workflow.envelopeId,
  ]);
}

/**
 * `sent → finalized`, exactly once: the guarded single-row update decides, and only the caller
 * whose update changed the row records the event and queues the one artefact job (whose dedupe
 * key would refuse a second one anyway).
 */
export async function finalizeEnvelope(workflow: Workflow): Promise<boolean> {
  await workflow.em.flush();
  const changed = await workflow.em.nativeUpdate(Envelope, { id: workflow.envelopeId, status: 'sent' }, { status: 'finalized', completedAt: workflow.now });
  if (changed !== 1) return false;
  await workflow.em.nativeUpdate(Document, { envelope: workflow.envelopeId }, { status: 'completed' });
  await revokeTokens(workflow);
  await recordEvent(workflow, 'envelope.finalized', { completedAt: workflow.now.toISOString() });
  await enqueue(
    workflow.em,
    OUTBOX_TOPICS.sealArtefacts,
    { envelopeId: workflow.envelopeId, teamId: workflow.teamId },
    {
      now: workflow.now,
      dedupeKey: `${OUTBOX_TOPICS.sealArtefacts}:${workflow.envelopeId}`,
    },
  );
  await workflow.em.flush();
  return true;
}

export type Closing = { status: 'voided'; reason: string | null; documentStatus: 'voided' | 'declined'; cause: 'void' | 'decline'; recipientId?: string } | { status: 'expired' };

/**
 * `sent → voided | expired` through the guarded update. Answers false when the envelope was no
 * longer `sent` (someone else closed it first); then nothing was changed or recorded.
 */
export async function closeEnvelope(workflow: Workflow, closing: Closing): Promise<boolean> {
  await workflow.em.flush();
  const changes = closing.status === 'voided' ? { status: 'voided' as const, voidedAt: workflow.now, voidReason: closing.reason } : { status: 'expired' as const, expiredAt: workflow.now };
  const changed = await workflow.em.nativeUpdate(Envelope, { id: workflow.envelopeId, status: 'sent' }, changes);
  if (changed !== 1) return false;
  if (closing.status === 'voided') await workflow.em.nativeUpdate(Document, { envelope: workflow.envelopeId }, { status: closing.documentStatus });
  await revokeTokens(workflow);
  // The certificate of completion is fixed now that the envelope is closed (certificate.service.ts).
  await enqueue(
    workflow.em,
    OUTBOX_TOPICS.fixCertificate,
    { envelopeId: workflow.envelopeId, teamId: workflow.teamId },
    {
      now: workflow.now,
      dedupeKey: `${OUTBOX_TOPICS.fixCertificate}:${workflow.envelopeId}`,
    },
  );
  if (closing.status === 'voided') {
    await recordEvent(workflow, 'envelope.voided', { reason: closing.reason, cause: closing.cause, ...(closing.recipientId ? { recipientId: closing.recipientId } : {}) });
  } else {
    await recordEvent(workflow, 'envelope.expired', { expiredAt: workflow.now.toISOString() }, { type: 'system', id: null });
  }
  // Everyone who was invited is told (the notifications issue delivers these).
  const invited = await workflow.em.find(Agent, { recipient: { envelope: workflow.envelopeId, activatedAt: { $ne: null } }, revokedAt: null }, { populate: ['recipient'] });
  for (const agent of invited) {
    for (const person of peopleOf(agent)) {
      if (!noticeReaches(person)) continue;
      await enqueue(
        workflow.em,
        OUTBOX_TOPICS.closedNotice,
        {
          teamId: workflow.teamId,
          envelopeId: workflow.envelopeId,
          status: closing.status,
          cause: closing.status === 'voided' ? closing.cause : 'expiry',
          reason: closing.status === 'voided' ? closing.reason : null,
          recipientId: agent.recipient.id,
          agentId: agent.id,
          to: addressee(person),
        },
        { now: workflow.now },
      );
    }
  }
  // And the sending team, at the addresses its notification settings name.
  const decliner = closing.status === 'voided' && closing.cause === 'decline' && closing.recipientId ? invited.find((agent) => agent.recipient.id === closing.recipientId) : undefined;
  const declinerPerson = decliner ? peopleOf(decliner)[0] : undefined;
  await queueTeamNotice(workflow.em, {
    teamId: workflow.teamId,
    envelopeId: workflow.envelopeId,
    event: closing.status === 'expired' ? 'expired' : closing.cause === 'decline' ? 'declined' : 'voided',
    now: workflow.now,
    notice: {
      reason: closing.status === 'voided' ? closing.reason : null,
      person: declinerPerson ? { name: declinerPerson.name ?? null, email: declinerPerson.email ?? null, phone: declinerPerson.phone ?? null } : null,
    },
  });
  await workflow.em.flush();
  return true;
}

/** How a person is reached: mail first, then their phone's method (an embedded person: mail only). */
export function channelOf(person: AgentInfo): MessageChannel {
  if (isEmbedded(person)) return person.email ? 'email' : 'none';
  return person.email ? 'email' : person.phone ? (person.phoneContactMethod ?? 'sms') : 'none';
}

/**
 * Whether a notice (closing, hand-over, final copy) is queued for a person: always, but for an
 * embedded person only to an email address. Its phone is the integrator's to use, not ours (it
 * still serves the one-time code); a notice with nowhere to go would only show as a failure.
 */
function noticeReaches(person: AgentInfo): boolean {
  return !isEmbedded(person) || Boolean(person.email);
}

/** The person a message goes to, as outbox payloads carry it (an embedded person: no phone, so no SMS). */
function addressee(person: AgentInfo): Addressee {
  return { name: person.name, email: person.email ?? null, phone: isEmbedded(person) ? null : (person.phone ?? null), locale: person.locale ?? null };
}

/**
 * Tells the delegating person that the role went to the one it named (in the delegation's
 * transaction, like every message).
 */
export async function queueHandoverNotice(workflow: Workflow, options: { recipientId: string; agentId: string; person: AgentInfo; handedTo: string }) {
  if (!noticeReaches(options.person)) return;
  await enqueue(
    workflow.em,
    OUTBOX_TOPICS.handoverNotice,
    {
      teamId: workflow.teamId,
      envelopeId: workflow.envelopeId,
      kind: 'handed_over',
      recipientId: options.recipientId,
      agentId: options.agentId,
      handedTo: options.handedTo,
      channel: channelOf(options.person),
      to: addressee(options.person),
    },
    { now: workflow.now },
  );
}

/**
 * Queues the final copy for every person of every live agent of the envelope (signers, hosts,
 * in-person signers, viewers; not a delegator who handed its role on). Called by the seal job in
 * its acknowledgement, once the sealed documents exist; the dedupe key makes a second call a
 * no-op, so nobody receives the final copy twice.
 */
export async function queueCompletionNotices(em: EntityManager, options: { teamId: string; envelopeId: string; now: Date }): Promise<number> {
  const agents = await em.find(
    Agent,
    { recipient: { envelope: options.envelopeId }, revokedAt: null },
    { populate: ['recipient'], orderBy: { recipient: { order: 'asc' }, position: 'asc' } },
  );
  let queued = 0;
  for (const agent of agents) {
    for (const [personIndex, person] of peopleOf(agent).entries()) {
      if (!noticeReaches(person)) continue;
      const queuedId = await enqueue(
        em,
        OUTBOX_TOPICS.completedNotice,
        {
          teamId: options.teamId,
          envelopeId: options.envelopeId,
          kind: 'completed',
          recipientId: agent.recipient.id,
          agentId: agent.id,
          personIndex,
          channel: channelOf(person),
          to: addressee(person),
        },
        { now: options.now, dedupeKey: `completed:${options.envelopeId}:${agent.id}:${personIndex}`, skipDuplicate: true },
      );
      if (queuedId !== undefined) queued += 1;
    }
  }
  return queued;
}
