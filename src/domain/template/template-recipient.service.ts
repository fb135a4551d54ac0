import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { isUuid } from '../../shared/ids.ts';
import { TEMPLATE_CAPACITY, ensureCapacity } from '../capacity.ts';
import type { Contact } from '../contact/contact.entity.ts';
import type { ContactGroup } from '../contact/contact-group.entity.ts';
import { Field } from '../field/field.entity.ts';
import type { TeamUser } from '../team/team-user.entity.ts';
import { resolveAgentInputs, type AgentInput } from '../recipient/agent-input.ts';
import { RecipientDuplicateIdentifierError, RecipientNotFoundError } from '../recipient/recipient.errors.ts';
import { checkRecipientLinks, checkRemovable, checkTypeChange, firstFreeColor, recipientShape } from '../recipient/recipient.service.ts';
import type { ServiceContext } from '../service-context.ts';
import { parseInput } from '../validation.ts';
import { TemplateRecipient } from './template-recipient.entity.ts';
import type { Template } from './template.entity.ts';
import { readRecipient, type TemplateRecipientData } from '../owner/owner.read.ts';
import { auditTemplateChange, changeTemplate, createInTemplate, type TemplateChange } from './template.service.ts';

/*
 * Roles of a template (spec §2.7): the envelope recipient's keys and rules (types, order, unique
 * identifier, host and delegator links, removal refused while bound), plus `fixed` and at most one
 * pre-assigned person: a team user, a contact or a contact group of the owning team.
 */

const assignmentKeys = ['userId', 'contactId', 'contactGroupId'] as const;
type AssignmentKey = (typeof assignmentKeys)[number];

const assignmentShape = {
  fixed: z.boolean({ error: 'must be true or false' }),
  userId: z.string({ error: 'must be a user id' }).nullable(),
  contactId: z.string({ error: 'must be a contact id' }).nullable(),
  contactGroupId: z.string({ error: 'must be a contact group id' }).nullable(),
};

function atMostOneAssignment(role: Partial<Record<AssignmentKey, string | null>>, check: z.RefinementCtx) {
  const given = assignmentKeys.filter((key) => role[key] != null);
  if (given.length > 1) check.addIssue({ code: 'custom', path: [given[1]], message: 'a role has at most one pre-assigned person: give one of userId, contactId, contactGroupId' });
}

export const createRoleInput = z
  .strictObject({
    type: recipientShape.type,
    identifier: recipientShape.identifier,
    roleName: recipientShape.roleName,
    order: recipientShape.order.default(0),
    required: recipientShape.required.default(true),
    color: recipientShape.color.optional(),
    hostedById: recipientShape.hostedById.optional(),
    delegatedById: recipientShape.delegatedById.optional(),
    fixed: assignmentShape.fixed.default(false),
    userId: assignmentShape.userId.optional(),
    contactId: assignmentShape.contactId.optional(),
    contactGroupId: assignmentShape.contactGroupId.optional(),
  })
  .superRefine(atMostOneAssignment);

const { agents: _agents, ...roleShape } = recipientShape;
export const updateRoleInput = z.strictObject({ ...roleShape, ...assignmentShape }).partial().superRefine(atMostOneAssignment);

type Assignment = { user: TeamUser | null; contact: Contact | null; contactGroup: ContactGroup | null };

/**
 * The pre-assigned person, checked as an agent reference is (the caller's team only; another
 * team's contact, group or user reads exactly like an unknown one, with `context.path`), and share
 * locked the same way so a concurrent delete of it waits or is seen.
 */
async function resolveAssignment(em: EntityManager, teamId: string, role: Partial<Record<AssignmentKey, string | null>>): Promise<Assignment> {
  const key = assignmentKeys.find((candidate) => role[candidate] != null);
  if (key === undefined) return { user: null, contact: null, contactGroup: null };
  const id = role[key] as string;
  const agent: AgentInput = key === 'userId' ? { userId: id } : key === 'contactId' ? { contactId: id } : { groupId: id };
  const [resolved] = await resolveAgentInputs(em, teamId, [agent], 'recipient', () => `recipient.${key}`);
  return { user: resolved.user, contact: resolved.contact, contactGroup: resolved.group };
}

function templateSibling(em: EntityManager, template: Template) {
  return (id: string) => em.findOne(TemplateRecipient, { id, template });
}

async function ensureIdentifierFree(em: EntityManager, template: Template, identifier: string, exceptId?: string) {
  const existing = await em.findOne(TemplateRecipient, { template, identifier }, { fields: ['id'] });
  if (existing && existing.id !== exceptId) throw new RecipientDuplicateIdentifierError(identifier, 'template');
}

async function findRole(em: EntityManager, template: Template, recipientId: string): Promise<TemplateRecipient> {
  if (!isUuid(recipientId)) throw new RecipientNotFoundError(recipientId, 'template');
  const role = await em.findOne(TemplateRecipient, { id: recipientId, template });
  if (!role) throw new RecipientNotFoundError(recipientId, 'template');
  return role;
}

async function boundRoleIds(em: EntityManager, role: TemplateRecipient, link: 'hostedBy' | 'delegatedBy'): Promise<string[]> {
  const bound = await em.find(TemplateRecipient, { [link]: role, template: role.template }, { fields: ['id'] });
  return bound.map((other) => other.id);
}

function audit(context: ServiceContext, change: TemplateChange, type: string, details: Record<string, unknown>) {
  return auditTemplateChange(context, { ...change, templateId: change.template.id }, type, details);
}

/** Adds a role to a template your team owns. Idempotent per `Idempotency-Key`. */
export async function addTemplateRecipient(
  context: ServiceContext,
  options: { templateId: string; input: unknown; idempotencyKey?: string },
): Promise<TemplateRecipientData> {
  const input = parseInput(createRoleInput, options.input, 'recipient');
  return createInTemplate(
    context,
    { templateId: options.templateId, idempotencyKey: options.idempotencyKey, request: { operation: 'addTemplateRecipient', input: options.input } },
    async (change) => {
      const { em, template } = change;
      const existing = await em.find(TemplateRecipient, { template }, { fields: ['id', 'color'] });
      ensureCapacity('Template', 'recipients', TEMPLATE_CAPACITY.recipients, existing.length, 1);
      await ensureIdentifierFree(em, template, input.identifier);
      const links = await checkRecipientLinks(
        { type: input.type, hostedById: input.hostedById ?? null, delegatedById: input.delegatedById ?? null },
        'recipient',
        templateSibling(em, template),
        'template',
      );
      const assignment = await resolveAssignment(em, change.caller.teamId, input);
      const role = em.create(TemplateRecipient, {
        template,
        identifier: input.identifier,
        roleName: input.roleName,
        type: input.type,
        order: input.order,
        required: input.required,
        color: input.color ?? firstFreeColor(existing.map((other) => other.color)),
        fixed: input.fixed,
        hostedBy: links.hostedBy,
        delegatedBy: links.delegatedBy,
        ...assignment,
      });
      em.persist(role);
      await em.flush();
      await audit(context, change, 'recipient.added', { recipientId: role.id, identifier: role.identifier, type: role.type, fixed: role.fixed });
      return role.id;
    },
    (reading, recipientId) => readRecipient(reading, { owner: { kind: 'template', id: options.templateId }, recipientId }),
  );
}

/**
 * Changes a role of a template your team owns; only given keys change. Giving any of `userId`,
 * `contactId`, `contactGroupId` replaces the pre-assignment (null clears it).
 */
export async function updateTemplateRecipient(
  context: ServiceContext,
  options: { templateId: string; recipientId: string; input: unknown },
): Promise<TemplateRecipientData> {
  const input = parseInput(updateRoleInput, options.input, 'recipient');
  await changeTemplate(context, options.templateId, async (change) => {
    const { em, template } = change;
    const role = await findRole(em, template, options.recipientId);
    if (Object.keys(input).length === 0) return;
    if (input.identifier !== undefined && input.identifier !== role.identifier) await ensureIdentifierFree(em, template, input.identifier, role.id);
    const type = input.type ?? role.type;
    await checkTypeChange(role, type, {
      hostedIds: () => boundRoleIds(em, role, 'hostedBy'),
      fieldIds: async () => (await em.find(Field, { templateRecipient: role }, { fields: ['id'] })).map((field) => field.id),
    });
    const links = await checkRecipientLinks(
      {
        id: role.id,
        type,
        hostedById: input.hostedById !== undefined ? input.hostedById : type === 'in_person_signer' ? (role.hostedBy?.id ?? null) : null,
        delegatedById: input.delegatedById !== undefined ? input.delegatedById : (role.delegatedBy?.id ?? null),
      },
      'recipient',
      templateSibling(em, template),
      'template',
    );
    const reassigned = assignmentKeys.some((key) => input[key] !== undefined);
    const assignment = reassigned ? await resolveAssignment(em, change.caller.teamId, input) : {};
    em.assign(role, {
      type,
      identifier: input.identifier ?? role.identifier,
      roleName: input.roleName ?? role.roleName,
      order: input.order ?? role.order,
      required: input.required ?? role.required,
      color: input.color ?? role.color,
      fixed: input.fixed ?? role.fixed,
      hostedBy: links.hostedBy,
      delegatedBy: links.delegatedBy,
      ...assignment,
    });
    await audit(context, change, 'recipient.updated', { recipientId: role.id, changed: Object.keys(input) });
  });
  return readRecipient(context, { owner: { kind: 'template', id: options.templateId }, recipientId: options.recipientId });
}

/**
 * Removes a role of a template your team owns, with its fields (foreign-key cascade). Refused while
 * another role is hosted by it or delegates through it; an unknown role is `Recipient.NotFound`.
 */
export async function deleteTemplateRecipient(context: ServiceContext, options: { templateId: string; recipientId: string }): Promise<void> {
  await changeTemplate(context, options.templateId, async (change) => {
    const { em, template } = change;
    const role = await findRole(em, template, options.recipientId);
    await checkRemovable(role.id, {
      hostedIds: () => boundRoleIds(em, role, 'hostedBy'),
      delegatingIds: () => boundRoleIds(em, role, 'delegatedBy'),
    });
    await em.nativeDelete(TemplateRecipient, { id: role.id, template });
    await audit(context, change, 'recipient.removed', { recipientId: role.id, identifier: role.identifier });
  });
}
