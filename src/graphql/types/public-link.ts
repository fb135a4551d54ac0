import { type PublicLinkData, type PublicLinkPageData, readPublicLink, readPublicLinkPage } from '../../domain/public-link/public-link.read.ts';
import { createPublicLink, deletePublicLink, updatePublicLink } from '../../domain/public-link/public-link.service.ts';
import { builder } from '../builder.ts';
import { withoutNulls } from '../input.ts';
import { DeletedPayload, keysetConnection, MissingDataMode, pageArgs } from './common.ts';

/*
 * Public links on the GraphQL face (REST: /templates/{id}/public-links, /public-links). Every
 * rule is the domain's (public-link.service.ts); this only translates.
 */

const PublicLinkStatusEnum = builder.enumType('PublicLinkStatus', {
  description: 'active: visitors may use it; disabled: turned off (its page answers like an unknown link’s); exhausted: maxUses reached; expired: past expiresAt.',
  values: ['active', 'disabled', 'exhausted', 'expired'] as const,
});

export const PublicLinkType = builder.objectRef<PublicLinkData>('PublicLink').implement({
  description: 'A page where anyone may make and sign an envelope from a template as one of its roles (README, Public links).',
  fields: (t) => ({
    id: t.exposeID('id'),
    url: t.exposeString('url', { description: 'PUBLIC_URL/f/<slug>: the random slug, never the id.' }),
    templateId: t.exposeID('templateId'),
    role: t.exposeString('role', { description: 'The template role the visitor becomes (its identifier).' }),
    name: t.string({ nullable: true, resolve: (link) => link.name }),
    uses: t.exposeInt('uses', { description: 'Envelopes made through the link.' }),
    maxUses: t.int({ nullable: true, description: 'At most this many envelopes; null: no limit.', resolve: (link) => link.maxUses }),
    expiresAt: t.field({ type: 'DateTime', nullable: true, resolve: (link) => link.expiresAt }),
    verifyEmail: t.exposeBoolean('verifyEmail', { description: 'The visitor enters a 6-digit code mailed to them before anything is made.' }),
    redirectUrl: t.string({ nullable: true, description: 'Where the signing page goes after signing.', resolve: (link) => link.redirectUrl }),
    prefill: t.field({ type: 'JSONObject', description: 'Field values by field identifier.', resolve: (link) => link.prefill }),
    data: t.field({
      type: 'JSONObject',
      nullable: true,
      description: 'Values for the template documents’ {{data:PATH}} tags, merged into each envelope the link makes (README "Data merge").',
      resolve: (link) => link.data,
    }),
    missingData: t.field({ type: MissingDataMode, description: 'What a data tag whose path data lacks does.', resolve: (link) => link.missingData }),
    status: t.field({ type: PublicLinkStatusEnum, resolve: (link) => link.status }),
    createdAt: t.field({ type: 'DateTime', resolve: (link) => link.createdAt }),
    updatedAt: t.field({ type: 'DateTime', resolve: (link) => link.updatedAt }),
  }),
});

const PublicLinkConnection = keysetConnection('PublicLink', {
  description: "A page of the team's public links, newest first.",
  node: PublicLinkType,
  nodesOf: (page: PublicLinkPageData) => page.publicLinks,
});

builder.queryFields((t) => ({
  publicLink: t.field({
    type: PublicLinkType,
    description: 'One public link of your team (REST: GET /public-links/{id}). Unknown and foreign ids give PublicLink.NotFound.',
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, context) => readPublicLink(context, String(args.id)),
  }),
  publicLinks: t.field({
    type: PublicLinkConnection,
    description: "Your team's public links, newest first (REST: GET /public-links).",
    args: { ...pageArgs(t.arg) },
    resolve: (_root, args, context) => readPublicLinkPage(context, { limit: args.first ?? undefined, cursor: args.after ?? undefined }),
  }),
}));

const CreatePublicLinkInput = builder.inputType('CreatePublicLinkInput', {
  description: 'A new public link (REST: POST /templates/{id}/public-links).',
  fields: (t) => ({
    role: t.string({ required: true, description: 'A signer or delegator role of the template’s first turn, not fixed (its identifier).' }),
    name: t.string({ required: false, description: 'Shown as the form’s title; default the template’s name.' }),
    maxUses: t.int({ required: false, description: 'At most this many envelopes (1 to 1,000,000); absent: no limit.' }),
    expiresAt: t.field({ type: 'DateTime', required: false }),
    verifyEmail: t.boolean({ required: false, description: 'Default true: a 6-digit code is mailed to the visitor and entered before anything is made.' }),
    redirectUrl: t.string({ required: false, description: 'An https URL the signing page goes to after signing.' }),
    prefill: t.field({ type: 'JSONObject', required: false, description: 'Field values by field identifier (not signatures).' }),
    data: t.field({ type: 'JSONObject', required: false, description: 'Values for the template documents’ {{data:PATH}} tags, as jumpstartEnvelope’s data; checked against the tags now.' }),
    missingData: t.field({ type: MissingDataMode, required: false, description: 'refuse (default): every path the tags read must be in data; blank: missing values are left blank.' }),
  }),
});

const UpdatePublicLinkInput = builder.inputType('UpdatePublicLinkInput', {
  description: 'Only the given keys change; null clears name, maxUses, expiresAt.',
  fields: (t) => ({
    status: t.string({ required: false, description: 'active or disabled.' }),
    name: t.string({ required: false }),
    maxUses: t.int({ required: false }),
    expiresAt: t.field({ type: 'DateTime', required: false }),
  }),
});

/** DateTime arguments arrive as Date; the domain takes the ISO text either face sends. */
function withIsoExpiry(input: Record<string, unknown>): Record<string, unknown> {
  return input.expiresAt instanceof Date ? { ...input, expiresAt: input.expiresAt.toISOString() } : input;
}

builder.mutationFields((t) => ({
  createPublicLink: t.field({
    type: PublicLinkType,
    nullable: true,
    description: 'Makes a public link to a template (REST: POST /templates/{id}/public-links). Accepts Idempotency-Key.',
    args: { templateId: t.arg.id({ required: true }), input: t.arg({ type: CreatePublicLinkInput, required: true }) },
    resolve: (_root, args, context) =>
      createPublicLink(context, {
        templateId: String(args.templateId),
        input: withIsoExpiry(withoutNulls(args.input, { opaque: ['prefill', 'data'] }) as Record<string, unknown>),
        idempotencyKey: context.idempotencyKey,
      }),
  }),
  updatePublicLink: t.field({
    type: PublicLinkType,
    nullable: true,
    description: 'Changes a public link (REST: PATCH /public-links/{id}); status disabled turns it off.',
    args: { id: t.arg.id({ required: true }), input: t.arg({ type: UpdatePublicLinkInput, required: true }) },
    resolve: (_root, args, context) =>
      updatePublicLink(context, { publicLinkId: String(args.id), input: withIsoExpiry(withoutNulls(args.input, { keepNull: ['name', 'maxUses', 'expiresAt'] }) as Record<string, unknown>) }),
  }),
  deletePublicLink: t.field({
    type: DeletedPayload,
    nullable: true,
    description: 'Deletes a public link (REST: DELETE /public-links/{id}); its envelopes keep publicLinkId.',
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_root, args, context) => {
      await deletePublicLink(context, { publicLinkId: String(args.id) });
      return { id: String(args.id) };
    },
  }),
}));
