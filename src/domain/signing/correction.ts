import type { EntityManager } from '@mikro-orm/postgresql';
import type { ChangeScope } from '../change.ts';
import type { Envelope } from '../envelope/envelope.entity.ts';
import type { CorrectionWorkflow, EnvelopeCorrection } from '../owner/correction.ts';
import { Agent } from '../recipient/agent.entity.ts';
import { Recipient } from '../recipient/recipient.entity.ts';
import type { ServiceContext } from '../service-context.ts';
import { ensureNotPastExpiry } from './expiry.ts';
import { resolvePeople } from './send.service.ts';
import { advanceTurns, apiKeyWorkflow, inviteRecipient, recordEvent, TURN_TYPES, type Workflow } from './workflow.ts';

/*
 * What the signing workflow does when a sent envelope is corrected (owner/correction.ts; docs/
 * decisions.md "Correcting a sent envelope"), in the correction's transaction, under the
 * envelope's row lock, after the operation changed something:
 * 1. New agents stand for their people as of now (the snapshot a send would have taken).
 * 2. The turns are made right again for the recipients as they now are (workflow.md "Turns"): the
 *    current order is the lowest one with a required acting recipient not yet completed. A
 *    recipient activated earlier whose turn is no longer now (a recipient was added before it, or
 *    it was moved later, or stopped being an acting type) is deactivated: its links die, and it is
 *    invited again when its turn comes. A host stays active only while one of its hosted signers is.
 * 3. A recipient whose agents were replaced and whose turn it is now has its new agents invited
 *    (the old ones' links died with the replacement).
 * 4. `envelope.corrected` records the revision and what changed (webhooks and subscriptions carry it).
 * 5. The turns move on as after a completion (`advanceTurns`): a recipient added at the current
 *    order, or the next order after a removed current one, is activated and invited; when no
 *    required recipient is left to act, the envelope finalizes, exactly once, like any other.
 */

function workflowOf(context: ServiceContext, change: ChangeScope & { envelope: Envelope }): Workflow {
  return apiKeyWorkflow(context, { em: change.em, caller: change.caller, envelopeId: change.envelope.id, now: change.now });
}

async function snapshotNewAgents(em: EntityManager, envelopeId: string, now: Date) {
  const fresh = await em.find(Agent, { recipient: { envelope: envelopeId }, revokedAt: null, snapshotAt: null });
  for (const agent of fresh) {
    agent.snapshot = await resolvePeople(em, agent);
    agent.snapshotAt = now;
  }
  await em.flush();
}

async function deactivate(workflow: Workflow, recipient: Recipient, revision: number) {
  recipient.activatedAt = null;
  await workflow.em.flush();
  await workflow.em.execute('update signing_token set revoked_at = ? where recipient_id = ? and revoked_at is null', [workflow.now, recipient.id]);
  await recordEvent(workflow, 'recipient.deactivated', { recipientId: recipient.id, identifier: recipient.identifier, order: recipient.order, revision });
}

/** Step 2: deactivates the recipients whose turn it no longer is. */
async function withdrawTurns(workflow: Workflow, revision: number) {
  const recipients = await workflow.em.find(Recipient, { envelope: workflow.envelopeId }, { orderBy: { order: 'asc', createdAt: 'asc', id: 'asc' }, refresh: true });
  const pending = recipients.filter((recipient) => TURN_TYPES.includes(recipient.type) && recipient.required && !recipient.completedAt);
  const currentOrder = pending.length > 0 ? Math.min(...pending.map((recipient) => recipient.order)) : Number.POSITIVE_INFINITY;
  const stillActive = new Set<string>();
  for (const recipient of recipients) {
    if (!recipient.activatedAt || recipient.completedAt || recipient.type === 'host') continue;
    if (TURN_TYPES.includes(recipient.type) && recipient.order <= currentOrder) {
      stillActive.add(recipient.id);
      continue;
    }
    await deactivate(workflow, recipient, revision);
  }
  for (const host of recipients.filter((recipient) => recipient.type === 'host' && recipient.activatedAt && !recipient.completedAt)) {
    const hostsActive = recipients.some((signer) => signer.hostedBy?.id === host.id && stillActive.has(signer.id));
    if (!hostsActive) await deactivate(workflow, host, revision);
  }
}

/** Step 3: the replaced agents of a recipient whose turn it is are invited (a host's on behalf of its active hosted signer). */
async function inviteReplaced(workflow: Workflow, recipientIds: Set<string>) {
  for (const recipientId of recipientIds) {
    const recipient = await workflow.em.findOne(Recipient, { id: recipientId, envelope: workflow.envelopeId });
    if (!recipient || !recipient.activatedAt || recipient.completedAt) continue;
    // An in-person signer is handed the host's device; it has no link of its own to send.
    if (recipient.type === 'in_person_signer') continue;
    if (recipient.type === 'host') {
      const hosted = await workflow.em.findOne(Recipient, { envelope: workflow.envelopeId, hostedBy: recipient.id, activatedAt: { $ne: null }, completedAt: null });
      await inviteRecipient(workflow, recipient, hosted ? { onBehalfOf: hosted } : { resend: true });
      continue;
    }
    await inviteRecipient(workflow, recipient, { resend: true });
  }
}

async function settle(context: ServiceContext, change: ChangeScope & { envelope: Envelope }, correction: EnvelopeCorrection) {
  if (correction.settled || correction.revision === null) return;
  correction.settled = true;
  const revision = correction.revision;
  const workflow = workflowOf(context, change);
  await change.em.flush();
  await snapshotNewAgents(change.em, change.envelope.id, change.now);
  await withdrawTurns(workflow, revision);
  await inviteReplaced(workflow, correction.agentsReplaced);
  await recordEvent(workflow, 'envelope.corrected', { revision, changes: correction.changes });
  await advanceTurns(workflow);
}

/** Handed to owner/correction.ts by the composition root. */
export const signingCorrectionWorkflow: CorrectionWorkflow = {
  // Past `expiresAt` a sent envelope is closed, whether or not the sweep has run.
  ensureOpen: (envelope, now) => ensureNotPastExpiry(envelope, now),
  settle,
};
