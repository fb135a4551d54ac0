import { readPublicLink, readPublicLinkPage } from '../../domain/public-link/public-link.read.ts';
import { createPublicLink, createPublicLinkInput, deletePublicLink, updatePublicLink, updatePublicLinkInput } from '../../domain/public-link/public-link.service.ts';
import { readJsonObject } from '../../http/body.ts';
import { PAGE_QUERY } from '../openapi-shared.ts';
import { integerQuery } from '../query.ts';
import type { RestRoute } from '../router.ts';

/**
 * Public links (README, Public links): a page at `url` where anyone may make and sign an envelope
 * from a template as one of its roles.
 */
export const publicLinkRoutes: RestRoute[] = [
  {
    method: 'POST',
    path: '/templates/:templateId/public-links',
    doc: {
      summary: 'Make a public link to a template',
      description:
        'The visitor becomes `role` (a signer or delegator of the template’s first turn that is not fixed); every other role gets the template’s person. `verifyEmail` (default true) mails the visitor a 6-digit code to enter before anything is made. `maxUses` caps the envelopes made, exactly; `expiresAt` ends the link; `redirectUrl` is where the signing page goes after signing; `prefill` holds field values by field identifier; `data` fills the template documents\' `{{data:PATH}}` tags in every envelope the link makes (README "Data merge"; checked now: every missing path is listed as `Request.Invalid` unless `missingData` is `"blank"`). Accepts `Idempotency-Key`.',
      body: { schema: createPublicLinkInput, example: { role: 'client', name: 'Membership form', maxUses: 100, verifyEmail: true } },
      isIdempotent: true,
      errors: ['Template.NotFound', 'Template.NotReady', 'Template.DataTagsInvalid', 'PublicLink.RoleNotUsable'],
    },
    async handler({ request, params, context }) {
      return { publicLink: await createPublicLink(context, { templateId: params.templateId, input: await readJsonObject(request), idempotencyKey: context.idempotencyKey }) };
    },
  },
  {
    method: 'GET',
    path: '/public-links',
    doc: { summary: 'List public links, newest first', query: PAGE_QUERY },
    async handler({ url, context }) {
      return readPublicLinkPage(context, { limit: integerQuery(url, 'limit'), cursor: url.searchParams.get('cursor') ?? undefined });
    },
  },
  {
    method: 'GET',
    path: '/public-links/:publicLinkId',
    doc: { summary: 'Read a public link', errors: ['PublicLink.NotFound'] },
    async handler({ params, context }) {
      return { publicLink: await readPublicLink(context, params.publicLinkId) };
    },
  },
  {
    method: 'PATCH',
    path: '/public-links/:publicLinkId',
    doc: {
      summary: 'Change a public link',
      description:
        '`status: "disabled"` turns the link off (its page then answers like an unknown link’s), `"active"` on again; `maxUses`, `expiresAt` and `name` replace (null clears). `maxUses` below `uses` is refused.',
      body: { schema: updatePublicLinkInput, example: { status: 'disabled' } },
      errors: ['PublicLink.NotFound'],
    },
    async handler({ request, params, context }) {
      return { publicLink: await updatePublicLink(context, { publicLinkId: params.publicLinkId, input: await readJsonObject(request) }) };
    },
  },
  {
    method: 'DELETE',
    path: '/public-links/:publicLinkId',
    doc: { summary: 'Delete a public link (its envelopes keep their publicLinkId)', errors: ['PublicLink.NotFound'] },
    async handler({ params, context }) {
      await deletePublicLink(context, { publicLinkId: params.publicLinkId });
      return { deleted: true };
    },
  },
];
