import { defineEntity, p } from '@mikro-orm/core';
import { baseColumns } from '../../db/columns.ts';
import { Agent } from '../recipient/agent.entity.ts';
import { Recipient } from '../recipient/recipient.entity.ts';

/**
 * One agent's approval of an approver role (issue 33). At most one per agent and role (the
 * unique key): the quorum counts distinct agents, so a second person of the same group agent, or
 * a retried request, cannot count twice whatever raced. `madeQuorum` marks the approval that
 * completed the role.
 */
export const ApprovalSchema = defineEntity({
  name: 'Approval',
  tableName: 'approval',
  properties: {
    ...baseColumns(),
    recipient: () => p.manyToOne(Recipient).ref().deleteRule('cascade'),
    agent: () => p.manyToOne(Agent).ref().deleteRule('cascade').index(),
    personIndex: p.integer().default(0),
    comment: p.text().nullable(),
    madeQuorum: p.boolean().default(false),
  },
  uniques: [{ name: 'approval_recipient_agent_unique', properties: ['recipient', 'agent'] }],
});

export class Approval extends ApprovalSchema.class {}
ApprovalSchema.setClass(Approval);
