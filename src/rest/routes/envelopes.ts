import { envelopeOnly, readEnvelope, readEnvelopePage, readEnvelopeWithTag } from '../../domain/envelope/envelope.read.ts';
import { createEnvelope, deleteEnvelope, updateEnvelope } from '../../domain/envelope/envelope.service.ts';
import { readJsonObject } from '../body.ts';
import { ifNoneMatchHits, notModifiedResponse, successResponse } from '../respond.ts';
import { booleanQuery, integerQuery } from '../query.ts';
import type { RestRoute } from '../router.ts';

/** Spec §4.1 and contract §5: the envelope itself. */
export const envelopeRoutes: RestRoute[] = [
  {
    method: 'POST',
    path: '/envelopes',
    async handler({ request, context }) {
      return createEnvelope(context, { input: await readJsonObject(request), idempotencyKey: context.idempotencyKey });
    },
  },
  {
    method: 'GET',
    path: '/envelopes',
    async handler({ url, context }) {
      return readEnvelopePage(context, {
        status: url.searchParams.get('status') ?? undefined,
        limit: integerQuery(url, 'limit'),
        cursor: url.searchParams.get('cursor') ?? undefined,
      });
    },
  },
  {
    method: 'GET',
    path: '/envelopes/:envelopeId',
    async handler({ request, url, params, context }) {
      const include = {
        documents: booleanQuery(url, 'includeDocuments'),
        recipients: booleanQuery(url, 'includeRecipients'),
        agents: true,
        fields: booleanQuery(url, 'includeFields'),
        views: true,
      };
      // One statement either way; a poller whose copy is current gets 304 and no body is built.
      const { tag, json } = await readEnvelopeWithTag(context, params.envelopeId, include);
      const etag = `"${tag}"`;
      if (ifNoneMatchHits(request.headers.get('if-none-match'), etag)) return notModifiedResponse(etag);
      const { documents, recipients, fields, ...envelope } = json();
      const payload: Record<string, unknown> = { envelope };
      if (include.documents) payload.documents = documents;
      if (include.recipients) payload.recipients = recipients;
      if (include.fields) payload.fields = fields;
      return successResponse(payload, { etag, 'cache-control': 'private, no-cache' });
    },
  },
  {
    method: 'PATCH',
    path: '/envelopes/:envelopeId',
    async handler({ request, params, context }) {
      await updateEnvelope(context, { envelopeId: params.envelopeId, input: await readJsonObject(request) });
      return { envelope: envelopeOnly(await readEnvelope(context, params.envelopeId)) };
    },
  },
  {
    method: 'DELETE',
    path: '/envelopes/:envelopeId',
    async handler({ params, context }) {
      await deleteEnvelope(context, { envelopeId: params.envelopeId });
      return { deleted: true };
    },
  },
];
