import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import fontkit from '@pdf-lib/fontkit';
import { PDFDocument } from 'pdf-lib';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { cachingFontkit, fontFamilies, plainWordsOf, sfntOfWoff } from '../src/domain/pdf/fonts.ts';
import { drawTextLine, embedSans, loadForRendering, type RenderField, renderFields, textWidth } from '../src/domain/pdf/render.ts';
import { makePdf } from './fixtures/pdfs.ts';
import { wordBoxes } from './helpers/pdf-tools.ts';

/*
 * The renderer's fonts (pdf/fonts.ts): the packages' WOFF files turned into TrueType once, parsed
 * once per thread and shared by every document, with fontkit's subset encoder run without timers.
 * Each shortcut is held against what fontkit and pdf-lib give without it.
 */

const require = createRequire(import.meta.url);
const woffFiles = [
  ['@fontsource/noto-sans', 'noto-sans-latin-400-normal.woff'],
  ['@fontsource/noto-sans', 'noto-sans-latin-ext-400-normal.woff'],
  ['@fontsource/dancing-script', 'dancing-script-latin-400-normal.woff'],
  ['@fontsource/dancing-script', 'dancing-script-latin-ext-400-normal.woff'],
].map(([pkg, file]) => ({ file: file!, bytes: fs.readFileSync(path.join(path.dirname(require.resolve(pkg!)), 'files', file!)) }));

const sample = 'Değer şartları kabul ediyorum, Ayşe Yılmaz İĞÜŞÖÇ ğüşıöç office fi fl 0123456789 ,.;:!?';

let directory: string;
beforeAll(() => {
  directory = fs.mkdtempSync(path.join(os.tmpdir(), 'fonts-'));
});
afterAll(() => {
  fs.rmSync(directory, { recursive: true, force: true });
});

/** The subset's bytes as pdf-lib reads them: through `encodeStream`'s data and end events. */
function encoded(subset: ReturnType<ReturnType<typeof fontkit.create>['createSubset']>): Promise<Buffer> {
  return new Promise((resolve) => {
    const parts: Uint8Array[] = [];
    subset
      .encodeStream()
      .on('data', (bytes) => parts.push(bytes))
      .on('end', () => resolve(Buffer.concat(parts)));
  });
}

describe('the renderer’s fonts', () => {
  it.each(woffFiles)('$file as TrueType has the same glyphs, outlines and advances as the WOFF', ({ bytes }) => {
    const woff = fontkit.create(bytes);
    const sfnt = fontkit.create(sfntOfWoff(bytes));
    expect(sfnt.postscriptName).toBe(woff.postscriptName);
    expect(sfnt.numGlyphs).toBe(woff.numGlyphs);
    expect(sfnt.characterSet).toEqual(woff.characterSet);
    // The sample's glyphs and a spread of the others (fontkit's WOFF reader inflates the whole glyf
    // table per glyph, so all of them would take long; it also cannot read some fonts' last glyph).
    const ids = new Set([...woff.layout(sample).glyphs.map((glyph) => glyph.id), ...Array.from({ length: 20 }, (_, index) => Math.floor((index * (woff.numGlyphs - 1)) / 20))]);
    for (const id of ids) {
      const [a, b] = [woff.getGlyph(id), sfnt.getGlyph(id)];
      expect(b.advanceWidth).toBe(a.advanceWidth);
      expect(b.path.toSVG()).toBe(a.path.toSVG());
    }
  });

  it('a subset is encoded to the same bytes as fontkit encodes it from the WOFF itself', async () => {
    const { sans, script } = fontFamilies();
    for (const [index, font] of [...sans.fonts, ...script.fonts].entries()) {
      const reference = fontkit.create(woffFiles[index]!.bytes);
      const ours = font.createSubset();
      const theirs = reference.createSubset();
      for (const glyph of font.layout(sample).glyphs) ours.includeGlyph(glyph);
      for (const glyph of reference.layout(sample).glyphs) theirs.includeGlyph(glyph);
      const bytes = await encoded(ours);
      expect(bytes.length).toBeGreaterThan(1000);
      expect(bytes.equals(await encoded(theirs))).toBe(true);
    }
  });

  it('measures text as pdf-lib does, to the last bit', async () => {
    const pdf = await PDFDocument.create();
    const sans = await embedSans(pdf);
    for (const [index, font] of sans.fonts.entries()) {
      const reference = await (async () => {
        const other = await PDFDocument.create();
        other.registerFontkit(fontkit);
        return other.embedFont(woffFiles[index]!.bytes, { subset: true });
      })();
      for (const text of ['Değer', 'şartları kabul', 'office', sample]) {
        for (const size of [6, 9.5, 12, 36]) {
          expect(font.widthOfTextAtSize(text, size)).toBe(reference.widthOfTextAtSize(text, size));
        }
      }
    }
    // Across the Latin and Latin Extended files: each run measured in the file that draws it.
    const [latin, extended] = sans.fonts;
    expect(textWidth('Ayşe', sans, 10)).toBe(latin!.widthOfTextAtSize('Ay', 10) + extended!.widthOfTextAtSize('ş', 10) + latin!.widthOfTextAtSize('e', 10));
  });

  it('lay a line out word by word with the glyphs fontkit gives the whole line (script, ligatures, spaces)', () => {
    const { sans, script } = fontFamilies();
    const lines = [
      sample,
      '2026-11-27 10:00:07 UTC   #12',
      '#7 field.submitted 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 {"fields":[{"fieldId":"b1","identifier":"office fi"}]}',
      'Kimlik doğrulama: e-posta ile gönderilen imza bağlantısı  ·  127.0.0.1  ·  Mozilla/5.0 (X11; Linux x86_64)',
      '   leading spaces, trailing spaces   ',
      '123 456 Ayşe',
      'The API key “bench key” sent the envelope for signature.',
    ];
    for (const [index, font] of [...sans.fonts, ...script.fonts].entries()) {
      const reference = fontkit.create(sfntOfWoff(woffFiles[index]!.bytes));
      for (const line of lines) {
        const ids = (run: { glyphs: { id: number; advanceWidth: number }[] }) => run.glyphs.map((glyph) => `${glyph.id}:${glyph.advanceWidth}`);
        expect(ids(font.layout(line)), `${woffFiles[index]!.file}: ${line}`).toEqual(ids(reference.layout(line)));
      }
    }
  });

  it('lay out a word no substitution touches glyph by glyph, and every other word as fontkit does (ids, hashes, ligatures, marks)', () => {
    const { sans, script } = fontFamilies();
    // Words drawn from characters that start substitutions in these fonts (f of ﬁ ﬂ ﬀ, i and j
    // before a mark above, l and L of Catalan l·l, Dancing Script's b e o t v w ligatures) and
    // from ones that do not, with marks, a soft hyphen and Turkish letters: a fixed pseudo-random
    // draw, so a failure names the same word every run.
    const pool = [...'ffffiiilllLLjjIbeotvw·.-:/@"{}[],0123456789abcdefABCDEF éßÖçşığİ\u0307\u0301\u00ad'];
    let seed = 37;
    const next = () => {
      seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0;
      return seed / 2 ** 32;
    };
    const words = Array.from({ length: 3_000 }, () => Array.from({ length: 1 + Math.floor(next() * 10) }, () => pool[Math.floor(next() * pool.length)]).join(''));
    words.push('9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08', '5b0f8c2e-1d7a-4c1e-9a2b-3f4e5d6c7b8a', '2026-11-27T10:00:07.123Z', 'office', 'l·l', 'i\u0307');
    for (const [index, font] of [...sans.fonts, ...script.fonts].entries()) {
      const reference = fontkit.create(sfntOfWoff(woffFiles[index]!.bytes));
      const isPlain = plainWordsOf(font);
      const plain = words.filter((word) => isPlain(word));
      // Both paths are taken, often.
      expect(plain.length, woffFiles[index]!.file).toBeGreaterThan(words.length / 10);
      expect(words.length - plain.length, woffFiles[index]!.file).toBeGreaterThan(words.length / 10);
      const shape = (run: { glyphs: { id: number; advanceWidth: number }[]; script: string }) => [run.script, ...run.glyphs.map((glyph) => `${glyph.id}:${glyph.advanceWidth}`)];
      for (const word of words) expect(shape(font.layout(word)), `${woffFiles[index]!.file}: ${JSON.stringify(word)}`).toEqual(shape(reference.layout(word)));
    }
    // What the shortcut is for: ids, hashes and times are plain in Noto Sans; a ligature is not.
    const isPlain = plainWordsOf(sans.fonts[0]!);
    expect(['5b0f8c2e-1d7a-4c1e-9a2b-3f4e5d6c7b8a', '2026-11-27T10:00:07.123Z', 'email', 'f-'].map(isPlain)).toEqual([true, true, true, true]);
    expect(['office', 'ff', 'l·l', 'i\u0307'].map(isPlain)).toEqual([false, false, false, false]);
  });

  it('are parsed once per thread: a second document is drawn from the fonts the first one parsed', async () => {
    const fields: RenderField[] = [
      { type: 'text', config: {}, value: { text: 'Ayşe Yılmaz, İstanbul' }, views: [{ page: 0, x: 40, y: 40, width: 300, height: 20 }] },
      { type: 'simple_signature', config: {}, value: { kind: 'typed', text: 'Ayşe Yılmaz', font: 'cursive' }, views: [{ page: 0, x: 40, y: 80, width: 200, height: 40 }] },
    ];
    const render = async (name: string) => {
      const pdf = await loadForRendering(await makePdf({ pages: 1 }));
      await renderFields(pdf, { fields, draft: false });
      const file = path.join(directory, name);
      fs.writeFileSync(file, await pdf.save());
      return file;
    };
    const first = await render('first.pdf');
    const create = vi.spyOn(fontkit, 'create');
    try {
      const second = await render('second.pdf');
      expect(create).not.toHaveBeenCalled();
      for (const file of [first, second]) {
        const words = wordBoxes(file)[0]!.map((word) => word.text);
        expect(words).toEqual(['Ayşe', 'Yılmaz,', 'İstanbul', 'Ayşe', 'Yılmaz']);
      }
    } finally {
      create.mockRestore();
    }
    const { sans } = fontFamilies();
    expect(cachingFontkit.create(sans.files[0]!)).toBe(sans.fonts[0]);
  });

  it('a letter first met as part of a composite glyph in one document keeps its character in the next (Ö, then O)', async () => {
    // Subsetting Ö (a composite of O and a diaeresis) loads O without its character; a font shared
    // by documents must not hand that glyph to the next document's layout of O.
    const draw = async (text: string, name: string) => {
      const pdf = await PDFDocument.create();
      const page = pdf.addPage([400, 200]);
      drawTextLine(page, text, await embedSans(pdf), { x: 20, y: 100, size: 12 });
      const file = path.join(directory, name);
      fs.writeFileSync(file, await pdf.save());
      return wordBoxes(file)[0]!.map((word) => word.text);
    };
    expect(await draw('Öztürk İpekçi', 'composite.pdf')).toEqual(['Öztürk', 'İpekçi']);
    expect(await draw('Original JSON IBAN', 'base.pdf')).toEqual(['Original', 'JSON', 'IBAN']);
  });
});
