import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PDFDict, PDFDocument, PDFName, StandardFonts } from 'pdf-lib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { previousSection } from '../src/domain/pdf/incremental.ts';
import type { RenderField } from '../src/domain/pdf/render.ts';
import { createPdfWorkerPool, type PdfWorkers } from '../src/domain/pdf/worker-pool.ts';
import { makeClassicXrefPdf, makePdf } from './fixtures/pdfs.ts';
import { testSealCertificate } from './helpers/harness.ts';
import { blackPngDataUrl, pdfsig, wordBoxes } from './helpers/pdf-tools.ts';

/*
 * Field values are drawn as an incremental update (pdf/worker.ts, pdf/incremental.ts): the
 * original bytes stay as they were, the update redefines only the pages drawn on (and, when
 * sealed, the first page, which holds the signature's widget) and adds what was drawn. Checked
 * as readers see it: qpdf reads every cross-reference section without repairing anything,
 * pdfsig validates the seal, pdftotext finds the values, and a page without fields rasterises
 * exactly as in the original.
 */

let workers: PdfWorkers;
let directory: string;
beforeAll(() => {
  workers = createPdfWorkerPool({ threads: 1 });
  directory = fs.mkdtempSync(path.join(os.tmpdir(), 'incremental-'));
});
afterAll(async () => {
  await workers.close();
  fs.rmSync(directory, { recursive: true, force: true });
});

const seal = () => {
  const certificate = testSealCertificate();
  return { material: { keyPkcs8: certificate.keyPkcs8, certificates: certificate.certificates }, info: { reason: 'test', name: 'test', signingTime: new Date('2026-11-26T12:00:00Z') } };
};

/** Values on `pageIndexes` only: a text in Turkish, a checkbox, a typed and a drawn signature. */
function fieldsOn(pageIndexes: number[]): RenderField[] {
  return pageIndexes.flatMap((page): RenderField[] => [
    { type: 'text', config: {}, value: { text: `Sayfa${page} şartları` }, views: [{ page, x: 60, y: 100, width: 200, height: 20 }] },
    { type: 'checkbox', config: {}, value: { checked: true }, views: [{ page, x: 60, y: 140, width: 16, height: 16 }] },
    { type: 'simple_signature', config: {}, value: { kind: 'typed', text: `Ayşe${page}`, font: 'cursive' }, views: [{ page, x: 60, y: 180, width: 200, height: 30 }] },
    { type: 'simple_signature', config: {}, value: { kind: 'drawn', image: blackPngDataUrl(40, 12) }, views: [{ page, x: 300, y: 180, width: 100, height: 30 }] },
  ]);
}

async function render(source: Uint8Array, name: string, options: { fields: RenderField[]; sealed: boolean }): Promise<{ file: string; bytes: Buffer }> {
  const sourcePath = path.join(directory, `${name}.source.pdf`);
  fs.writeFileSync(sourcePath, source);
  const file = path.join(directory, `${name}.pdf`);
  await workers.render({ sourcePath, outputPath: file, fields: options.fields, draft: false, seal: options.sealed ? seal() : undefined });
  return { file, bytes: fs.readFileSync(file) };
}

/** qpdf's check, which reads every cross-reference section and warns about any it must repair. */
function qpdfCheck(file: string): string {
  const result = spawnSync('qpdf', ['--check', file], { encoding: 'utf8' });
  return `${result.stdout}${result.stderr}`;
}

/** The object numbers an update (the bytes after the original) defines. */
function redefined(bytes: Buffer, originalLength: number): Set<number> {
  return new Set(
    [
      ...bytes
        .subarray(originalLength)
        .toString('latin1')
        .matchAll(/(?:^|\n)(\d+) 0 obj\b/g),
    ].map((match) => Number(match[1])),
  );
}

function pageGrey(file: string, page: number): Buffer {
  return execFileSync('pdftoppm', ['-r', '36', '-gray', '-f', String(page + 1), '-l', String(page + 1), '-singlefile', file]);
}

describe('drawing as an incremental update', () => {
  it.each([
    ['a cross-reference stream', (pages: number) => makePdf({ pages }), 'stream'],
    ['a classic cross-reference table', (pages: number) => makeClassicXrefPdf({ pages }), 'table'],
  ] as const)('after %s: the original bytes and every page without fields stay as they were; sealed, pdfsig and qpdf accept it', async (_name, make, kind) => {
    const source = Buffer.from(await make(6));
    expect(previousSection(source)?.kind).toBe(kind);
    const pages = (await PDFDocument.load(source)).getPages().map((page) => page.ref.objectNumber);
    for (const sealed of [false, true]) {
      const { file, bytes } = await render(source, `${kind}-${sealed}`, { fields: fieldsOn([1, 4]), sealed });
      expect(bytes.subarray(0, source.length).equals(source)).toBe(true);
      // The update's own cross-reference section is of the original's kind.
      const after = bytes.subarray(source.length).toString('latin1');
      if (kind === 'table') expect(after).toMatch(/\nxref\n/);
      else expect(after).toMatch(/\/Type \/XRef/);
      expect(qpdfCheck(file)).toMatch(/No syntax or stream encoding errors found/);
      expect(qpdfCheck(file)).not.toMatch(/WARNING/);

      const written = redefined(bytes, source.length);
      const untouched = sealed ? [2, 3, 5] : [0, 2, 3, 5];
      for (const index of untouched) expect(written.has(pages[index]!), `page ${index}`).toBe(false);
      for (const index of [1, 4]) expect(written.has(pages[index]!), `page ${index}`).toBe(true);
      // The signature's widget hangs on the first page: redefined, drawn as before.
      for (const index of [0, 2, 3, 5]) expect(pageGrey(file, index).equals(pageGrey(path.join(directory, `${kind}-${sealed}.source.pdf`), index)), `page ${index}`).toBe(true);

      const words = wordBoxes(file);
      expect(words[1]!.map((word) => word.text)).toEqual(expect.arrayContaining(['Sayfa1', 'şartları', 'Ayşe1']));
      expect(words[4]!.map((word) => word.text)).toEqual(expect.arrayContaining(['Sayfa4', 'şartları', 'Ayşe4']));
      if (sealed) {
        const report = pdfsig(file);
        expect(report).toContain('Signature Validation: Signature is Valid.');
        expect(report).toContain('Total document signed');
      } else {
        expect(pdfsig(file)).toMatch(/does not contain any signatures/);
      }
    }
  });

  it('pages that share their resources as indirect objects, inherited from the page tree, get the fonts and images they draw with', async () => {
    // One /Resources object for every page, on the /Pages root (inherited), its /Font an indirect object too.
    const pdf = await PDFDocument.create();
    const helvetica = await pdf.embedFont(StandardFonts.Helvetica);
    for (let index = 0; index < 3; index++) pdf.addPage([595, 842]).drawText(`Original${index}`, { x: 40, y: 800, size: 12, font: helvetica });
    const shared = PDFDict.withContext(pdf.context);
    for (const page of pdf.getPages()) {
      for (const [key, value] of page.node.Resources()!.lookup(PDFName.of('Font'), PDFDict).entries()) shared.set(key, value);
      page.node.delete(PDFName.of('Resources'));
    }
    const resources = pdf.context.register(pdf.context.obj({ Font: pdf.context.register(shared) }));
    pdf.catalog.Pages().set(PDFName.of('Resources'), resources);
    const source = Buffer.from(await pdf.save({ useObjectStreams: false }));

    const { file, bytes } = await render(source, 'inherited', { fields: fieldsOn([1]), sealed: true });
    expect(bytes.subarray(0, source.length).equals(source)).toBe(true);
    expect(qpdfCheck(file)).not.toMatch(/WARNING/);
    expect(pdfsig(file)).toContain('Signature Validation: Signature is Valid.');
    const words = wordBoxes(file).map((page) => page.map((word) => word.text));
    expect(words[0]).toEqual(['Original0']);
    expect(words[1]).toEqual(expect.arrayContaining(['Original1', 'Sayfa1', 'şartları', 'Ayşe1']));
    expect(words[2]).toEqual(['Original2']);
  });

  it('a file whose startxref leads nowhere is rewritten whole, and sealed as before', async () => {
    const source = Buffer.from(await makeClassicXrefPdf({ pages: 3 }));
    const at = source.lastIndexOf('startxref');
    const broken = Buffer.concat([source.subarray(0, at), Buffer.from('startxref\n12\n%%EOF\n', 'latin1')]);
    expect(previousSection(broken)).toBeUndefined();
    const { file, bytes } = await render(broken, 'broken-startxref', { fields: fieldsOn([2]), sealed: true });
    expect(bytes.subarray(0, broken.length).equals(broken)).toBe(false);
    expect(qpdfCheck(file)).not.toMatch(/WARNING/);
    expect(pdfsig(file)).toContain('Signature Validation: Signature is Valid.');
    expect(wordBoxes(file)[2]!.map((word) => word.text)).toEqual(expect.arrayContaining(['Sayfa2', 'şartları']));
  });
});
