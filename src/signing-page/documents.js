// Drawing the documents' pages with pdf.js (served by the service itself, as pdf.mjs next to
// this file), page by page as they come near the screen: each page is fetched on its own
// (`/signing/documents/{id}/pages/{index}`, a one-page PDF) and drawn at its sheet's width. Nothing
// here is needed before the fields work: the sheets have their size from the session (sign.css's
// aspect ratio), the fields lie over them, and pdf.js (the page's largest script by far) is only
// imported once a page is to be drawn, so on a slow line the first field takes a tap long before
// the first page shows (issue 37, P11; docs/decisions.md, "The signing page").
import { documentPageBytes } from './api.js';
import { app } from './dom.js';

/** @typedef {typeof import('./pdf.mjs')} PdfJs */

/** How far outside the screen a page starts loading: half a screen above and below. */
const NEAR = '50% 0px 50% 0px';

/** @type {Promise<{ pdf: PdfJs, worker: import('./pdf.mjs').PDFWorker }> | null} */
let pdfjsLoading = null;

/** pdf.js, imported the first time a page is drawn, and its one worker (started from the same folder) for every page. */
function pdfjs() {
  pdfjsLoading ??= import('./pdf.mjs').then((pdf) => {
    pdf.GlobalWorkerOptions.workerSrc = new URL('./pdf.worker.mjs', import.meta.url).href;
    return { pdf, worker: new pdf.PDFWorker() };
  });
  return pdfjsLoading;
}

/**
 * Each page's one-page PDF, by `documentId:index`: fetched once, then kept (a redraw at another
 * width or after a change of language draws it again without the network).
 * @type {Map<string, Promise<import('./pdf.mjs').PDFPageProxy>>}
 */
const pages = new Map();

/**
 * @param {string} documentId
 * @param {number} index
 */
function pageOf(documentId, index) {
  const key = `${documentId}:${index}`;
  let page = pages.get(key);
  if (!page) {
    // The bytes and pdf.js travel side by side.
    page = Promise.all([pdfjs(), documentPageBytes(documentId, index)])
      .then(async ([{ pdf, worker }, data]) => (await pdf.getDocument({ data, worker }).promise).getPage(1))
      .catch((error) => {
        // A failed page is asked for again the next time it comes near.
        pages.delete(key);
        throw error;
      });
    pages.set(key, page);
  }
  return page;
}

/** One drawing at a time: pdf.js refuses two renders on one canvas (a resize during a locale switch). */
let drawing = Promise.resolve();
let drawingsPending = 0;
/** @type {IntersectionObserver | null} */
let observer = null;

/**
 * Draws the pages of the signing screen as they come near the screen (again, at the current
 * width). `data-pages-drawn` on the body says when all drawing asked for so far is done: the
 * pages near the screen, not those further down, which are drawn when scrolled to.
 */
export function drawPages() {
  document.body.dataset.pagesDrawn = 'false';
  observer?.disconnect();
  const sheets = /** @type {NodeListOf<HTMLElement>} */ (app.querySelectorAll('.page'));
  if (sheets.length === 0 || typeof IntersectionObserver === 'undefined') {
    for (const sheet of sheets) drawSheet(sheet);
    settle();
    return;
  }
  let first = true;
  observer = new IntersectionObserver(
    (entries) => {
      for (const entry of entries) if (entry.isIntersecting) drawSheet(/** @type {HTMLElement} */ (entry.target));
      // The observer's first answer covers every sheet: with none near the screen, nothing is pending.
      if (first) {
        first = false;
        settle();
      }
    },
    { rootMargin: NEAR },
  );
  for (const sheet of sheets) observer.observe(sheet);
}

function settle() {
  if (drawingsPending === 0) document.body.dataset.pagesDrawn = 'true';
}

/**
 * Draws one sheet's page at the sheet's width, unless it is drawn at that width already.
 * @param {HTMLElement} sheet
 */
function drawSheet(sheet) {
  const width = String(sheet.clientWidth);
  if (sheet.dataset.drawnWidth === width || sheet.dataset.drawing === width) return;
  sheet.dataset.drawing = width;
  drawingsPending += 1;
  document.body.dataset.pagesDrawn = 'false';
  const page = pageOf(/** @type {string} */ (sheet.dataset.document), Number(sheet.dataset.page));
  drawing = drawing
    .then(async () => {
      const pdfPage = await page;
      if (!sheet.isConnected) return;
      const canvas = /** @type {HTMLCanvasElement} */ (sheet.querySelector('canvas'));
      const scale = (sheet.clientWidth * (window.devicePixelRatio || 1)) / pdfPage.getViewport({ scale: 1 }).width;
      const viewport = pdfPage.getViewport({ scale });
      canvas.width = Math.round(viewport.width);
      canvas.height = Math.round(viewport.height);
      await pdfPage.render({ canvas, viewport }).promise;
      sheet.dataset.drawnWidth = width;
      sheet.classList.add('rendered');
    })
    .catch((error) => console.error('could not draw page', sheet.dataset.page, error))
    .finally(() => {
      delete sheet.dataset.drawing;
      drawingsPending -= 1;
      settle();
    });
}
