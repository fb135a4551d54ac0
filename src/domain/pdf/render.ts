/**
 * Draws every field value into a copy of the original PDF (docs/artefacts.md). Runs in a PDF
 * worker thread (pdf/worker.ts), so it imports only Node built-ins, pdf-lib and the fonts (pdf/fonts.ts).
 *
 * Geometry: a view's box is in points from the top-left corner of the page as a viewer shows it,
 * that is the visible box (CropBox ∩ MediaBox, ISO 32000 §14.11.2) turned by `/Rotate`. Each box
 * gets a transformation matrix mapping an upright local system (origin at the box's bottom-left
 * as displayed, y up) into the page's user space, so every field type is drawn in one way
 * whatever the MediaBox origin or rotation.
 *
 * The original content is left as it is: it is wrapped in q … Q (so a content stream that leaves
 * its graphics state changed cannot move our drawings) and our drawings follow in a stream of
 * their own. AcroForm fields of the original are kept as they are (not flattened).
 */
import {
  clip,
  concatTransformationMatrix,
  endPath,
  LineCapStyle,
  ParseSpeeds,
  PDFArray,
  PDFDocument,
  type PDFFont,
  type PDFImage,
  PDFName,
  type PDFPage,
  PDFRef,
  popGraphicsState,
  pushGraphicsState,
  rectangle,
  rgb,
} from 'pdf-lib';
import { advanceOf, advanceOfOnce, cachingFontkit, type FontFamily, fileIndexFor, fontFamilies } from './fonts.ts';
// pdf-lib's streams deflated by Node's zlib instead of pako, in every thread that draws (native-deflate.ts).
import './native-deflate.ts';

export type RenderView = { page: number; x: number; y: number; width: number; height: number };
/** The field types drawn as text the caller has already written out (`RenderField.text`). */
export const TEXT_DRAWN_TYPES = ['date_signed', 'full_name', 'email', 'date', 'number', 'dropdown', 'formula', 'attachment'] as const;

export type RenderField = {
  type: 'simple_signature' | 'biometric_signature' | 'text' | 'checkbox' | 'radio' | 'binary_choice' | 'initials' | (typeof TEXT_DRAWN_TYPES)[number];
  /**
   * For TEXT_DRAWN_TYPES: the value as a person reads it (a date in its format, a number with its
   * decimals, prefix and suffix, a dropdown's label), written by the domain with the rules the
   * signing page shows it with; this wing imports nothing of the domain.
   */
  text?: string;
  /** The field's id (which values a signer's prepared file already carries, issue 35); not read by the renderer. */
  id?: string;
  /** The recipient the field belongs to (whose caption a stamped signature carries). */
  recipientId?: string | null;
  value: Record<string, unknown> | null;
  config: Record<string, unknown>;
  views: RenderView[];
};

/** The visible box of a page in user space, and its rotation (0, 90, 180 or 270, clockwise). */
export type VisibleBox = { left: number; bottom: number; right: number; top: number; rotation: number };

type EmbeddedFamily = { family: FontFamily; fonts: PDFFont[] };
/** What measuring needs of a family: its parsed fonts, embedded in a document or not (widths are the same). */
type MeasuredFamily = Pick<EmbeddedFamily, 'family'>;

/** Splits text into runs, each drawable with one font of the family (the first takes what none has). */
function runsOf(text: string, embedded: MeasuredFamily): { text: string; index: number }[] {
  const runs: { text: string; index: number }[] = [];
  for (const character of text) {
    const index = fileIndexFor(embedded.family, character.codePointAt(0)!);
    const last = runs.at(-1);
    if (last !== undefined && last.index === index) last.text += character;
    else runs.push({ text: character, index });
  }
  return runs;
}

/** A run's width at `size`: pdf-lib's `widthOfTextAtSize`, measured once per font and text (pdf/fonts.ts). */
function runWidth(embedded: MeasuredFamily, run: { text: string; index: number }, size: number, once = false): number {
  return (once ? advanceOfOnce : advanceOf)(embedded.family.fonts[run.index]!, run.text) * (size / 1000);
}

/** `once`: a text measured once (its last word a prefix of a word being broken), whose layout is not worth remembering. */
function widthOf(text: string, embedded: MeasuredFamily, size: number, once = false): number {
  return runsOf(text, embedded).reduce((sum, run) => sum + runWidth(embedded, run, size, once), 0);
}

function drawLine(page: PDFPage, text: string, embedded: EmbeddedFamily, options: { x: number; y: number; size: number; color?: ReturnType<typeof rgb> }) {
  let x = options.x;
  for (const run of runsOf(text, embedded)) {
    page.drawText(run.text, { x, y: options.y, size: options.size, font: embedded.fonts[run.index]!, color: options.color ?? rgb(0, 0, 0.35) });
    x += runWidth(embedded, run, options.size);
  }
}

/**
 * Greedy word wrap at spaces (kept, so a run of spaces stays as typed); a word wider than the line
 * (a hash, a long identifier, wherever it stands in the text) is broken by characters, the last
 * piece going on with the words after it. No line is ever wider than `maxWidth`, except one
 * character that alone is wider.
 *
 * A line's width is kept as the sum of its pieces' widths (each word measured once, and the same
 * words recur through a certificate), and the whole candidate line is shaped only when that sum
 * comes within an em of the edge: the sum leaves out what shaping does across pieces (kerning
 * between a space and a letter, or between two letters of a broken word), a fraction of a point,
 * so it decides every candidate that is not close. Shaping every candidate line, as this did
 * before, measured each line once per word it held: most of the PDF work of a closing went into
 * the certificate's wrapping (docs/performance.md, "The signing path").
 */
function wrap(text: string, embedded: MeasuredFamily, size: number, maxWidth: number): string[] {
  const measure = (piece: string) => widthOf(piece, embedded, size);
  const fits = (line: string, lineWidth: number, piece: string, breaking = false) => {
    const estimate = lineWidth + measure(piece.trimEnd());
    if (estimate <= maxWidth - size) return true;
    if (estimate > maxWidth + size) return false;
    return widthOf((line + piece).trimEnd(), embedded, size, breaking) <= maxWidth;
  };
  const lines: string[] = [];
  for (const paragraph of text.replace(/\t/g, '    ').split(/\r\n|[\n\r\u2028\u2029]/)) {
    let line = '';
    let lineWidth = 0;
    for (const word of paragraph.split(/(?<= )/)) {
      if (fits(line, lineWidth, word)) {
        line += word;
        lineWidth += measure(word);
        continue;
      }
      if (line !== '') lines.push(line.trimEnd());
      line = '';
      lineWidth = 0;
      for (const character of word) {
        if (line !== '' && !fits(line, lineWidth, character, true)) {
          lines.push(line.trimEnd());
          line = '';
          lineWidth = 0;
        }
        line += character;
        lineWidth += measure(character);
      }
    }
    lines.push(line.trimEnd());
  }
  return lines;
}

/** The page's visible box (CropBox ∩ MediaBox) and rotation. */
export function visibleBoxOf(page: PDFPage): VisibleBox {
  const media = page.getMediaBox();
  const crop = page.getCropBox();
  const left = Math.max(Math.min(media.x, media.x + media.width), Math.min(crop.x, crop.x + crop.width));
  const bottom = Math.max(Math.min(media.y, media.y + media.height), Math.min(crop.y, crop.y + crop.height));
  const right = Math.min(Math.max(media.x, media.x + media.width), Math.max(crop.x, crop.x + crop.width));
  const top = Math.min(Math.max(media.y, media.y + media.height), Math.max(crop.y, crop.y + crop.height));
  const rotation = (((page.getRotation().angle % 360) + 360) % 360) as number;
  // A crop box outside the media box leaves nothing: the media box is then what viewers show.
  if (right <= left || top <= bottom) {
    return { left: media.x, bottom: media.y, right: media.x + media.width, top: media.y + media.height, rotation };
  }
  return { left, bottom, right, top, rotation };
}

/**
 * The matrix [a b c d e f] mapping local box coordinates (origin at the box's bottom-left as
 * displayed, x right, y up) to user space, for a box at (x, y) from the displayed top-left.
 */
export function boxMatrix(box: VisibleBox, view: { x: number; y: number; height: number }): [number, number, number, number, number, number] {
  const { left, bottom, right, top } = box;
  const { x, y, height: h } = view;
  switch (box.rotation) {
    case 90:
      return [0, 1, -1, 0, left + y + h, bottom + x];
    case 180:
      return [-1, 0, 0, -1, right - x, bottom + y + h];
    case 270:
      return [0, -1, 1, 0, right - y - h, top - x];
    default:
      return [1, 0, 0, 1, left + x, top - y - h];
  }
}

type View = { x: number; y: number; width: number; height: number };

/** Draws in a view's own coordinates (origin at its lower left), clipped to it. */
function within(page: PDFPage, box: VisibleBox, view: View, draw: () => void): void {
  enterView(page, box, view);
  page.pushOperators(rectangle(0, 0, view.width, view.height), clip(), endPath());
  draw();
  page.pushOperators(popGraphicsState());
}

function enterView(page: PDFPage, box: VisibleBox, view: View): void {
  page.pushOperators(pushGraphicsState(), concatTransformationMatrix(...boxMatrix(box, view)));
}

const ink = rgb(0, 0, 0.35);

/** A typed signature or initials: one line as large as the box allows up to `maxSize`, scaled down to the box's width like a drawn one. */
function drawTypedSignature(page: PDFPage, text: string, embedded: EmbeddedFamily, area: { width: number; height: number; maxSize: number }) {
  const { width, height, maxSize } = area;
  const padding = Math.min(2, width / 10, height / 10);
  const innerWidth = Math.max(1, width - 2 * padding);
  let size = Math.max(4, Math.min(maxSize, height * 0.7));
  const measured = widthOf(text, embedded, size);
  if (measured > innerWidth) size = (size * innerWidth) / measured;
  drawLine(page, text, embedded, { x: padding, y: (height - size * 0.72) / 2, size });
}

/** The smallest text a value is drawn at (issue 32): smaller is not reliably legible once printed. */
export const MIN_VALUE_TEXT_SIZE = 8;

/** A value's text laid out in its box: the size, the lines, where the first line starts, and whether it fits. */
export type FittedText = { size: number; lines: string[]; firstBaseline: number; fits: boolean };

/**
 * A value's text fitted to its box: one line as large as the box allows up to 12 pt; a value too
 * wide for one line shrinks, and below 8 pt wraps instead, at the largest size from 12 down to 8 pt
 * whose lines fit the box's height, centred. Never below 8 pt and never cut. A value that cannot
 * fit even at 8 pt (`fits: false`) is refused before it is stored (`Signing.ValueDoesNotFit`, or
 * `Request.Invalid` for a sender's value, by `textFitsBox`: the same layout); should one reach
 * the renderer all the same (stored before that rule), the box's clip keeps it inside its box.
 */
function layoutFittedText(text: string, measured: MeasuredFamily, area: { width: number; height: number }): FittedText {
  const { width, height } = area;
  const padding = Math.min(2, width / 10, height / 10);
  const innerWidth = Math.max(1, width - 2 * padding);
  const innerHeight = Math.max(1, height - 2 * padding);
  const largest = Math.max(MIN_VALUE_TEXT_SIZE, Math.min(12, height * 0.7));
  if (!/[\n\r\u2028\u2029]/.test(text)) {
    const measuredWidth = widthOf(text, measured, largest);
    const oneLine = measuredWidth <= innerWidth ? largest : (largest * innerWidth) / measuredWidth;
    if (oneLine >= MIN_VALUE_TEXT_SIZE) return { size: oneLine, lines: [text], firstBaseline: (height - oneLine * 0.72) / 2, fits: fitsHeight(1, oneLine, height) };
  }
  let size = largest;
  let lines = wrap(text, measured, size, innerWidth);
  // Half a point at a time: a handful of wraps for the longest value a field can hold.
  while (size > MIN_VALUE_TEXT_SIZE && lines.length * size * 1.2 > innerHeight) {
    size = Math.max(MIN_VALUE_TEXT_SIZE, size - 0.5);
    lines = wrap(text, measured, size, innerWidth);
  }
  const block = lines.length * size * 1.2;
  return { size, lines, firstBaseline: block <= innerHeight ? height - (height - block) / 2 - size : height - padding - size, fits: fitsHeight(lines.length, size, height) };
}

/** Lines at `size` stand in a box `height` tall when their leading (1.2 × size each, a line's ascent to descent with room) does. */
function fitsHeight(lines: number, size: number, height: number): boolean {
  return lines * size * 1.2 <= height + 0.01;
}

function drawFittedText(page: PDFPage, text: string, embedded: EmbeddedFamily, area: { width: number; height: number }) {
  const { width, height } = area;
  const layout = layoutFittedText(text, embedded, area);
  let y = layout.firstBaseline;
  for (const line of layout.lines) {
    drawLine(page, line, embedded, { x: Math.min(2, width / 10, height / 10), y, size: layout.size });
    y -= layout.size * 1.2;
  }
}

/**
 * Whether a value's text fits its box as the sealed PDF draws it (Noto Sans, at 8 pt or more,
 * wrapped if need be): the signing service asks before it accepts a value, so that no value is
 * drawn outside its box or cut. Reads the fonts in this thread on first use.
 */
export function textFitsBox(text: string, width: number, height: number): boolean {
  return layoutFittedText(text, { family: fontFamilies().sans }, { width, height }).fits;
}

function drawCheck(page: PDFPage, x: number, y: number, side: number) {
  const thickness = Math.max(0.8, side / 8);
  page.drawLine({ start: { x: x + side * 0.15, y: y + side * 0.5 }, end: { x: x + side * 0.42, y: y + side * 0.2 }, thickness, color: ink });
  page.drawLine({ start: { x: x + side * 0.42, y: y + side * 0.2 }, end: { x: x + side * 0.88, y: y + side * 0.85 }, thickness, color: ink });
}

/** The dot of a selected radio option, alone in its box. */
function drawRadioMark(page: PDFPage, width: number, height: number) {
  page.drawCircle({ x: width / 2, y: height / 2, size: Math.min(width, height) * 0.3, color: ink });
}

/** A mark and a label: the chosen option of a radio or binary choice. */
function drawChoice(page: PDFPage, label: string, embedded: EmbeddedFamily, area: { width: number; height: number; mark: 'dot' | 'check' }) {
  const { width, height, mark } = area;
  const side = Math.min(height, 12);
  const markY = (height - side) / 2;
  if (mark === 'dot') page.drawCircle({ x: side / 2, y: markY + side / 2, size: side * 0.3, color: ink });
  else drawCheck(page, 0, markY, side);
  const size = Math.max(4, Math.min(12, height * 0.7));
  const available = Math.max(1, width - side * 1.3);
  const measured = widthOf(label, embedded, size);
  const fitted = measured > available ? Math.max(Math.min(size, 6), (size * available) / measured) : size;
  drawLine(page, label, embedded, { x: side * 1.3, y: (height - fitted * 0.72) / 2, size: fitted });
}

/** A PNG (a data URL) scaled to fit a box of `width` × `height`, centred; `images` embeds each once per document. */
async function drawImage(pdf: PDFDocument, images: Map<string, Promise<PDFImage>>, page: PDFPage, image: { dataUrl: string; width: number; height: number }) {
  const { dataUrl, width, height } = image;
  // A signature placed at several views is embedded once.
  let embedded = images.get(dataUrl);
  if (embedded === undefined) {
    embedded = pdf.embedPng(Buffer.from(dataUrl.slice(dataUrl.indexOf(',') + 1), 'base64'));
    images.set(dataUrl, embedded);
  }
  const png = await embedded;
  const scale = Math.min(width / png.width, height / png.height);
  const drawnWidth = png.width * scale;
  const drawnHeight = png.height * scale;
  page.drawImage(png, { x: (width - drawnWidth) / 2, y: (height - drawnHeight) / 2, width: drawnWidth, height: drawnHeight });
}

type Point = { x: number; y: number; p: number };

/** The pen strokes as vector paths, scaled to fit the box (capture surfaces count y downwards). */
function drawStrokes(page: PDFPage, strokes: Point[][], width: number, height: number) {
  const points = strokes.flat();
  const minX = Math.min(...points.map((point) => point.x));
  const maxX = Math.max(...points.map((point) => point.x));
  const minY = Math.min(...points.map((point) => point.y));
  const maxY = Math.max(...points.map((point) => point.y));
  const padding = Math.min(2, width / 10, height / 10);
  const scale = Math.min((width - 2 * padding) / Math.max(maxX - minX, 1e-6), (height - 2 * padding) / Math.max(maxY - minY, 1e-6));
  const offsetX = (width - (maxX - minX) * scale) / 2;
  const offsetY = (height - (maxY - minY) * scale) / 2;
  const local = (point: Point) => ({ x: offsetX + (point.x - minX) * scale, y: height - offsetY - (point.y - minY) * scale });
  const thickness = Math.max(0.6, Math.min(2.5, height / 30));
  for (const stroke of strokes) {
    if (stroke.length === 1) {
      const at = local(stroke[0]!);
      page.drawCircle({ x: at.x, y: at.y, size: thickness / 2, color: ink });
      continue;
    }
    for (let index = 1; index < stroke.length; index++) {
      // Pressure widens the line a little, as ink would.
      const pressure = (stroke[index - 1]!.p + stroke[index]!.p) / 2;
      page.drawLine({ start: local(stroke[index - 1]!), end: local(stroke[index]!), thickness: thickness * (0.6 + 0.8 * pressure), color: ink, lineCap: LineCapStyle.Round });
    }
  }
}

/**
 * Visible stamps (docs/artefacts.md): a line in each page's bottom margin, and under each
 * signature, inside its field's box, a caption per recipient (signer, UTC time).
 */
export type RenderStamp = { envelopeLine: string; captions: Record<string, { signer: string; at: string }> };

/** The height a caption takes at the foot of a signature box, and its font size: two lines, at most 40 % of the box. */
function captionSize(height: number): number {
  return Math.max(2.5, Math.min(7, (height * 0.4) / 2.3));
}

/** The caption's two lines (signer, time), each shrunk to the box's width. */
function drawCaption(page: PDFPage, caption: { signer: string; at: string }, embedded: EmbeddedFamily, band: { width: number; size: number }) {
  const { width, size } = band;
  const padding = Math.min(2, width / 10);
  const innerWidth = Math.max(1, width - 2 * padding);
  const lines = [caption.signer, caption.at];
  lines.forEach((line, index) => {
    const measured = widthOf(line, embedded, size);
    const fitted = measured > innerWidth ? (size * innerWidth) / measured : size;
    // From the top of the caption band down: the name first.
    drawLine(page, line, embedded, { x: padding, y: (lines.length - 1 - index) * size * 1.15 + size * 0.25, size: fitted, color: rgb(0.25, 0.25, 0.3) });
  });
}

export type RenderOptions = {
  fields: RenderField[];
  /** Sealed copies of an envelope with stamps on. */
  stamp?: RenderStamp;
  /** Before finalization: every page is marked as a draft copy. */
  draft: boolean;
  draftLabel?: string;
};

/** Loads a PDF for drawing; an encrypted one must be decrypted first (pdf/worker.ts, pdf/decrypt.ts). */
export async function loadForRendering(bytes: Uint8Array): Promise<PDFDocument> {
  // Encrypted files load (to be recognised by `isEncrypted`) but are drawn only once decrypted.
  // A worker thread has no event loop to yield to: parse in one go.
  const pdf = await PDFDocument.load(bytes, { updateMetadata: false, ignoreEncryption: true, parseSpeed: ParseSpeeds.Fastest });
  pdf.registerFontkit(cachingFontkit);
  return pdf;
}

/** Draws the values into `pdf` (in place); answers the indexes of the pages drawn on, in order. */
export async function renderFields(pdf: PDFDocument, options: RenderOptions): Promise<number[]> {
  const loaded = fontFamilies();
  pdf.registerFontkit(cachingFontkit);
  const embed = async (family: FontFamily): Promise<EmbeddedFamily> => ({
    family,
    fonts: await Promise.all(family.files.map((bytes) => pdf.embedFont(bytes, { subset: true }))),
  });
  const sans = await embed(loaded.sans);
  let script: EmbeddedFamily | undefined;
  const pages = pdf.getPages();
  const boxes = new Map<number, VisibleBox>();
  const prepared = new Set<number>();
  const images = new Map<string, Promise<PDFImage>>();

  // The original content goes into q … Q once per page, before our first drawing on it.
  const prepare = (index: number): { page: PDFPage; box: VisibleBox } => {
    const page = pages[index]!;
    if (!prepared.has(index)) {
      prepared.add(index);
      const contents = page.node.Contents();
      if (contents !== undefined) {
        const open = pdf.context.register(pdf.context.stream('q'));
        const close = pdf.context.register(pdf.context.stream('Q'));
        const array = PDFArray.withContext(pdf.context);
        array.push(open);
        if (contents instanceof PDFArray) for (let item = 0; item < contents.size(); item++) array.push(contents.get(item));
        else array.push(page.node.get(PDFName.of('Contents'))!);
        array.push(close);
        page.node.set(PDFName.of('Contents'), array);
      }
      boxes.set(index, visibleBoxOf(page));
    }
    return { page, box: boxes.get(index)! };
  };

  for (const field of options.fields) {
    const value = field.value;
    if (value === null) continue;
    for (const [viewIndex, view] of field.views.entries()) {
      if (view.page < 0 || view.page >= pages.length) continue;
      const { page, box } = prepare(view.page);
      const { width, height } = view;
      switch (field.type) {
        case 'text': {
          // Sized to its box like the types below; a value that could not fit was refused before (Signing.ValueDoesNotFit).
          const text = String(value.text ?? '');
          if (text !== '') within(page, box, view, () => drawFittedText(page, text, sans, { width, height }));
          break;
        }
        case 'checkbox': {
          const side = Math.min(width, height);
          within(page, box, view, () => {
            page.drawRectangle({ x: (width - side) / 2, y: (height - side) / 2, width: side, height: side, borderColor: ink, borderWidth: Math.max(0.5, side / 20) });
            if (value.checked === true) drawCheck(page, (width - side) / 2, (height - side) / 2, side);
          });
          break;
        }
        case 'radio': {
          const options = (field.config.options as { value: string; label: string }[] | undefined) ?? [];
          const label = options.find((option) => option.value === value.selected)?.label ?? String(value.selected ?? '');
          // One view per option (a form's radio group imported, docs/fields.md): only the selected option's view is marked.
          if (options.length > 1 && field.views.length === options.length) {
            if (options[viewIndex]?.value === value.selected) within(page, box, view, () => drawRadioMark(page, width, height));
            break;
          }
          within(page, box, view, () => drawChoice(page, label, sans, { width, height, mark: 'dot' }));
          break;
        }
        case 'binary_choice': {
          const label = String(value.choice === 'accept' ? field.config.acceptLabel : field.config.declineLabel);
          within(page, box, view, () => drawChoice(page, label, sans, { width, height, mark: 'check' }));
          break;
        }
        case 'date_signed':
        case 'full_name':
        case 'email':
        case 'date':
        case 'number':
        case 'dropdown':
        case 'formula':
        // An attachment's box names its files; their pages follow the document (pdf/appendix.ts).
        case 'attachment':
          if (field.text !== undefined && field.text !== '') within(page, box, view, () => drawFittedText(page, field.text!, sans, { width, height }));
          break;
        case 'initials':
          // Like a signature, without its caption: initials sit in small boxes, often on every page.
          if (value.kind === 'typed') {
            const family = value.font === 'cursive' ? (script ??= await embed(loaded.script)) : sans;
            within(page, box, view, () => drawTypedSignature(page, String(value.text ?? ''), family, { width, height, maxSize: 36 }));
          } else if (typeof value.image === 'string') {
            const image = value.image;
            page.pushOperators(pushGraphicsState(), concatTransformationMatrix(...boxMatrix(box, view)), rectangle(0, 0, width, height), clip(), endPath());
            await drawImage(pdf, images, page, { dataUrl: image, width, height });
            page.pushOperators(popGraphicsState());
          }
          break;
        case 'simple_signature':
        case 'biometric_signature': {
          // With a caption, the signature is drawn in the box's upper part and the caption below it, both inside the box.
          const caption = field.recipientId ? options.stamp?.captions[field.recipientId] : undefined;
          const size = caption ? captionSize(height) : 0;
          const band = caption ? 2 * size * 1.15 + size * 0.25 : 0;
          const area = { x: view.x, y: view.y, width, height: height - band };
          if (field.type === 'biometric_signature') {
            const strokes = (value.strokes as Point[][] | undefined)?.filter((stroke) => stroke.length > 0) ?? [];
            if (strokes.length > 0) within(page, box, area, () => drawStrokes(page, strokes, width, area.height));
          } else if (value.kind === 'typed') {
            const family = value.font === 'cursive' ? (script ??= await embed(loaded.script)) : sans;
            // A typed signature fills its box as a handwritten one would (up to 36 pt).
            within(page, box, area, () => drawTypedSignature(page, String(value.text ?? ''), family, { width, height: area.height, maxSize: 36 }));
          } else if (typeof value.image === 'string') {
            const image = value.image;
            page.pushOperators(pushGraphicsState(), concatTransformationMatrix(...boxMatrix(box, area)), rectangle(0, 0, width, area.height), clip(), endPath());
            await drawImage(pdf, images, page, { dataUrl: image, width, height: area.height });
            page.pushOperators(popGraphicsState());
          }
          if (caption) within(page, box, { x: view.x, y: view.y + height - band, width, height: band }, () => drawCaption(page, caption, sans, { width, size }));
          break;
        }
      }
    }
  }

  if (options.stamp) {
    const line = options.stamp.envelopeLine;
    for (let index = 0; index < pages.length; index++) {
      const { page, box } = prepare(index);
      const displayedWidth = box.rotation % 180 === 0 ? box.right - box.left : box.top - box.bottom;
      const displayedHeight = box.rotation % 180 === 0 ? box.top - box.bottom : box.right - box.left;
      // In the bottom margin of the page as displayed, small and grey, shrunk to the page's width.
      const size = Math.min(6, (6 * (displayedWidth - 12)) / Math.max(1, widthOf(line, sans, 6)));
      const band = { x: 0, y: displayedHeight - 10, width: displayedWidth, height: 10 };
      within(page, box, band, () => drawLine(page, line, sans, { x: 6, y: 3, size, color: rgb(0.45, 0.45, 0.5) }));
    }
  }

  if (options.draft) {
    const label = options.draftLabel ?? 'DRAFT COPY: not finalized, not sealed';
    for (let index = 0; index < pages.length; index++) {
      const { page, box } = prepare(index);
      const displayedWidth = box.rotation % 180 === 0 ? box.right - box.left : box.top - box.bottom;
      const band = { x: 0, y: 0, width: displayedWidth, height: 14 };
      within(page, box, band, () => {
        page.drawRectangle({ x: 0, y: 0, width: displayedWidth, height: 14, color: rgb(1, 0.93, 0.93), opacity: 0.85 });
        // Shrunk to the page's width, so the whole mark is on a narrow page too.
        const size = Math.min(9, (9 * (displayedWidth - 8)) / Math.max(1, widthOf(label, sans, 9)));
        drawLine(page, label, sans, { x: 4, y: 3.5, size, color: rgb(0.7, 0, 0) });
      });
    }
  }
  return [...prepared].sort((a, b) => a - b);
}

/**
 * The existing objects drawing changed on the pages `pageIndexes` (renderFields' answer), for an
 * incremental update: the pages' dictionaries, nothing else. Their /Contents is a new array
 * (prepare above), and before pdf-lib draws on a page it copies the page's /Resources, and the
 * /Font, /XObject and /ExtGState in it, into the page dictionary itself (PDFPageLeaf.normalize),
 * so what our drawings name is written with the page even where the original shared or inherited
 * those dictionaries as objects of their own (test/artefact-incremental.test.ts). Objects drawing
 * added are not listed: they are numbered after the file's (incremental.ts `objectsAddedSince`).
 */
export function objectsChangedOnPages(pdf: PDFDocument, pageIndexes: number[]): PDFRef[] {
  const pages = pdf.getPages();
  return pageIndexes.map((index) => pages[index]!.ref);
}

/** The embedded sans-serif family, for documents the service writes itself (the audit log). */
export type TextFamily = EmbeddedFamily;
export async function embedSans(pdf: PDFDocument): Promise<TextFamily> {
  pdf.registerFontkit(cachingFontkit);
  const family = fontFamilies().sans;
  return { family, fonts: await Promise.all(family.files.map((bytes) => pdf.embedFont(bytes, { subset: true }))) };
}
/** The embedded script family (typed signatures drawn as typed, e.g. on the certificate of completion). */
export async function embedScript(pdf: PDFDocument): Promise<TextFamily> {
  pdf.registerFontkit(cachingFontkit);
  const family = fontFamilies().script;
  return { family, fonts: await Promise.all(family.files.map((bytes) => pdf.embedFont(bytes, { subset: true }))) };
}
export { drawLine as drawTextLine, widthOf as textWidth, wrap as wrapText };
