import { PAGE_QUERY } from '../openapi-shared.ts';
import { envelopeOnly, readEnvelope, readEnvelopeAnswer, readEnvelopePage } from '../../domain/envelope/envelope.read.ts';
import { createEnvelope, createEnvelopeInput, deleteEnvelope, updateEnvelope, updateEnvelopeInput } from '../../domain/envelope/envelope.service.ts';
import { readJsonObject } from '../../http/body.ts';
import { ifNoneMatchHits, notModifiedReply, RestReply } from '../respond.ts';
import { booleanQuery, integerQuery } from '../query.ts';
import type { RestRoute } from '../router.ts';

/** The interface spec (docs/reference/interface-spec.md) §4.1 and docs/reference/contract.md §5: the envelope itself. */
export const envelopeRoutes: RestRoute[] = [
  {
    method: 'POST',
    path: '/envelopes',
    doc: { summary: 'Create a draft envelope', body: { schema: createEnvelopeInput, example: { name: 'Sales agreement', expirationPeriodDays: 14, context: { dealId: 'D-1' } } }, isIdempotent: true, errors: ['Request.IdempotencyKeyReused'] },
    async handler({ request, context }) {
      const envelope = await createEnvelope(context, { input: await readJsonObject(request), idempotencyKey: context.idempotencyKey });
      return { envelopeId: envelope.id };
    },
  },
  {
    method: 'GET',
    path: '/envelopes',
    doc: { summary: 'List envelopes, newest first', query: PAGE_QUERY.concat([{ name: 'status', description: 'Only envelopes in this status.', schema: { type: 'string', enum: ['draft', 'sent', 'finalized', 'voided', 'expired'] } }]) },
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
    doc: { summary: 'Read an envelope', description: 'Answers a strong `ETag`; `If-None-Match` with it gives 304 and no body.', query: [{ name: 'includeDocuments', description: 'Add the documents.', schema: { type: 'boolean' } }, { name: 'includeRecipients', description: 'Add the recipients with their agents.', schema: { type: 'boolean' } }, { name: 'includeFields', description: 'Add the fields with their views.', schema: { type: 'boolean' } }] },
    async handler({ request, url, params, context }) {
      const include = {
        documents: booleanQuery(url, 'includeDocuments'),
        recipients: booleanQuery(url, 'includeRecipients'),
        agents: true,
        fields: booleanQuery(url, 'includeFields'),
        views: true,
      };
      // One statement either way; a poller whose copy is current gets 304 and no body is built.
      const { tag, payloadJson } = await readEnvelopeAnswer(context, params.envelopeId, include);
      const etag = `"${tag}"`;
      if (ifNoneMatchHits(request.headers.get('if-none-match'), etag)) return notModifiedReply(etag);
      // Parsed and written again rather than spliced: PostgreSQL writes stored JSON (contexts, field
      // values) with spaces, and answers should look alike on every route.
      return new RestReply(200, { etag, 'cache-control': 'private, no-cache' }, JSON.parse(payloadJson) as Record<string, unknown>);
    },
  },
  {
    method: 'PATCH',
    path: '/envelopes/:envelopeId',
    doc: { summary: 'Change a draft envelope', body: { schema: updateEnvelopeInput, example: { name: 'Sales agreement v2' } }, errors: ['Envelope.NotDraft', 'Envelope.Busy'] },
    async handler({ request, params, context }) {
      await updateEnvelope(context, { envelopeId: params.envelopeId, input: await readJsonObject(request) });
      return { envelope: envelopeOnly(await readEnvelope(context, params.envelopeId)) };
    },
  },
  {
    method: 'DELETE',
    path: '/envelopes/:envelopeId',
    doc: { summary: 'Delete an envelope', errors: ['Envelope.NotDeletable', 'Envelope.Busy'] },
    async handler({ params, context }) {
      await deleteEnvelope(context, { envelopeId: params.envelopeId });
      return { deleted: true };
    },
  },
];
