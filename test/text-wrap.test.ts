import { PDFDocument } from 'pdf-lib';
import { describe, expect, it } from 'vitest';
import { embedSans, type TextFamily, textWidth, wrapText } from '../src/domain/pdf/render.ts';

/**
 * The wrap as it was written before it kept running widths: every candidate line shaped whole.
 * Slow (each line measured once per word it holds) but plainly right; the wrap must break every
 * text at the same places.
 */
function shapedEveryTime(text: string, sans: TextFamily, size: number, maxWidth: number): string[] {
  const fits = (candidate: string) => textWidth(candidate.trimEnd(), sans, size) <= maxWidth;
  const lines: string[] = [];
  for (const paragraph of text.replace(/\t/g, '    ').split(/\r\n|[\n\r\u2028\u2029]/)) {
    let line = '';
    for (const word of paragraph.split(/(?<= )/)) {
      if (fits(line + word)) {
        line += word;
        continue;
      }
      if (line !== '') lines.push(line.trimEnd());
      line = '';
      for (const character of word) {
        if (line !== '' && !fits(line + character)) {
          lines.push(line.trimEnd());
          line = '';
        }
        line += character;
      }
    }
    lines.push(line.trimEnd());
  }
  return lines;
}

const texts = [
  'Ayşe Yılmaz (ayse.yilmaz@example.com) signed “Employment contract — 2026” from 203.0.113.7 using Chrome 131 on macOS; the signature was drawn.',
  'Şükrü Öztürk, İstanbul: sözleşmeyi imzaladı. ĞÜŞİÖÇ ğüşıöç — AV Wa To Ty Yo LT, fi fl ffi: kerning and ligatures across the line.',
  'SHA-256 of the original: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08; of the sealed copy: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855.',
  'envelope 3f2c1a90-5d7e-4b8a-9c11-2e6f0a4b7d35 · recipient 0b7e91c2-6a3d-4f58-8e20-7c9d1b5a3e64 · field customer_signature_initials_page_4_bottom_right_corner_box',
  'Spaces  kept   as    typed, tabs\tas four, and\nline breaks\r\nof every\u2028kind stay paragraphs.',
  'Mixed scripts fall back per character: Москва, Αθήνα, 東京 and ✓ ✗ → in one sentence.',
  'x',
  '',
];

describe('word wrap with running widths', () => {
  it('breaks every text where shaping each candidate line whole breaks it, at every size and width, and no line is wider than asked', async () => {
    const pdf = await PDFDocument.create();
    const sans = await embedSans(pdf);
    let compared = 0;
    for (const text of texts) {
      for (const size of [6, 8.5, 10, 13]) {
        for (const maxWidth of [12, 40, 97.3, 150, 233, 499]) {
          const lines = wrapText(text, sans, size, maxWidth);
          expect(lines, `${JSON.stringify(text)} at ${size} pt in ${maxWidth} pt`).toEqual(shapedEveryTime(text, sans, size, maxWidth));
          for (const line of lines) {
            // One character alone may be wider than the line; anything longer never is.
            if ([...line].length > 1) expect(textWidth(line, sans, size)).toBeLessThanOrEqual(maxWidth);
          }
          compared += 1;
        }
      }
    }
    expect(compared).toBe(texts.length * 24);
  });
});
