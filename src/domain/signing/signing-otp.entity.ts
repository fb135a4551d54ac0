import { defineEntity, p } from '@mikro-orm/core';
import { baseColumns } from '../../db/columns.ts';
import { Agent } from '../recipient/agent.entity.ts';
import { SigningToken } from './signing-token.entity.ts';

/**
 * A one-time passcode sent to the phone of a signing link's person (docs/reference/contract.md §7). Only an HMAC of
 * the code is kept (`codeHash`, keyed from the audit key: six digits are a million values, which a
 * plain hash would give away at once). The newest row of a link is its only live code; `attempts`
 * is counted by a guarded update (`where attempts < 5`), so racing guesses never get more than five
 * comparisons. `verifiedAt` set: the link is verified until `verifiedAt` + the verification period.
 * Rows also count resends per person (agent and `personIndex`).
 */
export const SigningOtpSchema = defineEntity({
  name: 'SigningOtp',
  tableName: 'signing_otp',
  properties: {
    ...baseColumns(),
    token: () => p.manyToOne(SigningToken).ref().deleteRule('cascade').index(),
    agent: () => p.manyToOne(Agent).ref().deleteRule('cascade'),
    personIndex: p.integer().default(0),
    channel: p.string().length(16),
    codeHash: p.string().length(64),
    expiresAt: p.datetime(),
    attempts: p.integer().default(0),
    verifiedAt: p.datetime().nullable(),
  },
  indexes: [{ name: 'signing_otp_agent_person_created_idx', properties: ['agent', 'personIndex', 'createdAt'] }],
});

export class SigningOtp extends SigningOtpSchema.class {}
SigningOtpSchema.setClass(SigningOtp);
