import { defineEntity, p } from '@mikro-orm/core';
import { baseColumns, type JsonObject, updatedAtColumn } from '../../db/columns.ts';
import { Team } from '../team/team.entity.ts';
import { Template } from '../template/template.entity.ts';

/**
 * A public link (issue 36): a page at `PUBLIC_URL/f/<slug>` where anyone may make, and sign, an
 * envelope from one template as one of its roles. `uses` only grows, by the guarded update
 * `uses < max_uses` in the transaction that makes the envelope, so `maxUses` holds under racing
 * visitors. The slug is random (256 bits), not the id: the id is the team's handle, the slug the
 * public's. Writes are raw guarded statements (public-link.service.ts); the entity describes the
 * table for the migrations.
 */
export const PublicLinkSchema = defineEntity({
  name: 'PublicLink',
  tableName: 'public_link',
  properties: {
    ...baseColumns(),
    updatedAt: updatedAtColumn(),
    team: () => p.manyToOne(Team).ref().deleteRule('cascade'),
    template: () => p.manyToOne(Template).ref().deleteRule('cascade').index(),
    /** The template role the visitor becomes, by its identifier. */
    role: p.string().length(64),
    name: p.string().length(200).nullable(),
    slug: p.string().length(64).unique(),
    verifyEmail: p.boolean().default(true),
    maxUses: p.integer().nullable(),
    uses: p.integer().default(0),
    expiresAt: p.datetime().nullable(),
    disabledAt: p.datetime().nullable(),
    redirectUrl: p.string().length(2000).nullable(),
    /** Field values by field identifier, checked against the template's fields when set. */
    prefill: p.json<JsonObject>().default('{}'),
    /** Values for the template's data tags (README "Data merge"), checked against them when set; merged into each envelope's documents. */
    data: p.json<JsonObject>().nullable(),
    /** `refuse` or `blank`: what a data tag whose path `data` lacks does. */
    missingData: p.string().length(8).default('refuse'),
    /** The API key that made the link: the actor its envelopes' trails name (as a bulk send's). */
    apiKeyId: p.uuid(),
    workspaceId: p.uuid(),
  },
  indexes: [{ name: 'public_link_team_created_idx', properties: ['team', 'createdAt', 'id'] }],
  checks: [{ name: 'public_link_uses_check', expression: 'uses >= 0 and (max_uses is null or uses <= max_uses)' }],
});

export class PublicLink extends PublicLinkSchema.class {}
PublicLinkSchema.setClass(PublicLink);

/**
 * One visitor's try at a link: who they said they are, and (with `verifyEmail`) the HMAC of the
 * code mailed to them, its expiry and the guesses taken. Nothing else exists until the code is
 * entered: an abandoned visit leaves only this row. `tokenHash` is the SHA-256 of the secret the
 * visitor's page holds between the two forms; `envelopeId` is set in the transaction that made it.
 */
export const PublicLinkVisitSchema = defineEntity({
  name: 'PublicLinkVisit',
  tableName: 'public_link_visit',
  properties: {
    ...baseColumns(),
    publicLink: () => p.manyToOne(PublicLink).ref().deleteRule('cascade'),
    tokenHash: p.string().length(64).unique(),
    name: p.string().length(200),
    email: p.string().length(320),
    phone: p.string().length(32).nullable(),
    locale: p.string().length(10),
    codeHash: p.string().length(64),
    codeExpiresAt: p.datetime(),
    attempts: p.integer().default(0),
    verifiedAt: p.datetime().nullable(),
    envelopeId: p.uuid().nullable(),
    ip: p.string().length(64).nullable(),
    userAgent: p.string().length(512).nullable(),
  },
  // The resend rules count a link's codes to one address in the last hour.
  indexes: [{ name: 'public_link_visit_link_email_idx', properties: ['publicLink', 'email', 'createdAt'] }],
});

export class PublicLinkVisit extends PublicLinkVisitSchema.class {}
PublicLinkVisitSchema.setClass(PublicLinkVisit);
