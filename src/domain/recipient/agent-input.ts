import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { isUuid } from '../../shared/ids.ts';
import { Contact } from '../contact/contact.entity.ts';
import { ContactGroupNotFoundError, ContactNotFoundError } from '../contact/contact.errors.ts';
import { ContactGroup } from '../contact/contact-group.entity.ts';
import { type AgentInfo, personKeys, phoneMethodNeedsPhone } from '../person/person.ts';
import { TeamUser } from '../team/team-user.entity.ts';
import { UserNotFoundError } from '../team/team-user.errors.ts';
import type { AgentKind } from './agent.entity.ts';

export const MAX_AGENTS_PER_RECIPIENT = 50;

// The person's schema lives in person/; re-exported here for the agent's callers.
export { agentInfoSchema, e164Phone } from '../person/person.ts';

/**
 * An agent's inline person (envelopes, template roles, jumpstart): a person, and `embedded: true`
 * for one the integrator shows the signing page to in its own application (issue 21): such an
 * agent is never sent an invitation, reminder or "your turn" message; the integrator asks for a
 * signing URL instead. Only inline people can say so: a contact or team user is an address book
 * entry, not a decision about one envelope.
 */
export const recipientAgentInfoSchema = z.strictObject({ ...personKeys, embedded: z.boolean({ error: 'must be true or false' }).nullish() }).superRefine(phoneMethodNeedsPhone);

/** An agent is exactly one of: inline `info`, `contactId`, `groupId`, `userId` (docs/reference/interface-spec.md §2.4). */
export const agentInputSchema = z
  .strictObject({
    info: recipientAgentInfoSchema.optional(),
    contactId: z.string().optional(),
    groupId: z.string().optional(),
    userId: z.string().optional(),
  })
  .superRefine((agent, check) => {
    const given = (['info', 'contactId', 'groupId', 'userId'] as const).filter((key) => agent[key] !== undefined);
    if (given.length !== 1) {
      check.addIssue({ code: 'custom', path: [], message: 'must have exactly one of info, contactId, groupId, userId' });
    }
  });

export const agentsSchema = z.array(agentInputSchema).max(MAX_AGENTS_PER_RECIPIENT, `at most ${MAX_AGENTS_PER_RECIPIENT} agents`);

export type AgentInput = z.output<typeof agentInputSchema>;

export type ResolvedAgent = {
  kind: AgentKind;
  info: AgentInfo | null;
  contact: Contact | null;
  group: ContactGroup | null;
  user: TeamUser | null;
};

/**
 * Checks every reference an agent list makes against the caller's team: a contact, group or user
 * of another team is reported exactly like one that does not exist. Each referenced row is
 * share-locked for the rest of the transaction, so a concurrent delete of it (which checks for
 * referencing agents under its own lock) either finishes first, and the reference is reported
 * missing, or waits until this agent exists and is refused as in use.
 */
export async function resolveAgentInputs(
  em: EntityManager,
  teamId: string,
  agents: AgentInput[],
  /**
   * Where an agent's reference sits in the request, for the error's `context.path`: the list's
   * path (`recipients[0].agents` gives `recipients[0].agents[1].contactId`), or a function of the
   * agent's index and key.
   */
  path: string | ((index: number, key: 'contactId' | 'groupId' | 'userId') => string),
): Promise<ResolvedAgent[]> {
  const pathOf = typeof path === 'string' ? (index: number, key: string) => `${path}[${index}].${key}` : path;
  const resolved: ResolvedAgent[] = [];
  for (const [index, agent] of agents.entries()) {
    if (agent.info) {
      resolved.push({ kind: 'info', info: normaliseInfo(agent.info), contact: null, group: null, user: null });
    } else if (agent.contactId !== undefined) {
      const contact = isUuid(agent.contactId) ? await em.findOne(Contact, { id: agent.contactId, team: teamId }, { lockMode: LockMode.PESSIMISTIC_READ }) : null;
      if (!contact) throw new ContactNotFoundError(agent.contactId, pathOf(index, 'contactId'));
      resolved.push({ kind: 'contact', info: null, contact, group: null, user: null });
    } else if (agent.groupId !== undefined) {
      const group = isUuid(agent.groupId) ? await em.findOne(ContactGroup, { id: agent.groupId, team: teamId }, { lockMode: LockMode.PESSIMISTIC_READ }) : null;
      if (!group) throw new ContactGroupNotFoundError(agent.groupId, pathOf(index, 'groupId'));
      resolved.push({ kind: 'group', info: null, contact: null, group, user: null });
    } else if (agent.userId !== undefined) {
      const user = isUuid(agent.userId) ? await em.findOne(TeamUser, { id: agent.userId, team: teamId }, { lockMode: LockMode.PESSIMISTIC_READ }) : null;
      if (!user) throw new UserNotFoundError(agent.userId, pathOf(index, 'userId'));
      resolved.push({ kind: 'user', info: null, contact: null, group: null, user });
    }
  }
  return resolved;
}

function normaliseInfo(info: z.output<typeof recipientAgentInfoSchema>): AgentInfo {
  return {
    name: info.name,
    email: info.email ?? null,
    phone: info.phone ?? null,
    locale: info.locale ?? null,
    phoneContactMethod: info.phoneContactMethod ?? null,
    // Stored only when true, so every other agent keeps its shape on both faces.
    ...(info.embedded ? { embedded: true } : {}),
  };
}
