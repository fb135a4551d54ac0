/**
 * A strict PDF structure inspector that works on a file on disk without loading it.
 *
 * Uploads can be tens of megabytes, and almost all of that is page content and images we never
 * need. What we do need (is it a PDF, is it complete, is it encrypted, how many pages of which
 * size) lives in the cross-reference sections, the trailer and the page tree, which together are
 * usually a few kilobytes. So the inspector reads the end of the file, follows the
 * cross-reference offsets, and reads only the objects of the page tree through bounded
 * positioned reads. Memory therefore grows with the number of objects, never with the file size.
 *
 * One more pass reads the whole file once, a window at a time, as pdf-lib will read it to render
 * and seal the document: what its streams inflate to is counted (never kept) and bounded per
 * document (`PDF_INFLATED_BYTES_LIMIT`), so a small file that inflates to gigabytes (a deflate
 * bomb) is refused here rather than filling a worker's memory at sealing. While the pages' content
 * streams inflate, their operators are counted, and the forms, patterns and Type 3 glyphs they
 * paint followed (each read once, its cost multiplied by how often it is painted), so a small file
 * that would keep pdf.js interpreting for a minute (forms painting forms, millions of operators)
 * is refused too (inflation.ts, content-operators.ts).
 *
 * It is deliberately strict: it does not try to repair broken files the way viewers do, because
 * a file we cannot read exactly is a file we should refuse before anyone is asked to sign it.
 */
import { open } from 'node:fs/promises';
import { type PdfFile, readBytes } from './file.ts';
import { countContentStreams, countStructureStreams } from './inflation.ts';
import { dictionaryValue, isDictionary, isName, type PdfValue } from './lexer.ts';
import { HEADER_SEARCH_LENGTH, invalid, type PdfInspection, PdfInspectionError } from './limits.ts';
import { type ObjectReader, resolve } from './objects.ts';
import { collectPages, type PageContent } from './page-tree.ts';
import { locateNewestCrossReferenceSection, readCrossReferenceChain } from './xref.ts';

// ---------------------------------------------------------------------------------------------
// Public entry points
// ---------------------------------------------------------------------------------------------

/** Reads only the parts of the file it needs through positioned reads (fs.promises.open + filehandle.read). */
export async function inspectPdfFile(filePath: string): Promise<PdfInspection> {
  const handle = await open(filePath, 'r');
  try {
    const { size } = await handle.stat();
    return await inspectOpenFile({ handle, size, inflated: { total: 0, byStream: new Map() } });
  } catch (error) {
    throw asInspectionError(error);
  } finally {
    await handle.close();
  }
}

/**
 * Cheap check on the first bytes of a stream, used while the upload is still arriving.
 * Pass the first 1024 bytes (or the whole upload if it is shorter); fewer bytes may give false.
 */
export function looksLikePdfHeader(firstBytes: Uint8Array): boolean {
  return findHeaderVersion(firstBytes) !== undefined;
}

async function inspectOpenFile(file: PdfFile): Promise<PdfInspection> {
  const headerVersion = findHeaderVersion(await readBytes(file, 0, HEADER_SEARCH_LENGTH + 8));
  if (headerVersion === undefined) {
    throw new PdfInspectionError('not_pdf', 'no %PDF-1.x or %PDF-2.0 header in the first 1024 bytes');
  }
  const newestSectionOffset = await locateNewestCrossReferenceSection(file);
  const { entries, trailer } = await readCrossReferenceChain(file, newestSectionOffset);
  // Checked before touching any object: in an encrypted file strings and streams (object
  // streams included) are ciphertext, so going further would only produce misleading errors.
  if (dictionaryValue(trailer, 'Encrypt') !== null) {
    throw new PdfInspectionError('encrypted', 'the trailer has an /Encrypt dictionary');
  }
  const reader: ObjectReader = { file, entries, objectStreams: new Map(), cachedObjectStreamBytes: 0, loadingObjectStreams: new Set() };
  const catalog = await resolve(reader, dictionaryValue(trailer, 'Root'));
  if (!isDictionary(catalog)) invalid('the trailer has no /Root catalog dictionary');
  const contents: PageContent[] = [];
  const pages = await collectPages(reader, dictionaryValue(catalog, 'Pages'), contents);
  if (pages.length === 0) invalid('the document has no pages');
  await countStructureStreams(reader);
  await countContentStreams(reader, contents);
  const catalogVersion = await resolve(reader, dictionaryValue(catalog, 'Version'));
  return { pageCount: pages.length, pages, pdfVersion: effectiveVersion(headerVersion, catalogVersion) };
}

/**
 * Parse failures of any kind mean the file is not something we can trust, but I/O errors
 * (missing file, permissions) say nothing about the document and must reach the caller as they are.
 */
function asInspectionError(error: unknown): unknown {
  if (error instanceof PdfInspectionError) return error;
  if (error instanceof Error && 'syscall' in error) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new PdfInspectionError('invalid', `unreadable structure: ${message}`);
}

// ---------------------------------------------------------------------------------------------
// Header and version
// ---------------------------------------------------------------------------------------------

const HEADER_MARKER = Buffer.from('%PDF-', 'latin1');

function findHeaderVersion(bytes: Uint8Array): string | undefined {
  const haystack = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let index = haystack.indexOf(HEADER_MARKER); index !== -1 && index < HEADER_SEARCH_LENGTH; index = haystack.indexOf(HEADER_MARKER, index + 1)) {
    const version = versionAt(haystack, index + HEADER_MARKER.length);
    if (version !== undefined) return version;
  }
  return undefined;
}

function versionAt(bytes: Buffer, position: number): string | undefined {
  if (position + 3 > bytes.length) return undefined;
  const version = bytes.toString('latin1', position, position + 3);
  return /^(1\.\d|2\.0)$/.test(version) ? version : undefined;
}

/** Since PDF 1.4 the catalog's /Version overrides the header when it is later (incremental upgrades). */
function effectiveVersion(headerVersion: string, catalogVersion: PdfValue): string {
  if (!isName(catalogVersion) || !/^\d\.\d$/.test(catalogVersion.value)) return headerVersion;
  return Number(catalogVersion.value) > Number(headerVersion) ? catalogVersion.value : headerVersion;
}

export {
  PDF_CONTENT_OPERATORS_LIMIT,
  PDF_FORM_PAINTS_LIMIT,
  PDF_INFLATED_BYTES_LIMIT,
  type PdfComplexity,
  type PdfInspection,
  PdfInspectionError,
  type PdfInspectionFailureReason,
  type PdfPage,
} from './limits.ts';
