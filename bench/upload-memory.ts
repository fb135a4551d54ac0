/**
 * Upload memory benchmark: starts the service as a child process (embedded database unless
 * DATABASE_URL is set), uploads a 40 MB PDF through REST and through GraphQL several times
 * while sampling the server's resident memory every 10 ms, and prints the peak growth over the
 * idle baseline. Streaming uploads keep the growth far below the file size.
 *
 *   npm run bench:upload [-- --size-mb 40 --runs 3]
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { makeExactSizePdf } from '../test/fixtures/pdfs.ts';
import { printResult, QUICK, QUICK_OPTION } from './report.ts';
import { createTeamWithCli, spawnService, waitForListening } from './service-process.ts';

const { values } = parseArgs({ options: { 'size-mb': { type: 'string' }, runs: { type: 'string' }, ...QUICK_OPTION } });
// Quick: one small upload per face.
const sizeBytes = Math.round(Number(values['size-mb'] ?? (QUICK ? '2' : '40')) * 1024 * 1024);
const runs = Number(values.runs ?? (QUICK ? '1' : '3'));

const workDirectory = fs.mkdtempSync(path.join(os.tmpdir(), 'envelope-bench-'));
const pdfPath = path.join(workDirectory, 'large.pdf');
fs.writeFileSync(pdfPath, makeExactSizePdf(sizeBytes));
const serviceEnv = { DATA_DIR: path.join(workDirectory, 'data') };
// Info level for the `listening` line, whose address is read (never the banner's text).
const server = spawnService({ ...serviceEnv, PORT: '0', LOG_LEVEL: 'info' }, { stdio: ['ignore', 'pipe', 'inherit'] });
// The pipe is drained so that the access log never blocks the server.
const listening = waitForListening(server).finally(() => server.stdout!.resume());

function residentBytes(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = /VmRSS:\s+(\d+) kB/.exec(status);
  return match ? Number(match[1]) * 1024 : 0;
}

/** Sends a multipart body whose file part is streamed from disk, so the client holds no copy. */
function postMultipart(baseUrl: string, pathname: string, headers: Record<string, string>, parts: { before: string; after: string }): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const boundary = `----bench${Date.now()}`;
    const before = Buffer.from(parts.before.replaceAll('BOUNDARY', boundary));
    const after = Buffer.from(parts.after.replaceAll('BOUNDARY', boundary));
    const request = http.request(
      new URL(pathname, baseUrl),
      {
        method: 'POST',
        headers: { ...headers, 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': before.length + sizeBytes + after.length },
      },
      (response) => {
        let body = '';
        response.on('data', (chunk) => (body += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
      },
    );
    request.on('error', reject);
    request.write(before);
    const file = fs.createReadStream(pdfPath);
    file.pipe(request, { end: false });
    file.on('end', () => request.end(after));
  });
}

async function measure(upload: () => Promise<{ status: number; body: string }>) {
  const baseline = residentBytes(server.pid!);
  let peak = baseline;
  const sampler = setInterval(() => {
    peak = Math.max(peak, residentBytes(server.pid!));
  }, 10);
  const started = process.hrtime.bigint();
  const answer = await upload();
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  clearInterval(sampler);
  if (answer.status !== 200 || answer.body.includes('"errors"') || answer.body.includes('"success":false')) {
    throw new Error(`upload failed: ${answer.status} ${answer.body.slice(0, 300)}`);
  }
  return { baseline, peak, seconds };
}

const mib = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);

try {
  const baseUrl = await listening;
  const { apiKey } = await createTeamWithCli(serviceEnv);
  const created = await fetch(`${baseUrl}/api/v1/key/envelopes`, {
    method: 'POST',
    headers: { 'x-service-api-key': apiKey, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'Benchmark' }),
  });
  const envelopeId = ((await created.json()) as { payload: { envelopeId: string } }).payload.envelopeId;

  const faces = {
    REST: () =>
      postMultipart(
        baseUrl,
        `/api/v1/key/envelopes/${envelopeId}/documents`,
        { 'x-service-api-key': apiKey },
        {
          before: '--BOUNDARY\r\nContent-Disposition: form-data; name="document"; filename="large.pdf"\r\nContent-Type: application/pdf\r\n\r\n',
          after: '\r\n--BOUNDARY--\r\n',
        },
      ),
    GraphQL: () =>
      postMultipart(
        baseUrl,
        '/graphql',
        { 'x-service-api-key': apiKey },
        {
          before:
            `--BOUNDARY\r\nContent-Disposition: form-data; name="operations"\r\n\r\n${JSON.stringify({
              query: 'mutation($e: ID!, $input: AddDocumentInput!) { addDocument(envelopeId: $e, input: $input) { id pageCount } }',
              variables: { e: envelopeId, input: { file: null } },
            })}\r\n` +
            `--BOUNDARY\r\nContent-Disposition: form-data; name="map"\r\n\r\n${JSON.stringify({ 0: ['variables.input.file'] })}\r\n` +
            '--BOUNDARY\r\nContent-Disposition: form-data; name="0"; filename="large.pdf"\r\nContent-Type: application/pdf\r\n\r\n',
          after: '\r\n--BOUNDARY--\r\n',
        },
      ),
  };

  const rows: string[][] = [];
  const largestGrowth: Record<string, number> = {};
  for (const [face, upload] of Object.entries(faces)) {
    for (let run = 1; run <= runs; run += 1) {
      const result = await measure(upload);
      largestGrowth[face] = Math.max(largestGrowth[face] ?? 0, (result.peak - result.baseline) / 1024 / 1024);
      rows.push([face, String(run), mib(sizeBytes), mib(result.baseline), mib(result.peak), mib(result.peak - result.baseline), result.seconds.toFixed(2)]);
    }
  }
  const header = ['face', 'run', 'file MiB', 'RSS before MiB', 'RSS peak MiB', 'peak growth MiB', 'seconds'];
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column].length)));
  const line = (cells: string[]) => `| ${cells.map((cell, column) => cell.padStart(widths[column])).join(' | ')} |`;
  console.log(line(header));
  console.log(`|${widths.map((width) => '-'.repeat(width + 2)).join('|')}|`);
  for (const row of rows) console.log(line(row));
  printResult('upload_rest_peak_growth_mib', largestGrowth.REST);
  printResult('upload_graphql_peak_growth_mib', largestGrowth.GraphQL);
} finally {
  server.kill('SIGTERM');
  await new Promise((resolve) => server.once('exit', resolve));
  fs.rmSync(workDirectory, { recursive: true, force: true });
}
