/**
 * Nested GraphQL read benchmark: a page of envelopes with documents, recipients (with agents)
 * and fields (with views), for growing page sizes. Prints the SQL statements per request (the
 * read model answers the whole page with one) and the median latency over repeated runs.
 *
 *   npm run bench:graphql [-- --runs 20]
 * Uses DATABASE_URL when set, else the embedded PostgreSQL in a temporary directory.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/db/database.ts';
import { loadSealCertificate } from '../src/domain/artefact/seal-certificate.ts';
import { Document } from '../src/domain/document/document.entity.ts';
import { Envelope } from '../src/domain/envelope/envelope.entity.ts';
import { Field } from '../src/domain/field/field.entity.ts';
import { FieldView } from '../src/domain/field/field-view.entity.ts';
import { Agent } from '../src/domain/recipient/agent.entity.ts';
import { Recipient } from '../src/domain/recipient/recipient.entity.ts';
import { Team } from '../src/domain/team/team.entity.ts';
import { createTeam } from '../src/domain/team/team.service.ts';
import { createRuntime } from '../src/runtime.ts';
import { listen } from '../src/server.ts';
import { createFileBlobStore } from '../src/shared/blob-store/index.ts';
import { createLogger } from '../src/shared/logger.ts';
import { printResult, QUICK, QUICK_OPTION } from './report.ts';

const { values } = parseArgs({ options: { runs: { type: 'string' }, ...QUICK_OPTION } });
// Quick: two runs of two page sizes.
const runs = Number(values.runs ?? (QUICK ? '2' : '20'));
const pageSizes = QUICK ? [1, 10] : [1, 10, 50, 100];

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'envelope-bench-graphql-'));
const config = loadConfig({ ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'silent', PORT: '0' });
let statements = 0;
const database = await openDatabase(config, {
  onQuery: () => {
    statements += 1;
  },
});
// The app as production builds it (src/runtime.ts), with the key cache on: the key is verified
// once, then served from the cache. One PDF thread; the blob store under the scratch DATA_DIR.
const runtime = await createRuntime(
  { config, orm: database.orm, logger: createLogger('silent'), auditKey: Buffer.alloc(32, 7), seal: loadSealCertificate(config) },
  { pdfWorkers: { threads: 1 }, blobStore: createFileBlobStore(path.join(dataDir, 'blobs')) },
);
const { app } = runtime;
const running = await listen(app, { port: 0, host: '127.0.0.1', maxUploadBytes: config.maxDocumentBytes });

try {
  const team = await createTeam(database.orm.em.fork(), { name: 'Benchmark team' });
  const em = database.orm.em.fork();
  for (let index = 0; index < Math.max(...pageSizes); index += 1) {
    const envelope = em.create(Envelope, { team: em.getReference(Team, team.teamId), name: `Envelope ${index}`, expirationPeriodDays: 30 });
    const document = em.create(Document, {
      envelope,
      name: 'contract.pdf',
      pageCount: 3,
      pages: [0, 1, 2].map(() => ({ width: 595, height: 842, rotation: 0 })),
      contentSha256: 'b'.repeat(64),
      byteSize: 120_000,
    });
    for (const identifier of ['buyer', 'seller', 'witness']) {
      const recipient = em.create(Recipient, { envelope, identifier, roleName: identifier, type: 'signer', color: '#2563EB' });
      em.create(Agent, { recipient, kind: 'info', info: { name: `${identifier} ${index}`, email: `${identifier}${index}@example.com` } });
      const field = em.create(Field, { envelope, recipient, identifier: `${identifier}-initials`, type: 'text', config: {} });
      for (const page of [0, 1, 2]) em.create(FieldView, { field, document, page, position: page, x: 40, y: 760, width: 60, height: 20 });
    }
  }
  await em.flush();

  const query = `query($first: Int) { envelopes(first: $first) { nodes { id name status
    documents { id name pages { width height } }
    recipients { id identifier agents { info { name email } } }
    fields { id identifier views { documentId page location { x y } size { width height } } } } } }`;
  const call = async (first: number) => {
    const response = await fetch(`${running.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-service-api-key': team.apiKey },
      body: JSON.stringify({ query, variables: { first } }),
    });
    const body = (await response.json()) as { errors?: unknown };
    if (body.errors) throw new Error(JSON.stringify(body.errors));
  };

  const rows: string[][] = [];
  for (const first of pageSizes) {
    await call(first); // warm-up
    statements = 0;
    await call(first);
    const perRequest = statements;
    const timings: number[] = [];
    for (let run = 0; run < runs; run += 1) {
      const started = process.hrtime.bigint();
      await call(first);
      timings.push(Number(process.hrtime.bigint() - started) / 1e6);
    }
    timings.sort((a, b) => a - b);
    const objects = first * (1 + 1 + 3 * 2 + 3 * (1 + 3));
    rows.push([String(first), String(objects), String(perRequest), timings[Math.floor(runs / 2)].toFixed(1), timings[Math.floor(runs * 0.9)].toFixed(1)]);
  }
  const header = ['envelopes', 'objects', 'SQL statements', 'median ms', 'p90 ms'];
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column].length)));
  const line = (cells: string[]) => `| ${cells.map((cell, column) => cell.padStart(widths[column])).join(' | ')} |`;
  console.log(`database: ${database.isEmbedded ? 'embedded PostgreSQL (PGlite)' : 'PostgreSQL server'}, ${runs} runs each`);
  console.log(line(header));
  console.log(`|${widths.map((width) => '-'.repeat(width + 2)).join('|')}|`);
  for (const row of rows) console.log(line(row));
  const largest = rows.at(-1)!;
  printResult(`nested_page_${largest[0]}_median_ms`, Number(largest[3]));
  printResult(`nested_page_${largest[0]}_statements`, Number(largest[2]));
} finally {
  await runtime.closeLiveEvents();
  await running.close(1000);
  await runtime.close();
  await database.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
