/** What the inspector answers and refuses (`PdfInspectionError`), and the limits that bound what a hostile file can cost. */

export type PdfPage = { width: number; height: number; rotation: number };

export type PdfInspection = { pageCount: number; pages: PdfPage[]; pdfVersion: string };

/** `too_complex`: over one of the limits below that bound what the document costs to read (`PdfComplexityLimit`). */
export type PdfInspectionFailureReason = 'not_pdf' | 'invalid' | 'encrypted' | 'too_complex';

/**
 * Which bound a too complex document passed: what its streams inflate to, the operators its pages
 * run (forms counted each time they are painted), how many forms and patterns its pages paint, how
 * deep forms paint forms, how deep a content stream nests arrays and dictionaries.
 */
export type PdfComplexityLimit = 'inflated_bytes' | 'content_operators' | 'form_paints' | 'form_nesting' | 'content_nesting' | 'content_encoding';

/**
 * The limit a `too_complex` refusal passed, and its value (bytes, operators, paints or levels);
 * `content_encoding` (content in a filter the inspector does not decode, or with a predictor) has none.
 */
export type PdfComplexity = { limit: PdfComplexityLimit; maximum?: number };

export class PdfInspectionError extends Error {
  readonly reason: PdfInspectionFailureReason;
  readonly detail: string;
  /** Set for `too_complex`. */
  readonly complexity: PdfComplexity | undefined;

  constructor(reason: PdfInspectionFailureReason, detail: string, complexity?: PdfComplexity) {
    super(`PDF rejected (${reason}): ${detail}`);
    this.name = 'PdfInspectionError';
    this.reason = reason;
    this.detail = detail;
    this.complexity = complexity;
  }
}

// ---------------------------------------------------------------------------------------------
// Limits. Each one bounds the memory or time a hostile file can make us spend.
// ---------------------------------------------------------------------------------------------

/** Readers accept a header preceded by some junk (mail gateways prepend bytes), up to this far. */
export const HEADER_SEARCH_LENGTH = 1024;
/** `startxref` and `%%EOF` must be at the very end; this leaves room for trailing whitespace. */
export const TAIL_LENGTH = 2048;
/** Page tree objects are small: one window almost always holds a whole object. */
export const INITIAL_WINDOW_LENGTH = 64 * 1024;
/** Large enough for a classic xref table of ~800 000 objects, small next to a 48 MB upload. */
export const MAX_WINDOW_LENGTH = 16 * 1024 * 1024;
/** Only xref streams and object streams are ever read, and both are compact. */
export const MAX_ENCODED_STREAM_LENGTH = 16 * 1024 * 1024;
export const MAX_DECODED_STREAM_LENGTH = 32 * 1024 * 1024;
/** Decoded object streams are kept because consecutive page nodes usually share one. */
export const MAX_CACHED_OBJECT_STREAM_BYTES = 16 * 1024 * 1024;
/** Room after stream data for the end-of-line, `endstream` and `endobj`. */
export const STREAM_END_SLACK = 64;
export const MAX_PAGES = 100_000;
/** Intermediate /Pages nodes are at most as many as pages in any sane tree; add headroom. */
export const MAX_PAGE_TREE_NODES = 2 * MAX_PAGES + 1024;
export const MAX_CROSS_REFERENCE_SECTIONS = 1024;
/** The implementation limit on object numbers from ISO 32000 Annex C. */
export const MAX_OBJECT_NUMBER = 8_388_607;
export const MAX_NESTING_DEPTH = 256;
export const MAX_REFERENCE_CHAIN = 16;

/**
 * What one document's streams may inflate to, in all: its cross-reference and object streams,
 * wherever they are in the file (pdf-lib inflates every one of them when it loads a file to render
 * and seal it, whether the document uses it or not), and its pages' content streams (what any
 * viewer inflates to show the pages). Images, fonts and attachments are not counted.
 *
 * Real documents stay far below: object streams hold a few hundred bytes per object and content
 * streams of text and drawings tens of kilobytes per page, so a contract's streams inflate to a
 * few megabytes, and even an upload at the 48 MB size limit made of nothing but compressed
 * drawings (they inflate 3 to 5 : 1) stays under it. A deflate bomb inflates about 1 000 : 1 (a
 * 260 KB stream to 256 MiB) and is refused as soon as the count passes the limit. At sealing
 * pdf-lib inflates object streams into buffers that grow by doubling, outside the worker's heap
 * limit (a 240 MiB object stream took about 370 MB), transiently: the worker is then recycled
 * (pdf-worker-pool.ts) and the memory given back.
 */
export const PDF_INFLATED_BYTES_LIMIT = 256 * 1024 * 1024;
/** Streams read in pieces of this size while their inflated size is counted. */
export const INFLATE_CHUNK_LENGTH = 1024 * 1024;
/** Encoded streams up to this size are counted in one call (at most ~16 MB inflated). */
export const SMALL_ENCODED_STREAM_LENGTH = 16 * 1024;
/** The pass over the whole file reads it in windows of this size. */
export const SCAN_WINDOW_LENGTH = 4 * 1024 * 1024;
/** A scan step stops this close to the end of a window that is not the end of the file. */
export const SCAN_MARGIN = 4096;
/** The window read to find a content stream's dictionary: small, since there may be one per page. */
export const CONTENT_STREAM_WINDOW_LENGTH = 4096;

/**
 * Operators one document's pages may run, in all: each page's content streams, and each form
 * XObject and tiling pattern counted as many times as it is painted (a form painted ten times by
 * a form painted ten times runs a hundred times). pdf.js interprets every one of them to find text
 * tags (and a signer's viewer to show the pages): a 16 KB file of 1.5 million text operators held
 * a PDF worker for 40 s. A dense page of text runs a few thousand operators, so a contract of a
 * hundred pages stays far below.
 */
export const PDF_CONTENT_OPERATORS_LIMIT = 1_000_000;
/**
 * Forms and tiling patterns one document's pages may paint, in all, each counted every time it is
 * painted, nested ones included: the fan-out of forms painting forms (a 9.5 KB file of forms ten
 * deep, each painting the next ten times, held a worker for 60 s and 260 MB). A map with a
 * symbol per place paints a few thousand.
 */
export const PDF_FORM_PAINTS_LIMIT = 100_000;
/** How deep forms (and tiling patterns) may paint forms; a form that paints itself is refused too. */
export const MAX_FORM_NESTING = 32;
/** Arrays and dictionaries inside a content stream (a TJ array, marked-content properties) nest a level or two. */
export const MAX_CONTENT_NESTING_DEPTH = 32;
/**
 * Different resources a document's content streams may paint, per stream and over all of them
 * (each stream's names are kept while its cost is worked out): as many as form paints in all.
 */
export const MAX_PAINTED_NAMES_PER_STREAM = PDF_FORM_PAINTS_LIMIT;

export function tooComplex(detail: string, limit: PdfComplexityLimit, maximum: number | undefined): never {
  throw new PdfInspectionError('too_complex', detail, maximum === undefined ? { limit } : { limit, maximum });
}

export function invalid(detail: string): never {
  throw new PdfInspectionError('invalid', detail);
}
