import { defineEntity, p } from '@mikro-orm/core';
import { baseColumns } from '../../db/columns.ts';
import { Agent } from '../recipient/agent.entity.ts';
import { Recipient } from '../recipient/recipient.entity.ts';

/**
 * A recipient's signing link secret, bound to one recipient and one agent (docs/reference/contract.md §7). Only
 * its SHA-256 is stored. `personIndex` picks the person within the agent's snapshot (a group
 * agent expands to several people, each with an own link). `lastUsedAt` is set once, when the
 * link is first opened (the guarded update that records `signing.viewed` exactly once).
 * `revokedAt`: the link died (the envelope closed, or the role was delegated away).
 */
export const SigningTokenSchema = defineEntity({
  name: 'SigningToken',
  tableName: 'signing_token',
  properties: {
    ...baseColumns(),
    recipient: () => p.manyToOne(Recipient).ref().deleteRule('cascade').index(),
    agent: () => p.manyToOne(Agent).ref().deleteRule('cascade').index(),
    personIndex: p.integer().default(0),
    tokenHash: p.string().length(64).unique(),
    revokedAt: p.datetime().nullable(),
    lastUsedAt: p.datetime().nullable(),
  },
});

export class SigningToken extends SigningTokenSchema.class {}
SigningTokenSchema.setClass(SigningToken);
