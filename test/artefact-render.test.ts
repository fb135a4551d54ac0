import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { concatTransformationMatrix, degrees, PDFDocument, pushGraphicsState, StandardFonts } from 'pdf-lib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RenderField } from '../src/domain/pdf/render.ts';
import { createPdfWorkerPool, type PdfWorkers } from '../src/domain/pdf/worker-pool.ts';
import { blackPngDataUrl, renderPageGrey, wordBoxes } from './helpers/pdf-tools.ts';

/*
 * Rendering every field type at every view into real page geometries, checked the way a reader
 * sees the result: text positions from `pdftotext -bbox`, and ink from the page rasterised by
 * `pdftoppm` at one pixel per point (every field leaves ink inside its box and nowhere else).
 */

let workers: PdfWorkers;
let directory: string;
beforeAll(() => {
  workers = createPdfWorkerPool({ threads: 1 });
  directory = fs.mkdtempSync(path.join(os.tmpdir(), 'render-'));
});
afterAll(async () => {
  await workers.close();
  fs.rmSync(directory, { recursive: true, force: true });
});

type PageSpec = {
  name: string;
  size: [number, number];
  rotate?: number;
  mediaBox?: [number, number, number, number];
  cropBox?: [number, number, number, number];
  displayed: [number, number];
};

const pages: PageSpec[] = [
  { name: 'A4', size: [595.28, 841.89], displayed: [595.28, 841.89] },
  { name: 'US Letter', size: [612, 792], displayed: [612, 792] },
  { name: 'Letter rotated 90', size: [612, 792], rotate: 90, displayed: [792, 612] },
  { name: 'A4 rotated 180', size: [595.28, 841.89], rotate: 180, displayed: [595.28, 841.89] },
  { name: 'Letter rotated 270', size: [612, 792], rotate: 270, displayed: [792, 612] },
  { name: 'offset MediaBox with a CropBox inside', size: [612, 792], mediaBox: [100, 200, 612, 792], cropBox: [150, 250, 512, 692], displayed: [512, 692] },
  { name: 'CropBox larger than the MediaBox', size: [612, 792], mediaBox: [-20, -30, 612, 792], cropBox: [-100, -100, 900, 1000], displayed: [612, 792] },
];

type Box = { x: number; y: number; width: number; height: number };
const boxes = {
  text: { x: 40, y: 40, width: 200, height: 20 },
  checkbox: { x: 40, y: 80, width: 16, height: 16 },
  radio: { x: 40, y: 110, width: 150, height: 16 },
  binary: { x: 40, y: 140, width: 150, height: 16 },
  typed: { x: 40, y: 170, width: 200, height: 30 },
  drawn: { x: 260, y: 40, width: 80, height: 40 },
  biometric: { x: 260, y: 100, width: 100, height: 50 },
  multiline: { x: 260, y: 170, width: 120, height: 40 },
} satisfies Record<string, Box>;

function fieldsFor(pageIndex: number): RenderField[] {
  const on = (box: Box) => [{ page: pageIndex, ...box }];
  return [
    { type: 'text', config: { multiline: false }, value: { text: `Kelime${pageIndex} Şığİöçü` }, views: on(boxes.text) },
    { type: 'checkbox', config: {}, value: { checked: true }, views: on(boxes.checkbox) },
    {
      type: 'radio',
      config: {
        options: [
          { value: 'a', label: 'Other' },
          { value: 'b', label: `Radyo${pageIndex}` },
        ],
      },
      value: { selected: 'b' },
      views: on(boxes.radio),
    },
    { type: 'binary_choice', config: { acceptLabel: `Kabul${pageIndex}`, declineLabel: 'Red' }, value: { choice: 'accept' }, views: on(boxes.binary) },
    { type: 'simple_signature', config: {}, value: { kind: 'typed', text: `Ayşe${pageIndex} Yılmaz`, font: 'cursive' }, views: on(boxes.typed) },
    { type: 'simple_signature', config: {}, value: { kind: 'drawn', image: blackPngDataUrl() }, views: on(boxes.drawn) },
    {
      type: 'biometric_signature',
      config: {},
      value: {
        image: blackPngDataUrl(),
        strokes: [
          [
            { x: 0, y: 0, t: 0, p: 0.5 },
            { x: 50, y: 40, t: 10, p: 0.7 },
            { x: 100, y: 0, t: 20, p: 0.4 },
          ],
          [{ x: 20, y: 30, t: 40, p: 0.5 }],
        ],
      },
      views: on(boxes.biometric),
    },
    {
      type: 'text',
      config: { multiline: true },
      value: { text: `Satır${pageIndex} ${'Ş'.repeat(40)} bir iki üç dört beş altı yedi sekiz dokuz on\nİkinci paragraf ğüşıöç ${'uzun '.repeat(40)}SONKELİME` },
      views: on(boxes.multiline),
    },
  ];
}

async function fixture(): Promise<string> {
  const pdf = await PDFDocument.create();
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  for (const spec of pages) {
    const page = pdf.addPage(spec.size);
    if (spec.mediaBox) page.setMediaBox(...spec.mediaBox);
    if (spec.cropBox) page.setCropBox(...spec.cropBox);
    if (spec.rotate) page.setRotation(degrees(spec.rotate));
    // Original content that leaves its graphics state changed (an unbalanced q and a scaling):
    // the drawings must not inherit it. It is drawn far outside the visible area.
    page.drawText('.', { x: -5000, y: -5000, size: 1, font });
    page.pushOperators(pushGraphicsState(), concatTransformationMatrix(0.1, 0, 0, 0.1, 0, 0));
  }
  const file = path.join(directory, 'fixture.pdf');
  fs.writeFileSync(file, await pdf.save());
  return file;
}

describe('rendering field values', () => {
  let output: string;
  beforeAll(async () => {
    const source = await fixture();
    output = path.join(directory, 'rendered.pdf');
    await workers.render({ sourcePath: source, outputPath: output, fields: pages.flatMap((_, index) => fieldsFor(index)), draft: false });
  });

  it.each(pages.map((spec, index) => [spec.name, index] as const))('places text where the view says on %s (pdftotext -bbox), Turkish intact', (_name, index) => {
    const words = wordBoxes(output)[index]!;
    const text = words.find((word) => word.text === `Kelime${index}`);
    expect(text, JSON.stringify(words.slice(0, 5))).toBeDefined();
    expect(text!.xMin).toBeGreaterThanOrEqual(boxes.text.x);
    expect(text!.xMin).toBeLessThan(boxes.text.x + 5);
    expect(text!.yMin).toBeGreaterThanOrEqual(boxes.text.y);
    expect(text!.yMax).toBeLessThanOrEqual(boxes.text.y + boxes.text.height + 1);
    expect(words.map((word) => word.text)).toContain('Şığİöçü');
    for (const [label, box] of [
      [`Radyo${index}`, boxes.radio],
      [`Kabul${index}`, boxes.binary],
      [`Ayşe${index}`, boxes.typed],
    ] as const) {
      const word = words.find((candidate) => candidate.text === label);
      expect(word, label).toBeDefined();
      expect(word!.xMin).toBeGreaterThanOrEqual(box.x);
      expect(word!.xMax).toBeLessThanOrEqual(box.x + box.width);
      expect(word!.yMin).toBeGreaterThanOrEqual(box.y - 1);
      expect(word!.yMax).toBeLessThanOrEqual(box.y + box.height + 1);
    }
    // Multiline text wraps inside its box, an unbroken string after a space included (broken by
    // characters), and what does not fit is clipped (the last word is not shown).
    const multiline = words.filter((word) => word.xMin >= boxes.multiline.x - 1 && word.yMin >= boxes.multiline.y - 1 && word.xMin < boxes.multiline.x + boxes.multiline.width);
    expect(multiline.map((word) => word.text)).toContain(`Satır${index}`);
    expect(new Set(multiline.map((word) => Math.round(word.yMin))).size).toBeGreaterThan(1);
    for (const word of multiline) expect(word.xMax).toBeLessThanOrEqual(boxes.multiline.x + boxes.multiline.width + 1);
  });

  it.each(pages.map((spec, index) => [spec.name, index] as const))('leaves ink inside every field box and nowhere else on %s (rasterised)', (_name, index) => {
    const spec = pages[index]!;
    const image = renderPageGrey(output, index);
    expect(Math.abs(image.width - spec.displayed[0])).toBeLessThanOrEqual(1);
    expect(Math.abs(image.height - spec.displayed[1])).toBeLessThanOrEqual(1);
    const inside = (x: number, y: number, box: Box, margin: number) => x >= box.x - margin && x < box.x + box.width + margin && y >= box.y - margin && y < box.y + box.height + margin;
    const ink = new Map<string, number>();
    let stray = 0;
    for (let y = 0; y < image.height; y++) {
      for (let x = 0; x < image.width; x++) {
        if (image.pixel(x, y) > 160) continue;
        const owner = Object.entries(boxes).find(([, box]) => inside(x, y, box, 1.5));
        if (owner === undefined) stray += 1;
        else ink.set(owner[0], (ink.get(owner[0]) ?? 0) + 1);
      }
    }
    expect(stray).toBe(0);
    for (const name of Object.keys(boxes)) expect(ink.get(name) ?? 0, name).toBeGreaterThan(3);
  });
});

describe('draft copies', () => {
  it('marks every page as a draft copy, along the top edge as displayed', async () => {
    const source = await fixture();
    const output = path.join(directory, 'draft.pdf');
    await workers.render({ sourcePath: source, outputPath: output, fields: [], draft: true });
    const perPage = wordBoxes(output);
    expect(perPage).toHaveLength(pages.length);
    for (const words of perPage) {
      const draft = words.find((word) => word.text === 'DRAFT');
      expect(draft).toBeDefined();
      expect(draft!.yMin).toBeLessThan(14);
      expect(draft!.xMin).toBeLessThan(10);
    }
  });
});
