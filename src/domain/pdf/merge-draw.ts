/**
 * Draws merged data (docs/fields.md "Data merge") where its tags stood. Runs in a PDF worker
 * thread (pdf/worker.ts) after the tags' text was removed (text-tags.ts `hideTextTags`), so it
 * imports only pdf-lib and the modules beside it.
 *
 * A value is drawn with the field renderer's family (Noto Sans, every script it covers), on the
 * tag's baseline, left, centred or right in the tag's width. Its size is the tag's `size` or the
 * size the tag was written at; a line wider than the tag shrinks until it fits, never below
 * MIN_VALUE_TEXT_SIZE (past that it runs on to the right: cutting a value would change what the
 * document says). A list (an array, `items[].name`) is one line per item, going down from the
 * tag's line at 1.2 × the size: the template leaves room below such a tag.
 */
import { concatTransformationMatrix, PDFArray, type PDFDocument, PDFName, type PDFPage, popGraphicsState, pushGraphicsState, rgb } from 'pdf-lib';
import { boxMatrix, drawTextLine, embedSans, MIN_VALUE_TEXT_SIZE, textWidth, visibleBoxOf } from './render.ts';
import type { DisplayedBox } from './text-tags.ts';

export type MergeAlign = 'left' | 'center' | 'right';

/** One tag's value as the domain wrote it out: its lines, where the tag was, and how to set it. */
export type MergeDrawing = { page: number; box: DisplayedBox; fontSize: number; size?: number; align: MergeAlign; lines: string[] };

/** Where the baseline sits in a tag's box (ascent to descent), from its bottom: a usual descent of about a fifth of the box. */
const BASELINE_IN_BOX = 0.21;

/** The page's own content in q … Q (as render.ts does), so a stream that leaves its graphics state changed cannot move the values. */
function enclose(pdf: PDFDocument, page: PDFPage): void {
  const contents = page.node.Contents();
  if (contents === undefined) return;
  const array = PDFArray.withContext(pdf.context);
  array.push(pdf.context.register(pdf.context.stream('q')));
  if (contents instanceof PDFArray) for (let item = 0; item < contents.size(); item++) array.push(contents.get(item));
  else array.push(page.node.get(PDFName.of('Contents'))!);
  array.push(pdf.context.register(pdf.context.stream('Q')));
  page.node.set(PDFName.of('Contents'), array);
}

export async function drawMergedValues(pdf: PDFDocument, drawings: MergeDrawing[]): Promise<void> {
  if (drawings.length === 0) return;
  const sans = await embedSans(pdf);
  const pages = pdf.getPages();
  for (const index of new Set(drawings.map((drawing) => drawing.page))) if (pages[index] !== undefined) enclose(pdf, pages[index]);
  for (const drawing of drawings) {
    const page = pages[drawing.page];
    if (page === undefined) continue;
    const lines = drawing.lines.filter((line) => line !== '');
    if (lines.length === 0) continue;
    const wanted = Math.max(MIN_VALUE_TEXT_SIZE, drawing.size ?? drawing.fontSize);
    const widest = Math.max(...lines.map((line) => textWidth(line, sans, wanted)));
    const size = widest <= drawing.box.width ? wanted : Math.max(MIN_VALUE_TEXT_SIZE, (wanted * drawing.box.width) / widest);
    page.pushOperators(pushGraphicsState(), concatTransformationMatrix(...boxMatrix(visibleBoxOf(page), drawing.box)));
    let baseline = drawing.box.height * BASELINE_IN_BOX;
    for (const line of lines) {
      const width = textWidth(line, sans, size);
      const x = drawing.align === 'right' ? drawing.box.width - width : drawing.align === 'center' ? (drawing.box.width - width) / 2 : 0;
      drawTextLine(page, line, sans, { x, y: baseline, size, color: rgb(0, 0, 0) });
      baseline -= size * 1.2;
    }
    page.pushOperators(popGraphicsState());
  }
}
