import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import type { OwnerRecipients, RecipientExtras } from '../owner/owner.ts';
import { parseInput } from '../validation.ts';
import { Agent } from './agent.entity.ts';
import { type AgentInput, type ResolvedAgent, resolveAgentInputs } from './agent-input.ts';
import { Recipient } from './recipient.entity.ts';
import { newRecipientShape, recipientShape } from './recipient-keys.ts';

/*
 * An envelope's recipients (owner/owner.ts): the shared keys, and the people attached as agents
 * (inline, or a contact, contact group or team user of the caller's team). `agents`, when given
 * in a change, replaces the whole list.
 */

export const createRecipientInput = z.strictObject({ ...newRecipientShape, agents: recipientShape.agents.default([]) });

export const updateRecipientInput = z.strictObject(recipientShape).partial();

function writeAgents(em: EntityManager, recipient: Recipient, agents: ResolvedAgent[]) {
  agents.forEach((agent, position) => {
    em.persist(
      em.create(Agent, {
        recipient,
        position,
        kind: agent.kind,
        info: agent.info,
        contact: agent.contact,
        group: agent.group,
        user: agent.user,
      }),
    );
  });
}

/** The agents, checked against the caller's team, written once the recipient is (after the old ones are removed on a change). */
async function resolveAgents(em: EntityManager, teamId: string, agents: AgentInput[], replace: boolean): Promise<RecipientExtras<Recipient>> {
  const resolved = await resolveAgentInputs(em, teamId, agents, 'recipient.agents');
  return {
    properties: {},
    details: { agentCount: resolved.length },
    agentCount: async () => resolved.length,
    async write(em, recipient) {
      // A corrected sent envelope's old agents were revoked first (owner/correction.ts) and stay.
      if (replace) await em.nativeDelete(Agent, { recipient, revokedAt: null });
      writeAgents(em, recipient, resolved);
    },
  };
}

export const envelopeRecipients: OwnerRecipients<Recipient> = {
  entity: Recipient,
  parseNew(body) {
    const input = parseInput(createRecipientInput, body, 'recipient');
    const { agents, ...keys } = input;
    return { keys, given: Object.keys(input), resolve: (em, teamId) => resolveAgents(em, teamId, agents, false) };
  },
  parseChange(body) {
    const input = parseInput(updateRecipientInput, body, 'recipient');
    const { agents, ...keys } = input;
    return {
      keys,
      given: Object.keys(input),
      resolve: async (em, teamId) =>
        agents === undefined
          ? { properties: {}, details: {}, agentCount: (em, recipient) => (recipient ? em.count(Agent, { recipient, revokedAt: null }) : Promise.resolve(0)) }
          : resolveAgents(em, teamId, agents, true),
    };
  },
};
