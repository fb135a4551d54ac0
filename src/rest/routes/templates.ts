import { readEnvelopeAnswer } from '../../domain/envelope/envelope.read.ts';
import { dryRunJumpstart, jumpstartEnvelope, jumpstartInput } from '../../domain/jumpstart/jumpstart.service.ts';
import type { ServiceContext } from '../../domain/service-context.ts';
import { FULL_TEMPLATE_INCLUDE, readTemplate, readTemplatePage } from '../../domain/template/template.read.ts';
import { createTemplate, createTemplateInput, deleteTemplate, updateTemplate, updateTemplateInput } from '../../domain/template/template.service.ts';
import { readJsonObject } from '../../http/body.ts';
import { PAGE_QUERY } from '../openapi-shared.ts';
import { booleanQuery, integerQuery } from '../query.ts';
import type { RestRoute } from '../router.ts';
import { documentRoutes } from './documents.ts';
import { fieldRoutes } from './fields.ts';
import { recipientRoutes } from './recipients.ts';

/** The interface spec (docs/reference/interface-spec.md) §4.7 and docs/reference/contract.md §5: templates. Every answer shows a template with its documents, roles and fields. */
export const templateRoutes: RestRoute[] = [
  // The interface spec (docs/reference/interface-spec.md) §4.5: a draft envelope from a template in one request.
  {
    method: 'POST',
    path: '/envelopes/jumpstart/:templateId',
    doc: {
      summary: 'Create a draft envelope from a template',
      description:
        'Answers `{ envelopeId }`. With `?dryRun=true` nothing is made (no envelope, no audit event, nothing stored; `Idempotency-Key` is not used) and the answer is ' +
        '`{ dryRun: { envelope, wouldSend, problems, plan } }`: the envelope the jumpstart would make now, as `GET /envelopes/{id}` would show it with everything included (its ids exist nowhere), ' +
        'and what sending it would do, as `PUT /envelopes/{id}/send?dryRun=true` answers. Refused exactly as the jumpstart would be. ' +
        '`data` fills the template documents\' `{{data:PATH}}` tags (README "Data merge"): the values are drawn into the envelope\'s copies and the tags removed before the envelope is made; a tag whose path `data` lacks refuses the jumpstart (`Request.Invalid` listing every missing path as `data.…`) unless `missingData` is `"blank"`.',
      body: {
        schema: jumpstartInput,
        example: {
          name: 'NDA with Ada',
          recipients: [{ identifier: 'client', agents: [{ info: { name: 'Ada Lovelace', email: 'ada@example.com' } }] }],
          data: { customer: { name: 'Ada Lovelace' }, items: [{ name: 'Consulting' }] },
        },
      },
      query: [{ name: 'dryRun', description: 'true: answer the envelope the jumpstart would make, without making it.', schema: { type: 'boolean', default: false } }],
      isIdempotent: true,
      errors: ['Template.NotReady', 'Template.DataTagsInvalid', 'Jumpstart.UnknownRecipient', 'Jumpstart.DuplicateRecipient', 'Envelope.CapacityExceeded', 'Request.IdempotencyKeyReused'],
    },
    async handler({ request, url, params, context }) {
      if (booleanQuery(url, 'dryRun')) {
        // The would-be envelope as GET /envelopes/{id} shows it with everything included.
        const read = async (inside: ServiceContext, envelopeId: string) =>
          JSON.parse((await readEnvelopeAnswer(inside, envelopeId, { documents: true, recipients: true, agents: true, fields: true, views: true })).payloadJson) as Record<string, unknown>;
        return { dryRun: await dryRunJumpstart(context, { templateId: params.templateId, input: await readJsonObject(request), read }) };
      }
      const envelope = await jumpstartEnvelope(context, { templateId: params.templateId, input: await readJsonObject(request), idempotencyKey: context.idempotencyKey });
      return { envelopeId: envelope.id };
    },
  },
  {
    method: 'POST',
    path: '/templates',
    doc: { summary: 'Create a template', body: { schema: createTemplateInput, example: { name: 'Mutual NDA', description: 'Our standard NDA' } }, isIdempotent: true },
    async handler({ request, context }) {
      const template = await createTemplate(context, { input: await readJsonObject(request), idempotencyKey: context.idempotencyKey });
      return { templateId: template.id };
    },
  },
  {
    method: 'GET',
    path: '/templates',
    doc: { summary: 'List templates your team owns or is in the scope of', query: PAGE_QUERY },
    async handler({ url, context }) {
      return readTemplatePage(context, { limit: integerQuery(url, 'limit'), cursor: url.searchParams.get('cursor') ?? undefined }, FULL_TEMPLATE_INCLUDE);
    },
  },
  {
    method: 'GET',
    path: '/templates/:templateId',
    doc: { summary: 'Read a template with its documents, roles and fields' },
    async handler({ params, context }) {
      return { template: await readTemplate(context, params.templateId, FULL_TEMPLATE_INCLUDE) };
    },
  },
  {
    method: 'PATCH',
    path: '/templates/:templateId',
    doc: { summary: 'Change a template', body: { schema: updateTemplateInput, example: { description: 'Our standard NDA, 2026' } }, errors: ['Template.NotOwner'] },
    async handler({ request, params, context }) {
      await updateTemplate(context, { templateId: params.templateId, input: await readJsonObject(request) });
      return { template: await readTemplate(context, params.templateId, FULL_TEMPLATE_INCLUDE) };
    },
  },
  {
    method: 'DELETE',
    path: '/templates/:templateId',
    doc: { summary: 'Delete a template', errors: ['Template.NotOwner'] },
    async handler({ params, context }) {
      await deleteTemplate(context, { templateId: params.templateId });
      return { deleted: true };
    },
  },
  // Documents: the envelope's multipart upload, checked before the body is read.
  ...documentRoutes.template,
  // Roles: `{ recipient: {...} }` as for envelopes.
  ...recipientRoutes.template,
  // Fields: the envelope's body (docs/reference/interface-spec.md §4.7: "same body as 4.4").
  ...fieldRoutes.template,
];
