/**
 * P11, the signing page on a slow phone line (issue 37): a signer opens the link of a two-page
 * envelope in Debian's Chromium over an emulated 400 kbit/s line (down and up) with 400 ms of
 * latency and the browser's cache off, at a phone's size; side by side in the same run with the
 * floor a person would compare it to, a static page served by plain `node:http` over the same
 * emulated line: the first page as an image and one input over it.
 *
 *   npm run bench:signing-page [-- --runs 5]
 *   npm run bench:signing-page -- --quick      (BENCH_QUICK=1: one load of each, on a 4 Mbit/s line)
 *
 * What is measured, per load (a fresh browser context each time; each figure the median of the runs):
 * - `p11_first_field_ms`: from the navigation's start (the document's `performance.timeOrigin`)
 *   to the first moment the first field of the signer is usable. "Usable" is checked in the page
 *   at every animation frame: the field's control exists, is rendered (`checkVisibility()`, a
 *   box wider and taller than 0), is not disabled, lies in the viewport, and the element at its
 *   centre (`elementFromPoint`) is the control itself or inside it, so a tap there reaches it and
 *   nothing (a loading screen, an overlay) covers it. After the run the bench clicks it and
 *   waits for its editor to open, so a control that looked usable but was not fails the bench.
 * - `p11_first_load_kb`: the bytes the browser received over the line (encoded: compressed
 *   bodies and headers, Chromium's `encodedDataLength`) from the navigation until that moment.
 * - the first page drawn: the first sheet's canvas drawn by pdf.js (`.page.rendered`), or for
 *   the floor its image decoded, and the bytes until then. The floor's image is the signing
 *   page's own drawing of page 1 (an element screenshot, JPEG), so both show the same pixels.
 *
 * The service is started as `npm start` starts it on a scratch database of DATABASE_URL's server,
 * mailing invitations to a local SMTP server; the link is taken from the mail. The bench can
 * measure another checkout's page (the figure before a change): run it with that checkout as the
 * working directory, e.g. `cd ../main && node ../wt/bench/signing-page-slow-line.ts`.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { type Browser, type BrowserContext, type CDPSession, chromium, type Page } from 'playwright-core';
import { freePort } from './reads/processes.ts';
import { printResult, QUICK, QUICK_OPTION } from './report.ts';
import { createScratch, restCaller } from './scratch-service.ts';
import { spawnService, waitForListening } from './service-process.ts';
import { startMailbox } from './signing/mailbox.ts';
import { makeDocument } from './signing/shape.ts';

const { values } = parseArgs({ options: { runs: { type: 'string' }, ...QUICK_OPTION } });
const RUNS = Number(values.runs ?? (QUICK ? '1' : '5'));
const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * The line: 400 kbit/s each way, 400 ms added to every request's round trip (Chromium's emulation).
 * Quick mode (CI, whose figures are not read) runs the same pages on a line ten times as fast: the
 * slow line's waiting was most of CI's 44 s for this bench.
 */
const LINE = QUICK
  ? { offline: false, latency: 40, downloadThroughput: 4_000_000 / 8, uploadThroughput: 4_000_000 / 8 }
  : { offline: false, latency: 400, downloadThroughput: 400_000 / 8, uploadThroughput: 400_000 / 8 };
/** A phone: the viewport of a common one, at its pixel ratio. */
const PHONE = { viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true };
const WAIT_MS = QUICK ? 60_000 : 120_000;

type Load = { fieldMs: number; fieldKb: number; pageMs: number; pageKb: number; requests: number; totalKb: number; allKb: number };

function log(message: string) {
  process.stderr.write(`${message}\n`);
}

function median(numbers: number[]): number {
  const sorted = [...numbers].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/**
 * Runs in the page before its own scripts: records (in `window.__p11`) the first frame at which
 * the control `selector` names is usable (the definition above), and the first at which the
 * first page shows (`shown`, a selector: a drawn canvas, a decoded image).
 */
function watchScript(selector: string, shown: string): string {
  return `(() => {
  const marks = { field: null, page: null };
  Object.defineProperty(window, '__p11', { value: marks });
  const usable = () => {
    const control = document.querySelector(${JSON.stringify(selector)});
    if (!control || control.disabled || !control.checkVisibility?.()) return false;
    const box = control.getBoundingClientRect();
    if (box.width <= 0 || box.height <= 0) return false;
    const x = box.left + box.width / 2, y = box.top + box.height / 2;
    if (x < 0 || y < 0 || x >= innerWidth || y >= innerHeight) return false;
    const hit = document.elementFromPoint(x, y);
    return hit !== null && (hit === control || control.contains(hit));
  };
  const shows = () => { const element = document.querySelector(${JSON.stringify(shown)}); return element !== null && (element.tagName !== 'IMG' || (element.complete && element.naturalWidth > 0)); };
  const frame = () => {
    if (marks.field === null && usable()) marks.field = performance.now();
    if (marks.page === null && shows()) marks.page = performance.now();
    if (marks.field === null || marks.page === null) requestAnimationFrame(frame);
  };
  requestAnimationFrame(frame);
})();`;
}

/**
 * The bytes each request received, with the time (CDP's monotonic clock, ms) each part arrived,
 * so that the bytes until a moment of the page can be summed: the body's chunks as they arrive
 * (dataReceived), and what loadingFinished says beyond them (headers, a body reported at once).
 */
function countBytes(cdp: CDPSession) {
  const arrivals: { at: number; bytes: number; requestId: string }[] = [];
  const received = new Map<string, number>();
  const urls = new Map<string, string>();
  let navigationStart: { monotonicMs: number; wallMs: number } | null = null;
  cdp.on('Network.requestWillBeSent', (event) => {
    urls.set(event.requestId, event.request.url);
    if (navigationStart === null && event.type === 'Document') navigationStart = { monotonicMs: event.timestamp * 1000, wallMs: event.wallTime * 1000 };
  });
  cdp.on('Network.dataReceived', (event) => {
    arrivals.push({ at: event.timestamp * 1000, bytes: event.encodedDataLength, requestId: event.requestId });
    received.set(event.requestId, (received.get(event.requestId) ?? 0) + event.encodedDataLength);
  });
  cdp.on('Network.loadingFinished', (event) => {
    const rest = event.encodedDataLength - (received.get(event.requestId) ?? 0);
    received.set(event.requestId, event.encodedDataLength);
    if (rest > 0) arrivals.push({ at: event.timestamp * 1000, bytes: rest, requestId: event.requestId });
  });
  return {
    /** Bytes received up to `wallMs` (the page's timeOrigin + performance.now()). */
    until(wallMs: number): number {
      if (navigationStart === null) throw new Error('no document request was seen');
      const limit = navigationStart.monotonicMs + (wallMs - navigationStart.wallMs);
      return arrivals.filter((arrival) => arrival.at <= limit).reduce((sum, arrival) => sum + arrival.bytes, 0);
    },
    /** Each request's bytes up to `wallMs`, with its URL's last part (BENCH_VERBOSE=1 prints them). */
    byRequest(wallMs: number): string[] {
      const limit = navigationStart!.monotonicMs + (wallMs - navigationStart!.wallMs);
      const sums = new Map<string, number>();
      const spans = new Map<string, { first: number; last: number }>();
      for (const arrival of arrivals) {
        if (arrival.at > limit) continue;
        sums.set(arrival.requestId, (sums.get(arrival.requestId) ?? 0) + arrival.bytes);
        const span = spans.get(arrival.requestId) ?? { first: arrival.at, last: arrival.at };
        span.last = arrival.at;
        spans.set(arrival.requestId, span);
      }
      const since = (at: number) => (at - navigationStart!.monotonicMs).toFixed(0);
      return [...sums].map(
        ([requestId, bytes]) =>
          `${(bytes / 1000).toFixed(1)} kB ${new URL(urls.get(requestId) ?? 'about:blank').pathname.replace(/sgn_[A-Za-z0-9_-]+/, 'sgn_…')} (${since(spans.get(requestId)!.first)}–${since(spans.get(requestId)!.last)} ms)`,
      );
    },
    total: () => arrivals.reduce((sum, arrival) => sum + arrival.bytes, 0),
    requests: () => received.size,
  };
}

/** One cold load of `url` over the emulated line; `after` runs (unmeasured) once both marks are set. */
async function measureLoad(browser: Browser, url: string, marks: { field: string; page: string }, after?: (page: Page) => Promise<void>): Promise<Load> {
  const context: BrowserContext = await browser.newContext({ ...PHONE, locale: 'en-US' });
  try {
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(error.message));
    const cdp = await context.newCDPSession(page);
    await cdp.send('Network.enable');
    await cdp.send('Network.setCacheDisabled', { cacheDisabled: true });
    await cdp.send('Network.emulateNetworkConditions', LINE);
    const bytes = countBytes(cdp);
    // Playwright also sees the requests of the page's workers (pdf.js's worker fetches its own
    // script), which the page's CDP session does not: the whole load's bytes are summed here too.
    const sizes: Promise<number>[] = [];
    context.on('requestfinished', (request) => sizes.push(request.sizes().then((size) => size.responseBodySize + size.responseHeadersSize)));
    await page.addInitScript({ content: watchScript(marks.field, marks.page) });
    await page.goto(url, { waitUntil: 'commit' });
    const handle = await page.waitForFunction(
      () => {
        const seen = (window as unknown as { __p11?: { field: number | null; page: number | null } }).__p11;
        return seen && seen.field !== null && seen.page !== null ? { ...seen, origin: performance.timeOrigin } : null;
      },
      undefined,
      { timeout: WAIT_MS, polling: 100 },
    );
    const seen = (await handle.jsonValue()) as { field: number; page: number; origin: number };
    if (problems.length > 0) throw new Error(`the page failed: ${problems.join('; ')}`);
    // Everything the page still fetches on its own (the rest of the line's work) is left to finish.
    await page.waitForLoadState('load').catch(() => {});
    if (process.env.BENCH_VERBOSE === '1') log(`until the first field:\n  ${bytes.byRequest(seen.origin + seen.field).join('\n  ')}`);
    if (process.env.BENCH_VERBOSE === '1') log(`until page 1 is drawn:\n  ${bytes.byRequest(seen.origin + seen.page).join('\n  ')}`);
    const load: Load = {
      fieldMs: seen.field,
      fieldKb: bytes.until(seen.origin + seen.field) / 1000,
      pageMs: seen.page,
      pageKb: bytes.until(seen.origin + seen.page) / 1000,
      requests: bytes.requests(),
      totalKb: bytes.total() / 1000,
      allKb: (await Promise.all(sizes)).reduce((sum, size) => sum + size, 0) / 1000,
    };
    if (after) {
      await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });
      await after(page);
    }
    return load;
  } finally {
    await context.close();
  }
}

/** The floor: a static page over the same line, the first page as an image with one input over it. */
async function startFloor(image: Buffer, size: { width: number; height: number }, field: { left: number; top: number; width: number; height: number }) {
  const html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Sign</title>
<style>body{margin:0;font:16px system-ui,sans-serif}.sheet{position:relative;margin:8px}.sheet img{display:block;width:100%;height:auto}.sheet input{position:absolute;left:${field.left}%;top:${field.top}%;width:${field.width}%;height:${field.height}%;box-sizing:border-box}</style></head>
<body><div class="sheet"><img id="page-1" src="/page-1.jpg" width="${size.width}" height="${size.height}" alt="Page 1"><input id="first" aria-label="City"></div></body></html>`;
  const server = http.createServer((request, response) => {
    if (request.url === '/page-1.jpg') {
      response.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': image.byteLength });
      response.end(image);
      return;
    }
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-length': Buffer.byteLength(html) });
    response.end(html);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}/`, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/**
 * The service as `npm start` starts it, on the scratch database, mailing through the local SMTP
 * server; its address from its `listening` log line (a loaded machine may take a minute to start it).
 */
async function startService(databaseUrl: string, smtpUrl: string) {
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'envelope-bench-signing-page-'));
  const child = spawnService(
    {
      DATABASE_URL: databaseUrl,
      PORT: String(await freePort()),
      DATA_DIR: path.join(directory, 'data'),
      LOG_LEVEL: 'info',
      AUDIT_HMAC_KEY: 'b'.repeat(40),
      SMTP_URL: smtpUrl,
      MAIL_FROM: 'Signing page bench <no-reply@bench.example.com>',
    },
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const address = await waitForListening(child, { timeoutMs: 180_000 });
  // Drained from now on (its log lines are not read again).
  child.stdout!.resume();
  child.stderr!.resume();
  return {
    url: `http://127.0.0.1:${new URL(address).port}`,
    stop() {
      child.kill('SIGKILL');
      fs.rmSync(directory, { recursive: true, force: true });
    },
  };
}

async function main() {
  const root = process.cwd();
  log(`service from ${root}, ${RUNS} run(s) per side`);
  const scratch = await createScratch('signing_page');
  const mailbox = await startMailbox();
  let browser: Browser | undefined;
  const cleanups: (() => void)[] = [];
  try {
    const service = await startService(scratch.databaseUrl, mailbox.url);
    cleanups.push(() => service.stop());
    const team = await scratch.createTeam();
    const call = restCaller(`${service.url}/api/v1/key`, team.apiKey);
    // The envelope: one two-page A4 document (text on every page), one signer, a text field near
    // the top of page 1 (the first field) and a signature at the foot of page 2.
    const { envelopeId } = await call('POST', '/envelopes', { name: 'Tenancy agreement', expirationPeriodDays: 30 });
    const form = new FormData();
    form.set('document', new Blob([await makeDocument(0)], { type: 'application/pdf' }), 'agreement.pdf');
    form.set('name', 'Agreement');
    const { document } = await call('POST', `/envelopes/${envelopeId}/documents`, undefined, form);
    const { recipient } = await call('POST', `/envelopes/${envelopeId}/recipients`, {
      recipient: { type: 'signer', identifier: 'tenant', roleName: 'Tenant', order: 0, agents: [{ info: { name: 'Ayşe Yılmaz', email: 'ayse@example.com' } }] },
    });
    const FIRST = { x: 300, y: 120, width: 140, height: 24 };
    await call('POST', `/envelopes/${envelopeId}/fields`, {
      fields: [
        {
          type: 'text',
          recipientId: recipient.id,
          identifier: 'city',
          required: true,
          views: [{ documentId: document.id, page: 0, location: { x: FIRST.x, y: FIRST.y }, size: { width: FIRST.width, height: FIRST.height } }],
        },
        {
          type: 'simple_signature',
          recipientId: recipient.id,
          identifier: 'signature',
          required: true,
          views: [{ documentId: document.id, page: 1, location: { x: 60, y: 700 }, size: { width: 150, height: 40 } }],
        },
      ],
    });
    await call('PUT', `/envelopes/${envelopeId}/send`);
    const mail = await mailbox.next('ayse@example.com', (candidate) => /\/sign\/sgn_/.test(candidate.text), 60_000);
    const token = /\/sign\/(sgn_[A-Za-z0-9_-]+)/.exec(mail.text)![1]!;
    // The link's host is the service's public URL; the browser reaches it at the address it listens on.
    const link = `${service.url}/sign/${token}`;

    browser = await chromium.launch({
      executablePath: CHROMIUM_PATH,
      args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });

    let pageImage: { image: Buffer; width: number; height: number } | null = null;
    const service_: Load[] = [];
    for (let run = 0; run < RUNS + 1; run += 1) {
      // The first load is untimed (the service's first answers compile and warm caches).
      const load = await measureLoad(browser, link, { field: '.field-control[data-field="city"]', page: '.page[data-page="0"].rendered' }, async (page) => {
        // Usable means it takes a tap: the field's editor opens.
        await page.locator('.field-control[data-field="city"]').click();
        await page.locator('dialog #field-input').waitFor({ timeout: 10_000 });
        await page.keyboard.press('Escape');
        if (pageImage === null) {
          const sheet = page.locator('.page[data-page="0"] canvas');
          const box = (await sheet.boundingBox())!;
          pageImage = {
            image: await sheet.screenshot({ type: 'jpeg', quality: 75 }),
            width: Math.round(box.width * PHONE.deviceScaleFactor),
            height: Math.round(box.height * PHONE.deviceScaleFactor),
          };
        }
      });
      log(
        `service run ${run}: field ${load.fieldMs.toFixed(0)} ms, ${load.fieldKb.toFixed(1)} kB; page 1 drawn ${load.pageMs.toFixed(0)} ms, ${load.pageKb.toFixed(1)} kB; ${load.requests} requests, ${load.totalKb.toFixed(1)} kB in all`,
      );
      if (run > 0) service_.push(load);
    }

    const image = pageImage as { image: Buffer; width: number; height: number } | null;
    if (!image) throw new Error('the first page was never drawn');
    const floor = await startFloor(image.image, image, { left: (FIRST.x / 595) * 100, top: (FIRST.y / 842) * 100, width: (FIRST.width / 595) * 100, height: (FIRST.height / 842) * 100 });
    const floor_: Load[] = [];
    try {
      for (let run = 0; run < RUNS + 1; run += 1) {
        const load = await measureLoad(browser, floor.url, { field: '#first', page: '#page-1' });
        log(`floor run ${run}: field ${load.fieldMs.toFixed(0)} ms, ${load.fieldKb.toFixed(1)} kB; page 1 shown ${load.pageMs.toFixed(0)} ms, ${load.pageKb.toFixed(1)} kB`);
        if (run > 0) floor_.push(load);
      }
    } finally {
      await floor.close();
    }

    const figure = (loads: Load[], key: keyof Load) => median(loads.map((load) => load[key]));
    const rows: [string, keyof Load, number][] = [
      ['first field usable, ms', 'fieldMs', 0],
      ['received until then, kB', 'fieldKb', 1],
      ['first page shown, ms', 'pageMs', 0],
      ['received until then, kB', 'pageKb', 1],
      ['requests (whole load)', 'requests', 0],
      ['received (whole load, the page), kB', 'totalKb', 1],
      ['received (whole load, workers too), kB', 'allKb', 1],
    ];
    console.log(
      `\nP11: a two-page envelope's signing page on a ${(LINE.downloadThroughput * 8) / 1000} kbit/s line with ${LINE.latency} ms latency, phone viewport, cache off (median of ${RUNS})`,
    );
    console.log(`service from ${root}\n`);
    console.log('| figure | signing page | floor (static HTML, page image + input, node:http) | page / floor |');
    console.log('|---|---|---|---|');
    for (const [label, key, digits] of rows) {
      const ours = figure(service_, key);
      const theirs = figure(floor_, key);
      console.log(`| ${label} | ${ours.toFixed(digits)} | ${theirs.toFixed(digits)} | ${(ours / theirs).toFixed(2)} |`);
    }
    console.log('');
    printResult('p11_first_field_ms', figure(service_, 'fieldMs'));
    printResult('p11_first_load_kb', figure(service_, 'fieldKb'));
    printResult('p11_first_page_ms', figure(service_, 'pageMs'));
    printResult('p11_first_field_vs_floor', figure(service_, 'fieldMs') / figure(floor_, 'fieldMs'));
    printResult('p11_floor_first_field_ms', figure(floor_, 'fieldMs'));
    printResult('p11_floor_first_page_ms', figure(floor_, 'pageMs'));
  } finally {
    await browser?.close();
    for (const cleanup of cleanups) cleanup();
    await mailbox.close();
    await scratch.close();
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
