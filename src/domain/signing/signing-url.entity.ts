import { defineEntity, p } from '@mikro-orm/core';
import { baseColumns } from '../../db/columns.ts';
import { Agent } from '../recipient/agent.entity.ts';
import { Recipient } from '../recipient/recipient.entity.ts';
import { ApiKey } from '../team/api-key.entity.ts';
import { SigningToken } from './signing-token.entity.ts';

/**
 * A one-use signing URL for embedded signing (issue 21), asked for by the team's API key. Only
 * the SHA-256 of its token is stored. Opening it (`GET /sign/{token}`) consumes it by a guarded
 * update (`where consumed_at is null and expires_at > now`) and makes the page's session
 * credential (`session`, a signing token with its own expiry); a second open, or one after
 * `expiresAt`, gets the "link used" / "link expired" page.
 */
export const SigningUrlSchema = defineEntity({
  name: 'SigningUrl',
  tableName: 'signing_url',
  properties: {
    ...baseColumns(),
    recipient: () => p.manyToOne(Recipient).ref().deleteRule('cascade').index(),
    agent: () => p.manyToOne(Agent).ref().deleteRule('cascade'),
    personIndex: p.integer().default(0),
    tokenHash: p.string().length(64).unique(),
    expiresAt: p.datetime(),
    consumedAt: p.datetime().nullable(),
    session: () => p.manyToOne(SigningToken).ref().nullable().deleteRule('set null'),
    frameOrigin: p.string().length(300).nullable(),
    returnUrl: p.string().length(2000).nullable(),
    locale: p.string().length(10).nullable(),
    createdBy: () => p.manyToOne(ApiKey).ref().nullable().deleteRule('set null'),
  },
});

export class SigningUrl extends SigningUrlSchema.class {}
SigningUrlSchema.setClass(SigningUrl);
