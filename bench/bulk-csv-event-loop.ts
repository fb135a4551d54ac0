/**
 * What a large bulk-send CSV costs everyone else (issue 31, item 5): the service started as
 * `npm start` starts it on a scratch database, a ready template; then a 1.9 MB CSV of 1,000 rows
 * (each with a long text value) is posted while `/healthz` is asked every 5 ms. Reports the
 * slowest `/healthz` answer during the upload and its median before it: before the parser read in
 * chunks with turns of the event loop between them, every request waited 0.9–2.5 s.
 *
 *   npm run bench:bulk-csv [-- --quick]
 *
 * Last run (2 shared cores, November 2026): request 893 ms, /healthz slowest 42 ms (median 0.9).
 * With the parser chunked but the rows recorded in one statement, the slowest was 477–693 ms: the
 * ORM escapes a statement's parameters into its text, 2 MB of JSON in one go; a hundred rows per
 * statement fixed it.
 *
 * A figure, not a test (tests assert behaviour: test/bulk-send-bounds.test.ts checks that the
 * parser gives the loop its turns). Needs a PostgreSQL server (DATABASE_URL, default the local one).
 */
import { makePdf } from '../test/fixtures/pdfs.ts';
import { printResult, QUICK } from './report.ts';
import { createScratch, restCaller } from './scratch-service.ts';

const scratch = await createScratch('bulk_csv');
try {
  const service = await scratch.startService('service', { BULK_SEND_ROWS_PER_MINUTE: '0' });
  const { apiKey } = await scratch.createTeam();
  const api = `${service.url}/api/v1/key`;
  const call = restCaller(api, apiKey);
  const { templateId } = await call('POST', '/templates', { name: 'CSV bench' });
  const form = new FormData();
  form.append('document', new Blob([(await makePdf({ pages: 2 })) as Uint8Array<ArrayBuffer>], { type: 'application/pdf' }), 'contract.pdf');
  const { document } = await call('POST', `/templates/${templateId}/documents`, undefined, form);
  const { recipient } = await call('POST', `/templates/${templateId}/recipients`, { recipient: { type: 'signer', identifier: 'client', roleName: 'Client' } });
  await call('POST', `/templates/${templateId}/fields`, {
    fields: [
      {
        type: 'simple_signature',
        identifier: 'signature',
        recipientId: recipient.id,
        views: [{ documentId: document.id, page: 1, location: { x: 72, y: 700 }, size: { width: 180, height: 48 } }],
      },
      {
        type: 'text',
        identifier: 'note',
        recipientId: recipient.id,
        config: { maxLength: 10_000 },
        views: [{ documentId: document.id, page: 0, location: { x: 72, y: 100 }, size: { width: 200, height: 20 } }],
      },
    ],
  });
  const rows = QUICK ? 100 : 1_000;
  const lines = ['client.name,client.email,field.note'];
  for (let index = 0; index < rows; index += 1) lines.push(`"Person ${index}",person-${index}@example.com,"${'n'.repeat(1_850)}"`);
  const csv = lines.join('\n');

  // One small bulk send first: the first request of its kind loads and compiles what it uses.
  const warmUp = new FormData();
  warmUp.append('csv', new Blob([Buffer.from(lines.slice(0, 3).join('\n'), 'utf8')], { type: 'text/csv' }), 'rows.csv');
  await call('POST', `/templates/${templateId}/bulk-sends`, undefined, warmUp);

  const probe = async () => {
    const started = performance.now();
    await (await fetch(`${service.url}/healthz`)).arrayBuffer();
    return performance.now() - started;
  };
  const baseline: number[] = [];
  for (let round = 0; round < 50; round += 1) baseline.push(await probe());
  baseline.sort((a, b) => a - b);

  let uploading = true;
  let slowest = 0;
  const prober = (async () => {
    while (uploading) {
      slowest = Math.max(slowest, await probe());
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  })();
  const upload = new FormData();
  upload.append('csv', new Blob([Buffer.from(csv, 'utf8')], { type: 'text/csv' }), 'rows.csv');
  const started = performance.now();
  const response = await fetch(`${api}/templates/${templateId}/bulk-sends`, { method: 'POST', headers: { 'x-service-api-key': apiKey }, body: upload });
  const requestMs = performance.now() - started;
  if (!response.ok) throw new Error(`bulk send: ${response.status} ${await response.text()}`);
  uploading = false;
  await prober;

  console.log('| CSV MB | rows | request ms | /healthz median before ms | /healthz slowest during ms |');
  console.log('|---|---|---|---|---|');
  console.log(`| ${(Buffer.byteLength(csv) / 1e6).toFixed(2)} | ${rows} | ${requestMs.toFixed(0)} | ${baseline[25]!.toFixed(1)} | ${slowest.toFixed(1)} |`);
  printResult('bulk_csv_request_ms', requestMs);
  printResult('bulk_csv_healthz_slowest_ms', slowest);
} finally {
  await scratch.close();
}
