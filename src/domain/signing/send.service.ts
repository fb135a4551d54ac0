import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { type DomainError, InvalidRequestError, type ValidationIssue } from '../../shared/errors.ts';
import { ContactGroupMember } from '../contact/contact-group.entity.ts';
import { Document } from '../document/document.entity.ts';
import { inRolledBackTransaction } from '../dry-run.ts';
import { Envelope, isClosedEnvelopeStatus } from '../envelope/envelope.entity.ts';
import { EnvelopeNotDraftError } from '../envelope/envelope.errors.ts';
import { inEnvelopeTransaction } from '../envelope/envelope-lock.ts';
import { findTeamEnvelope } from '../envelope/team-envelope.ts';
import { Field } from '../field/field.entity.ts';
import { FieldView } from '../field/field-view.entity.ts';
import { enqueue } from '../outbox/outbox.ts';
import type { MessageChannel } from '../outbox/topics.ts';
import { OUTBOX_TOPICS } from '../outbox/topics.ts';
import { Agent, type AgentInfo, isEmbedded } from '../recipient/agent.entity.ts';
import { Recipient, type RecipientType, type SignatureLevel } from '../recipient/recipient.entity.ts';
import type { ServiceContext } from '../service-context.ts';
import type { TeamCaller } from '../team/team-caller.ts';
import type { StoredTrustService } from '../team/team-settings.ts';
import { pickTrustService, teamTrustServices } from '../trust/trust-services.ts';
import { parseInput } from '../validation.ts';
import { reminderWindows } from './reminder.service.ts';
import { EnvelopeClosedError, EnvelopeNotSendableError } from './signing.errors.ts';
import { advanceTurns, apiKeyWorkflow, channelOf, recordEvent, SIGNING_TYPES } from './workflow.ts';

const DAY_MS = 24 * 60 * 60 * 1000;

/** The people an agent reference stands for right now (the snapshot taken at send). */
export async function resolvePeople(em: EntityManager, agent: Agent): Promise<AgentInfo[]> {
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
export async function sendEnvelope(context: ServiceContext, options: { envelopeId: string; input?: unknown }): Promise<void> {
  const input = parseInput(sendInput, options.input ?? {});
  const caller = await context.caller();
  const sendAt = input.sendAt === undefined ? undefined : checkedSendAt(input.sendAt, context.clock.now());
  await inEnvelopeTransaction(context, caller.teamId, options.envelopeId, (em) =>
    sendAt ? scheduleDraft(context, em, caller, { envelopeId: options.envelopeId, sendAt }) : sendDraft(context, em, caller, options.envelopeId),
  );
}

/** How far ahead a send may be scheduled. */
export const MAX_SCHEDULE_DAYS = 90;

export const sendInput = z.strictObject({
  sendAt: z.iso.datetime({ offset: true, error: 'must be an RFC 3339 date-time with a time zone (2026-12-01T09:00:00Z)' }).optional(),
});

/** `sendAt` is in the future on the service clock and at most MAX_SCHEDULE_DAYS ahead; otherwise `Request.Invalid` at `sendAt`. */
function checkedSendAt(text: string, now: Date): Date {
  const sendAt = new Date(text);
  if (sendAt.getTime() <= now.getTime()) throw new InvalidRequestError([{ path: 'sendAt', message: `must be in the future (now is ${now.toISOString()})` }]);
  if (sendAt.getTime() > now.getTime() + MAX_SCHEDULE_DAYS * DAY_MS) {
    throw new InvalidRequestError([{ path: 'sendAt', message: `must be at most ${MAX_SCHEDULE_DAYS} days ahead (now is ${now.toISOString()})` }]);
  }
  return sendAt;
}

/** What a draft is made of, as the send reads it (agents' references resolved to people). */
export type DraftContent = {
  documents: Document[];
  recipients: Recipient[];
  agents: Agent[];
  fields: Field[];
  views: FieldView[];
  /** The people each agent stands for now: what the send snapshots. */
  peopleByAgent: Map<string, AgentInfo[]>;
};

/**
 * The send's checks, in one place (docs/reference/workflow.md "Sending"): every reason a send of
 * this envelope would be refused now, in the order the send refuses them, as the very errors it
 * throws. The real send throws the first (sendDraft); a dry run answers them all (dryRunSend),
 * so the two cannot drift. A sent or closed envelope has one problem, its status (its content is
 * not sent again, so it is not checked); a draft's content problems are all listed in the one
 * `Envelope.NotSendable` the send has always answered (`context.issues`). `content` is the draft
 * as read (undefined unless a draft).
 */
export async function sendProblems(
  em: EntityManager,
  envelope: Envelope,
  from: 'draft' | 'scheduled' = 'draft',
  written?: Omit<DraftContent, 'peopleByAgent'>,
): Promise<{ problems: DomainError[]; content?: DraftContent }> {
  // `from`: the status the send starts from (`scheduled` only for the scheduled send itself).
  if (envelope.status !== from) {
    return { problems: [isClosedEnvelopeStatus(envelope.status) ? new EnvelopeClosedError(envelope.id, envelope.status) : new EnvelopeNotDraftError(envelope.id, envelope.status)] };
  }
  // `written`: the draft as its own transaction just wrote it (sendNewDraft), in the order these reads answer.
  const documents = written?.documents ?? (await em.find(Document, { envelope }, { orderBy: { order: 'asc', createdAt: 'asc' } }));
  const recipients = written?.recipients ?? (await em.find(Recipient, { envelope }, { orderBy: { order: 'asc', createdAt: 'asc', id: 'asc' } }));
  const agents = written?.agents ?? (await em.find(Agent, { recipient: { envelope } }, { orderBy: { position: 'asc' } }));
  const fields = written?.fields ?? (await em.find(Field, { envelope }, { orderBy: { createdAt: 'asc', identifier: 'asc' } }));
  const views = written?.views ?? (await em.find(FieldView, { field: { envelope } }, { orderBy: { position: 'asc' } }));
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

  let trustServices: StoredTrustService[] | undefined;
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
    // A level above simple signs at a trust service the team offers it at: one removed or changed
    // since the recipient was added is said now, not when the signer finishes.
    if (recipient.signatureLevel !== 'simple') {
      const services = (trustServices ??= await teamTrustServices(em, envelope.team.id));
      if (pickTrustService(services, recipient.signatureLevel as SignatureLevel, recipient.trustServiceId) === undefined) {
        issues.push({
          path: `${path}.signatureLevel`,
          message: `Recipient.TrustServiceUnavailable: the team has no trust service${recipient.trustServiceId ? ` "${recipient.trustServiceId}"` : ''} offering ${recipient.signatureLevel} signatures (team settings trustServices)`,
        });
      }
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
  return {
    problems: issues.length > 0 ? [new EnvelopeNotSendableError(envelope.id, issues)] : [],
    content: { documents, recipients, agents, fields, views, peopleByAgent },
  };
}

/**
 * The send itself, in the caller's transaction, which must be one `inEnvelopeTransaction` began
 * (a bulk send's row records its outcome in that same transaction).
 */
export async function sendDraft(context: Pick<ServiceContext, 'clock' | 'auditKey' | 'publicUrl' | 'metadata'>, em: EntityManager, caller: TeamCaller, envelopeId: string): Promise<void> {
  const envelope = await findTeamEnvelope(em, caller, envelopeId, { lock: true });
  const { problems, content } = await sendProblems(em, envelope);
  if (problems.length > 0 || !content) throw problems[0];
  await performSend(context, { em, caller, envelope, content, from: 'draft' });
}

/**
 * The send of a draft made earlier in this same transaction (a bulk send's row: writeCopies): the
 * send's own checks and steps (sendProblems, performSend), from the rows the copy wrote rather
 * than read back. No lock is taken: nobody else can see the envelope before this transaction
 * commits, so nothing can interleave with the send.
 */
export async function sendNewDraft(
  context: Pick<ServiceContext, 'clock' | 'auditKey' | 'publicUrl' | 'metadata'>,
  em: EntityManager,
  caller: TeamCaller,
  draft: Omit<DraftContent, 'peopleByAgent'> & { envelope: Envelope },
): Promise<void> {
  const { envelope, ...written } = draft;
  const { problems, content } = await sendProblems(em, envelope, 'draft', written);
  if (problems.length > 0 || !content) throw problems[0];
  await performSend(context, { em, caller, envelope, content, from: 'draft' });
}

/**
 * `draft → scheduled` (send later): checked now exactly as a send (the same problems, the first
 * thrown), then a guarded update records `sendAt`, and the send job is queued in the outbox in
 * this transaction, due at `sendAt` on the service clock (scheduled-send.ts runs it).
 */
async function scheduleDraft(
  context: Pick<ServiceContext, 'clock' | 'auditKey' | 'publicUrl' | 'metadata'>,
  em: EntityManager,
  caller: TeamCaller,
  schedule: { envelopeId: string; sendAt: Date },
): Promise<void> {
  const { envelopeId, sendAt } = schedule;
  const envelope = await findTeamEnvelope(em, caller, envelopeId, { lock: true });
  const { problems } = await sendProblems(em, envelope);
  if (problems.length > 0) throw problems[0];
  const now = context.clock.now();
  const changed = await em.nativeUpdate(Envelope, { id: envelope.id, status: 'draft' }, { status: 'scheduled', sendAt, updatedAt: now });
  if (changed !== 1) throw new EnvelopeNotDraftError(envelope.id, envelope.status);
  const workflow = apiKeyWorkflow(context, { em, caller, envelopeId: envelope.id, now });
  await recordEvent(workflow, 'envelope.scheduled', { sendAt: sendAt.toISOString() });
  await enqueue(
    em,
    OUTBOX_TOPICS.scheduledSend,
    { teamId: caller.teamId, workspaceId: caller.workspaceId, apiKeyId: caller.apiKeyId, envelopeId: envelope.id, sendAt: sendAt.toISOString() },
    { now, runAt: sendAt },
  );
}

/**
 * Snapshots the people, moves `from → sent` by a guarded update (so a draft, or a scheduled
 * envelope, is sent once whoever races), records `envelope.sent` and starts the first turn.
 */
export async function performSend(
  context: Pick<ServiceContext, 'clock' | 'auditKey' | 'publicUrl' | 'metadata'>,
  send: { em: EntityManager; caller: TeamCaller; envelope: Envelope; content: DraftContent; from: 'draft' | 'scheduled' },
): Promise<void> {
  const { em, caller, envelope, content, from } = send;
  const now = context.clock.now();

  for (const agent of content.agents) {
    agent.snapshot = content.peopleByAgent.get(agent.id) ?? [];
    agent.snapshotAt = now;
  }
  const expiresAt = expiresAtOf(envelope, now);
  await em.flush();
  // Guarded on `from`; the row it answers is merged into this transaction's entity (the
  // invitations quote the envelope as it is now sent, its expiresAt) instead of read back after.
  const [sent] = await em.execute<Record<string, unknown>[]>(
    `update envelope set status = 'sent', send_at = null, sent_at = ?, expires_at = ?, updated_at = ?, version = version + 1 where id = ? and status = ? returning *`,
    [now, expiresAt, now, envelope.id, from],
  );
  if (!sent) throw new EnvelopeNotDraftError(envelope.id, envelope.status);
  em.map(Envelope, sent);
  // The recipients and agents were read (or written) in this transaction under the envelope's lock: the first turn starts from them.
  const workflow = { ...apiKeyWorkflow(context, { em, caller, envelopeId: envelope.id, now }), known: { recipients: content.recipients, agents: content.agents } };
  await recordEvent(workflow, 'envelope.sent', { sentAt: now.toISOString(), expiresAt: expiresAt.toISOString(), ...(from === 'scheduled' ? { scheduled: true } : {}) });
  await advanceTurns(workflow);
}

function expiresAtOf(envelope: Envelope, sentAt: Date): Date {
  return new Date(sentAt.getTime() + envelope.expirationPeriodDays * DAY_MS);
}

/** One person a turn reaches: who, and by which channel (`embedded`: signs in the integrator's application, nothing is sent). */
export type PlannedInvitation = { recipientId: string; identifier: string; type: RecipientType; channel: MessageChannel | 'embedded'; to: string | null };

export type SendPlan = {
  /** The turns in the order they would start; the first starts at the send. */
  turns: PlannedInvitation[][];
  /** The invitations the send itself would queue (the first turn's), counted by channel. */
  messages: Partial<Record<MessageChannel, number>>;
  expiresAt: Date;
  /** When a recipient of the first turn would be reminded (if it has not completed by then). */
  reminders: { window: string; at: Date }[];
};

export type SendDryRun = {
  wouldSend: boolean;
  /** Every reason the send would be refused now, named and described exactly as the send would refuse. */
  problems: { name: string; description: string; context: Record<string, unknown> }[];
  /** What the send would do (null unless the envelope is a draft). */
  plan: SendPlan | null;
};

/**
 * What sending this envelope would do, as the send itself would compute it (its own checks, its
 * own turn rule), at `now`. Pure: reads the draft content sendProblems read, writes nothing.
 */
export function planSend(envelope: Envelope, content: DraftContent, now: Date): SendPlan {
  const signing = content.recipients.filter((recipient) => SIGNING_TYPES.includes(recipient.type));
  const requiredOrders = [...new Set(signing.filter((recipient) => recipient.required).map((recipient) => recipient.order))].sort((a, b) => a - b);
  const byId = new Map(content.recipients.map((recipient) => [recipient.id, recipient]));
  const invited = new Set<string>();
  const invitationsOf = (recipient: Recipient): PlannedInvitation[] => {
    invited.add(recipient.id);
    return content.agents
      .filter((agent) => agent.recipient.id === recipient.id)
      .flatMap((agent) => content.peopleByAgent.get(agent.id) ?? [])
      .map((person) => {
        const channel = isEmbedded(person) ? 'embedded' : channelOf(person);
        const to = channel === 'email' ? (person.email ?? null) : channel === 'sms' || channel === 'whatsapp' ? (person.phone ?? null) : null;
        return { recipientId: recipient.id, identifier: recipient.identifier, type: recipient.type, channel, to };
      });
  };
  // advanceTurns' rule: a turn is every acting recipient up to the next order that still has a
  // required recipient; an in-person signer is reached through its host (invited once).
  const turns: PlannedInvitation[][] = [];
  let previous = -Infinity;
  for (const order of requiredOrders) {
    const turn: PlannedInvitation[] = [];
    for (const recipient of signing.filter((candidate) => candidate.order > previous && candidate.order <= order)) {
      if (recipient.type !== 'in_person_signer') {
        turn.push(...invitationsOf(recipient));
        continue;
      }
      const host = recipient.hostedBy ? byId.get(recipient.hostedBy.id) : undefined;
      if (host && !invited.has(host.id)) turn.push(...invitationsOf(host));
    }
    turns.push(turn);
    previous = order;
  }
  const messages: Partial<Record<MessageChannel, number>> = {};
  for (const invitation of turns[0] ?? []) {
    if (invitation.channel !== 'embedded') messages[invitation.channel] = (messages[invitation.channel] ?? 0) + 1;
  }
  const expiresAt = expiresAtOf(envelope, now);
  const reminders = reminderWindows({
    activatedAt: now,
    expiresAt,
    initialDelayDays: envelope.reminderInitialDelayDays,
    repeatIntervalDays: envelope.reminderRepeatIntervalDays,
    beforeExpirationDays: envelope.reminderBeforeExpirationDays,
  });
  return { turns, messages, expiresAt, reminders };
}

/**
 * `PUT /envelopes/{id}/send?dryRun=true`, `sendEnvelope(id, dryRun: true)`: the send's own checks
 * and plan, in a transaction that is rolled back, so nothing changes (no status, no audit event,
 * no outbox row). `Envelope.NotFound` is thrown as the send throws it: there is nothing to plan.
 */
export async function dryRunSend(context: ServiceContext, options: { envelopeId: string }): Promise<SendDryRun> {
  const caller = await context.caller();
  return inRolledBackTransaction(context.em, async (em) => {
    const envelope = await findTeamEnvelope(em, caller, options.envelopeId);
    return dryRunOf(em, envelope, context.clock.now());
  });
}

/** The dry run of sending `envelope` (read in the caller's transaction), at `now`. */
export async function dryRunOf(em: EntityManager, envelope: Envelope, now: Date): Promise<SendDryRun> {
  const { problems, content } = await sendProblems(em, envelope);
  return {
    wouldSend: problems.length === 0,
    problems: problems.map((problem) => ({ name: problem.name, description: problem.description, context: problem.context })),
    plan: content ? planSend(envelope, content, now) : null,
  };
}
