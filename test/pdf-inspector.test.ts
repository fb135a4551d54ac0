import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { deflateSync } from 'node:zlib';
import { EncryptedPDFError, PDFDocument, PDFName } from 'pdf-lib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  inspectPdfFile,
  looksLikePdfHeader,
  PDF_CONTENT_OPERATORS_LIMIT,
  PDF_FORM_PAINTS_LIMIT,
  PDF_INFLATED_BYTES_LIMIT,
  PdfInspectionError,
  type PdfInspectionFailureReason,
} from '../src/domain/pdf/inspect/inspect.ts';
import {
  A4,
  appendPageIncrementally,
  createPdfAssembler,
  cutFinalEofMarker,
  finishWithXrefTable,
  LETTER,
  makeClassicXrefPdf,
  makeDeepArraysAfterTagPdf,
  makeEncryptedPdf,
  makeHandwrittenPageTreePdf,
  makeHybridPdf,
  makeInflatingPdf,
  makeInheritedAttributesPdf,
  makeLargePdf,
  makeManyTextOperatorsPdf,
  makeNestedFormsPdf,
  makePageTreePdf,
  makePdf,
  makePrevLoopPdf,
  makeXrefStreamPdf,
  notAPdf,
  streamBody,
  truncate,
} from './fixtures/pdfs.ts';

let directory: string;
let fileCounter = 0;

beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'pdf-inspector-'));
});

afterAll(async () => {
  await rm(directory, { recursive: true, force: true });
});

async function writeFixture(bytes: Uint8Array, name = 'upload.pdf'): Promise<string> {
  const path = join(directory, `${++fileCounter}-${name}`);
  await writeFile(path, bytes);
  return path;
}

async function inspectBytes(bytes: Uint8Array): ReturnType<typeof inspectPdfFile> {
  return inspectPdfFile(await writeFixture(bytes));
}

/** Resolves to the rejection's reason, failing the test if the file was accepted or failed otherwise. */
async function rejectionReason(bytes: Uint8Array): Promise<PdfInspectionFailureReason> {
  const error = await inspectBytes(bytes).then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(PdfInspectionError);
  const inspectionError = error as PdfInspectionError;
  expect(inspectionError.detail.length).toBeGreaterThan(0);
  return inspectionError.reason;
}

const XREF_VARIANTS = [
  { name: 'xref stream', useObjectStreams: true },
  { name: 'classic xref table', useObjectStreams: false },
] as const;

describe('looksLikePdfHeader', () => {
  it('accepts PDF 1.x and 2.0 headers, also after a little leading junk', () => {
    expect(looksLikePdfHeader(Buffer.from('%PDF-1.7\n%\xe2\xe3\xcf\xd3\n', 'latin1'))).toBe(true);
    expect(looksLikePdfHeader(Buffer.from('%PDF-1.4'))).toBe(true);
    expect(looksLikePdfHeader(Buffer.from('%PDF-2.0\n'))).toBe(true);
    expect(looksLikePdfHeader(Buffer.concat([Buffer.alloc(500, 0x20), Buffer.from('%PDF-1.5\n')]))).toBe(true);
  });

  it('refuses other formats, unknown versions and headers beyond the first 1024 bytes', () => {
    expect(looksLikePdfHeader(notAPdf('png'))).toBe(false);
    expect(looksLikePdfHeader(notAPdf('text'))).toBe(false);
    expect(looksLikePdfHeader(Buffer.from('%PDF-3.0\n'))).toBe(false);
    expect(looksLikePdfHeader(Buffer.from('%PDF-'))).toBe(false);
    expect(looksLikePdfHeader(new Uint8Array(0))).toBe(false);
    expect(looksLikePdfHeader(Buffer.concat([Buffer.alloc(1100, 0x20), Buffer.from('%PDF-1.5\n')]))).toBe(false);
  });
});

describe('inspectPdfFile on well-formed files', () => {
  for (const variant of XREF_VARIANTS) {
    for (const pages of [1, 3, 12]) {
      it(`counts ${pages} page(s) with a ${variant.name}`, async () => {
        const bytes = await makePdf({ pages, size: A4, useObjectStreams: variant.useObjectStreams });
        const inspection = await inspectBytes(bytes);
        expect(inspection.pageCount).toBe(pages);
        expect(inspection.pdfVersion).toBe('1.7');
        expect(inspection.pages).toEqual(Array.from({ length: pages }, () => ({ width: 595, height: 842, rotation: 0 })));
      });
    }

    it(`reports mixed page sizes in order with a ${variant.name}`, async () => {
      const sizes: Array<[number, number]> = [A4, LETTER, [842, 595], [792, 612], [595.28, 841.89]];
      const bytes = await makePdf({ pages: sizes.length, size: (index) => sizes[index], useObjectStreams: variant.useObjectStreams });
      const inspection = await inspectBytes(bytes);
      expect(inspection.pages.map(({ width, height }) => [width, height])).toEqual(sizes);
    });

    it(`swaps width and height for pages rotated by 90 with a ${variant.name}`, async () => {
      const bytes = await makePdf({ pages: 2, size: A4, rotate: 90, useObjectStreams: variant.useObjectStreams });
      const inspection = await inspectBytes(bytes);
      expect(inspection.pages).toEqual([
        { width: 842, height: 595, rotation: 90 },
        { width: 842, height: 595, rotation: 90 },
      ]);
    });
  }

  it('keeps width and height for a rotation of 180', async () => {
    const inspection = await inspectBytes(await makePdf({ pages: 1, size: LETTER, rotate: 180 }));
    expect(inspection.pages).toEqual([{ width: 612, height: 792, rotation: 180 }]);
  });

  it('inherits MediaBox and Rotate from the /Pages root (pages inside object streams)', async () => {
    const bytes = await makeInheritedAttributesPdf({ mediaBox: [0, 0, 500, 700], rotate: 270, pages: 3 });
    const loaded = await PDFDocument.load(bytes);
    expect(loaded.getPage(0).node.get(PDFName.of('MediaBox'))).toBeUndefined();
    const inspection = await inspectBytes(bytes);
    expect(inspection.pageCount).toBe(3);
    expect(inspection.pages).toEqual(Array.from({ length: 3 }, () => ({ width: 700, height: 500, rotation: 270 })));
  });

  it('walks a hand-written nested tree: inherited CropBox and Rotate, overrides, indirect MediaBox, wrong /Count', async () => {
    const inspection = await inspectBytes(makeHandwrittenPageTreePdf());
    expect(inspection.pageCount).toBe(4); // the leaves, although /Count says 7
    expect(inspection.pages).toEqual([
      { width: 400, height: 300, rotation: 90 },
      { width: 400.26, height: 300.5, rotation: 270 },
      { width: 595, height: 842, rotation: 180 },
      { width: 200, height: 100, rotation: 0 },
    ]);
    // The header says 1.4 and the catalog's /Version upgrades it.
    expect(inspection.pdfVersion).toBe('1.6');
  });

  for (const variant of XREF_VARIANTS) {
    it(`reads an incremental update (/Prev) appending a page to a file with a ${variant.name}`, async () => {
      const base = await makePdf({ pages: 3, size: A4, useObjectStreams: variant.useObjectStreams });
      const updated = await appendPageIncrementally(base, [300, 400]);
      // An independent parser agrees that the update is well-formed.
      expect((await PDFDocument.load(updated)).getPageCount()).toBe(4);
      const inspection = await inspectBytes(updated);
      expect(inspection.pageCount).toBe(4);
      expect(inspection.pages.at(-1)).toEqual({ width: 300, height: 400, rotation: 0 });
      expect(inspection.pages.slice(0, 3)).toEqual(Array.from({ length: 3 }, () => ({ width: 595, height: 842, rotation: 0 })));
    });
  }

  it('reads two stacked incremental updates, the newest entries winning', async () => {
    const base = await makeClassicXrefPdf({ pages: 1, size: LETTER });
    const once = await appendPageIncrementally(base, [100, 200]);
    const twice = await appendPageIncrementally(once, [300, 400]);
    const inspection = await inspectBytes(twice);
    expect(inspection.pages.map(({ width, height }) => [width, height])).toEqual([LETTER, [100, 200], [300, 400]]);
  });

  it('reads an xref stream with PNG predictors and an object stream with an indirect /Length', async () => {
    for (const predictor of [true, false]) {
      const inspection = await inspectBytes(makeXrefStreamPdf({ predictor }));
      expect(inspection).toEqual({ pageCount: 1, pages: [{ width: 400.5, height: 500.25, rotation: 0 }], pdfVersion: '1.5' });
    }
  });

  it('reads a hybrid-reference file through its /XRefStm', async () => {
    const inspection = await inspectBytes(makeHybridPdf());
    expect(inspection.pages).toEqual([{ width: 400.5, height: 500.25, rotation: 0 }]);
  });
});

describe('inspectPdfFile refusals', () => {
  for (const variant of XREF_VARIANTS) {
    it(`refuses truncated files with a ${variant.name}`, async () => {
      const bytes = await makePdf({ pages: 3, useObjectStreams: variant.useObjectStreams });
      for (const fraction of [0.25, 0.5, 0.9]) {
        expect(await rejectionReason(truncate(bytes, fraction))).toBe('invalid');
      }
      expect(await rejectionReason(cutFinalEofMarker(bytes))).toBe('invalid');
    });
  }

  it('refuses an incremental update cut short, instead of silently reading the older revision', async () => {
    const updated = await appendPageIncrementally(await makeClassicXrefPdf({ pages: 2 }), [300, 400]);
    expect(await rejectionReason(cutFinalEofMarker(updated))).toBe('invalid');
    expect(await rejectionReason(updated.slice(0, updated.length - 40))).toBe('invalid');
  });

  it('reports encryption, for a file an independent parser also sees as encrypted', async () => {
    const bytes = await makeEncryptedPdf();
    // pdf-lib is compiled to ES5, where Error subclasses lose their prototype, so `instanceof`
    // cannot work; the class's own message identifies it just as well.
    await expect(PDFDocument.load(bytes)).rejects.toThrow(new EncryptedPDFError().message);
    expect(await rejectionReason(bytes)).toBe('encrypted');
  });

  it('reports non-PDF bytes named .pdf as not_pdf', async () => {
    expect(await rejectionReason(notAPdf('png'))).toBe('not_pdf');
    expect(await rejectionReason(notAPdf('text'))).toBe('not_pdf');
    expect(await rejectionReason(new Uint8Array(0))).toBe('not_pdf');
  });

  it('refuses garbage after a valid header', async () => {
    const header = Buffer.from('%PDF-1.7\n');
    const garbage = Buffer.from(Array.from({ length: 4096 }, (_, index) => (index * 7919) % 251));
    expect(await rejectionReason(Buffer.concat([header, garbage]))).toBe('invalid');
    // Even with a plausible ending, the offset leads into garbage.
    expect(await rejectionReason(Buffer.concat([header, garbage, Buffer.from('\nstartxref\n100\n%%EOF\n')]))).toBe('invalid');
  });

  it('refuses a startxref pointing past the end of the file', async () => {
    const text = Buffer.from(await makeClassicXrefPdf({ pages: 1 })).toString('latin1');
    const broken = text.replace(/startxref\s+\d+/, 'startxref\n99999999');
    expect(await rejectionReason(Buffer.from(broken, 'latin1'))).toBe('invalid');
  });

  it('refuses a /Prev chain that loops', async () => {
    expect(await rejectionReason(makePrevLoopPdf())).toBe('invalid');
  });

  it('refuses page tree cycles and pages reached twice', async () => {
    const cycle = makePageTreePdf(['<< /Type /Pages /Kids [3 0 R] /Count 1 >>', '<< /Type /Pages /Parent 2 0 R /Kids [2 0 R] /Count 1 >>']);
    expect(await rejectionReason(cycle)).toBe('invalid');
    const shared = makePageTreePdf(['<< /Type /Pages /Kids [3 0 R 3 0 R] /Count 2 /MediaBox [0 0 10 10] >>', '<< /Type /Page /Parent 2 0 R >>']);
    expect(await rejectionReason(shared)).toBe('invalid');
  });

  it('refuses a page without any MediaBox, and a document without pages', async () => {
    const withoutMediaBox = makePageTreePdf(['<< /Type /Pages /Kids [3 0 R] /Count 1 >>', '<< /Type /Page /Parent 2 0 R /CropBox [0 0 10 10] >>']);
    expect(await rejectionReason(withoutMediaBox)).toBe('invalid');
    expect(await rejectionReason(makePageTreePdf(['<< /Type /Pages /Kids [] /Count 0 >>']))).toBe('invalid');
  });

  it('refuses a Rotate that is not a multiple of 90', async () => {
    const bytes = makePageTreePdf(['<< /Type /Pages /Kids [3 0 R] /Count 1 >>', '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 10 10] /Rotate 45 >>']);
    expect(await rejectionReason(bytes)).toBe('invalid');
  });

  it('lets I/O errors through unchanged rather than calling them invalid', async () => {
    await expect(inspectPdfFile(join(directory, 'does-not-exist.pdf'))).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

describe('inspectPdfFile on large files', () => {
  const FORTY_MEGABYTES = 40 * 1024 * 1024;
  const ALLOWED_GROWTH = 20 * 1024 * 1024;

  /**
   * Frees the fixture's buffers and waits until the memory is really returned. V8 releases
   * ArrayBuffer memory on a background thread after a collection, and memory returned during the
   * measurement hides any growth: without this settling, even reading the whole file with
   * readFile measured as almost nothing here.
   */
  async function settleMemory(): Promise<void> {
    setFlagsFromString('--expose-gc');
    const collectGarbage = runInNewContext('gc') as () => void;
    let previous = Number.POSITIVE_INFINITY;
    for (let attempt = 0; attempt < 20; attempt++) {
      collectGarbage();
      await sleep(25);
      const current = process.memoryUsage().rss;
      if (previous - current < 1024 * 1024) return;
      previous = current;
    }
  }

  /** Samples resident memory while `work` runs; reads between awaits give the timer its turns. */
  async function peakResidentGrowth<T>(work: () => Promise<T>): Promise<{ result: T; growth: number }> {
    await settleMemory();
    const before = process.memoryUsage().rss;
    let peak = before;
    const timer = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss);
    }, 1);
    try {
      const result = await work();
      peak = Math.max(peak, process.memoryUsage().rss);
      return { result, growth: peak - before };
    } finally {
      clearInterval(timer);
    }
  }

  it('builds a 40 MB fixture of about the requested size and inspects it with bounded memory', async () => {
    // Built in its own scope so the 40 MB buffer is garbage before we measure.
    const path = await (async () => {
      const bytes = makeLargePdf(FORTY_MEGABYTES);
      expect(Math.abs(bytes.length - FORTY_MEGABYTES)).toBeLessThan(64 * 1024);
      return writeFixture(bytes, 'large.pdf');
    })();
    // Warm-up: module code, zlib and the file handle machinery are paid for before measuring.
    await inspectBytes(await makePdf({ pages: 2 }));
    await inspectPdfFile(path);

    const { result, growth } = await peakResidentGrowth(() => inspectPdfFile(path));
    expect(result.pageCount).toBe(3);
    expect(result.pages[0]).toEqual({ width: 595, height: 842, rotation: 0 });
    expect(growth).toBeLessThan(ALLOWED_GROWTH);
  }, 60_000);

  it('refuses a large file cut in half', async () => {
    const bytes = makeLargePdf(8 * 1024 * 1024);
    expect(await rejectionReason(truncate(bytes, 0.5))).toBe('invalid');
  });
});

describe('inspectPdfFile and what streams inflate to', () => {
  const MiB = 1024 * 1024;

  it('refuses as too complex a small file whose object or content stream inflates past the limit, wherever the stream is, and accepts it somewhat under', async () => {
    for (const where of ['object_stream', 'unlisted_object_stream', 'content_stream'] as const) {
      const bomb = await makeInflatingPdf({ inflatedBytes: 2 * PDF_INFLATED_BYTES_LIMIT, where });
      expect(bomb.length).toBeLessThan(1 * MiB);
      const error = await inspectBytes(bomb).catch((caught: unknown) => caught);
      expect(error, where).toBeInstanceOf(PdfInspectionError);
      expect(error).toMatchObject({ reason: 'too_complex', detail: expect.stringContaining(`more than ${PDF_INFLATED_BYTES_LIMIT} bytes`) });
      // The limit is on the total, not on how the file is built: under it, the same file passes.
      const inspection = await inspectBytes(await makeInflatingPdf({ inflatedBytes: PDF_INFLATED_BYTES_LIMIT - 16 * MiB, where }));
      expect(inspection.pages, where).toEqual([{ width: 595, height: 842, rotation: 0 }]);
    }
  }, 60_000);

  it('counts the total over all streams: three content streams, each well under the limit, are over it together', async () => {
    const bomb = await makeInflatingPdf({ inflatedBytes: PDF_INFLATED_BYTES_LIMIT + 32 * MiB, where: 'content_stream', pieces: 3 });
    expect(await rejectionReason(bomb)).toBe('too_complex');
  }, 60_000);

  it('refuses an object stream encoded with a filter other than FlateDecode, even outside the page tree', async () => {
    const assembler = createPdfAssembler();
    assembler.addObject(1, '<< /Type /Catalog /Pages 2 0 R >>');
    assembler.addObject(2, '<< /Type /Pages /Kids [3 0 R] /Count 1 >>');
    assembler.addObject(3, '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] >>');
    // LZW inflates too (thousands to one), and only FlateDecode is counted.
    assembler.addObject(4, ...streamBody('/Type /ObjStm /N 1 /First 4 /Filter /LZWDecode', Buffer.from([0x80, 0x0b, 0x60, 0x50, 0x22, 0x0c, 0x0c, 0x85, 0x01])));
    const bytes = finishWithXrefTable(assembler, { trailer: '/Root 1 0 R' });
    const error = await inspectBytes(bytes).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ reason: 'invalid', detail: expect.stringContaining('/LZWDecode') });
  });
});

describe('inspectPdfFile and what the pages cost to interpret', () => {
  /** The refusal's complexity, failing the test if the file was accepted or refused otherwise. */
  async function complexity(bytes: Uint8Array) {
    const error = await inspectBytes(bytes).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(PdfInspectionError);
    expect((error as PdfInspectionError).reason).toBe('too_complex');
    return (error as PdfInspectionError).complexity;
  }

  it('refuses a few KB of forms ten deep, each painting the next ten times (ten billion paints), by the form paints counted with multiplicity', async () => {
    const bomb = makeNestedFormsPdf({ depth: 10, fanOut: 10 });
    expect(bomb.length).toBeLessThan(10 * 1024);
    expect(await complexity(bomb)).toEqual({ limit: 'form_paints', maximum: PDF_FORM_PAINTS_LIMIT });
    // Siblings: forms that inherit the page's resources instead of naming their own, and tiling
    // patterns filling with patterns.
    expect(await complexity(makeNestedFormsPdf({ depth: 10, fanOut: 10, inherit: true }))).toEqual({ limit: 'form_paints', maximum: PDF_FORM_PAINTS_LIMIT });
    expect(await complexity(makeNestedFormsPdf({ depth: 10, fanOut: 10, via: 'pattern' }))).toEqual({ limit: 'form_paints', maximum: PDF_FORM_PAINTS_LIMIT });
    expect(await complexity(makeNestedFormsPdf({ depth: 10, fanOut: 10, via: 'smask' }))).toEqual({ limit: 'form_paints', maximum: PDF_FORM_PAINTS_LIMIT });
    expect((await inspectBytes(makeNestedFormsPdf({ depth: 3, fanOut: 10, via: 'smask' }))).pageCount).toBe(1);
    // And forms painted by the glyph of a Type 3 font, the page showing one character.
    expect(await complexity(makeNestedFormsPdf({ depth: 10, fanOut: 10, glyph: true }))).toEqual({ limit: 'form_paints', maximum: PDF_FORM_PAINTS_LIMIT });
    expect((await inspectBytes(makeNestedFormsPdf({ depth: 3, fanOut: 10, glyph: true }))).pageCount).toBe(1);
    // A thousand paints is an ordinary document.
    expect((await inspectBytes(makeNestedFormsPdf({ depth: 3, fanOut: 10 }))).pageCount).toBe(1);
  });

  it('refuses 16 KB of 1.5 million text operators, on one page, over many pages, or in one stream shown by many pages', async () => {
    const bomb = makeManyTextOperatorsPdf(1_500_000);
    expect(bomb.length).toBeLessThan(20 * 1024);
    const refusal = { limit: 'content_operators', maximum: PDF_CONTENT_OPERATORS_LIMIT };
    expect(await complexity(bomb)).toEqual(refusal);
    expect(await complexity(makeManyTextOperatorsPdf(1_500_000, { pages: 30 }))).toEqual(refusal);
    // One stream of 30 000 operators on 50 pages: each page runs it.
    expect(await complexity(makeManyTextOperatorsPdf(30_000, { pages: 50, shared: true }))).toEqual(refusal);
    expect((await inspectBytes(makeManyTextOperatorsPdf(30_000, { pages: 10, shared: true }))).pageCount).toBe(10);
    expect((await inspectBytes(makeManyTextOperatorsPdf(200_000, { pages: 4 }))).pageCount).toBe(4);
  });

  it('counts content wrapped in ASCIIHex or ASCII85 as well; refuses content it cannot decode (LZW, a predictor) rather than leave it uncounted', async () => {
    for (const encoding of ['hex', 'ascii85'] as const) {
      expect(await complexity(makeManyTextOperatorsPdf(1_500_000, { encoding })), encoding).toEqual({ limit: 'content_operators', maximum: PDF_CONTENT_OPERATORS_LIMIT });
      expect((await inspectBytes(makeManyTextOperatorsPdf(1001, { encoding }))).pageCount, encoding).toBe(1);
    }
    for (const encoding of ['lzw', 'predictor'] as const) expect(await complexity(makeManyTextOperatorsPdf(10, { encoding })), encoding).toEqual({ limit: 'content_encoding' });
  });

  it('refuses a form that paints itself, and forms nested deeper than 32 levels', async () => {
    const assembler = createPdfAssembler();
    assembler.addObject(1, '<< /Type /Catalog /Pages 2 0 R >>');
    assembler.addObject(2, '<< /Type /Pages /Kids [3 0 R] /Count 1 >>');
    assembler.addObject(3, '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /XObject << /Me 4 0 R >> >> /Contents 5 0 R >>');
    assembler.addObject(4, ...streamBody('/Type /XObject /Subtype /Form /BBox [0 0 10 10] /Resources << /XObject << /Me 4 0 R >> >>', Buffer.from('/Me Do')));
    assembler.addObject(5, ...streamBody('', Buffer.from('/Me Do')));
    expect(await complexity(finishWithXrefTable(assembler, { trailer: '/Root 1 0 R' }))).toMatchObject({ limit: 'form_nesting' });
    expect(await complexity(makeNestedFormsPdf({ depth: 40, fanOut: 1 }))).toEqual({ limit: 'form_nesting', maximum: 32 });
    expect((await inspectBytes(makeNestedFormsPdf({ depth: 30, fanOut: 1 }))).pageCount).toBe(1);
  });

  it('bounds the different resources painted over the whole document, not only per stream', async () => {
    const manyNames = (pages: number, names: number) => {
      const assembler = createPdfAssembler();
      assembler.addObject(1, '<< /Type /Catalog /Pages 2 0 R >>');
      assembler.addObject(2, `<< /Type /Pages /Kids [${Array.from({ length: pages }, (_, page) => `${3 + 2 * page} 0 R`).join(' ')}] /Count ${pages} >>`);
      for (let page = 0; page < pages; page++) {
        const content = deflateSync(Buffer.from(Array.from({ length: names }, (_, index) => `/p${page}n${index} Do`).join('\n'), 'latin1'));
        assembler.addObject(3 + 2 * page, `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents ${4 + 2 * page} 0 R >>`);
        assembler.addObject(4 + 2 * page, ...streamBody('/Filter /FlateDecode', content));
      }
      return finishWithXrefTable(assembler, { trailer: '/Root 1 0 R' });
    };
    // 120 000 operators in all, well under their limit, but 120 000 different names to keep.
    expect(await complexity(manyNames(2, 60_000))).toEqual({ limit: 'form_paints', maximum: PDF_FORM_PAINTS_LIMIT });
    expect((await inspectBytes(manyNames(2, 1000))).pageCount).toBe(2);
  });

  it('refuses page content nesting arrays 200 000 deep', async () => {
    expect(await complexity(makeDeepArraysAfterTagPdf(200_000))).toEqual({ limit: 'content_nesting', maximum: 32 });
    expect((await inspectBytes(makeDeepArraysAfterTagPdf(3))).pageCount).toBe(1);
  });
});

describe('the content operator count', () => {
  const sample = [
    '% a comment with Tj and ( in it',
    'q 1 0 0 1 72 720 cm /Im1 Do Q',
    'BT /F1 12 Tf (a \\) string ( with nested ) parens Tj) Tj [(A) -120 <4142> 3 (B)] TJ ET',
    '/OC /Props BDC << /K [1 2 [3]] /S (x) >> BDC EMC EMC',
    'BI /W 2 /H 2 /BPC 8 /CS /G ID \x00EI\xff Tj ]] [[ \nEI Q',
    '/GS1 gs 0.5 /P1 scn /Pattern cs /P2 SCN 0 0 10 10 re f',
  ].join('\n');

  it('counts what the content-stream reader of text tags counts, and the same whether the bytes come whole or one at a time', async () => {
    const { ContentOperatorCounter } = await import('../src/domain/pdf/inspect/content-operators.ts');
    const { parseContent } = await import('../src/domain/pdf/text-tags.ts');
    const bytes = Buffer.from(sample, 'latin1');
    const whole = new ContentOperatorCounter('sample');
    whole.write(bytes);
    const counted = whole.end();
    const piecewise = new ContentOperatorCounter('sample');
    for (const byte of bytes) piecewise.write(Uint8Array.of(byte));
    expect(piecewise.end()).toEqual(counted);
    // The inline image's data (with "EI" and brackets inside it) is skipped to the EI after white
    // space; the reader of tags takes that EI with its ID, the count as an operator of its own.
    expect(counted.operators).toBe(parseContent(bytes).length + 1);
    expect(counted.operators).toBe(23);
    expect(Object.fromEntries(counted.painted)).toEqual({ 'XObject:Im1': 1, 'Font:F1': 1, 'ExtGState:GS1': 1, 'Pattern:P1': 1, 'Pattern:P2': 1 });
  });
});
