import {
  createEnvelope,
  deleteEnvelope,
  getEnvelope,
  listEnvelopes,
  updateEnvelope,
} from '../../domain/envelope/envelope.service.ts';
import { readJsonObject } from '../body.ts';
import { booleanQuery, integerQuery } from '../query.ts';
import type { RestRoute } from '../router.ts';
import { documentJson, envelopeJson, fieldJson, recipientJson } from '../serializers.ts';

/** Spec §4.1 and contract §5: the envelope itself. */
export const envelopeRoutes: RestRoute[] = [
  {
    method: 'POST',
    path: '/envelopes',
    async handler({ request, context }) {
      const envelope = await createEnvelope(context, { input: await readJsonObject(request), idempotencyKey: context.idempotencyKey });
      return { envelopeId: envelope.id };
    },
  },
  {
    method: 'GET',
    path: '/envelopes',
    async handler({ url, context }) {
      const page = await listEnvelopes(context, {
        status: url.searchParams.get('status') ?? undefined,
        limit: integerQuery(url, 'limit'),
        cursor: url.searchParams.get('cursor') ?? undefined,
      });
      return { envelopes: page.envelopes.map(envelopeJson), nextCursor: page.nextCursor };
    },
  },
  {
    method: 'GET',
    path: '/envelopes/:envelopeId',
    async handler({ url, params, context }) {
      const include = {
        documents: booleanQuery(url, 'includeDocuments'),
        recipients: booleanQuery(url, 'includeRecipients'),
        fields: booleanQuery(url, 'includeFields'),
      };
      const envelope = await getEnvelope(context, params.envelopeId);
      const payload: Record<string, unknown> = { envelope: envelopeJson(envelope) };
      if (include.documents) payload.documents = (await context.loaders.documentsByEnvelope.load(envelope.id)).map(documentJson);
      if (include.recipients) {
        const recipients = await context.loaders.recipientsByEnvelope.load(envelope.id);
        payload.recipients = await Promise.all(recipients.map((recipient) => recipientJson(context, recipient)));
      }
      if (include.fields) {
        const fields = await context.loaders.fieldsByEnvelope.load(envelope.id);
        payload.fields = await Promise.all(fields.map((field) => fieldJson(context, field)));
      }
      return payload;
    },
  },
  {
    method: 'PATCH',
    path: '/envelopes/:envelopeId',
    async handler({ request, params, context }) {
      const envelope = await updateEnvelope(context, { envelopeId: params.envelopeId, input: await readJsonObject(request) });
      return { envelope: envelopeJson(envelope) };
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
