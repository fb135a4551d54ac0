import { DomainError } from '../../shared/errors.ts';
import { PDF_INFLATED_BYTES_LIMIT, type PdfComplexityLimit, type PdfInspectionError } from '../pdf/inspect/limits.ts';

// Raised by the reads both owners share (owner/owner.read.ts), so it lives there; named here too.
export { DocumentNotFoundError } from '../owner/owner.errors.ts';

/** `Document.PageNotFound` (404): the document has no page of this index (the signing page's page route). */
export class DocumentPageNotFoundError extends DomainError {
  constructor(documentId: string, page: string) {
    super('Document.PageNotFound', `The document has no page ${page} (pages are numbered from 0).`, { documentId, page });
  }
}

/** `Document.TooLarge` (413): the upload is over the limit; nothing was stored. */
export class DocumentTooLargeError extends DomainError {
  constructor(limitBytes: number) {
    super('Document.TooLarge', `The document is larger than ${limitBytes} bytes (48 MB); nothing was stored.`, { limitBytes });
  }
}

/** `Document.NotPdf` (415): the bytes are not a PDF, whatever the file name or declared type. */
export class DocumentNotPdfError extends DomainError {
  constructor() {
    super('Document.NotPdf', 'The uploaded file is not a PDF (checked by its content, not its name or type).');
  }
}

/** `Document.InvalidPdf` (422): it starts like a PDF but is damaged or incomplete (e.g. truncated). */
export class DocumentInvalidPdfError extends DomainError {
  constructor(detail: string) {
    super('Document.InvalidPdf', 'The PDF is damaged or incomplete and cannot be used.', { detail });
  }
}

/** `Document.Encrypted` (422): password-protected or encrypted PDFs cannot be signed and sealed. */
export class DocumentEncryptedError extends DomainError {
  constructor() {
    super('Document.Encrypted', 'The PDF is encrypted or password-protected; upload an unprotected copy.');
  }
}

/** `Document.Missing` (400): a multipart upload without the `document` file part. */
export class DocumentMissingError extends DomainError {
  constructor() {
    super('Document.Missing', 'The request has no file in the `document` part of the multipart body.');
  }
}

/** `Document.UploadIncomplete` (400): the upload ended (or broke off) before the whole file arrived. */
export class DocumentUploadIncompleteError extends DomainError {
  constructor() {
    super('Document.UploadIncomplete', 'The upload ended before the whole file arrived; nothing was stored. Send it again.');
  }
}

const COMPLEXITY_DESCRIPTIONS: Record<PdfComplexityLimit, (maximum: number | undefined) => string> = {
  inflated_bytes: (maximum = PDF_INFLATED_BYTES_LIMIT) => `This PDF's compressed streams inflate to more than ${maximum / (1024 * 1024)} MiB, more than one document may`,
  content_operators: (maximum) => `This PDF's pages run more than ${maximum} drawing operators (forms counted each time they are painted), more than one document may`,
  form_paints: (maximum) => `This PDF's pages paint forms or patterns more than ${maximum} times (nested ones counted each time), more than one document may`,
  form_nesting: (maximum) => `This PDF's forms paint forms more than ${maximum} deep, or paint themselves`,
  content_nesting: (maximum) => `This PDF's page content nests arrays or dictionaries more than ${maximum} deep`,
  content_encoding: () => "This PDF's page content is encoded in a way this service does not read (LZW, RunLength or a predictor), so what it costs cannot be counted",
};

/**
 * `Document.TooComplex` (422): reading the PDF would cost more than one document may
 * (pdf/inspect/limits.ts): its streams inflate past `PDF_INFLATED_BYTES_LIMIT` (a deflate bomb),
 * its pages run more than `PDF_CONTENT_OPERATORS_LIMIT` operators or paint forms more than
 * `PDF_FORM_PAINTS_LIMIT` times (forms painting forms), forms nest too deep or paint themselves, or
 * a content stream nests arrays too deep, or page content is encoded in a filter the inspector
 * does not decode (`content_encoding`: LZW, RunLength, a predictor). `context.limit` names which, `context.maximum` its value
 * (`context.limitBytes` too for `inflated_bytes`). At upload nothing was stored; when placing
 * fields nothing was placed.
 */
export class DocumentTooComplexError extends DomainError {
  constructor(limit: PdfComplexityLimit, maximum: number | undefined, outcome = 'nothing was stored') {
    super('Document.TooComplex', `${COMPLEXITY_DESCRIPTIONS[limit](maximum)}; ${outcome}. Re-saving or flattening the PDF (e.g. "Print to PDF") may help.`, {
      limit,
      ...(maximum !== undefined ? { maximum } : {}),
      ...(limit === 'inflated_bytes' ? { limitBytes: maximum } : {}),
    });
  }

  /** The inspector's (or a PDF worker's) `too_complex` refusal as the caller's error. */
  static from(error: PdfInspectionError, outcome?: string): DocumentTooComplexError {
    const complexity = error.complexity ?? { limit: 'inflated_bytes', maximum: PDF_INFLATED_BYTES_LIMIT };
    return new DocumentTooComplexError(complexity.limit, complexity.maximum, outcome);
  }
}

/**
 * `Document.InspectionLimitExceeded` (422): reading the PDF's structure needed more time or memory
 * than one file may use (a worker's limits, see pdf/worker-pool.ts); nothing was stored. 422, not
 * 413: the file is within the size limit, and what makes it costly is how it is built (e.g. a
 * page dictionary of hundreds of thousands of keys), so a smaller upload is not the remedy; a
 * re-saved or re-exported copy is.
 */
export class DocumentInspectionLimitExceededError extends DomainError {
  constructor(limit: 'time' | 'memory', value: number) {
    const spent = limit === 'time' ? `more than ${value / 1000} s` : `more than ${value} MB of memory`;
    super(
      'Document.InspectionLimitExceeded',
      `Reading this PDF's structure took ${spent}, more than one file may use; nothing was stored. Re-save or re-export the PDF (e.g. "Print to PDF") and upload that copy.`,
      limit === 'time' ? { limit, limitMs: value } : { limit, limitMb: value },
    );
  }
}

/** `Document.TooManyTags` (422): the document carries more text tags than one placement takes. */
export class DocumentTooManyTagsError extends DomainError {
  constructor(limit: number) {
    super('Document.TooManyTags', `The document carries more than ${limit} text tags; nothing was placed.`, { limit });
  }
}
