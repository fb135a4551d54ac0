import { defineEntity, p } from '@mikro-orm/core';
import { baseColumns } from '../../db/columns.ts';
import { Agent } from '../recipient/agent.entity.ts';

/**
 * The ledger of phone messages (SMS, WhatsApp) per person of an agent, for the daily cap
 * (PHONE_MESSAGES_PER_DAY): one row per outbox message that was allowed to go by phone, written
 * under the agent's row lock after counting the last 24 hours. `outboxMessageId` is unique, so a
 * message retried after a failure or a crash keeps its one place and is never counted twice.
 */
export const PhoneMessageSchema = defineEntity({
  name: 'PhoneMessage',
  tableName: 'phone_message',
  properties: {
    ...baseColumns(),
    agent: () => p.manyToOne(Agent).ref().deleteRule('cascade'),
    personIndex: p.integer().default(0),
    envelopeId: p.uuid(),
    /** invitation, reminder or otp. */
    kind: p.string().length(16),
    outboxMessageId: p.uuid().unique(),
  },
  indexes: [{ name: 'phone_message_agent_person_created_idx', properties: ['agent', 'personIndex', 'createdAt'] }],
});

export class PhoneMessage extends PhoneMessageSchema.class {}
PhoneMessageSchema.setClass(PhoneMessage);
