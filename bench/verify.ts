/**
 * `POST /verify` of a PDF with six signatures and a DSS (issue 35: users of the EU DSS
 * demonstration report 20 s and more past five signatures; the aim is under 1 s on two cores).
 *
 * The bench makes its own file (test/helpers/multi-signed.ts): six people's signatures, each an
 * incremental update, certificates from a local CA (openssl) that revoked the third, a /DSS with
 * the CA's CRL, the sixth timestamped by a local TSA (`openssl ts`), then document timestamps
 * (B-LTA). It starts the service as `npm start` does (embedded database unless DATABASE_URL is
 * set) with TRUST_ANCHORS naming the CA, and times the whole request, upload to answer, after one
 * untimed request (the PDF worker thread starts on the first). The peer on the same file: poppler's
 * `pdfsig` (each signature's integrity and certificate, no levels, no DSS), run as a process, so
 * its time includes its start (a few ms), as a user running it would see.
 *
 *   npm run bench:verify [-- --runs 9]
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { makeMultiSignedPdf } from '../test/helpers/multi-signed.ts';
import { startLocalTsa } from '../test/helpers/tsa.ts';
import { printResult, QUICK, QUICK_OPTION } from './report.ts';
import { createTeamWithCli, spawnService, waitForListening } from './service-process.ts';

const { values } = parseArgs({ options: { runs: { type: 'string' }, ...QUICK_OPTION } });
const runs = Number(values.runs ?? (QUICK ? '1' : '9'));
const workDirectory = fs.mkdtempSync(path.join(os.tmpdir(), 'envelope-bench-verify-'));

function table(header: string[], rows: string[][]) {
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]!.length)));
  const line = (cells: string[]) => `| ${cells.map((cell, column) => cell.padStart(widths[column]!)).join(' | ')} |`;
  console.log(line(header));
  console.log(`|${widths.map((width) => '-'.repeat(width + 2)).join('|')}|`);
  for (const row of rows) console.log(line(row));
}

const median = (numbers: number[]) => [...numbers].sort((a, b) => a - b)[Math.floor(numbers.length / 2)]!;

const tsa = await startLocalTsa();
const fixture = await makeMultiSignedPdf({ count: 6, revoke: [3], tsaUrl: tsa.url });
await tsa.close();
const pdfPath = path.join(workDirectory, 'six-signatures.pdf');
fs.writeFileSync(pdfPath, fixture.bytes);
const anchorsPath = path.join(workDirectory, 'anchors.pem');
fs.writeFileSync(anchorsPath, fixture.caPem);

const serviceEnv = { DATA_DIR: path.join(workDirectory, 'data'), TRUST_ANCHORS: anchorsPath };
const server = spawnService({ ...serviceEnv, PORT: '0', LOG_LEVEL: 'info' }, { stdio: ['ignore', 'pipe', 'inherit'] });
const listening = waitForListening(server).finally(() => server.stdout!.resume());

try {
  const baseUrl = await listening;
  const { apiKey } = await createTeamWithCli(serviceEnv);
  const verify = async () => {
    const form = new FormData();
    form.append('document', new Blob([new Uint8Array(fixture.bytes)], { type: 'application/pdf' }), 'six-signatures.pdf');
    const started = performance.now();
    const response = await fetch(`${baseUrl}/api/v1/key/verify`, { method: 'POST', headers: { 'x-service-api-key': apiKey }, body: form });
    const body = (await response.json()) as {
      payload: { verification: { valid: boolean; level: string; signatures: { type: string; valid: boolean; chain: { status: string }; revocation: { status: string } }[] } };
    };
    const elapsed = performance.now() - started;
    if (response.status !== 200) throw new Error(`POST /verify answered ${response.status}: ${JSON.stringify(body)}`);
    return { elapsed, verification: body.payload.verification };
  };
  const pdfsig = () => {
    const started = performance.now();
    let output: string;
    try {
      output = execFileSync('pdfsig', [pdfPath], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (error) {
      output = String((error as { stdout?: string }).stdout ?? '');
    }
    return { elapsed: performance.now() - started, valid: (output.match(/Signature is Valid\./g) ?? []).length };
  };

  const first = await verify();
  const people = first.verification.signatures.filter((signature) => signature.type === 'signature');
  console.log(
    `\nThe file: ${(fixture.bytes.length / 1024).toFixed(0)} KiB, ${people.length} signatures (${people.filter((signature) => signature.valid).length} valid, ` +
      `${people.filter((signature) => signature.chain.status === 'trusted').length} chains trusted, ${people.filter((signature) => signature.revocation.status === 'revoked').length} revoked) ` +
      `and ${first.verification.signatures.length - people.length} document timestamps; level ${first.verification.level}. First request (thread start): ${first.elapsed.toFixed(0)} ms.`,
  );
  const ours: number[] = [];
  const theirs: number[] = [];
  let popplerValid = 0;
  for (let run = 0; run < runs; run++) {
    ours.push((await verify()).elapsed);
    const peer = pdfsig();
    theirs.push(peer.elapsed);
    popplerValid = peer.valid;
  }
  const ourMedian = median(ours);
  const peerMedian = median(theirs);
  console.log(`\n${runs} runs each, medians\n`);
  table(
    ['what', 'reports', 'median ms', 'max ms', '÷ pdfsig'],
    [
      [
        'POST /verify (upload, worker thread, JSON answer)',
        'integrity, byte ranges, levels, chains, revocation, DSS',
        ourMedian.toFixed(0),
        Math.max(...ours).toFixed(0),
        (ourMedian / peerMedian).toFixed(2),
      ],
      [`pdfsig (poppler, a process; ${popplerValid} valid)`, 'integrity, certificate (its own trust store)', peerMedian.toFixed(0), Math.max(...theirs).toFixed(0), '1.00'],
    ],
  );
  printResult('verify_six_signatures_ms', ourMedian);
  printResult('verify_six_signatures_vs_pdfsig', ourMedian / peerMedian);
} finally {
  server.kill('SIGTERM');
  await new Promise((resolve) => server.once('exit', resolve));
  fs.rmSync(workDirectory, { recursive: true, force: true });
  fs.rmSync(fixture.directory, { recursive: true, force: true });
}
