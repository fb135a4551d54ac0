import type { EntityManager } from '@mikro-orm/postgresql';
import type { ValidationIssue } from '../../shared/errors.ts';
import { ContactGroupMember } from '../contact/contact-group.entity.ts';
import { Document } from '../document/document.entity.ts';
import { Envelope } from '../envelope/envelope.entity.ts';
import { EnvelopeNotDraftError } from '../envelope/envelope.errors.ts';
import { findTeamEnvelope } from '../envelope/team-envelope.ts';
import { inEnvelopeTransaction } from '../envelope/envelope-lock.ts';
import { FieldView } from '../field/field-view.entity.ts';
import { Field } from '../field/field.entity.ts';
import { Agent, type AgentInfo } from '../recipient/agent.entity.ts';
import { Recipient } from '../recipient/recipient.entity.ts';
import type { ServiceContext } from '../service-context.ts';
import type { TeamCaller } from '../team/team-caller.ts';
import { EnvelopeClosedError, EnvelopeNotSendableError } from './signing.errors.ts';
import { advanceTurns, apiKeyWorkflow, recordEvent, SIGNING_TYPES } from './workflow.ts';

const DAY_MS = 24 * 60 * 60 * 1000;

/** The people an agent reference stands for right now (the snapshot taken at send). */
async function resolvePeople(em: EntityManager, agent: Agent): Promise<AgentInfo[]> {
  if (agent.kind === 'info') return agent.info ? [agent.info] : [];
  if (agent.kind === 'contact') {
    const contact = agent.contact ? await agent.contact.load() : null;
    return contact ? [personOf(contact)] : [];
  }
  if (agent.kind === 'user') {
    const user = agent.user ? await agent.user.load() : null;
    return user ? [{ name: user.name, email: user.email, phone: user.phone ?? null, locale: (user.locale as AgentInfo['locale']) ?? null, phoneContactMethod: null }] : [];
  }
  if (!agent.group) return [];
  const members = await em.find(ContactGroupMember, { group: agent.group.id }, { populate: ['contact'], orderBy: { createdAt: 'asc', contact: 'asc' } });
  return members.map((member) => personOf(member.contact.getEntity()));
}

function personOf(contact: { name: string; email?: string | null; phone?: string | null; locale?: string | null; phoneContactMethod?: string | null }): AgentInfo {
  return {
    name: contact.name,
    email: contact.email ?? null,
    phone: contact.phone ?? null,
    locale: (contact.locale as AgentInfo['locale']) ?? null,
    phoneContactMethod: (contact.phoneContactMethod as AgentInfo['phoneContactMethod']) ?? null,
  };
}

/**
 * `draft → sent` (docs/reference/interface-spec.md §3.1, docs/reference/workflow.md "Sending"). Under the envelope's row lock (so no draft
 * change interleaves): every send check runs and every problem is reported at once
 * (`Envelope.NotSendable`, nothing changed); otherwise agent references are snapshotted, `sentAt`
 * and `expiresAt` set by a guarded update, and the first turn activated with its signing links
 * and invitations written to the outbox, all in one transaction.
 */
export async function sendEnvelope(context: ServiceContext, options: { envelopeId: string }): Promise<void> {
  const caller = await context.caller();
  await inEnvelopeTransaction(context, caller.teamId, options.envelopeId, (em) => sendDraft(context, em, caller, options.envelopeId));
}

/**
 * The send itself, in the caller's transaction, which must be one `inEnvelopeTransaction` began
 * (a bulk send's row records its outcome in that same transaction).
 */
export async function sendDraft(
  context: Pick<ServiceContext, 'clock' | 'auditKey' | 'publicUrl' | 'metadata'>,
  em: EntityManager,
  caller: TeamCaller,
  envelopeId: string,
): Promise<void> {
  const envelope = await findTeamEnvelope(em, caller, envelopeId, { lock: true });
  if (envelope.status === 'sent') throw new EnvelopeNotDraftError(envelope.id, envelope.status);
  if (envelope.status !== 'draft') throw new EnvelopeClosedError(envelope.id, envelope.status);
  const now = context.clock.now();
  const documents = await em.find(Document, { envelope }, { orderBy: { order: 'asc', createdAt: 'asc' } });
  const recipients = await em.find(Recipient, { envelope }, { orderBy: { order: 'asc', createdAt: 'asc', id: 'asc' } });
  const agents = await em.find(Agent, { recipient: { envelope } }, { orderBy: { position: 'asc' } });
  const fields = await em.find(Field, { envelope }, { orderBy: { createdAt: 'asc', identifier: 'asc' } });
  const views = await em.find(FieldView, { field: { envelope } }, { orderBy: { position: 'asc' } });
  const issues: ValidationIssue[] = [];

  if (documents.length === 0) issues.push({ path: 'documents', message: 'the envelope needs at least one document' });
  if (recipients.length === 0) issues.push({ path: 'recipients', message: 'the envelope needs at least one recipient' });

  const peopleByAgent = new Map<string, AgentInfo[]>();
  for (const agent of agents) peopleByAgent.set(agent.id, await resolvePeople(em, agent));
  const recipientById = new Map(recipients.map((recipient) => [recipient.id, recipient]));
  const fieldsByRecipient = new Map<string, Field[]>();
  for (const field of fields) {
    const recipientId = field.recipient?.id;
    if (recipientId) fieldsByRecipient.set(recipientId, [...(fieldsByRecipient.get(recipientId) ?? []), field]);
  }

  for (const recipient of recipients) {
    const path = `recipients[${recipient.identifier}]`;
    const people = agents.filter((agent) => agent.recipient.id === recipient.id).flatMap((agent) => peopleByAgent.get(agent.id) ?? []);
    if (people.length === 0) issues.push({ path: `${path}.agents`, message: 'has no agents (after resolving contact, group and user references)' });
    if (recipient.type === 'in_person_signer') {
      const host = recipient.hostedBy ? recipientById.get(recipient.hostedBy.id) : undefined;
      if (!host || host.type !== 'host') issues.push({ path: `${path}.hostedById`, message: 'an in_person_signer must name a host recipient of this envelope' });
    }
    const ownFields = fieldsByRecipient.get(recipient.id) ?? [];
    if (SIGNING_TYPES.includes(recipient.type) && recipient.required && ownFields.length === 0) {
      issues.push({ path: `${path}.fields`, message: `a required ${recipient.type} needs at least one field` });
    }
    if (recipient.type === 'approver') {
      const agentCount = agents.filter((agent) => agent.recipient.id === recipient.id).length;
      // Agents may have been replaced since the quorum was set: checked again, by name.
      if (agentCount > 0 && recipient.quorum > agentCount) {
        issues.push({ path: `${path}.quorum`, message: `Recipient.QuorumExceedsAgents: the quorum (${recipient.quorum}) is larger than the number of agents (${agentCount})` });
      }
    }
    if ((recipient.type === 'host' || recipient.type === 'viewer' || recipient.type === 'approver') && ownFields.length > 0) {
      issues.push({ path: `${path}.fields`, message: `a ${recipient.type} does not fill fields; assign them to a signing recipient` });
    }
  }
  if (recipients.length > 0 && !recipients.some((recipient) => SIGNING_TYPES.includes(recipient.type) && recipient.required)) {
    issues.push({ path: 'recipients', message: 'at least one required signer, in_person_signer or delegator is needed (otherwise nothing would be signed)' });
  }

  const documentById = new Map(documents.map((document) => [document.id, document]));
  for (const field of fields) {
    const path = `fields[${field.identifier}]`;
    if (!field.recipient || !recipientById.has(field.recipient.id)) issues.push({ path: `${path}.recipientId`, message: 'must name a recipient of this envelope' });
    const ownViews = views.filter((view) => view.field.id === field.id);
    if (ownViews.length === 0) issues.push({ path: `${path}.views`, message: 'needs at least one view on a document' });
    for (const [index, view] of ownViews.entries()) {
      const document = documentById.get(view.document.id);
      if (!document) issues.push({ path: `${path}.views[${index}].documentId`, message: 'must name a document of this envelope' });
      else if (view.page >= document.pageCount) issues.push({ path: `${path}.views[${index}].page`, message: `must be below the document's page count (${document.pageCount})` });
    }
  }
  if (issues.length > 0) throw new EnvelopeNotSendableError(envelope.id, issues);

  for (const agent of agents) {
    agent.snapshot = peopleByAgent.get(agent.id) ?? [];
    agent.snapshotAt = now;
  }
  const expiresAt = new Date(now.getTime() + envelope.expirationPeriodDays * DAY_MS);
  await em.flush();
  const changed = await em.nativeUpdate(Envelope, { id: envelope.id, status: 'draft' }, { status: 'sent', sentAt: now, expiresAt, updatedAt: now });
  if (changed !== 1) throw new EnvelopeNotDraftError(envelope.id, envelope.status);
  // The invitations quote the envelope as it is now sent (its expiresAt).
  await em.findOne(Envelope, { id: envelope.id }, { refresh: true });
  const workflow = apiKeyWorkflow(context, { em, caller, envelopeId: envelope.id, now });
  await recordEvent(workflow, 'envelope.sent', { sentAt: now.toISOString(), expiresAt: expiresAt.toISOString() });
  await advanceTurns(workflow);
}
