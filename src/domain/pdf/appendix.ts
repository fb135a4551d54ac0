/**
 * Signers' attachments appended as pages after the document their field is on, before the seal
 * (docs/artefacts.md): a PDF's pages as they are, an image on an A4 page of its own, scaled to
 * fit within the margins. Runs in a PDF worker thread with the rest of rendering, so it imports
 * only Node built-ins, pdf-lib and the render module.
 *
 * Every attachment passed its checks at upload (a PDF the documents' inspection, an image's size
 * bounded from its header). Should one still not load here, its page says so instead: a seal that
 * failed on every retry would leave the envelope without its sealed copy, and the file itself is
 * in the envelope's ZIP and evidence package either way.
 */
import fs from 'node:fs';
import { PDFDocument, type PDFPage, rgb } from 'pdf-lib';
import { drawTextLine, embedSans, type TextFamily, wrapText } from './render.ts';

export type RenderAppendix = { path: string; contentType: 'application/pdf' | 'image/png' | 'image/jpeg'; name: string; sha256: string };

const A4: [number, number] = [595.28, 841.89];
const MARGIN = 36;
const CAPTION_SIZE = 8;
const CAPTION_HEIGHT = 2 * CAPTION_SIZE + 8;

/** The line under which an appended image sits: which file it is, so a reader can match it to the ZIP's. */
function drawCaption(page: PDFPage, sans: TextFamily, appendix: RenderAppendix, note?: string): void {
  const text = `Attachment: ${appendix.name} (SHA-256 ${appendix.sha256})${note === undefined ? '' : ` ${note}`}`;
  const lines = wrapText(text, sans, CAPTION_SIZE, A4[0] - 2 * MARGIN);
  lines.forEach((line, index) => {
    drawTextLine(page, line, sans, { x: MARGIN, y: A4[1] - MARGIN - CAPTION_SIZE - index * (CAPTION_SIZE + 2), size: CAPTION_SIZE, color: rgb(0.3, 0.3, 0.3) });
  });
}

async function appendImage(pdf: PDFDocument, sans: TextFamily, appendix: RenderAppendix, bytes: Buffer): Promise<void> {
  const image = appendix.contentType === 'image/png' ? await pdf.embedPng(bytes) : await pdf.embedJpg(bytes);
  const page = pdf.addPage(A4);
  drawCaption(page, sans, appendix);
  const room = { width: A4[0] - 2 * MARGIN, height: A4[1] - 2 * MARGIN - CAPTION_HEIGHT };
  const scale = Math.min(room.width / image.width, room.height / image.height);
  const width = image.width * scale;
  const height = image.height * scale;
  page.drawImage(image, { x: MARGIN + (room.width - width) / 2, y: MARGIN + (room.height - height) / 2, width, height });
}

async function appendPdf(pdf: PDFDocument, bytes: Buffer): Promise<void> {
  const source = await PDFDocument.load(bytes, { updateMetadata: false });
  const pages = await pdf.copyPages(source, source.getPageIndices());
  for (const page of pages) pdf.addPage(page);
}

/** Appends each attachment's pages to `pdf`, in order. */
export async function appendAttachments(pdf: PDFDocument, appendices: RenderAppendix[]): Promise<void> {
  if (appendices.length === 0) return;
  const sans = await embedSans(pdf);
  for (const appendix of appendices) {
    const bytes = await fs.promises.readFile(appendix.path);
    const pagesBefore = pdf.getPageCount();
    try {
      if (appendix.contentType === 'application/pdf') await appendPdf(pdf, bytes);
      else await appendImage(pdf, sans, appendix, bytes);
    } catch {
      // Pages half added by a failed copy are taken back before the note replaces them.
      while (pdf.getPageCount() > pagesBefore) pdf.removePage(pdf.getPageCount() - 1);
      drawCaption(pdf.addPage(A4), sans, appendix, 'could not be shown as pages; the file is in the envelope’s ZIP and evidence package.');
    }
  }
}
