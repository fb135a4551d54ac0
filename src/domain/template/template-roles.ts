import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import type { Contact } from '../contact/contact.entity.ts';
import type { ContactGroup } from '../contact/contact-group.entity.ts';
import type { OwnerRecipients } from '../owner/owner.ts';
import { type AgentInput, resolveAgentInputs } from '../recipient/agent-input.ts';
import { newRecipientShape, recipientChangeShape } from '../recipient/recipient-keys.ts';
import type { TeamUser } from '../team/team-user.entity.ts';
import { parseInput } from '../validation.ts';
import { TemplateRecipient } from './template-recipient.entity.ts';

/*
 * Roles of a template (docs/reference/interface-spec.md §2.7, owner/owner.ts): the envelope recipient's keys and rules (types,
 * order, unique identifier, host and delegator links, removal refused while bound), without
 * agents, plus `fixed` and at most one pre-assigned person: a team user, a contact or a contact
 * group of the owning team.
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
    ...newRecipientShape,
    fixed: assignmentShape.fixed.default(false),
    userId: assignmentShape.userId.optional(),
    contactId: assignmentShape.contactId.optional(),
    contactGroupId: assignmentShape.contactGroupId.optional(),
  })
  .superRefine(atMostOneAssignment);

export const updateRoleInput = z
  .strictObject({ ...recipientChangeShape, ...assignmentShape })
  .partial()
  .superRefine(atMostOneAssignment);

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
  const [resolved] = await resolveAgentInputs(em, teamId, [agent], () => `recipient.${key}`);
  return { user: resolved.user, contact: resolved.contact, contactGroup: resolved.group };
}

export const templateRoles: OwnerRecipients<TemplateRecipient> = {
  entity: TemplateRecipient,
  parseNew(body) {
    const input = parseInput(createRoleInput, body, 'recipient');
    const { fixed, userId, contactId, contactGroupId, ...keys } = input;
    return {
      keys,
      given: Object.keys(input),
      resolve: async (em, teamId) => ({
        properties: { fixed, ...(await resolveAssignment(em, teamId, { userId, contactId, contactGroupId })) },
        details: { fixed },
      }),
    };
  },
  parseChange(body) {
    const input = parseInput(updateRoleInput, body, 'recipient');
    const { fixed, userId, contactId, contactGroupId, ...keys } = input;
    // Giving any of the assignment keys replaces the pre-assignment (null clears it).
    const reassigned = [userId, contactId, contactGroupId].some((value) => value !== undefined);
    return {
      keys,
      given: Object.keys(input),
      resolve: async (em, teamId) => ({
        properties: {
          ...(fixed !== undefined ? { fixed } : {}),
          ...(reassigned ? await resolveAssignment(em, teamId, { userId, contactId, contactGroupId }) : {}),
        },
        details: {},
      }),
    };
  },
};
