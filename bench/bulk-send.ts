/**
 * A bulk send of 1,000 rows end to end (issue 22): the service started as `npm start` starts it on
 * a scratch database, a template of one document, one signer role, a signature and a prefilled
 * text field; one POST of 1,000 JSON rows; then the service's own outbox worker makes, sends and
 * mails every envelope to a local SMTP server. Timed from the POST until the bulk send is
 * `completed` and every invitation has arrived; the service's CPU time (utime + stime) and its
 * resident memory (sampled every 100 ms) over the same span.
 *
 *   npm run bench:bulk [-- --rows 1000 --in-flight 10] [-- --quick]
 *
 * No pace (BULK_SEND_ROWS_PER_MINUTE=0) and the highest rate budget: the figure is the job's own
 * speed, not the configured pace. Needs a PostgreSQL server (DATABASE_URL, default the local one).
 */
import { parseArgs } from 'node:util';
import { SMTPServer } from 'smtp-server';
import { makePdf } from '../test/fixtures/pdfs.ts';
import { printResult, QUICK, QUICK_OPTION } from './report.ts';
import { cpuMs, createScratch, restCaller, rssMiB } from './scratch-service.ts';

const { values: options } = parseArgs({ options: { ...QUICK_OPTION, rows: { type: 'string' }, 'in-flight': { type: 'string' } } });
const ROWS = Number(options.rows ?? (QUICK ? 20 : 1000));
const IN_FLIGHT = options['in-flight'] ?? '10';

// A local SMTP server that only counts what it accepts (the bench times delivery, not parsing).
let mails = 0;
const smtp = new SMTPServer({
  authOptional: true,
  disabledCommands: ['STARTTLS', 'AUTH'],
  logger: false,
  onData(stream, _session, callback) {
    stream.on('data', () => undefined);
    stream.on('end', () => {
      mails += 1;
      callback();
    });
  },
});
await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
const smtpUrl = `smtp://127.0.0.1:${(smtp.server.address() as { port: number }).port}`;

const scratch = await createScratch('bulk');
try {
  const service = await scratch.startService('service', { SMTP_URL: smtpUrl, BULK_SEND_ROWS_PER_MINUTE: '0', BULK_SEND_ROWS_IN_FLIGHT: IN_FLIGHT });
  const { apiKey } = await scratch.createTeam();
  const api = `${service.url}/api/v1/key`;
  const call = restCaller(api, apiKey);

  const { templateId } = await call('POST', '/templates', { name: 'Bulk bench' });
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
        identifier: 'company',
        recipientId: recipient.id,
        readonly: true,
        value: { text: 'Company' },
        views: [{ documentId: document.id, page: 0, location: { x: 72, y: 100 }, size: { width: 200, height: 20 } }],
      },
    ],
  });
  const rows = Array.from({ length: ROWS }, (_, index) => ({
    recipients: [{ identifier: 'client', agents: [{ info: { name: `Person ${index}`, email: `person-${index}@example.com` } }] }],
    name: `Contract ${index}`,
    values: { company: { text: `Company ${index}` } },
  }));

  const pid = service.child.pid!;
  const cpuBefore = cpuMs(pid);
  const rssBefore = rssMiB(pid);
  let rssPeak = rssBefore;
  const sampler = setInterval(() => {
    rssPeak = Math.max(rssPeak, rssMiB(pid));
  }, 100);
  const started = performance.now();
  const { bulkSendId } = await call('POST', `/templates/${templateId}/bulk-sends`, { rows });
  const acceptedMs = performance.now() - started;
  let bulkSend: any;
  for (;;) {
    bulkSend = (await call('GET', `/bulk-sends/${bulkSendId}`)).bulkSend;
    if (bulkSend.status === 'completed' && mails >= ROWS) break;
    if (bulkSend.failed > 0) throw new Error(`rows failed: ${JSON.stringify(bulkSend)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  const seconds = (performance.now() - started) / 1000;
  clearInterval(sampler);
  const cpu = cpuMs(pid) - cpuBefore;

  console.log(`| rows | in flight | request ms | seconds to all mailed | rows/s | service CPU ms/row | RSS before MiB | RSS peak MiB |`);
  console.log(`|---|---|---|---|---|---|---|---|`);
  console.log(
    `| ${ROWS} | ${IN_FLIGHT} | ${acceptedMs.toFixed(0)} | ${seconds.toFixed(1)} | ${(ROWS / seconds).toFixed(1)} | ${(cpu / ROWS).toFixed(1)} | ${rssBefore.toFixed(0)} | ${rssPeak.toFixed(0)} |`,
  );
  console.log(`(${bulkSend.sent} sent, ${mails} invitations delivered)`);
  printResult('bulk_rows_per_second', ROWS / seconds);
  printResult('bulk_cpu_ms_per_row', cpu / ROWS);
  printResult('bulk_request_ms', acceptedMs);
  printResult('bulk_peak_rss_mib', rssPeak);
} finally {
  await scratch.close();
  await new Promise<void>((resolve) => smtp.close(resolve));
}
