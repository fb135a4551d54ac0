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
 * speed, not the configured pace.
 *
 * SQL statements per row (issue 37, `bulk_statements_per_row`): the service runs on a private
 * PostgreSQL 15 cluster of this run (bench/reads/cluster.ts, pg_stat_statements preloaded) as its
 * own role, and every statement that role makes from the POST until the last invitation has
 * arrived is counted (`pg_stat_statements` calls, BEGIN/COMMIT and other utility statements
 * included) and divided by the rows. That is everything the bulk send costs the database: the
 * POST, the job's steps, each row's envelope made and sent, each invitation's outbox job and
 * audit events, and also the outbox worker's idle polls and this bench's own status reads
 * (GET every 200 ms), which are printed beside it so they can be taken out.
 * `BENCH_SHOW_STATEMENTS=1` prints the 40 most frequent statements (`=all`: every one).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { SMTPServer } from 'smtp-server';
import { makePdf } from '../test/fixtures/pdfs.ts';
import { startCluster } from './reads/cluster.ts';
import { openStatementCounter } from './reads/stats.ts';
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

// The private cluster: the service connects as ROLE, so its statements are counted apart from the harness's.
const ROLE = 'bench_bulk_service';
const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'envelope-bench-bulk-'));
const cluster = await startCluster(workDir, (line) => console.error(line));
const admin = new pg.Client({ connectionString: cluster.url('postgres') });
await admin.connect();
await admin.query(`create role ${ROLE} login superuser`);
process.env.DATABASE_URL = cluster.url('postgres', ROLE);
const counter = await openStatementCounter(cluster.url('postgres'), 'postgres');
const scratch = await createScratch('bulk');
const databaseName = new URL(scratch.databaseUrl).pathname.slice(1);
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
  const statementsOf = async () => {
    const { rows: counted } = await admin.query<{ calls: string }>(
      `select coalesce(sum(s.calls), 0)::text as calls from pg_stat_statements s join pg_roles r on r.oid = s.userid join pg_database d on d.oid = s.dbid
        where r.rolname = $1 and d.datname = $2`,
      [ROLE, databaseName],
    );
    return Number(counted[0]!.calls);
  };
  await counter.reset();
  const statementsBefore = await statementsOf();
  let polls = 0;
  const started = performance.now();
  const { bulkSendId } = await call('POST', `/templates/${templateId}/bulk-sends`, { rows });
  const acceptedMs = performance.now() - started;
  let bulkSend: any;
  for (;;) {
    polls += 1;
    bulkSend = (await call('GET', `/bulk-sends/${bulkSendId}`)).bulkSend;
    if (bulkSend.status === 'completed' && mails >= ROWS) break;
    if (bulkSend.failed > 0) throw new Error(`rows failed: ${JSON.stringify(bulkSend)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  const seconds = (performance.now() - started) / 1000;
  clearInterval(sampler);
  const cpu = cpuMs(pid) - cpuBefore;
  // What is still in flight (the last acknowledgements) belongs to these rows.
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const statements = (await statementsOf()) - statementsBefore;
  const show = process.env.BENCH_SHOW_STATEMENTS;
  if (show === '1' || show === 'all') {
    const { rows: top } = await admin.query<{ calls: string; query: string }>(
      `select s.calls::text as calls, s.query from pg_stat_statements s join pg_roles r on r.oid = s.userid join pg_database d on d.oid = s.dbid
        where r.rolname = $1 and d.datname = $2 order by s.calls desc limit $3`,
      [ROLE, databaseName, show === 'all' ? 1000 : 40],
    );
    for (const statement of top) console.error(`    ${statement.calls.padStart(6)}  ${statement.query.replace(/\s+/g, ' ').slice(0, 160)}`);
  }

  console.log(`| rows | in flight | request ms | seconds to all mailed | rows/s | service CPU ms/row | RSS before MiB | RSS peak MiB |`);
  console.log(`|---|---|---|---|---|---|---|---|`);
  console.log(
    `| ${ROWS} | ${IN_FLIGHT} | ${acceptedMs.toFixed(0)} | ${seconds.toFixed(1)} | ${(ROWS / seconds).toFixed(1)} | ${(cpu / ROWS).toFixed(1)} | ${rssBefore.toFixed(0)} | ${rssPeak.toFixed(0)} |`,
  );
  console.log(`(${bulkSend.sent} sent, ${mails} invitations delivered)`);
  console.log(
    `SQL statements: ${statements} in all, ${(statements / ROWS).toFixed(1)} per row (pg_stat_statements calls of the service's role, utility statements included; ` +
      `with this bench's ${polls} status reads and the outbox worker's idle polls over ${seconds.toFixed(0)} s)`,
  );
  printResult('bulk_rows_per_second', ROWS / seconds);
  printResult('bulk_cpu_ms_per_row', cpu / ROWS);
  printResult('bulk_request_ms', acceptedMs);
  printResult('bulk_peak_rss_mib', rssPeak);
  printResult('bulk_statements_per_row', statements / ROWS);
} finally {
  await scratch.close();
  await new Promise<void>((resolve) => smtp.close(resolve));
  await counter.close();
  await admin.end();
  await cluster.stop();
  fs.rmSync(workDir, { recursive: true, force: true });
}
