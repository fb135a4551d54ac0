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
 * texts drawn, word by word (`rememberLayouts`), without the positioning no one reads
 * (`skipPositioning`), a word no substitution touches glyph by glyph (`plainWordsOf`), and their
 * widths (`advanceOf`). Only the subset, which is each
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
  const layout = font.layout.bind(font) as (text: string, features?: string[], script?: string) => GlyphRun;
  const runs = new TextCache<GlyphRun>(50_000);
  const isPlain = plainWordsOf(font);
  const characterRuns = new Map<string, GlyphRun>();
  /**
   * A word no substitution touches (`plainWordsOf`: ids, hashes, dates, most numbers and many
   * words) is its characters' glyphs in order, in the script of its first letter: fontkit's
   * layout of the word, without setting up a shaping plan and running every lookup over it. That
   * was most of a certificate's layout, as its ids, hashes and times are new text every closing.
   */
  const shape = (word: string, script?: string): GlyphRun => {
    if (script !== undefined) return layout(word, undefined, script);
    if (!isPlain(word)) return layout(word);
    const glyphs: GlyphRun['glyphs'] = [];
    let wordScript = UNKNOWN_SCRIPT;
    for (const character of word) {
      let run = characterRuns.get(character);
      if (run === undefined) characterRuns.set(character, (run = layout(character)));
      if (wordScript === UNKNOWN_SCRIPT) wordScript = run.script;
      for (const glyph of run.glyphs) glyphs.push(glyph);
    }
    return { glyphs, script: wordScript } as GlyphRun;
  };
  /**
   * One word's run (in the whole text's script when that is not the word's own), remembered unless
   * it is longer than any word that recurs: a long unbroken text (compact JSON in the certificate's
   * appendix) is broken by characters, and each prefix tried at the line's edge would otherwise
   * push the words that do recur out of the cache.
   */
  const wordRun = (word: string, script?: string): GlyphRun => {
    if (word.length > LONGEST_REMEMBERED_WORD) return shape(word, script);
    const key = script === undefined ? word : `${script}\u0000${word}`;
    let run = runs.get(key);
    if (run === undefined) {
      run = shape(word, script);
      runs.set(key, run);
    }
    return run;
  };
  font.layout = ((text: string, features?: string[]) => {
    if (features !== undefined) return layout(text, features);
    const words = text.split(WORDS);
    if (words.length === 1) return wordRun(text);
    return composedRun(words, wordRun);
  }) as Font['layout'];
  // The same, with the last word laid out and not remembered (a word being broken by characters: each prefix tried once).
  layoutsOnce.set(font, (text) => {
    const words = text.split(WORDS);
    const last = words.length - 1;
    return composedRun(words, wordRun, last, shape);
  });
}

/**
 * The GSUB features fontkit's default shaper applies when none are asked for (rvrn; ccmp, locl,
 * rlig; ltra, ltrm; calt, clig, liga, rclt). Its other default features (mark, mkmk, curs, kern)
 * are positioning, which is skipped (`skipPositioning`).
 */
const DEFAULT_SUBSTITUTIONS = new Set(['rvrn', 'ccmp', 'locl', 'rlig', 'ltra', 'ltrm', 'calt', 'clig', 'liga', 'rclt']);

/** Characters a plain word may hold: printable Latin-1 but the soft hyphen (default-ignorable, hidden by fontkit). No marks, no right-to-left. */
function mayBePlain(codePoint: number): boolean {
  return (codePoint >= 0x20 && codePoint <= 0x7e) || (codePoint >= 0xa0 && codePoint <= 0xff && codePoint !== 0xad);
}

// fontkit's parsed OpenType tables, as far as they are read here (fontkit declares none of them).
type Listed<T> = T[] | { toArray(): T[] };
type Coverage = { version: 1; glyphs: number[] } | { version: 2; rangeRecords: { start: number; end: number }[] };
type ClassDefinition = { version: 1; startGlyph: number; classValueArray: number[] } | { version: 2; classRangeRecord: { start: number; end: number; class: number }[] };
type GlyphRule = { input: Listed<number>; lookahead?: Listed<number> };
type SubstitutionTable = {
  version?: number;
  lookupType?: number;
  extension?: SubstitutionTable;
  coverage?: Coverage;
  ligatureSets?: Listed<Listed<{ components: Listed<number> }>>;
  // Contextual (5) and chained contextual (6): by glyphs (format 1) or by coverages (format 3).
  ruleSets?: Listed<Listed<GlyphRule>>;
  chainRuleSets?: Listed<Listed<GlyphRule>>;
  coverages?: Coverage[];
  inputCoverage?: Coverage[];
  lookaheadCoverage?: Coverage[];
};
type SubstitutionLookup = { lookupType: number; flags: { ignoreBaseGlyphs: boolean; ignoreLigatures: boolean }; subTables: Listed<SubstitutionTable> };
type Substitutions = {
  featureList: { tag: string; feature: { lookupListIndexes: number[] } }[];
  lookupList: Listed<SubstitutionLookup>;
};

const listed = <T>(list: Listed<T>): T[] => (Array.isArray(list) ? list : list.toArray());

function glyphsOf(coverage: Coverage): number[] {
  if (coverage.version === 1) return coverage.glyphs;
  return coverage.rangeRecords.flatMap((range) => Array.from({ length: range.end - range.start + 1 }, (_, offset) => range.start + offset));
}

function classOf(definition: ClassDefinition | undefined, glyph: number): number {
  if (definition === undefined) return 0;
  if (definition.version === 1) return definition.classValueArray[glyph - definition.startGlyph] ?? 0;
  return definition.classRangeRecord.find((range) => glyph >= range.start && glyph <= range.end)?.class ?? 0;
}

/** Whether a substitution starting at `position` of a word's glyphs may apply. */
type Trigger = (glyphs: number[], position: number) => boolean;

/**
 * Whether `glyphs` from `from` on match `sequence` (each a glyph set); as fontkit matches, a
 * sequence that runs past the word's end does not match.
 */
function followedBy(glyphs: number[], from: number, sequence: ReadonlySet<number>[]): boolean {
  return from + sequence.length <= glyphs.length && sequence.every((allowed, offset) => allowed.has(glyphs[from + offset]!));
}

/**
 * The triggers of one subtable, by the glyph a substitution would start at. Ligatures and
 * contexts given by glyphs or coverages (formats 1 and 3) are read for what must follow the first
 * glyph; what must come before it (a chained context's backtrack) is not read, so such a
 * substitution counts as possible wherever its first glyph and what follows match. Any other kind
 * (single, multiple, alternate, contexts by classes) counts as possible wherever its first glyph
 * stands. Null: a table of a shape not known here.
 */
function triggersOf(type: number, table: SubstitutionTable): Map<number, Trigger> | null {
  const triggers = new Map<number, Trigger>();
  const always: Trigger = () => true;
  const sets = (coverages: Coverage[]) => coverages.map((coverage) => new Set(glyphsOf(coverage)));
  /** Per glyph of `coverage` (in its order), its rules: each the glyphs that must follow it. */
  const byRules = <Rule>(coverage: Coverage, ruleSets: Listed<Listed<Rule>>, sequenceOf: (rule: Rule) => number[]) => {
    const rules = listed(ruleSets);
    for (const [index, first] of glyphsOf(coverage).entries()) {
      const sequences = listed(rules[index] ?? []).map((rule) => sequenceOf(rule).map((glyph) => new Set([glyph])));
      triggers.set(first, (glyphs, position) => sequences.some((sequence) => followedBy(glyphs, position + 1, sequence)));
    }
  };
  if (type === 4 && table.coverage !== undefined && table.ligatureSets !== undefined) {
    byRules(table.coverage, table.ligatureSets, (ligature) => listed(ligature.components));
  } else if ((type === 5 || type === 6) && table.version === 1 && table.coverage !== undefined && (table.ruleSets ?? table.chainRuleSets) !== undefined) {
    byRules(table.coverage, (table.ruleSets ?? table.chainRuleSets)!, (rule) => [...listed(rule.input), ...listed(rule.lookahead ?? [])]);
  } else if ((type === 5 || type === 6) && table.version === 3 && (table.coverages ?? table.inputCoverage) !== undefined) {
    const [first, ...rest] = sets([...(table.coverages ?? table.inputCoverage)!, ...(table.lookaheadCoverage ?? [])]);
    for (const glyph of first ?? []) triggers.set(glyph, (glyphs, position) => followedBy(glyphs, position + 1, rest));
  } else if (table.coverage !== undefined) {
    for (const glyph of glyphsOf(table.coverage)) triggers.set(glyph, always);
  } else return null;
  return triggers;
}

/**
 * Which words the font's default substitutions leave alone, glyph for glyph, read from its GSUB
 * table: a substitution (of any lookup type, in any script) can only start at a glyph its
 * subtable covers, and a ligature or a context only where what it needs follows (Noto Sans's `f`
 * starts ﬁ, ﬂ, ﬀ, ﬃ, ﬄ, so `ff` in a hash is a ligature and `f-` is not; its `i` becomes dotless
 * only before a mark above). Only base glyphs (GDEF) of printable Latin-1 qualify, so no lookup's
 * skipping of marks can join glyphs across one; a lookup that skips base glyphs or ligatures
 * counts as possible wherever its first glyph stands. A table of a shape not known here makes no
 * word plain. test/pdf-fonts.test.ts holds words of every kind against fontkit's own layouts.
 */
export function plainWordsOf(font: Font): (word: string) => boolean {
  const tables = font as unknown as { GSUB?: Substitutions; GDEF?: { glyphClassDef?: ClassDefinition } };
  const triggers = new Map<number, Trigger[]>();
  const gsub = tables.GSUB;
  if (gsub !== undefined) {
    const lookups = listed(gsub.lookupList);
    const used = new Set(gsub.featureList.filter((record) => DEFAULT_SUBSTITUTIONS.has(record.tag)).flatMap((record) => record.feature.lookupListIndexes));
    for (const index of used) {
      const lookup = lookups[index];
      if (lookup === undefined) return () => false;
      const skipsBases = lookup.flags.ignoreBaseGlyphs || lookup.flags.ignoreLigatures;
      for (const subtable of listed(lookup.subTables)) {
        const type = lookup.lookupType === 7 ? subtable.lookupType : lookup.lookupType;
        const table = lookup.lookupType === 7 ? subtable.extension : subtable;
        const found = type === undefined || table === undefined ? null : triggersOf(skipsBases ? 0 : type, table);
        if (found === null) return () => false;
        for (const [glyph, trigger] of found) triggers.set(glyph, [...(triggers.get(glyph) ?? []), trigger]);
      }
    }
  }
  const glyphClasses = tables.GDEF?.glyphClassDef;
  /** A character's glyph when it may stand in a plain word, else null. */
  const plainGlyphs = new Map<number, number | null>();
  const plainGlyphOf = (codePoint: number): number | null => {
    let glyph = plainGlyphs.get(codePoint);
    if (glyph === undefined) {
      const id = mayBePlain(codePoint) ? font.glyphForCodePoint(codePoint).id : -1;
      glyph = id >= 0 && [0, 1].includes(classOf(glyphClasses, id)) ? id : null;
      plainGlyphs.set(codePoint, glyph);
    }
    return glyph;
  };
  return (word) => {
    const glyphs: number[] = [];
    for (const character of word) {
      const glyph = plainGlyphOf(character.codePointAt(0)!);
      if (glyph === null) return false;
      glyphs.push(glyph);
    }
    for (const [position, glyph] of glyphs.entries()) {
      for (const trigger of triggers.get(glyph) ?? []) if (trigger(glyphs, position)) return false;
    }
    return true;
  };
}

/** Per font, its layout of a text whose last word is not to be remembered (`rememberLayouts`). */
const layoutsOnce = new WeakMap<Font, (text: string) => GlyphRun>();

type GlyphRun = ReturnType<Font['layout']>;

/** Words up to this many characters are remembered: a SHA-256 in hex (64) is the longest that recurs (drawn after it is measured). */
const LONGEST_REMEMBERED_WORD = 80;

/** Split points of a text into words, each with the spaces after it (`a b  c` → `a `, `b  `, `c`). */
const WORDS = /(?<= )(?=[^ ])/;

/**
 * A line's run put together from its words' runs: the glyphs in order, which is all that is read
 * of a run (pdf-lib's `encodeText` and `widthOfTextAtSize`, our `advanceOf`: glyph ids and
 * advance widths; kerning and other positions are never applied). Shaping a line whole, as fontkit
 * does on every new text, redid GSUB and GPOS for words already shaped: the same words recur in
 * every line of a certificate, and a line is new text each time it is drawn (docs/performance.md,
 * P9). Substitutions never reach across a space in our fonts (Noto Sans, Dancing Script: no
 * contextual rule has a space in its context); each word is shaped in the whole line's script, the
 * script fontkit would detect for the line (its first letter's), so the glyphs are the ones the
 * whole line gets. test/pdf-fonts.test.ts holds this against whole-line layouts.
 */
function composedRun(words: string[], wordRun: (word: string, script?: string) => GlyphRun, freshAt = -1, fresh = wordRun): GlyphRun {
  const runOf = (index: number, script?: string) => (index === freshAt ? fresh : wordRun)(words[index]!, script);
  const own = words.map((_, index) => runOf(index));
  // fontkit's detection: the first character of a script other than Common, Inherited, Unknown ('zzzz' when none).
  const script = own.find((run) => run.script !== UNKNOWN_SCRIPT)?.script ?? UNKNOWN_SCRIPT;
  const glyphs: GlyphRun['glyphs'] = [];
  for (const [index, run] of own.entries()) {
    const inScript = run.script === script ? run : runOf(index, script);
    for (const glyph of inScript.glyphs) glyphs.push(glyph);
  }
  return { glyphs, script } as GlyphRun;
}

/** fontkit's script tag for a text with no letter of any script. */
const UNKNOWN_SCRIPT = 'zzzz';

/**
 * Lays text out without positioning it: fontkit's layout substitutes (GSUB: ligatures, locale
 * forms, composed marks), then positions (GPOS kerning and mark attachment, or the `kern` table),
 * and positions are never read here: pdf-lib writes glyph ids and the font's own advance widths
 * (no kerning in the content stream), and our widths are the glyphs' advances too. Positioning was
 * about half of every layout's cost. Each glyph still gets a plain position (its advance), which
 * fontkit's hiding of default-ignorable characters writes into, and a right-to-left run is still
 * reversed as fontkit's positioning step does. test/pdf-fonts.test.ts holds the glyphs and
 * advances against fontkit's own layout.
 */
function skipPositioning(font: Font): void {
  type Run = { glyphs: { advanceWidth: number }[]; positions: unknown[]; direction: string };
  const engine = (font as unknown as { _layoutEngine: { position(run: Run): void } })._layoutEngine;
  engine.position = (run) => {
    run.positions = run.glyphs.map((glyph) => ({ xAdvance: glyph.advanceWidth, yAdvance: 0, xOffset: 0, yOffset: 0 }));
    if (run.direction === 'rtl') {
      run.glyphs.reverse();
      run.positions.reverse();
    }
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
    skipPositioning(font);
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
    width = sumOfAdvances(font, font.layout(text));
    // A word is remembered; a line of several is put together from its words' remembered runs
    // each time (cheap), not kept: the candidate lines of a wrap are each measured once.
    if (!WORDS.test(text)) widths.set(text, width);
  }
  return width;
}

/**
 * `advanceOf` for a text measured once (a line ending in a prefix of a word being broken by
 * characters): the same number, with nothing of its last word remembered.
 */
export function advanceOfOnce(font: Font, text: string): number {
  const layoutOnce = layoutsOnce.get(font);
  return sumOfAdvances(font, layoutOnce ? layoutOnce(text) : font.layout(text));
}

function sumOfAdvances(font: Font, run: GlyphRun): number {
  const scale = 1000 / font.unitsPerEm;
  let width = 0;
  for (const glyph of run.glyphs) width += glyph.advanceWidth * scale;
  return width;
}
