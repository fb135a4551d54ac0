/**
 * Artefact benchmark, two parts, printing a table each:
 *
 * 1. Finalization rendering: a 100-page, 50-field document (text, checkbox, typed and drawn
 *    signatures) rendered and sealed by the service's PDF worker (what the artefact job does per
 *    document), against raw pdf-lib stamping of the same values with no seal: with the standard
 *    Helvetica (which cannot encode ğ, ş, ı: those are drawn as '?'; the RESULT's baseline), and
 *    with an embedded Unicode TrueType font (subset, as a pdf-lib user must to draw them).
 * 2. The ZIP download: the service started as `npm start` runs it (embedded database unless
 *    DATABASE_URL is set), ten 5 MB documents uploaded, then `GET /envelopes/{id}/pdf` (draft
 *    copies, the heavier path: each document is rendered as the ZIP is written): time to first
 *    byte, total time, and the server's peak resident-memory growth.
 *
 * Part 1 starts with one untimed round (the worker's first render parses its fonts), printed as
 * `run 0`: raw, raw TrueType, unsealed, sealed.
 *
 *   npm run bench:artefacts [-- --runs 3]
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import fontkit from '@pdf-lib/fontkit';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import { loadSealCertificate } from '../src/domain/artefact/seal-certificate.ts';
import type { RenderField } from '../src/domain/pdf/render.ts';
import { createPdfWorkerPool } from '../src/domain/pdf/worker-pool.ts';
import { makeExactSizePdf, makePdf } from '../test/fixtures/pdfs.ts';
import { blackPngDataUrl } from '../test/helpers/pdf-tools.ts';
import { printResult, QUICK, QUICK_OPTION } from './report.ts';
import { createTeamWithCli, spawnService, waitForListening } from './service-process.ts';

const { values } = parseArgs({ options: { runs: { type: 'string' }, ...QUICK_OPTION } });
const runs = Number(values.runs ?? (QUICK ? '1' : '3'));
// Quick: a 10-page document and a ZIP of two 1 MB documents.
const PAGES = QUICK ? 10 : 100;
const ZIP_DOCUMENTS = QUICK ? 2 : 10;
const ZIP_DOCUMENT_BYTES = (QUICK ? 1 : 5) * 1024 * 1024;
const workDirectory = fs.mkdtempSync(path.join(os.tmpdir(), 'envelope-bench-artefacts-'));

function table(header: string[], rows: string[][]) {
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]!.length)));
  const line = (cells: string[]) => `| ${cells.map((cell, column) => cell.padStart(widths[column]!)).join(' | ')} |`;
  console.log(line(header));
  console.log(`|${widths.map((width) => '-'.repeat(width + 2)).join('|')}|`);
  for (const row of rows) console.log(line(row));
}

const mib = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);

// ---- 1. rendering ---------------------------------------------------------------------------
const sourcePath = path.join(workDirectory, 'hundred.pdf');
fs.writeFileSync(sourcePath, await makePdf({ pages: PAGES }));
const image = blackPngDataUrl(200, 60);
const fields: RenderField[] = Array.from({ length: 50 }, (_, index) => {
  const view = [{ page: (index * 2) % PAGES, x: 60, y: 100 + (index % 10) * 40, width: 200, height: 30 }];
  switch (index % 4) {
    case 0:
      return { type: 'text', config: {}, value: { text: `Değer ${index}: şartları kabul ediyorum` }, views: view };
    case 1:
      return { type: 'checkbox', config: {}, value: { checked: true }, views: view };
    case 2:
      return { type: 'simple_signature', config: {}, value: { kind: 'typed', text: `Ayşe Yılmaz ${index}`, font: 'cursive' }, views: view };
    default:
      return { type: 'simple_signature', config: {}, value: { kind: 'drawn', image }, views: view };
  }
});

// A TrueType font with Turkish, as a raw pdf-lib user would embed it (read once, parsed per document).
const unicodeFont = fs.readFileSync(path.join(path.dirname(createRequire(import.meta.url).resolve('pdfjs-dist/package.json')), 'standard_fonts', 'LiberationSans-Regular.ttf'));

async function rawStamping(font: 'helvetica' | 'unicode'): Promise<number> {
  const started = process.hrtime.bigint();
  const pdf = await PDFDocument.load(fs.readFileSync(sourcePath));
  if (font === 'unicode') pdf.registerFontkit(fontkit);
  const embedded = await (font === 'helvetica' ? pdf.embedFont(StandardFonts.Helvetica) : pdf.embedFont(unicodeFont, { subset: true }));
  const png = await pdf.embedPng(Buffer.from(image.split(',')[1]!, 'base64'));
  const pages = pdf.getPages();
  for (const field of fields) {
    const view = field.views[0]!;
    const page = pages[view.page]!;
    const y = page.getHeight() - view.y - view.height;
    if (field.type === 'simple_signature' && (field.value as { kind: string }).kind === 'drawn') page.drawImage(png, { x: view.x, y, width: view.width, height: view.height });
    else {
      const text = JSON.stringify(field.value).slice(0, 40);
      // WinAnsi has no ğ, ş, ı: with Helvetica the raw baseline draws what it can.
      page.drawText(font === 'helvetica' ? text.replace(/[^\x20-\x7e]/g, '?') : text, { x: view.x, y: y + 8, size: 10, font: embedded });
    }
  }
  fs.writeFileSync(path.join(workDirectory, `raw-${font}.pdf`), await pdf.save());
  return Number(process.hrtime.bigint() - started) / 1e6;
}

const pool = createPdfWorkerPool({ threads: 1 });
const seal = loadSealCertificate({ sealP12Path: undefined, sealP12Password: undefined, dataDir: workDirectory });
async function serviceRender(sealed: boolean): Promise<number> {
  const started = process.hrtime.bigint();
  await pool.render({
    sourcePath,
    outputPath: path.join(workDirectory, `service-${sealed}.pdf`),
    fields,
    draft: false,
    seal: sealed ? { material: { keyPkcs8: seal.keyPkcs8, certificates: seal.certificates }, info: { reason: 'bench', name: 'bench', signingTime: new Date() } } : undefined,
  });
  return Number(process.hrtime.bigint() - started) / 1e6;
}

const renderRows: string[][] = [];
const finalizeRatios: number[] = [];
const unicodeRatios: number[] = [];
// One untimed round first: the worker thread's first render loads and parses its fonts and
// compiles the code (a few hundred ms, once per thread); the runs measure the steady state, on
// both sides. The cold round is printed, not counted.
const cold = { raw: await rawStamping('helvetica'), rawUnicode: await rawStamping('unicode'), unsealed: await serviceRender(false), sealed: await serviceRender(true) };
renderRows.push([
  'first round (cold: worker start-up, fonts parsed), not counted',
  '0',
  `${cold.raw.toFixed(0)} / ${cold.rawUnicode.toFixed(0)} / ${cold.unsealed.toFixed(0)} / ${cold.sealed.toFixed(0)}`,
  '',
]);
for (let run = 1; run <= runs; run++) {
  const raw = await rawStamping('helvetica');
  const rawUnicode = await rawStamping('unicode');
  const unsealed = await serviceRender(false);
  const sealed = await serviceRender(true);
  finalizeRatios.push(sealed / raw);
  unicodeRatios.push(sealed / rawUnicode);
  renderRows.push(['raw pdf-lib stamping (main thread, Helvetica, no seal)', String(run), raw.toFixed(0), '']);
  renderRows.push(['raw pdf-lib stamping (main thread, embedded TrueType subset, no seal)', String(run), rawUnicode.toFixed(0), '']);
  renderRows.push(['service render (worker, embedded fonts), unsealed', String(run), unsealed.toFixed(0), '']);
  renderRows.push(['service render + PAdES seal (the artefact job)', String(run), sealed.toFixed(0), `${(sealed / raw).toFixed(2)} / ${(sealed / rawUnicode).toFixed(2)}`]);
}
const medianOf = (numbers: number[]) => [...numbers].sort((a, b) => a - b)[Math.floor(numbers.length / 2)]!;
await pool.close();
console.log(`\n${PAGES} pages, 50 fields\n`);
table(['what', 'run', 'ms', 'sealed ÷ raw Helvetica / ÷ raw TrueType'], renderRows);

// ---- 2. the ZIP -----------------------------------------------------------------------------
const serviceEnv = { DATA_DIR: path.join(workDirectory, 'data') };
// Info level for the `listening` line, whose address is read (never the banner's text).
const server = spawnService({ ...serviceEnv, PORT: '0', LOG_LEVEL: 'info' }, { stdio: ['ignore', 'pipe', 'inherit'] });
const listening = waitForListening(server).finally(() => server.stdout!.resume());
const residentBytes = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024;

try {
  const baseUrl = await listening;
  const { apiKey } = await createTeamWithCli(serviceEnv);
  const api = `${baseUrl}/api/v1/key`;
  const headers = { 'x-service-api-key': apiKey };
  const created = await fetch(`${api}/envelopes`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'ZIP bench' }) });
  const envelopeId = ((await created.json()) as { payload: { envelopeId: string } }).payload.envelopeId;
  const fiveMb = makeExactSizePdf(ZIP_DOCUMENT_BYTES);
  for (let index = 0; index < ZIP_DOCUMENTS; index++) {
    const form = new FormData();
    form.append('document', new Blob([fiveMb as Uint8Array<ArrayBuffer>], { type: 'application/pdf' }), `doc-${index}.pdf`);
    const uploaded = await fetch(`${api}/envelopes/${envelopeId}/documents`, { method: 'POST', headers, body: form });
    if (!uploaded.ok) throw new Error(`upload failed: ${uploaded.status} ${await uploaded.text()}`);
  }
  const zipRows: string[][] = [];
  for (let run = 1; run <= runs; run++) {
    const baseline = residentBytes(server.pid!);
    let peak = baseline;
    const sampler = setInterval(() => (peak = Math.max(peak, residentBytes(server.pid!))), 10);
    const started = process.hrtime.bigint();
    const response = await fetch(`${api}/envelopes/${envelopeId}/pdf`, { headers });
    const reader = response.body!.getReader();
    let firstByteMs = 0;
    let bytes = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (bytes === 0) firstByteMs = Number(process.hrtime.bigint() - started) / 1e6;
      bytes += value.length;
    }
    const totalMs = Number(process.hrtime.bigint() - started) / 1e6;
    clearInterval(sampler);
    zipRows.push([String(run), mib(bytes), firstByteMs.toFixed(0), totalMs.toFixed(0), mib(baseline), mib(peak - baseline)]);
  }
  console.log(`\nZIP of ${ZIP_DOCUMENTS} documents of ${mib(ZIP_DOCUMENT_BYTES)} MiB (draft copies, rendered while streaming)\n`);
  table(['run', 'ZIP MiB', 'first byte ms', 'total ms', 'RSS before MiB', 'peak growth MiB'], zipRows);
  // Rendered and sealed (the artefact job's work per document) over raw stamping: median of the runs' ratios.
  printResult('p5_finalize_vs_raw', medianOf(finalizeRatios));
  // The same against raw stamping with an embedded Unicode font (context for the figure above, not its goal).
  console.log(`p5 against raw stamping with an embedded TrueType subset: median ${medianOf(unicodeRatios).toFixed(2)}`);
  printResult('zip_first_byte_ms', medianOf(zipRows.map((row) => Number(row[2]))));
  printResult('zip_peak_growth_mib', Math.max(...zipRows.map((row) => Number(row[5]))));
} finally {
  server.kill('SIGTERM');
  await new Promise((resolve) => server.once('exit', resolve));
  fs.rmSync(workDirectory, { recursive: true, force: true });
}
