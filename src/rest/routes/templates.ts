import { FULL_TEMPLATE_INCLUDE, readTemplate, readTemplatePage } from '../../domain/template/template.read.ts';
import { createTemplate, deleteTemplate, updateTemplate } from '../../domain/template/template.service.ts';
import { readJsonObject } from '../body.ts';
import { integerQuery } from '../query.ts';
import type { RestRoute } from '../router.ts';

/** Spec §4.7 and contract §5: templates. Every answer shows a template with its documents, roles and fields. */
export const templateRoutes: RestRoute[] = [
  {
    method: 'POST',
    path: '/templates',
    async handler({ request, context }) {
      const template = await createTemplate(context, { input: await readJsonObject(request), idempotencyKey: context.idempotencyKey });
      return { templateId: template.id };
    },
  },
  {
    method: 'GET',
    path: '/templates',
    async handler({ url, context }) {
      return readTemplatePage(context, { limit: integerQuery(url, 'limit'), cursor: url.searchParams.get('cursor') ?? undefined }, FULL_TEMPLATE_INCLUDE);
    },
  },
  {
    method: 'GET',
    path: '/templates/:templateId',
    async handler({ params, context }) {
      return { template: await readTemplate(context, params.templateId, FULL_TEMPLATE_INCLUDE) };
    },
  },
  {
    method: 'PATCH',
    path: '/templates/:templateId',
    async handler({ request, params, context }) {
      await updateTemplate(context, { templateId: params.templateId, input: await readJsonObject(request) });
      return { template: await readTemplate(context, params.templateId, FULL_TEMPLATE_INCLUDE) };
    },
  },
  {
    method: 'DELETE',
    path: '/templates/:templateId',
    async handler({ params, context }) {
      await deleteTemplate(context, { templateId: params.templateId });
      return { deleted: true };
    },
  },
];
