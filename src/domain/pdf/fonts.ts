/**
 * The fonts the renderer embeds (Noto Sans, Dancing Script), read and parsed once per thread.
 * Runs in a PDF worker thread (pdf/worker.ts): Node built-ins and fontkit only.
 *
 * Why this file exists: the packages ship WOFF, whose tables are zlib-compressed, and fontkit's
 * WOFF reader inflates a table each time it is read, the whole `glyf` table for every glyph it
 * looks at (outline, bounding box, subsetting). Embedding fonts that way cost most of a render.
 * Here each file is inflated once into a plain TrueType file (the same tables, so the subsets
 * pdf-lib writes are the same), parsed once by fontkit, and that parsed font is handed to every
 * document the thread renders (`cachingFontkit`): parsing, cmap and GSUB/GPOS tables, glyph
 * metrics are done once per thread, not per field, document or job; so are the layouts of the
 * texts drawn (`rememberLayouts`) and their widths (`advanceOf`). Only the subset, which is each
 * document's own, is built per document, without waiting on timers (`encodeSubsetsAtOnce`).
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { inflateSync } from 'node:zlib';
import fontkit from '@pdf-lib/fontkit';

type Font = ReturnType<typeof fontkit.create>;

const require = createRequire(import.meta.url);

/**
 * A WOFF 1.0 file (W3C WOFF §3–5) as the TrueType/OpenType file it wraps: the same tables, each
 * inflated, in a fresh sfnt table directory (tables 4-byte aligned, as the sfnt format asks).
 */
export function sfntOfWoff(woff: Uint8Array): Uint8Array {
  const input = Buffer.from(woff.buffer, woff.byteOffset, woff.byteLength);
  if (input.toString('latin1', 0, 4) !== 'wOFF') throw new Error('not a WOFF file');
  const flavor = input.readUInt32BE(4);
  const numTables = input.readUInt16BE(12);
  const tables: { tag: Buffer; checksum: number; data: Buffer }[] = [];
  for (let index = 0; index < numTables; index++) {
    const entry = 44 + index * 20;
    const offset = input.readUInt32BE(entry + 4);
    const compressedLength = input.readUInt32BE(entry + 8);
    const length = input.readUInt32BE(entry + 12);
    const stored = input.subarray(offset, offset + compressedLength);
    const data = compressedLength < length ? inflateSync(stored) : stored;
    if (data.length !== length) throw new Error('a WOFF table does not inflate to its stated length');
    tables.push({ tag: input.subarray(entry, entry + 4), checksum: input.readUInt32BE(entry + 16), data });
  }
  // The directory is sorted by tag (WOFF keeps that order; sorting again costs nothing).
  tables.sort((a, b) => Buffer.compare(a.tag, b.tag));
  const padded = (length: number) => (length + 3) & ~3;
  const headerLength = 12 + 16 * numTables;
  const output = Buffer.alloc(headerLength + tables.reduce((sum, table) => sum + padded(table.data.length), 0));
  const entrySelector = Math.floor(Math.log2(numTables));
  const searchRange = 2 ** entrySelector * 16;
  output.writeUInt32BE(flavor, 0);
  output.writeUInt16BE(numTables, 4);
  output.writeUInt16BE(searchRange, 6);
  output.writeUInt16BE(entrySelector, 8);
  output.writeUInt16BE(numTables * 16 - searchRange, 10);
  let offset = headerLength;
  tables.forEach((table, index) => {
    const record = 12 + index * 16;
    table.tag.copy(output, record);
    output.writeUInt32BE(table.checksum, record + 4);
    output.writeUInt32BE(offset, record + 8);
    output.writeUInt32BE(table.data.length, record + 12);
    table.data.copy(output, offset);
    offset += padded(table.data.length);
  });
  return new Uint8Array(output.buffer, output.byteOffset, output.byteLength);
}

/**
 * One family: its files (Latin, then Latin Extended: ğ, ş, ı, İ …), each as TrueType bytes and as
 * the fontkit font parsed from them. A character is drawn with the first file that has its glyph.
 */
export type FontFamily = { files: Uint8Array[]; fonts: Font[]; fileOf: Map<number, number> };

/** The file of `family` that draws `codePoint` (the first that has it; the first when none has), cached per code point. */
export function fileIndexFor(family: FontFamily, codePoint: number): number {
  let index = family.fileOf.get(codePoint);
  if (index === undefined) {
    index = family.fonts.findIndex((font) => font.hasGlyphForCodePoint(codePoint));
    if (index === -1) index = 0;
    family.fileOf.set(codePoint, index);
  }
  return index;
}

const parsed = new Map<Uint8Array, Font>();

/**
 * A cache keyed by text whose memory stays bounded in a long-lived thread: it is emptied when the
 * texts it holds reach `characters` in all (wrapping a long paragraph measures every prefix of
 * every line, and a laid-out run holds objects per glyph).
 */
class TextCache<V> {
  readonly #entries = new Map<string, V>();
  readonly #limit: number;
  #characters = 0;

  constructor(characters: number) {
    this.#limit = characters;
  }

  get(text: string): V | undefined {
    return this.#entries.get(text);
  }

  set(text: string, value: V): void {
    if (this.#characters + text.length > this.#limit) {
      this.#entries.clear();
      this.#characters = 0;
    }
    this.#entries.set(text, value);
    this.#characters += text.length;
  }
}

/**
 * Remembers the font's layouts (shaping: GSUB and GPOS lookups, the costliest step of drawing a
 * run of text) per text, for the default features, which is how pdf-lib and we call it: the same
 * words and names are measured, then encoded, field after field and document after document.
 * A glyph run is only read (glyph ids and advances), never changed, so one can be shared. Runs of
 * up to 50,000 characters in all are kept per font (a few megabytes).
 */
function rememberLayouts(font: Font): void {
  const layout = font.layout.bind(font);
  const runs = new TextCache<ReturnType<Font['layout']>>(50_000);
  font.layout = (text, features) => {
    if (features !== undefined) return layout(text, features);
    let run = runs.get(text);
    if (run === undefined) {
      run = layout(text);
      runs.set(text, run);
    }
    return run;
  };
}

type Subset = ReturnType<Font['createSubset']>;
/** What fontkit's subset writes into: restructure's EncodeStream (a Readable whose `push` receives the bytes). */
type EncodeStream = { push(chunk: Uint8Array | null): boolean; end(): void };
/** The part of fontkit's subset that `encodeStream` runs (not in its type declarations). */
type EncodableSubset = Subset & { encode(stream: EncodeStream): void };

/** The class fontkit's subsets encode into (restructure's EncodeStream), which fontkit does not export. */
let encodeStreamClass: (new () => EncodeStream) | undefined;

/**
 * Makes the font's subsets hand over their bytes without waiting on timers, and keeps the font's
 * glyph cache as the documents' layouts left it. fontkit's `encodeStream` (what pdf-lib reads a
 * subset through) starts the encoding from a bundled `process.nextTick` stand-in that waits for a
 * `setTimeout`, and its Readable passes the bytes on the same way: about a millisecond of idling
 * per font per document, several times what the encoding costs. Here the same encoder
 * (`subset.encode`) writes into the same kind of stream at once, and the bytes go to pdf-lib's
 * listeners on the next microtask (they are attached right after the call).
 *
 * The glyph cache: encoding a composite glyph (Ö is O and a diaeresis) loads its components
 * without the characters they stand for, and fontkit keeps the first glyph object made for an id.
 * With one font per document that came after every layout and did no harm; with a font shared by
 * the thread's documents, the next document's O would come without its character, and its text
 * would lose it (no ToUnicode entry). So the glyphs the encoding loaded are forgotten after it.
 * test/pdf-fonts.test.ts checks the bytes equal fontkit's own, and the O.
 */
function encodeSubsetsAtOnce(font: Font, bytes: Uint8Array): void {
  const createSubset = font.createSubset.bind(font);
  // A throwaway font's subset stream is one (its own encoding, of nothing, runs later and is read by no one).
  encodeStreamClass ??= (fontkit.create(bytes).createSubset().encodeStream() as object).constructor as new () => EncodeStream;
  const EncodeStreamClass = encodeStreamClass;
  const glyphs = (font as unknown as { _glyphs: Record<string, unknown> })._glyphs;
  font.createSubset = () => {
    const subset = createSubset() as EncodableSubset;
    subset.encodeStream = () => {
      const listeners: { data: ((bytes: Uint8Array) => unknown)[]; end: (() => unknown)[]; error: ((error: unknown) => unknown)[] } = { data: [], end: [], error: [] };
      const stream = {
        on(event: 'data' | 'end' | 'error', callback: (value: never) => unknown) {
          (listeners[event] as unknown[]).push(callback);
          return stream;
        },
      };
      queueMicrotask(() => {
        const chunks: Uint8Array[] = [];
        const known = new Set(Object.keys(glyphs));
        try {
          const output = new EncodeStreamClass();
          output.push = (chunk) => {
            if (chunk !== null) chunks.push(chunk);
            return true;
          };
          subset.encode(output);
          output.end();
        } catch (error) {
          for (const callback of listeners.error) callback(error);
          return;
        } finally {
          for (const id of Object.keys(glyphs)) if (!known.has(id)) delete glyphs[id];
        }
        for (const chunk of chunks) for (const callback of listeners.data) callback(chunk);
        for (const callback of listeners.end) callback();
      });
      return stream as ReturnType<Subset['encodeStream']>;
    };
    return subset;
  };
}

function loadFamily(pkg: string, base: string): FontFamily {
  // The packages export only CSS; their font files sit beside it.
  const directory = path.join(path.dirname(require.resolve(pkg)), 'files');
  const files = ['latin', 'latin-ext'].map((subset) => sfntOfWoff(fs.readFileSync(path.join(directory, `${base}-${subset}-400-normal.woff`))));
  const fonts = files.map((bytes) => {
    const font = fontkit.create(bytes);
    rememberLayouts(font);
    encodeSubsetsAtOnce(font, bytes);
    parsed.set(bytes, font);
    return font;
  });
  return { files, fonts, fileOf: new Map() };
}

let families: { sans: FontFamily; script: FontFamily } | undefined;

/** The two families, read and parsed on first use in this thread. */
export function fontFamilies(): { sans: FontFamily; script: FontFamily } {
  families ??= { sans: loadFamily('@fontsource/noto-sans', 'noto-sans'), script: loadFamily('@fontsource/dancing-script', 'dancing-script') };
  return families;
}

/**
 * fontkit for pdf-lib's `registerFontkit`: our families' files come back as the fonts already
 * parsed (pdf-lib's embedders only read the font; each builds its own subset), anything else is
 * parsed as fontkit would.
 */
export const cachingFontkit = {
  create(bytes: Uint8Array, postscriptName?: string): Font {
    return parsed.get(bytes) ?? fontkit.create(bytes, postscriptName);
  },
};

const advanceCache = new Map<Font, TextCache<number>>();

/**
 * The width of `text` set in `font` at 1000 units per em: what pdf-lib's `widthOfTextAtSize`
 * computes (the laid-out glyphs' advances, in the same order, so the same number), remembered per
 * font and text (texts of up to 200,000 characters in all). Word wrapping and fitting measure the
 * same strings many times over.
 */
export function advanceOf(font: Font, text: string): number {
  let widths = advanceCache.get(font);
  if (widths === undefined) advanceCache.set(font, (widths = new TextCache(200_000)));
  let width = widths.get(text);
  if (width === undefined) {
    const scale = 1000 / font.unitsPerEm;
    width = 0;
    for (const glyph of font.layout(text).glyphs) width += glyph.advanceWidth * scale;
    widths.set(text, width);
  }
  return width;
}
