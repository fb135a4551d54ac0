import { envelopeOnly, readEnvelope, readEnvelopeAnswer, readEnvelopeListingAnswer } from '../../domain/envelope/envelope.read.ts';
import { createEnvelope, createEnvelopeInput, deleteEnvelope, updateEnvelope, updateEnvelopeInput } from '../../domain/envelope/envelope.service.ts';
import { readJsonObject } from '../../http/body.ts';
import { canonicalJson } from '../../shared/canonical-json.ts';
import { InvalidRequestError } from '../../shared/errors.ts';
import { PAGE_QUERY } from '../openapi-shared.ts';
import { booleanQuery, integerQuery } from '../query.ts';
import { ifNoneMatchHits, notModifiedReply, RestJsonReply, RestReply } from '../respond.ts';
import type { RestRoute } from '../router.ts';

const ENVELOPE_FILTER_QUERY = [
  { name: 'q', description: 'Name contains this; letter case, accents and Turkish dotted/dotless i are ignored ("İSTANBUL" finds "istanbul").', schema: { type: 'string', maxLength: 200 } },
  {
    name: 'status',
    description: 'Any of these statuses: repeat the parameter or separate with commas.',
    schema: { type: 'array', items: { type: 'string', enum: ['draft', 'sent', 'finalized', 'voided', 'expired'] } },
  },
  {
    name: 'recipientEmail',
    description: 'A person of the envelope has this address (given, or resolved at sending from a contact, user or group); letter case ignored.',
    schema: { type: 'string', maxLength: 254 },
  },
  { name: 'templateId', description: 'Jumpstarted from this template.', schema: { type: 'string', format: 'uuid' } },
  { name: 'publicLinkId', description: 'Made by a visitor of this public link.', schema: { type: 'string', format: 'uuid' } },
  { name: 'createdAfter', description: 'Created at or after this instant.', schema: { type: 'string', format: 'date-time' } },
  { name: 'createdBefore', description: 'Created before this instant.', schema: { type: 'string', format: 'date-time' } },
  { name: 'completedAfter', description: 'Finalized at or after this instant.', schema: { type: 'string', format: 'date-time' } },
  { name: 'completedBefore', description: 'Finalized before this instant.', schema: { type: 'string', format: 'date-time' } },
  { name: 'context.{key}', description: 'The string value of `key` in the envelope’s context is exactly this (`context.dealId=D-1`); up to 10.', schema: { type: 'string' } },
];

const SINGLE_PARAMETERS = new Set(['limit', 'cursor', 'q', 'recipientEmail', 'templateId', 'publicLinkId', 'createdAfter', 'createdBefore', 'completedAfter', 'completedBefore']);

/**
 * The listing's query string as the domain takes it. Unknown parameters (a misspelt filter would
 * otherwise answer everything) and repeated single ones are refused, all at once.
 */
function envelopeListingOptions(url: URL) {
  const issues: { path: string; message: string }[] = [];
  const single: Record<string, string | undefined> = {};
  const contextPairs: Record<string, string> = {};
  const seen = new Set<string>();
  for (const [name, value] of url.searchParams) {
    if (name === 'status') continue;
    if (name.startsWith('context.')) {
      if (name in contextPairs || seen.has(name)) issues.push({ path: name, message: 'must be given once' });
      contextPairs[name.slice('context.'.length)] = value;
    } else if (!SINGLE_PARAMETERS.has(name)) {
      issues.push({ path: name, message: 'is not a parameter of this listing' });
    } else if (seen.has(name)) {
      issues.push({ path: name, message: 'must be given once' });
    } else {
      single[name] = value === '' ? undefined : value;
    }
    seen.add(name);
  }
  if (issues.length > 0) throw new InvalidRequestError(issues);
  const status = url.searchParams
    .getAll('status')
    .flatMap((value) => value.split(','))
    .map((value) => value.trim())
    .filter((value) => value !== '');
  return {
    limit: integerQuery(url, 'limit'),
    cursor: single.cursor,
    q: single.q,
    status: status.length > 0 ? status : undefined,
    recipientEmail: single.recipientEmail,
    templateId: single.templateId,
    publicLinkId: single.publicLinkId,
    createdAfter: single.createdAfter,
    createdBefore: single.createdBefore,
    completedAfter: single.completedAfter,
    completedBefore: single.completedBefore,
    context: Object.keys(contextPairs).length > 0 ? contextPairs : undefined,
  };
}

/** The interface spec (docs/reference/interface-spec.md) §4.1 and docs/reference/contract.md §5: the envelope itself. */
export const envelopeRoutes: RestRoute[] = [
  {
    method: 'POST',
    path: '/envelopes',
    doc: {
      summary: 'Create a draft envelope',
      body: { schema: createEnvelopeInput, example: { name: 'Sales agreement', expirationPeriodDays: 14, context: { dealId: 'D-1' } } },
      isIdempotent: true,
      errors: ['Request.IdempotencyKeyReused'],
    },
    async handler({ request, context }) {
      const envelope = await createEnvelope(context, { input: await readJsonObject(request), idempotencyKey: context.idempotencyKey });
      return { envelopeId: envelope.id };
    },
  },
  {
    method: 'GET',
    path: '/envelopes',
    doc: {
      summary: 'List and find envelopes, newest first',
      description:
        'Every filter given narrows the list (they combine with "and"); each envelope carries `progress`. `…After` bounds are inclusive, `…Before` bounds exclusive. ' +
        'A parameter the listing does not know is `Request.Invalid`, never silently ignored.',
      query: PAGE_QUERY.concat(ENVELOPE_FILTER_QUERY),
    },
    async handler({ url, context }) {
      // Spliced as PostgreSQL wrote it when that is what JSON.stringify would write (see the read below).
      const payloadJson = await readEnvelopeListingAnswer(context, envelopeListingOptions(url), { progress: true });
      const canonical = canonicalJson(payloadJson);
      if (canonical !== null) return new RestJsonReply({}, canonical);
      return JSON.parse(payloadJson) as Record<string, unknown>;
    },
  },
  {
    method: 'GET',
    path: '/envelopes/:envelopeId',
    doc: {
      summary: 'Read an envelope',
      description: 'Answers a strong `ETag`; `If-None-Match` with it gives 304 and no body.',
      payload: {
        type: 'object',
        properties: { envelope: { $ref: '#/components/schemas/Envelope' }, documents: { type: 'array' }, recipients: { type: 'array' }, fields: { type: 'array' } },
        required: ['envelope'],
      },
      query: [
        { name: 'includeDocuments', description: 'Add the documents.', schema: { type: 'boolean' } },
        { name: 'includeRecipients', description: 'Add the recipients with their agents and approvals (an approver role’s, else empty).', schema: { type: 'boolean' } },
        { name: 'includeFields', description: 'Add the fields with their views.', schema: { type: 'boolean' } },
      ],
    },
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
      const headers = { etag, 'cache-control': 'private, no-cache' };
      // Spliced unparsed when the text is already what JSON.stringify would write (the spaces
      // PostgreSQL puts in stored JSON dropped); else parsed and written again, so answers look
      // alike on every route either way (shared/canonical-json.ts).
      const canonical = canonicalJson(payloadJson);
      if (canonical !== null) return new RestJsonReply(headers, canonical);
      return new RestReply(200, headers, JSON.parse(payloadJson) as Record<string, unknown>);
    },
  },
  {
    method: 'PATCH',
    path: '/envelopes/:envelopeId',
    doc: {
      summary: 'Change a draft envelope',
      body: { schema: updateEnvelopeInput, example: { name: 'Sales agreement v2' } },
      payload: { type: 'object', properties: { envelope: { $ref: '#/components/schemas/Envelope' } }, required: ['envelope'] },
      errors: ['Envelope.NotDraft', 'Envelope.Busy'],
    },
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
