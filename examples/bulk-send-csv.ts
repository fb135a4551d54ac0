/**
 * Send one template to everyone in a CSV file (one envelope per row, made and sent by the
 * service's background job), printing progress live until the bulk send completes, then the rows
 * that failed and why.
 *
 *   ENVELOPE_API_KEY=… node examples/bulk-send-csv.ts TEMPLATE_ID renewals.csv
 *
 * renewals.csv (a header row; `<role identifier>.name`, `.email`, `.phone`, `.locale`,
 * `envelope.name`, `field.<identifier>`):
 *
 *   buyer.name,buyer.email,envelope.name
 *   "Lovelace, Ada",ada@example.com,Renewal Ada
 */
import fs from 'node:fs';
import path from 'node:path';
import { createClient } from 'graphql-ws';
import type { ExampleBulkSendFailedRowsQuery, ExampleBulkSendProgressSubscription } from './generated/graphql/graphql.ts';
import { graphql as gql } from './generated/graphql/index.ts';
import type { components } from './generated/rest.ts';
import { ApiError, apiKey, graphql, report, serviceUrl } from './shared.ts';

const Progress = gql(`
  subscription ExampleBulkSendProgress($id: ID!) {
    bulkSendProgress(id: $id) { id status total created sent failed completedAt }
  }
`);

const FailedRows = gql(`
  query ExampleBulkSendFailedRows($id: ID!, $after: String) {
    bulkSend(id: $id) { rows(status: failed, first: 100, after: $after) { rows { index error { name description } } nextCursor } }
  }
`);

const [templateId, csvPath] = process.argv.slice(2);
if (!templateId || !csvPath) {
  console.error('usage: node examples/bulk-send-csv.ts TEMPLATE_ID FILE.csv');
  process.exit(1);
}

// The file goes as it is (multipart), checked by the service: with an invalid row nothing is
// created and Request.Invalid lists the rows, unless skipInvalidRows records them as failed.
const form = new FormData();
form.append('csv', new Blob([fs.readFileSync(csvPath)], { type: 'text/csv' }), path.basename(csvPath));
form.append('name', path.basename(csvPath, '.csv'));
form.append('skipInvalidRows', 'true');
const response = await fetch(`${serviceUrl}/api/v1/key/templates/${templateId}/bulk-sends`, {
  method: 'POST',
  // The same file sent twice (a retried upload) makes one bulk send.
  headers: { 'x-service-api-key': apiKey(), 'idempotency-key': `bulk-${path.basename(csvPath)}-${fs.statSync(csvPath).mtimeMs}` },
  body: form,
});
const answer = (await response.json()) as { success: true; payload: { bulkSendId: string } } | components['schemas']['Error'];
if (!answer.success) throw new ApiError(answer.error.name, answer.error.description, answer.error.context);
const bulkSendId = answer.payload.bulkSendId;
report('created', { bulkSendId });

// The bulk send now, then at every change of its counters; the completed (or cancelled) one comes last.
const client = createClient({ url: `${serviceUrl.replace(/^http/, 'ws')}/graphql`, connectionParams: { 'X-Service-Api-Key': apiKey() } });
let final: ExampleBulkSendProgressSubscription['bulkSendProgress'] | undefined;
for await (const result of client.iterate<ExampleBulkSendProgressSubscription>({ query: Progress.toString(), variables: { id: bulkSendId } })) {
  const [error] = result.errors ?? [];
  if (error) throw new Error(`${String(error.extensions?.code)}: ${error.message}`);
  const progress = result.data!.bulkSendProgress;
  report('progress', { status: progress.status, total: progress.total, sent: progress.sent, failed: progress.failed });
  final = progress;
  if (progress.status === 'completed' || progress.status === 'cancelled') break;
}
await client.dispose();

const failures: { index: number; error: string | null }[] = [];
let after: string | null = null;
do {
  const { bulkSend }: ExampleBulkSendFailedRowsQuery = await graphql(FailedRows, { id: bulkSendId, after });
  for (const row of bulkSend?.rows.rows ?? []) failures.push({ index: row.index, error: row.error?.name ?? null });
  after = bulkSend?.rows.nextCursor ?? null;
} while (after !== null);
report('done', { bulkSendId, status: final?.status, total: final?.total, sent: final?.sent, failed: final?.failed, failures });
