// Drawing the documents' pages with pdf.js (served by the service itself, as pdf.mjs next to
// this file): each document's bytes are fetched once, each page drawn at its sheet's width.
import { documentBytes } from './api.js';
import { app } from './dom.js';
import * as pdfjs from './pdf.mjs';
import { currentSession } from './store.js';

pdfjs.GlobalWorkerOptions.workerSrc = new URL('./pdf.worker.mjs', import.meta.url).href;

/** @type {Map<string, pdfjs.PDFDocumentProxy>} */
const pdfDocuments = new Map();

/** One drawing at a time: pdf.js refuses two renders on one canvas (a resize during a locale switch). */
let drawing = Promise.resolve();
let drawingsPending = 0;

/**
 * Draws every page of the signing screen (again, at the current width). `data-pages-drawn` on
 * the body says when all drawing asked for is done.
 */
export function drawPages() {
  document.body.dataset.pagesDrawn = 'false';
  drawingsPending += 1;
  drawing = drawing.then(drawPagesNow).finally(() => {
    drawingsPending -= 1;
    if (drawingsPending === 0) document.body.dataset.pagesDrawn = 'true';
  });
  return drawing;
}

async function drawPagesNow() {
  for (const document of currentSession().documents) {
    let pdf = pdfDocuments.get(document.id);
    try {
      if (!pdf) {
        pdf = await pdfjs.getDocument({ data: await documentBytes(document.id) }).promise;
        pdfDocuments.set(document.id, pdf);
      }
      for (const sheet of /** @type {NodeListOf<HTMLElement>} */ (app.querySelectorAll(`.page[data-document="${CSS.escape(document.id)}"]`))) {
        const page = await pdf.getPage(Number(sheet.dataset.page) + 1);
        const canvas = /** @type {HTMLCanvasElement} */ (sheet.querySelector('canvas'));
        const scale = (sheet.clientWidth * (window.devicePixelRatio || 1)) / page.getViewport({ scale: 1 }).width;
        const viewport = page.getViewport({ scale });
        canvas.width = Math.round(viewport.width);
        canvas.height = Math.round(viewport.height);
        await page.render({ canvas, viewport }).promise;
        sheet.classList.add('rendered');
      }
    } catch (error) {
      console.error('could not draw', document.name, error);
    }
  }
}
