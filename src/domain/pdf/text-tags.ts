/**
 * Text tags (`{{TYPE;role=ROLE;…}}`, docs/fields.md "Placing fields from the PDF"): found with
 * pdf.js, hidden by rewriting the page's content stream. Runs in a PDF worker thread
 * (pdf/worker.ts); imports only pdf.js, pdf-lib and the modules beside it.
 *
 * Finding: pdf.js interprets each page (`getOperatorList`, the same interpreter that shows the
 * page to a signer) and hands every text-showing operator over as its glyphs (unicode and
 * advance width). We follow the text state ourselves (the matrices, font size, character and
 * word spacing, horizontal scaling, rise) to put every glyph on the page as shown: points from
 * the displayed top-left corner, CropBox and /Rotate honoured as in render.ts. The glyphs are
 * joined in content order, a line break inserted wherever the next glyph does not continue the
 * line; a tag is then found wherever its characters are, whatever runs (operators, fonts, kerning
 * pieces) the producer split it into.
 *
 * Hiding: a tag's glyphs are removed from the page's content stream, not covered: text under a
 * white box is still text (copied, searched, extracted by pdftotext). Each text-showing operator
 * that carries a hidden glyph is rewritten as a `TJ` whose hidden glyphs are replaced by the
 * equivalent displacement, so every other glyph stays exactly where it was. A glyph's bytes are
 * found by counting: the operator's string bytes divided among its glyphs (one byte each for a
 * simple font, two for the Identity CMaps word processors use); a page where this cannot be done
 * for certain (the operator counts of pdf.js and of our reading differ, or bytes do not divide)
 * is left as it is and its tags reported as not hidden.
 */
import { decodePDFRawStream, PDFArray, PDFDocument, PDFName, PDFRawStream, PDFRef, PDFStream } from 'pdf-lib';
import { MAX_CONTENT_NESTING_DEPTH, tooComplex } from './inspect/limits.ts';

export type DisplayedBox = { x: number; y: number; width: number; height: number };

/** Where a tag's glyphs are: the text-showing operator (its index among the page's own) and the glyph range in it. */
export type GlyphRange = { operator: number; from: number; to: number; glyphs: number; displacements: number[] };

export type FoundTag = {
  /** The tag as written, braces included. */
  text: string;
  page: number;
  /** The box of its glyphs (font ascent to descent), in points from the displayed top-left. */
  box: DisplayedBox;
  /** The page as displayed (width, height). */
  pageSize: { width: number; height: number };
  /** The direction the tag reads in and the glyphs' up, as displayed (a turned page turns them). */
  frame: { advance: Axis; up: Axis };
  /**
   * The angle its text runs at as displayed, in degrees counterclockwise from left to right
   * (0, 90, 180, 270 for text along the page's edges; 45 for a diagonal line). A field's box is
   * upright, so only a tag at a multiple of 90° has one that fits it.
   */
  angle: number;
  /** The size of its text as displayed, in points (the largest of its glyphs'): what fields made from it are sized by. */
  fontSize: number;
  /** Where its glyphs are; empty when it lies in a form XObject (found, not hideable). */
  ranges: GlyphRange[];
};

export type TagSearch = { tags: FoundTag[] /** Text-showing operators of each page's own content, as pdf.js counted them. */; operatorCounts: number[] };

export type Axis = 'x+' | 'x-' | 'y+' | 'y-';

/** The axis a displayed vector runs closest to. */
function axisOf(dx: number, dy: number): Axis {
  if (Math.abs(dx) >= Math.abs(dy)) return dx >= 0 ? 'x+' : 'x-';
  return dy >= 0 ? 'y+' : 'y-';
}

type Matrix = [number, number, number, number, number, number];
const IDENTITY: Matrix = [1, 0, 0, 1, 0, 0];

function multiply(m: Matrix, n: Matrix): Matrix {
  return [m[0] * n[0] + m[1] * n[2], m[0] * n[1] + m[1] * n[3], m[2] * n[0] + m[3] * n[2], m[2] * n[1] + m[3] * n[3], m[4] * n[0] + m[5] * n[2] + n[4], m[4] * n[1] + m[5] * n[3] + n[5]];
}

function apply(m: Matrix, x: number, y: number): [number, number] {
  return [m[0] * x + m[2] * y + m[4], m[1] * x + m[3] * y + m[5]];
}

function matrixArgument(args: unknown[]): Matrix {
  const source = (args.length === 1 ? args[0] : args) as ArrayLike<number>;
  return [source[0]!, source[1]!, source[2]!, source[3]!, source[4]!, source[5]!].map(Number) as Matrix;
}

/** A point of user space as displayed: from the top-left of the visible box turned by /Rotate. */
export function toDisplayed(view: { left: number; bottom: number; right: number; top: number; rotation: number }, x: number, y: number): [number, number] {
  switch (view.rotation) {
    case 90:
      return [y - view.bottom, x - view.left];
    case 180:
      return [view.right - x, y - view.bottom];
    case 270:
      return [view.top - y, view.right - x];
    default:
      return [x - view.left, view.top - y];
  }
}

/**
 * One glyph as shown. `origin`, `direction` (a unit vector along the baseline), `advance` (its
 * width along it) and `em` (its height across it) are in user space, where lines are followed: a
 * line is the glyphs whose origins lie on one baseline, one after another in its direction, at
 * whatever angle the text matrix and the page's /Rotate put it.
 */
type Glyph = {
  frame: { advance: Axis; up: Axis };
  angle: number;
  char: string;
  minX: number;
  minY: number;
  maxX: number;
  maxY: number;
  origin: [number, number];
  direction: [number, number];
  advance: number;
  em: number;
  /** One unit up in text space, as displayed: the font size after every matrix. */
  size: number;
  operator: number;
  index: number;
  displacement: number;
};

/** Whether `next` carries on the line of `previous`: the same direction, on its baseline, not before its end. */
function continuesLine(previous: Glyph, next: Glyph): boolean {
  const [dx, dy] = previous.direction;
  if (dx * next.direction[0] + dy * next.direction[1] < 0.99) return false;
  const lineHeight = Math.max(previous.em, 1);
  const offsetX = next.origin[0] - previous.origin[0];
  const offsetY = next.origin[1] - previous.origin[1];
  const across = Math.abs(dx * offsetY - dy * offsetX);
  const along = dx * offsetX + dy * offsetY;
  return across <= lineHeight * 0.3 && along >= previous.advance - lineHeight * 0.5;
}

type TextState = { charSpacing: number; wordSpacing: number; scale: number; leading: number; rise: number; font: string | null; size: number };

type PdfJsGlyph = { unicode: string; width: number; isSpace: boolean };

/** Where a tag can start and end, and how long it may be. */
const TAG_PATTERN = /\{\{[^{}\n]{1,400}?\}\}/g;

/** Finds every tag of every page (at most `maxTags`; `tooMany` when there are more). */
export async function findTextTags(bytes: Uint8Array, options: { maxTags: number }): Promise<TagSearch & { tooMany: boolean }> {
  const pdfjs = await import('pdfjs-dist/legacy/build/pdf.mjs');
  const OPS = pdfjs.OPS;
  const loading = pdfjs.getDocument({ data: bytes, disableFontFace: true, useSystemFonts: false, verbosity: 0, stopAtErrors: false });
  const document = await loading.promise;
  const tags: FoundTag[] = [];
  const operatorCounts: number[] = [];
  let tooMany = false;
  try {
    for (let pageIndex = 0; pageIndex < document.numPages; pageIndex++) {
      const page = await document.getPage(pageIndex + 1);
      const [x1, y1, x2, y2] = page.view as number[];
      const view = { left: Math.min(x1!, x2!), bottom: Math.min(y1!, y2!), right: Math.max(x1!, x2!), top: Math.max(y1!, y2!), rotation: ((page.rotate % 360) + 360) % 360 };
      const pageSize = view.rotation % 180 === 0 ? { width: view.right - view.left, height: view.top - view.bottom } : { width: view.top - view.bottom, height: view.right - view.left };
      // Annotations are not page content: their appearances are left out of the list.
      const list = await page.getOperatorList({ annotationMode: pdfjs.AnnotationMode.DISABLE });
      // Each font's ascent and descent (as pdf.js reads them for its text layer), by the id the operator list uses.
      const styles = (await page.getTextContent()).styles as Record<string, { ascent?: number; descent?: number }>;
      const fontMetrics = (id: string | null): { ascent: number; descent: number; unitsPerPoint: number } => {
        const style = id === null ? undefined : styles[id];
        const font = id !== null && page.commonObjs.has(id) ? (page.commonObjs.get(id) as { fontMatrix?: number[] } | null) : null;
        const ascent = typeof style?.ascent === 'number' && style.ascent > 0 && style.ascent < 2 ? style.ascent : 0.8;
        const descent = typeof style?.descent === 'number' && style.descent <= 0 && style.descent > -1 ? style.descent : -0.2;
        return { ascent, descent, unitsPerPoint: font?.fontMatrix?.[0] ?? 0.001 };
      };

      const glyphs: Glyph[] = [];
      const glyphCounts = new Map<number, number>();
      let ctm: Matrix = IDENTITY;
      let text: TextState = { charSpacing: 0, wordSpacing: 0, scale: 1, leading: 0, rise: 0, font: null, size: 0 };
      const stack: { ctm: Matrix; text: TextState }[] = [];
      let textMatrix: Matrix = IDENTITY;
      let lineMatrix: Matrix = IDENTITY;
      let formDepth = 0;
      let ownOperator = -1;
      const moveText = (tx: number, ty: number) => {
        lineMatrix = multiply([1, 0, 0, 1, tx, ty], lineMatrix);
        textMatrix = lineMatrix;
      };
      for (let index = 0; index < list.fnArray.length; index++) {
        const fn = list.fnArray[index];
        const args = (list.argsArray[index] ?? []) as unknown[];
        switch (fn) {
          case OPS.save:
            stack.push({ ctm, text: { ...text } });
            break;
          case OPS.restore: {
            const saved = stack.pop();
            if (saved) ({ ctm, text } = saved);
            break;
          }
          case OPS.transform:
            ctm = multiply(matrixArgument(args), ctm);
            break;
          case OPS.paintFormXObjectBegin:
            stack.push({ ctm, text: { ...text } });
            formDepth++;
            if (Array.isArray(args[0]) || ArrayBuffer.isView(args[0])) ctm = multiply(matrixArgument([args[0]]), ctm);
            break;
          case OPS.paintFormXObjectEnd: {
            formDepth--;
            const saved = stack.pop();
            if (saved) ({ ctm, text } = saved);
            break;
          }
          case OPS.beginText:
            textMatrix = IDENTITY;
            lineMatrix = IDENTITY;
            break;
          case OPS.setFont:
            text.font = String(args[0]);
            text.size = Number(args[1]);
            break;
          case OPS.setCharSpacing:
            text.charSpacing = Number(args[0]);
            break;
          case OPS.setWordSpacing:
            text.wordSpacing = Number(args[0]);
            break;
          case OPS.setHScale:
            text.scale = Number(args[0]) / 100;
            break;
          case OPS.setLeading:
            text.leading = Number(args[0]);
            break;
          case OPS.setTextRise:
            text.rise = Number(args[0]);
            break;
          case OPS.moveText:
            moveText(Number(args[0]), Number(args[1]));
            break;
          case OPS.setLeadingMoveText:
            text.leading = -Number(args[1]);
            moveText(Number(args[0]), Number(args[1]));
            break;
          case OPS.nextLine:
            moveText(0, -text.leading);
            break;
          case OPS.setTextMatrix:
            lineMatrix = matrixArgument(args);
            textMatrix = lineMatrix;
            break;
          case OPS.showText:
          case OPS.showSpacedText: {
            const own = formDepth === 0;
            if (own) ownOperator++;
            const metrics = fontMetrics(text.font);
            const size = text.size;
            let glyphIndex = 0;
            for (const item of (args[0] ?? []) as (PdfJsGlyph | number | null)[]) {
              if (typeof item === 'number') {
                textMatrix = multiply([1, 0, 0, 1, (-item / 1000) * size * text.scale, 0], textMatrix);
                continue;
              }
              if (item === null) continue;
              const advance = (item.width * metrics.unitsPerPoint * size + text.charSpacing + (item.isSpace ? text.wordSpacing : 0)) * text.scale;
              const rendering = multiply([size * text.scale, 0, 0, size, 0, text.rise], multiply(textMatrix, ctm));
              const glyphWidth = item.width * metrics.unitsPerPoint;
              const corners = [
                [0, metrics.descent],
                [glyphWidth, metrics.descent],
                [0, metrics.ascent],
                [glyphWidth, metrics.ascent],
              ].map(([x, y]) => toDisplayed(view, ...apply(rendering, x!, y!)));
              // Lines are followed in user space along the glyphs' own baseline, whichever way it runs.
              const origin = apply(rendering, 0, 0);
              const along = apply(rendering, 1, 0);
              const across = apply(rendering, 0, 1);
              const unit = Math.hypot(along[0] - origin[0], along[1] - origin[1]);
              const direction: [number, number] = unit === 0 ? [1, 0] : [(along[0] - origin[0]) / unit, (along[1] - origin[1]) / unit];
              const [originX, originY] = toDisplayed(view, ...origin);
              const [rightX, rightY] = toDisplayed(view, ...along);
              const [upX, upY] = toDisplayed(view, ...across);
              // Displayed y runs down: the angle counterclockwise as seen is that of (dx, -dy).
              const degreesAsShown = (Math.atan2(-(rightY - originY), rightX - originX) * 180) / Math.PI;
              const glyph: Glyph = {
                frame: { advance: axisOf(rightX - originX, rightY - originY), up: axisOf(upX - originX, upY - originY) },
                angle: ((degreesAsShown % 360) + 360) % 360,
                // One unit up in text space, as displayed: the font size after every matrix.
                size: Math.hypot(upX - originX, upY - originY),
                char: item.unicode ?? '',
                minX: Math.min(...corners.map((c) => c[0])),
                maxX: Math.max(...corners.map((c) => c[0])),
                minY: Math.min(...corners.map((c) => c[1])),
                maxY: Math.max(...corners.map((c) => c[1])),
                origin,
                direction,
                advance: glyphWidth * unit,
                em: Math.hypot(across[0] - origin[0], across[1] - origin[1]) * (metrics.ascent - metrics.descent),
                operator: own ? ownOperator : -1,
                index: glyphIndex,
                // The glyph's advance in the TJ units that replace it when it is hidden.
                displacement: size === 0 ? 0 : -((advance / text.scale) * 1000) / size,
              };
              glyphs.push(glyph);
              glyphIndex++;
              textMatrix = multiply([1, 0, 0, 1, advance, 0], textMatrix);
            }
            if (own) glyphCounts.set(ownOperator, glyphIndex);
            break;
          }
          default:
            break;
        }
      }
      operatorCounts.push(ownOperator + 1);

      // The page's text in content order, a line break where the next glyph does not continue the line.
      let joined = '';
      const owners: number[] = [];
      let previous: Glyph | undefined;
      for (const [position, glyph] of glyphs.entries()) {
        if (previous !== undefined) {
          if (!continuesLine(previous, glyph)) {
            joined += '\n';
            owners.push(-1);
          }
        }
        // One owner per UTF-16 unit, as the match indices count.
        joined += glyph.char;
        for (let unit = 0; unit < glyph.char.length; unit++) owners.push(position);
        previous = glyph;
      }
      for (const match of joined.matchAll(TAG_PATTERN)) {
        if (tags.length >= options.maxTags) {
          tooMany = true;
          break;
        }
        const start = match.index;
        const positions = [...new Set(owners.slice(start, start + match[0].length).filter((owner) => owner >= 0))];
        const members = positions.map((position) => glyphs[position]!);
        const minX = Math.min(...members.map((g) => g.minX));
        const maxX = Math.max(...members.map((g) => g.maxX));
        const minY = Math.min(...members.map((g) => g.minY));
        const maxY = Math.max(...members.map((g) => g.maxY));
        const ranges: GlyphRange[] = [];
        if (members.every((g) => g.operator >= 0)) {
          for (const glyph of members) {
            const last = ranges.at(-1);
            const { displacement } = glyph;
            if (last !== undefined && last.operator === glyph.operator && last.to === glyph.index) {
              last.to++;
              last.displacements.push(displacement);
            } else {
              ranges.push({ operator: glyph.operator, from: glyph.index, to: glyph.index + 1, glyphs: glyphCounts.get(glyph.operator) ?? 0, displacements: [displacement] });
            }
          }
        }
        const angle = Math.round(members[0]!.angle * 100) / 100;
        const fontSize = Math.max(...members.map((g) => g.size));
        tags.push({
          text: match[0],
          page: pageIndex,
          box: { x: minX, y: minY, width: maxX - minX, height: maxY - minY },
          pageSize,
          frame: members[0]!.frame,
          angle: angle === 360 ? 0 : angle,
          fontSize,
          ranges,
        });
      }
      page.cleanup();
      if (tooMany) break;
    }
  } finally {
    await loading.destroy();
  }
  return { tags, operatorCounts, tooMany };
}

// ---------------------------------------------------------------------------------------------
// Content-stream rewriting

type Operand = { kind: 'string'; bytes: number[] } | { kind: 'number'; value: number } | { kind: 'array'; items: Operand[] } | { kind: 'other' };
type Operation = { operator: string; operands: Operand[]; start: number; end: number };

const WHITE = new Set([0, 9, 10, 12, 13, 32]);
const DELIMITERS = new Set([40, 41, 60, 62, 91, 93, 123, 125, 47, 37]);

/**
 * Reads a content stream into its operations (operands parsed as far as text showing needs).
 * Arrays nest at most `MAX_CONTENT_NESTING_DEPTH` deep, as the inspector counts them at upload
 * (a TJ array is one level): deeper is refused as too complex (`PdfInspectionError`), never read
 * by a recursion that would run out of stack (arrays 200 000 deep did, and answered 500).
 */
export function parseContent(data: Uint8Array): Operation[] {
  const operations: Operation[] = [];
  let position = 0;
  let operands: Operand[] = [];
  let operandsStart = -1;
  const length = data.length;
  const skipWhite = () => {
    while (position < length) {
      const byte = data[position]!;
      if (WHITE.has(byte)) position++;
      else if (byte === 37) {
        while (position < length && data[position] !== 10 && data[position] !== 13) position++;
      } else break;
    }
  };
  const readLiteral = (): number[] => {
    const bytes: number[] = [];
    let depth = 1;
    position++;
    while (position < length) {
      const byte = data[position++]!;
      if (byte === 92) {
        const next = data[position++];
        if (next === undefined) break;
        const escapes: Record<number, number> = { 110: 10, 114: 13, 116: 9, 98: 8, 102: 12, 40: 40, 41: 41, 92: 92 };
        if (escapes[next] !== undefined) bytes.push(escapes[next]!);
        else if (next >= 48 && next <= 55) {
          let value = next - 48;
          for (let digit = 0; digit < 2 && data[position]! >= 48 && data[position]! <= 55; digit++) value = value * 8 + (data[position++]! - 48);
          bytes.push(value & 0xff);
        } else if (next === 13) {
          if (data[position] === 10) position++;
        } else if (next !== 10) bytes.push(next);
        continue;
      }
      if (byte === 40) depth++;
      if (byte === 41 && --depth === 0) break;
      bytes.push(byte);
    }
    return bytes;
  };
  const readHex = (): number[] => {
    position++;
    let digits = '';
    while (position < length && data[position] !== 62) {
      const byte = data[position++]!;
      if (!WHITE.has(byte)) digits += String.fromCharCode(byte);
    }
    position++;
    if (digits.length % 2 === 1) digits += '0';
    const bytes: number[] = [];
    for (let index = 0; index < digits.length; index += 2) bytes.push(parseInt(digits.slice(index, index + 2), 16));
    return bytes;
  };
  const readToken = (): string => {
    const start = position;
    while (position < length && !WHITE.has(data[position]!) && !DELIMITERS.has(data[position]!)) position++;
    return Buffer.from(data.subarray(start, position)).toString('latin1');
  };
  const readOperand = (depth = 0): Operand | string => {
    const byte = data[position]!;
    if (byte === 40) return { kind: 'string', bytes: readLiteral() };
    if (byte === 60) {
      if (data[position + 1] === 60) {
        // A dictionary (inline image parameters, marked-content properties): skipped whole.
        let depth = 0;
        while (position < length) {
          if (data[position] === 60 && data[position + 1] === 60) {
            depth++;
            position += 2;
          } else if (data[position] === 62 && data[position + 1] === 62) {
            depth--;
            position += 2;
            if (depth === 0) break;
          } else if (data[position] === 40) readLiteral();
          else position++;
        }
        return { kind: 'other' };
      }
      return { kind: 'string', bytes: readHex() };
    }
    if (byte === 91) {
      if (depth >= MAX_CONTENT_NESTING_DEPTH) {
        tooComplex(`a page's content nests arrays more than ${MAX_CONTENT_NESTING_DEPTH} deep`, 'content_nesting', MAX_CONTENT_NESTING_DEPTH);
      }
      position++;
      const items: Operand[] = [];
      for (;;) {
        skipWhite();
        if (position >= length) break;
        if (data[position] === 93) {
          position++;
          break;
        }
        const item = readOperand(depth + 1);
        items.push(typeof item === 'string' ? (Number.isFinite(Number(item)) ? { kind: 'number', value: Number(item) } : { kind: 'other' }) : item);
      }
      return { kind: 'array', items };
    }
    if (byte === 47) {
      position++;
      readToken();
      return { kind: 'other' };
    }
    if (byte === 41 || byte === 62 || byte === 93 || byte === 123 || byte === 125) {
      position++;
      return { kind: 'other' };
    }
    return readToken();
  };
  for (;;) {
    skipWhite();
    if (position >= length) break;
    const start = position;
    const token = readOperand();
    if (operandsStart < 0) operandsStart = start;
    if (typeof token !== 'string') {
      operands.push(token);
      continue;
    }
    if (/^[+-]?(\d+\.?\d*|\.\d+)$/.test(token)) {
      operands.push({ kind: 'number', value: Number(token) });
      continue;
    }
    if (token === 'true' || token === 'false' || token === 'null') {
      operands.push({ kind: 'other' });
      continue;
    }
    operations.push({ operator: token, operands, start: operandsStart, end: position });
    if (token === 'ID') {
      // Inline image data: up to whitespace, EI, whitespace.
      position++;
      while (position < length) {
        if (data[position] === 69 && data[position + 1] === 73 && WHITE.has(data[position - 1]!) && (position + 2 >= length || WHITE.has(data[position + 2]!))) {
          position += 2;
          break;
        }
        position++;
      }
    }
    operands = [];
    operandsStart = -1;
  }
  return operations;
}

const SHOWING = new Set(['Tj', 'TJ', "'", '"']);

function hexString(bytes: number[]): string {
  return `<${bytes.map((byte) => byte.toString(16).padStart(2, '0')).join('')}>`;
}

function formatNumber(value: number): string {
  return Number.isInteger(value) ? String(value) : value.toFixed(4).replace(/0+$/, '').replace(/\.$/, '');
}

/** The strings an operation shows, in order (its last operand, or the array's strings). */
function shownStrings(operation: Operation): Operand[] {
  const shown = operation.operands.at(-1);
  if (shown === undefined) return [];
  if (shown.kind === 'array') return shown.items;
  return [shown];
}

/** Rewrites one showing operation without the hidden glyphs, or null when its bytes cannot be split among its glyphs for certain. */
function rewriteOperation(operation: Operation, hidden: Map<number, number>, glyphCount: number): string | null {
  const items = shownStrings(operation);
  const totalBytes = items.reduce((sum, item) => sum + (item.kind === 'string' ? item.bytes.length : 0), 0);
  if (glyphCount === 0 || totalBytes % glyphCount !== 0) return null;
  const width = totalBytes / glyphCount;
  if (width !== 1 && width !== 2) return null;
  const parts: string[] = [];
  let glyph = 0;
  let run: number[] = [];
  const flush = () => {
    if (run.length > 0) parts.push(hexString(run));
    run = [];
  };
  for (const item of items) {
    if (item.kind === 'number') {
      flush();
      parts.push(formatNumber(item.value));
      continue;
    }
    if (item.kind !== 'string') continue;
    for (let offset = 0; offset < item.bytes.length; offset += width) {
      const displacement = hidden.get(glyph);
      if (displacement === undefined) run.push(...item.bytes.slice(offset, offset + width));
      else {
        flush();
        parts.push(formatNumber(displacement));
      }
      glyph++;
    }
  }
  flush();
  const array = `[${parts.join(' ')}] TJ`;
  if (operation.operator === "'") return `T* ${array}`;
  if (operation.operator === '"') {
    const [wordSpacing, charSpacing] = operation.operands;
    if (wordSpacing?.kind !== 'number' || charSpacing?.kind !== 'number') return null;
    return `${formatNumber(wordSpacing.value)} Tw ${formatNumber(charSpacing.value)} Tc T* ${array}`;
  }
  return array;
}

function contentBytes(pdf: PDFDocument, pageIndex: number): Uint8Array | null {
  const page = pdf.getPage(pageIndex);
  const contents = page.node.Contents();
  if (contents === undefined) return null;
  const streams: PDFStream[] = [];
  if (contents instanceof PDFArray) {
    for (let index = 0; index < contents.size(); index++) {
      const item = contents.lookup(index);
      if (item instanceof PDFStream) streams.push(item);
    }
  } else streams.push(contents);
  const pieces = streams.map((stream) => (stream instanceof PDFRawStream ? decodePDFRawStream(stream).decode() : stream.getContents()));
  const joined = new Uint8Array(pieces.reduce((sum, piece) => sum + piece.length + 1, 0));
  let offset = 0;
  for (const piece of pieces) {
    joined.set(piece, offset);
    offset += piece.length;
    joined[offset++] = 10;
  }
  return joined;
}

/**
 * Removes the glyphs of the given tags from their pages' content streams (in place). Answers the
 * tags that could not be hidden (their page's operators could not be matched for certain).
 */
export function hideTextTags(pdf: PDFDocument, tags: FoundTag[], operatorCounts: number[]): FoundTag[] {
  const notHidden: FoundTag[] = [];
  const byPage = new Map<number, FoundTag[]>();
  for (const tag of tags) {
    if (tag.ranges.length === 0) notHidden.push(tag);
    else byPage.set(tag.page, [...(byPage.get(tag.page) ?? []), tag]);
  }
  for (const [pageIndex, pageTags] of byPage) {
    const data = contentBytes(pdf, pageIndex);
    const operations = data === null ? [] : parseContent(data).filter((operation) => SHOWING.has(operation.operator));
    if (data === null || operations.length !== operatorCounts[pageIndex]) {
      notHidden.push(...pageTags);
      continue;
    }
    const hiddenByOperator = new Map<number, { hidden: Map<number, number>; glyphs: number }>();
    for (const tag of pageTags) {
      for (const range of tag.ranges) {
        const entry = hiddenByOperator.get(range.operator) ?? { hidden: new Map<number, number>(), glyphs: range.glyphs };
        range.displacements.forEach((displacement, offset) => entry.hidden.set(range.from + offset, displacement));
        hiddenByOperator.set(range.operator, entry);
      }
    }
    const replacements: { start: number; end: number; text: string }[] = [];
    let failed = false;
    for (const [operatorIndex, { hidden, glyphs }] of hiddenByOperator) {
      const operation = operations[operatorIndex];
      const text = operation === undefined ? null : rewriteOperation(operation, hidden, glyphs);
      if (text === null || operation === undefined) {
        failed = true;
        break;
      }
      replacements.push({ start: operation.start, end: operation.end, text });
    }
    if (failed) {
      notHidden.push(...pageTags);
      continue;
    }
    replacements.sort((a, b) => a.start - b.start);
    const pieces: Buffer[] = [];
    let at = 0;
    for (const replacement of replacements) {
      pieces.push(Buffer.from(data.subarray(at, replacement.start)), Buffer.from(replacement.text, 'latin1'));
      at = replacement.end;
    }
    pieces.push(Buffer.from(data.subarray(at)));
    const stream = pdf.context.flateStream(Buffer.concat(pieces));
    const ref: PDFRef = pdf.context.register(stream);
    pdf.getPage(pageIndex).node.set(PDFName.of('Contents'), ref);
  }
  return notHidden;
}

/** Whether a tag is a data tag (`{{data:…}}`, `{{data;…}}`): merged from data, never a field. */
export function isDataTag(text: string): boolean {
  return /^\{\{\s*data\s*[:;]/i.test(text);
}
