import type { RequestContext } from '../context.ts';
import type { Document } from '../domain/document/document.entity.ts';
import type { Envelope } from '../domain/envelope/envelope.entity.ts';
import type { FieldView } from '../domain/field/field-view.entity.ts';
import type { Field } from '../domain/field/field.entity.ts';
import type { Agent } from '../domain/recipient/agent.entity.ts';
import type { ContactGroup } from '../domain/contact/contact-group.entity.ts';
import type { Contact } from '../domain/contact/contact.entity.ts';
import type { TeamUser } from '../domain/team/team-user.entity.ts';
import type { Recipient } from '../domain/recipient/recipient.entity.ts';

/** The REST shapes of the spec's resources. Timestamps are ISO 8601 strings, absent ones null. */

const iso = (date: Date | null | undefined) => (date ? date.toISOString() : null);

export function envelopeJson(envelope: Envelope) {
  return {
    id: envelope.id,
    name: envelope.name,
    status: envelope.status,
    expirationPeriodDays: envelope.expirationPeriodDays,
    reminderInitialDelayDays: envelope.reminderInitialDelayDays,
    reminderRepeatIntervalDays: envelope.reminderRepeatIntervalDays,
    reminderBeforeExpirationDays: envelope.reminderBeforeExpirationDays,
    context: envelope.context,
    createdAt: iso(envelope.createdAt),
    updatedAt: iso(envelope.updatedAt),
    sentAt: iso(envelope.sentAt),
    expiresAt: iso(envelope.expiresAt),
    completedAt: iso(envelope.completedAt),
    voidedAt: iso(envelope.voidedAt),
  };
}

export function documentJson(document: Document) {
  return {
    id: document.id,
    name: document.name,
    order: document.order,
    status: document.status ?? null,
    context: document.context,
    pageCount: document.pageCount,
    pages: document.pages.map((page, index) => ({ index, width: page.width, height: page.height, rotation: page.rotation })),
    sha256: document.contentSha256,
    byteSize: Number(document.byteSize),
    createdAt: iso(document.createdAt),
  };
}

export function agentJson(agent: Agent) {
  const reference =
    agent.kind === 'info'
      ? { info: agent.info }
      : agent.kind === 'contact'
        ? { contactId: agent.contact?.id ?? null }
        : agent.kind === 'group'
          ? { groupId: agent.group?.id ?? null }
          : { userId: agent.user?.id ?? null };
  return { id: agent.id, kind: agent.kind, ...reference };
}

export async function recipientJson(context: RequestContext, recipient: Recipient) {
  const agents = await context.loaders.agentsByRecipient.load(recipient.id);
  return {
    id: recipient.id,
    identifier: recipient.identifier,
    roleName: recipient.roleName,
    type: recipient.type,
    order: recipient.order,
    required: recipient.required,
    color: recipient.color,
    hostedById: recipient.hostedBy?.id ?? null,
    delegatedById: recipient.delegatedBy?.id ?? null,
    agents: agents.map(agentJson),
    activatedAt: iso(recipient.activatedAt),
    completedAt: iso(recipient.completedAt),
    delegatedAt: iso(recipient.delegatedAt),
    removedAt: iso(recipient.removedAt),
  };
}

export function viewJson(view: FieldView) {
  return {
    documentId: view.document.id,
    page: view.page,
    location: { x: Number(view.x), y: Number(view.y) },
    size: { width: Number(view.width), height: Number(view.height) },
  };
}

export async function fieldJson(context: RequestContext, field: Field) {
  const views = await context.loaders.viewsByField.load(field.id);
  return {
    id: field.id,
    identifier: field.identifier,
    type: field.type,
    recipientId: field.recipient?.id ?? null,
    label: field.label ?? null,
    tooltip: field.tooltip ?? null,
    required: field.required,
    readonly: field.readonly,
    value: field.value ?? null,
    config: field.config,
    views: views.map(viewJson),
    submittedAt: iso(field.submittedAt),
  };
}

export function contactJson(contact: Contact) {
  return {
    id: contact.id,
    name: contact.name,
    email: contact.email ?? null,
    phone: contact.phone ?? null,
    locale: contact.locale ?? null,
    phoneContactMethod: contact.phoneContactMethod ?? null,
    createdAt: contact.createdAt.toISOString(),
    updatedAt: contact.updatedAt.toISOString(),
  };
}

export function contactGroupJson(group: ContactGroup, memberCount: number) {
  return {
    id: group.id,
    name: group.name,
    memberCount,
    createdAt: group.createdAt.toISOString(),
    updatedAt: group.updatedAt.toISOString(),
  };
}

export function userJson(user: TeamUser) {
  return {
    id: user.id,
    name: user.name,
    email: user.email,
    phone: user.phone ?? null,
    locale: user.locale,
    createdAt: user.createdAt.toISOString(),
    updatedAt: user.updatedAt.toISOString(),
  };
}
