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
 * `expiresAt` and `embedding`: an embedded session's credential (issue 21), made when a one-use
 * signing URL is opened; it ends at `expiresAt` (invitation links never do, they die with the
 * envelope) and its page may be framed by `embedding.frameOrigin` only.
 */
export type SigningEmbedding = { urlId: string; frameOrigin: string | null; returnUrl: string | null; locale: string | null };

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
    expiresAt: p.datetime().nullable(),
    embedding: p.json<SigningEmbedding>().nullable(),
  },
});

export class SigningToken extends SigningTokenSchema.class {}
SigningTokenSchema.setClass(SigningToken);
