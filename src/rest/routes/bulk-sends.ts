import { Readable } from 'node:stream';
import { readBulkSend, readBulkSendPage, readBulkSendRows } from '../../domain/bulk-send/bulk-send.read.ts';
import { type BulkSendSource, cancelBulkSend, createBulkSend, createBulkSendCsvFields, createBulkSendInput, MAX_BULK_SEND_CSV_BYTES } from '../../domain/bulk-send/bulk-send.service.ts';
import { readJsonObject } from '../../http/body.ts';
import { receiveMultipartUpload } from '../../http/multipart.ts';
import { InvalidRequestError, PayloadTooLargeError } from '../../shared/errors.ts';
import { PAGE_QUERY } from '../openapi-shared.ts';
import { integerQuery } from '../query.ts';
import type { RestRequest, RestRoute } from '../router.ts';

/** The body of a bulk send: JSON rows, or a CSV file in the `csv` part of a multipart form. */
async function sourceOf({ request, nodeRequest }: RestRequest): Promise<BulkSendSource> {
  const contentType = request.headers.get('content-type') ?? '';
  if (!/^multipart\/form-data\b/i.test(contentType)) return { kind: 'json', body: await readJsonObject(request) };
  const upload = await receiveMultipartUpload<Buffer>({
    request,
    nodeRequest,
    fileField: 'csv',
    maxFileBytes: MAX_BULK_SEND_CSV_BYTES,
    tooLarge: () => new PayloadTooLargeError(MAX_BULK_SEND_CSV_BYTES),
    missing: () => new InvalidRequestError([{ path: 'csv', message: 'send the CSV file in the `csv` part' }]),
    stage: async (stream: Readable) => {
      const chunks: Buffer[] = [];
      for await (const chunk of stream) chunks.push(chunk as Buffer);
      return Buffer.concat(chunks);
    },
    discard: async () => undefined,
  });
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(upload.staged);
  } catch {
    throw new InvalidRequestError([{ path: 'csv', message: 'must be UTF-8 text' }]);
  }
  return { kind: 'csv', text, fields: upload.fields };
}

const BULK_SEND_DESCRIPTION = `One envelope per row, made from the template as a jumpstart makes one and sent, by a background job.

JSON: \`{ name?, skipInvalidRows?, missingData?, rows: [ { recipients: [ { identifier, agents } ], name?, context?, values?: { <fieldIdentifier>: <value> }, data?: { … } } ] }\`: each row's \`data\` fills the template documents' \`{{data:PATH}}\` tags as a jumpstart's does (README "Data merge"); a row lacking a tag's path is invalid unless \`missingData\` is \`"blank"\`.
Or \`multipart/form-data\` with a CSV file in \`csv\` (UTF-8, optional byte order mark, a header row, RFC 4180 quoting) whose columns are \`<role identifier>.name\`, \`.email\`, \`.phone\`, \`.locale\`, \`envelope.name\`, \`field.<identifier>\` and \`data.<path>\` (a data value: \`data.customer.name\`, a list item \`data.items[0].name\`); \`name\`, \`skipInvalidRows\` and \`missingData\` as text fields.

At most 1,000 rows (\`BulkSend.TooManyRows\`). A CSV file is read only up to its limits (1,250 columns, 10,000 characters a field, 100,000 a record, 1,101 records with blank lines; no U+0000 or lone surrogates). Every row is checked first: with one invalid row nothing is created and \`Request.Invalid\` lists the invalid rows by index in \`context.rows\` (the first 100; \`context.rowsOmitted\` counts the rest), unless \`skipInvalidRows\` is true (the invalid rows are then recorded as failed). Follow the progress with \`GET /bulk-sends/{id}\`.`;

/** Bulk send (issue 22): many envelopes from one template, sent by a background job. */
export const bulkSendRoutes: RestRoute[] = [
  {
    method: 'POST',
    path: '/templates/:templateId/bulk-sends',
    doc: {
      summary: 'Send a template to many people: one envelope per row',
      description: BULK_SEND_DESCRIPTION,
      body: {
        schema: createBulkSendInput,
        example: {
          name: 'NDA renewals 2027',
          rows: [
            { recipients: [{ identifier: 'client', agents: [{ info: { name: 'Ada Lovelace', email: 'ada@example.com' } }] }], values: { note: { text: 'Analytical Engines Ltd' } } },
            { recipients: [{ identifier: 'client', agents: [{ info: { name: 'Çağrı Işık', email: 'cagri@example.com', locale: 'tr-TR' } }] }], name: 'NDA Işık' },
          ],
        },
      },
      multipart: { filePart: 'csv', fields: createBulkSendCsvFields, fileDescription: 'The rows as CSV (UTF-8, header row, RFC 4180), at most 2 MB.' },
      isIdempotent: true,
      errors: ['Template.NotFound', 'Template.NotReady', 'Template.DataTagsInvalid', 'BulkSend.TooManyRows', 'Request.PayloadTooLarge', 'Request.IdempotencyKeyReused'],
    },
    async handler(request) {
      const source = await sourceOf(request);
      return createBulkSend(request.context, { templateId: request.params.templateId, source, idempotencyKey: request.context.idempotencyKey });
    },
  },
  {
    method: 'GET',
    path: '/bulk-sends',
    doc: { summary: 'List your team’s bulk sends, newest first', query: PAGE_QUERY },
    async handler({ url, context }) {
      return readBulkSendPage(context, { limit: integerQuery(url, 'limit'), cursor: url.searchParams.get('cursor') ?? undefined });
    },
  },
  {
    method: 'GET',
    path: '/bulk-sends/:bulkSendId',
    doc: { summary: 'Read a bulk send’s progress', errors: ['BulkSend.NotFound'] },
    async handler({ params, context }) {
      return { bulkSend: await readBulkSend(context, params.bulkSendId) };
    },
  },
  {
    method: 'GET',
    path: '/bulk-sends/:bulkSendId/rows',
    doc: {
      summary: 'List a bulk send’s rows, each with its envelope or its error',
      query: [
        {
          name: 'status',
          description: 'Only rows in this state: pending, created, sent, failed or cancelled.',
          schema: { type: 'string', enum: ['pending', 'created', 'sent', 'failed', 'cancelled'] },
        },
        ...PAGE_QUERY,
      ],
      errors: ['BulkSend.NotFound'],
    },
    async handler({ url, params, context }) {
      return readBulkSendRows(context, {
        bulkSendId: params.bulkSendId,
        status: url.searchParams.get('status') ?? undefined,
        limit: integerQuery(url, 'limit'),
        cursor: url.searchParams.get('cursor') ?? undefined,
      });
    },
  },
  {
    method: 'POST',
    path: '/bulk-sends/:bulkSendId/cancel',
    doc: { summary: 'Cancel a bulk send: no row not yet sent is sent', errors: ['BulkSend.NotFound', 'BulkSend.Finished'] },
    async handler({ params, context }) {
      await cancelBulkSend(context, { bulkSendId: params.bulkSendId });
      return { bulkSend: await readBulkSend(context, params.bulkSendId) };
    },
  },
];
