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
 * bomb) is refused here rather than filling a worker's memory at sealing.
 *
 * It is deliberately strict: it does not try to repair broken files the way viewers do, because
 * a file we cannot read exactly is a file we should refuse before anyone is asked to sign it.
 */
import { open, type FileHandle } from 'node:fs/promises';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { constants as zlibConstants, createInflate, inflateSync } from 'node:zlib';

export type PdfPage = { width: number; height: number; rotation: number };

export type PdfInspection = { pageCount: number; pages: PdfPage[]; pdfVersion: string };

/** `too_complex`: its streams inflate to more than `PDF_INFLATED_BYTES_LIMIT` bytes. */
export type PdfInspectionFailureReason = 'not_pdf' | 'invalid' | 'encrypted' | 'too_complex';

export class PdfInspectionError extends Error {
  readonly reason: PdfInspectionFailureReason;
  readonly detail: string;

  constructor(reason: PdfInspectionFailureReason, detail: string) {
    super(`PDF rejected (${reason}): ${detail}`);
    this.name = 'PdfInspectionError';
    this.reason = reason;
    this.detail = detail;
  }
}

// ---------------------------------------------------------------------------------------------
// Limits. Each one bounds the memory or time a hostile file can make us spend.
// ---------------------------------------------------------------------------------------------

/** Readers accept a header preceded by some junk (mail gateways prepend bytes), up to this far. */
const HEADER_SEARCH_LENGTH = 1024;
/** `startxref` and `%%EOF` must be at the very end; this leaves room for trailing whitespace. */
const TAIL_LENGTH = 2048;
/** Page tree objects are small: one window almost always holds a whole object. */
const INITIAL_WINDOW_LENGTH = 64 * 1024;
/** Large enough for a classic xref table of ~800 000 objects, small next to a 48 MB upload. */
const MAX_WINDOW_LENGTH = 16 * 1024 * 1024;
/** Only xref streams and object streams are ever read, and both are compact. */
const MAX_ENCODED_STREAM_LENGTH = 16 * 1024 * 1024;
const MAX_DECODED_STREAM_LENGTH = 32 * 1024 * 1024;
/** Decoded object streams are kept because consecutive page nodes usually share one. */
const MAX_CACHED_OBJECT_STREAM_BYTES = 16 * 1024 * 1024;
/** Room after stream data for the end-of-line, `endstream` and `endobj`. */
const STREAM_END_SLACK = 64;
const MAX_PAGES = 100_000;
/** Intermediate /Pages nodes are at most as many as pages in any sane tree; add headroom. */
const MAX_PAGE_TREE_NODES = 2 * MAX_PAGES + 1024;
const MAX_CROSS_REFERENCE_SECTIONS = 1024;
/** The implementation limit on object numbers from ISO 32000 Annex C. */
const MAX_OBJECT_NUMBER = 8_388_607;
const MAX_NESTING_DEPTH = 256;
const MAX_REFERENCE_CHAIN = 16;

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
const INFLATE_CHUNK_LENGTH = 1024 * 1024;
/** Encoded streams up to this size are counted in one call (at most ~16 MB inflated). */
const SMALL_ENCODED_STREAM_LENGTH = 16 * 1024;
/** The pass over the whole file reads it in windows of this size. */
const SCAN_WINDOW_LENGTH = 4 * 1024 * 1024;
/** A scan step stops this close to the end of a window that is not the end of the file. */
const SCAN_MARGIN = 4096;
/** The window read to find a content stream's dictionary: small, since there may be one per page. */
const CONTENT_STREAM_WINDOW_LENGTH = 4096;

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
  const contents: PdfValue[] = [];
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

function invalid(detail: string): never {
  throw new PdfInspectionError('invalid', detail);
}

function tooComplex(detail: string): never {
  throw new PdfInspectionError('too_complex', detail);
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

// ---------------------------------------------------------------------------------------------
// Positioned file access
// ---------------------------------------------------------------------------------------------

/**
 * `inflated` counts what the document's streams inflate to: each stream once, under the offset
 * of its data (the pages' reads and the pass over the file may both inflate the same stream).
 */
type PdfFile = { handle: FileHandle; size: number; inflated: { total: number; byStream: Map<number, number> } };

/** Reads up to `length` bytes at `position`, fewer only where the file ends. */
async function readBytes(file: PdfFile, position: number, length: number): Promise<Buffer> {
  const available = Math.max(0, Math.min(length, file.size - position));
  const buffer = Buffer.alloc(available);
  let filled = 0;
  while (filled < available) {
    const { bytesRead } = await file.handle.read(buffer, filled, available - filled, position + filled);
    if (bytesRead === 0) break; // The file shrank under us; parsing will report what is missing.
    filled += bytesRead;
  }
  return filled === available ? buffer : buffer.subarray(0, filled);
}

/**
 * Runs a synchronous parser over a window of the file starting at `offset`, re-reading a larger
 * window whenever the parser runs off the end of one that is not the end of the file.
 */
async function parseWithGrowingWindow<T>(file: PdfFile, offset: number, parse: (cursor: Cursor) => T, initialWindowLength = INITIAL_WINDOW_LENGTH): Promise<T> {
  if (!Number.isSafeInteger(offset) || offset < 0 || offset >= file.size) {
    invalid(`offset ${offset} is outside the file (size ${file.size})`);
  }
  for (let windowLength = initialWindowLength; ; windowLength *= 4) {
    const bytes = await readBytes(file, offset, windowLength);
    const cursor: Cursor = { bytes, position: 0, complete: offset + bytes.length >= file.size };
    try {
      return parse(cursor);
    } catch (error) {
      if (!(error instanceof WindowExhausted)) throw error;
    }
    if (windowLength >= MAX_WINDOW_LENGTH) invalid(`the structure at offset ${offset} is larger than ${MAX_WINDOW_LENGTH} bytes`);
  }
}

// ---------------------------------------------------------------------------------------------
// Object model and tokenizer
// ---------------------------------------------------------------------------------------------

type PdfName = { readonly kind: 'name'; readonly value: string };
type PdfString = { readonly kind: 'string'; readonly bytes: Uint8Array };
type PdfReference = { readonly kind: 'reference'; readonly objectNumber: number; readonly generation: number };
type PdfDictionary = { readonly kind: 'dictionary'; readonly entries: Map<string, PdfValue> };
type PdfValue = null | boolean | number | PdfName | PdfString | PdfReference | PdfDictionary | PdfValue[];

/**
 * `complete` says the bytes run to the true end of the data (end of file, or a whole decoded
 * object stream), so running out is an error rather than a reason to read a larger window.
 */
type Cursor = { bytes: Uint8Array; position: number; complete: boolean };

/** Internal signal: the parse needs bytes beyond the current window. */
class WindowExhausted extends Error {}

function outOfData(cursor: Cursor): never {
  if (cursor.complete) invalid('unexpected end of data');
  throw new WindowExhausted('window exhausted');
}

const LINE_FEED = 0x0a;
const CARRIAGE_RETURN = 0x0d;
const PERCENT = 0x25;
const SOLIDUS = 0x2f;
const BACKSLASH = 0x5c;
const NUMBER_SIGN = 0x23;
const LEFT_PARENTHESIS = 0x28;
const RIGHT_PARENTHESIS = 0x29;
const LESS_THAN = 0x3c;
const GREATER_THAN = 0x3e;
const LEFT_BRACKET = 0x5b;
const RIGHT_BRACKET = 0x5d;
const DELIMITERS = new Set([...'()<>[]{}/%'].map((character) => character.charCodeAt(0)));

const NUMBER_PATTERN = /^[+-]?(?:\d+\.?\d*|\.\d+)$/;
const UNSIGNED_INTEGER_PATTERN = /^\d+$/;

function isWhitespace(byte: number): boolean {
  return byte === 0x20 || byte === LINE_FEED || byte === CARRIAGE_RETURN || byte === 0x09 || byte === 0x0c || byte === 0x00;
}

function isRegular(byte: number): boolean {
  return !isWhitespace(byte) && !DELIMITERS.has(byte);
}

function hexDigitValue(byte: number): number {
  if (byte >= 0x30 && byte <= 0x39) return byte - 0x30;
  if (byte >= 0x41 && byte <= 0x46) return byte - 0x41 + 10;
  if (byte >= 0x61 && byte <= 0x66) return byte - 0x61 + 10;
  return -1;
}

function latin1(bytes: Uint8Array, start: number, end: number): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset + start, end - start).toString('latin1');
}

function skipWhitespaceAndComments(cursor: Cursor): void {
  const { bytes } = cursor;
  while (cursor.position < bytes.length) {
    const byte = bytes[cursor.position];
    if (isWhitespace(byte)) {
      cursor.position++;
    } else if (byte === PERCENT) {
      while (cursor.position < bytes.length && bytes[cursor.position] !== LINE_FEED && bytes[cursor.position] !== CARRIAGE_RETURN) {
        cursor.position++;
      }
    } else {
      return;
    }
  }
}

function byteAhead(cursor: Cursor, distance: number): number {
  const index = cursor.position + distance;
  if (index >= cursor.bytes.length) outOfData(cursor);
  return cursor.bytes[index];
}

/** A run of regular characters: a number, keyword or operator. Empty when a delimiter comes next. */
function readRegularToken(cursor: Cursor): string {
  const { bytes } = cursor;
  const start = cursor.position;
  let end = start;
  while (end < bytes.length && isRegular(bytes[end])) end++;
  // The token may continue in bytes we have not read yet.
  if (end === bytes.length && !cursor.complete) throw new WindowExhausted('window exhausted');
  cursor.position = end;
  return latin1(bytes, start, end);
}

function expectToken(cursor: Cursor, pattern: RegExp, description: string): string {
  skipWhitespaceAndComments(cursor);
  if (cursor.position >= cursor.bytes.length) outOfData(cursor);
  const token = readRegularToken(cursor);
  if (!pattern.test(token)) invalid(`expected ${description}, found "${token.slice(0, 20)}"`);
  return token;
}

function expectInteger(cursor: Cursor, description: string): number {
  return Number(expectToken(cursor, UNSIGNED_INTEGER_PATTERN, description));
}

function expectKeyword(cursor: Cursor, keyword: string): void {
  expectToken(cursor, new RegExp(`^${keyword}$`), `"${keyword}"`);
}

/** Looks for a token matching `pattern` without consuming anything when there is none. */
function tryReadToken(cursor: Cursor, pattern: RegExp): string | undefined {
  skipWhitespaceAndComments(cursor);
  if (cursor.position >= cursor.bytes.length) {
    if (cursor.complete) return undefined;
    throw new WindowExhausted('window exhausted');
  }
  const token = readRegularToken(cursor);
  return pattern.test(token) ? token : undefined;
}

function parseValue(cursor: Cursor, depth = 0): PdfValue {
  if (depth > MAX_NESTING_DEPTH) invalid('objects are nested too deeply');
  skipWhitespaceAndComments(cursor);
  if (cursor.position >= cursor.bytes.length) outOfData(cursor);
  switch (cursor.bytes[cursor.position]) {
    case LESS_THAN:
      return byteAhead(cursor, 1) === LESS_THAN ? parseDictionary(cursor, depth) : parseHexString(cursor);
    case LEFT_BRACKET:
      return parseArray(cursor, depth);
    case LEFT_PARENTHESIS:
      return parseLiteralString(cursor);
    case SOLIDUS:
      return parseName(cursor);
    default:
      return parseNumberOrKeyword(cursor);
  }
}

function parseNumberOrKeyword(cursor: Cursor): PdfValue {
  const first = cursor.bytes[cursor.position];
  if (!isRegular(first)) invalid(`unexpected "${String.fromCharCode(first)}"`);
  const token = readRegularToken(cursor);
  if (NUMBER_PATTERN.test(token)) {
    const value = Number(token);
    if (!Number.isFinite(value)) invalid(`number out of range: ${token.slice(0, 20)}`);
    if (UNSIGNED_INTEGER_PATTERN.test(token)) {
      const generation = tryReadReferenceTail(cursor);
      if (generation !== undefined) return { kind: 'reference', objectNumber: value, generation };
    }
    return value;
  }
  if (token === 'true') return true;
  if (token === 'false') return false;
  if (token === 'null') return null;
  return invalid(`unexpected token "${token.slice(0, 20)}"`);
}

/** After an unsigned integer, `g R` makes it an indirect reference; otherwise nothing is consumed. */
function tryReadReferenceTail(cursor: Cursor): number | undefined {
  const start = cursor.position;
  const generation = tryReadToken(cursor, UNSIGNED_INTEGER_PATTERN);
  if (generation !== undefined && tryReadToken(cursor, /^R$/) !== undefined) return Number(generation);
  cursor.position = start;
  return undefined;
}

function parseDictionary(cursor: Cursor, depth: number): PdfDictionary {
  cursor.position += 2;
  const entries = new Map<string, PdfValue>();
  for (;;) {
    skipWhitespaceAndComments(cursor);
    if (cursor.position >= cursor.bytes.length) outOfData(cursor);
    const byte = cursor.bytes[cursor.position];
    if (byte === GREATER_THAN) {
      if (byteAhead(cursor, 1) !== GREATER_THAN) invalid('a dictionary ends with a single ">"');
      cursor.position += 2;
      return { kind: 'dictionary', entries };
    }
    if (byte !== SOLIDUS) invalid('a dictionary key is not a name');
    const key = parseName(cursor).value;
    entries.set(key, parseValue(cursor, depth + 1));
  }
}

function parseArray(cursor: Cursor, depth: number): PdfValue[] {
  cursor.position++;
  const items: PdfValue[] = [];
  for (;;) {
    skipWhitespaceAndComments(cursor);
    if (cursor.position >= cursor.bytes.length) outOfData(cursor);
    if (cursor.bytes[cursor.position] === RIGHT_BRACKET) {
      cursor.position++;
      return items;
    }
    items.push(parseValue(cursor, depth + 1));
  }
}

function parseName(cursor: Cursor): PdfName {
  const { bytes } = cursor;
  cursor.position++;
  const decoded: number[] = [];
  while (cursor.position < bytes.length && isRegular(bytes[cursor.position])) {
    const byte = bytes[cursor.position];
    if (byte === NUMBER_SIGN) {
      const high = hexDigitValue(byteAhead(cursor, 1));
      const low = hexDigitValue(byteAhead(cursor, 2));
      if (high < 0 || low < 0) invalid('a name has a malformed #xx escape');
      decoded.push(high * 16 + low);
      cursor.position += 3;
    } else {
      decoded.push(byte);
      cursor.position++;
    }
  }
  if (cursor.position === bytes.length && !cursor.complete) throw new WindowExhausted('window exhausted');
  return { kind: 'name', value: Buffer.from(decoded).toString('latin1') };
}

const SIMPLE_ESCAPES = new Map<number, number>([
  [0x6e, LINE_FEED], // \n
  [0x72, CARRIAGE_RETURN], // \r
  [0x74, 0x09], // \t
  [0x62, 0x08], // \b
  [0x66, 0x0c], // \f
  [LEFT_PARENTHESIS, LEFT_PARENTHESIS],
  [RIGHT_PARENTHESIS, RIGHT_PARENTHESIS],
  [BACKSLASH, BACKSLASH],
]);

function parseLiteralString(cursor: Cursor): PdfString {
  const { bytes } = cursor;
  cursor.position++;
  const decoded: number[] = [];
  let depth = 1;
  for (;;) {
    if (cursor.position >= bytes.length) outOfData(cursor);
    const byte = bytes[cursor.position++];
    if (byte === BACKSLASH) {
      readStringEscape(cursor, decoded);
      continue;
    }
    if (byte === LEFT_PARENTHESIS) depth++;
    if (byte === RIGHT_PARENTHESIS && --depth === 0) return { kind: 'string', bytes: Uint8Array.from(decoded) };
    decoded.push(byte);
  }
}

/** Handles what follows a backslash: a known escape, one to three octal digits, or a line continuation. */
function readStringEscape(cursor: Cursor, decoded: number[]): void {
  const { bytes } = cursor;
  const byte = byteAhead(cursor, 0);
  const simple = SIMPLE_ESCAPES.get(byte);
  if (simple !== undefined) {
    decoded.push(simple);
    cursor.position++;
  } else if (byte >= 0x30 && byte <= 0x37) {
    let value = 0;
    for (let digits = 0; digits < 3; digits++) {
      const digit = byteAhead(cursor, 0);
      if (digit < 0x30 || digit > 0x37) break;
      value = value * 8 + (digit - 0x30);
      cursor.position++;
    }
    decoded.push(value & 0xff);
  } else if (byte === CARRIAGE_RETURN) {
    cursor.position++;
    if (byteAhead(cursor, 0) === LINE_FEED) cursor.position++;
  } else if (byte === LINE_FEED) {
    cursor.position++;
  } else {
    // An unknown escape is the character itself, without the backslash.
    decoded.push(bytes[cursor.position++]);
  }
}

function parseHexString(cursor: Cursor): PdfString {
  const { bytes } = cursor;
  cursor.position++;
  const nibbles: number[] = [];
  for (;;) {
    if (cursor.position >= bytes.length) outOfData(cursor);
    const byte = bytes[cursor.position++];
    if (byte === GREATER_THAN) break;
    if (isWhitespace(byte)) continue;
    const value = hexDigitValue(byte);
    if (value < 0) invalid('a hex string contains a non-hex character');
    nibbles.push(value);
  }
  // An odd final digit is padded with zero, as the spec prescribes.
  const decoded = new Uint8Array(Math.ceil(nibbles.length / 2));
  for (let index = 0; index < nibbles.length; index += 2) decoded[index / 2] = nibbles[index] * 16 + (nibbles[index + 1] ?? 0);
  return { kind: 'string', bytes: decoded };
}

// Small accessors keep the structural checks below readable.

function isDictionary(value: PdfValue | undefined): value is PdfDictionary {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && value.kind === 'dictionary';
}

function isReference(value: PdfValue | undefined): value is PdfReference {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && value.kind === 'reference';
}

function isName(value: PdfValue | undefined, expected?: string): value is PdfName {
  if (typeof value !== 'object' || value === null || Array.isArray(value) || value.kind !== 'name') return false;
  return expected === undefined || value.value === expected;
}

function isNonNegativeInteger(value: PdfValue | undefined): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

/** A missing key and an explicit null mean the same thing in PDF. */
function dictionaryValue(dictionary: PdfDictionary, key: string): PdfValue {
  return dictionary.entries.get(key) ?? null;
}

function requireNonNegativeInteger(value: PdfValue, description: string): number {
  if (!isNonNegativeInteger(value)) invalid(`${description} must be a non-negative integer`);
  return value;
}

// ---------------------------------------------------------------------------------------------
// Indirect objects and streams
// ---------------------------------------------------------------------------------------------

/** `streamDataOffset` is the file offset of the first data byte when the object is a stream. */
type IndirectObject = { objectNumber: number; generation: number; value: PdfValue; streamDataOffset: number | undefined };

function parseIndirectObject(cursor: Cursor, windowOffset: number): IndirectObject {
  const objectNumber = expectInteger(cursor, 'an object number');
  const generation = expectInteger(cursor, 'a generation number');
  expectKeyword(cursor, 'obj');
  const value = parseValue(cursor);
  const keyword = expectToken(cursor, /^(endobj|stream)$/, `"endobj" or "stream" after object ${objectNumber}`);
  if (keyword === 'endobj') return { objectNumber, generation, value, streamDataOffset: undefined };
  if (!isDictionary(value)) invalid(`stream ${objectNumber} has no dictionary`);
  // The keyword is followed by CRLF or LF; a lone CR would be ambiguous with binary data.
  const endOfLine = byteAhead(cursor, 0);
  if (endOfLine === LINE_FEED) cursor.position += 1;
  else if (endOfLine === CARRIAGE_RETURN && byteAhead(cursor, 1) === LINE_FEED) cursor.position += 2;
  else invalid(`"stream" in object ${objectNumber} is not followed by CRLF or LF`);
  return { objectNumber, generation, value, streamDataOffset: windowOffset + cursor.position };
}

function readIndirectObject(file: PdfFile, offset: number, initialWindowLength?: number): Promise<IndirectObject> {
  return parseWithGrowingWindow(file, offset, (cursor) => parseIndirectObject(cursor, offset), initialWindowLength);
}

type ValueResolver = (value: PdfValue) => Promise<PdfValue>;

/** Reads and decodes a stream's data; used only for xref streams and object streams. */
async function readStreamData(file: PdfFile, object: IndirectObject, resolveValue: ValueResolver): Promise<Uint8Array> {
  const dictionary = object.value;
  const start = object.streamDataOffset;
  if (!isDictionary(dictionary) || start === undefined) return invalid(`object ${object.objectNumber} is not a stream`);
  const length = requireNonNegativeInteger(await resolveValue(dictionaryValue(dictionary, 'Length')), `/Length of stream ${object.objectNumber}`);
  if (length > MAX_ENCODED_STREAM_LENGTH) invalid(`stream ${object.objectNumber} is larger than ${MAX_ENCODED_STREAM_LENGTH} bytes`);
  if (start + length > file.size) invalid(`stream ${object.objectNumber} runs past the end of the file`);
  const bytes = await readBytes(file, start, length + STREAM_END_SLACK);
  requireStreamEnd({ bytes: bytes.subarray(length), position: 0, complete: start + bytes.length >= file.size }, object.objectNumber);
  const filters = await resolveValue(dictionaryValue(dictionary, 'Filter'));
  const parameters = await resolveValue(dictionaryValue(dictionary, 'DecodeParms'));
  const decoded = await decodeStream(bytes.subarray(0, length), filters, parameters, resolveValue);
  chargeInflated(file, start, decoded.length, `stream ${object.objectNumber}`);
  return decoded;
}

/** A wrong /Length is how truncated or hand-edited files usually show; we refuse rather than search. */
function requireStreamEnd(cursor: Cursor, objectNumber: number): void {
  try {
    expectKeyword(cursor, 'endstream');
    expectKeyword(cursor, 'endobj');
  } catch (error) {
    if (error instanceof WindowExhausted || error instanceof PdfInspectionError) {
      invalid(`stream ${objectNumber} does not end with endstream/endobj where its /Length says`);
    }
    throw error;
  }
}

async function decodeStream(data: Uint8Array, filters: PdfValue, parameters: PdfValue, resolveValue: ValueResolver): Promise<Uint8Array> {
  const filterList = filters === null ? [] : Array.isArray(filters) ? filters : [filters];
  const parameterList = Array.isArray(parameters) ? parameters : [parameters];
  let decoded = data;
  for (let index = 0; index < filterList.length; index++) {
    const filter = await resolveValue(filterList[index]);
    if (!isName(filter)) invalid('a stream /Filter is not a name');
    if (filter.value !== 'FlateDecode' && filter.value !== 'Fl') invalid(`unsupported stream filter /${filter.value}`);
    const filterParameters = await resolveValue(parameterList[index] ?? null);
    decoded = undoPredictor(inflate(decoded), isDictionary(filterParameters) ? filterParameters : undefined);
  }
  return decoded;
}

function inflate(data: Uint8Array): Uint8Array {
  try {
    return inflateSync(data, { maxOutputLength: MAX_DECODED_STREAM_LENGTH });
  } catch (error) {
    return invalid(`FlateDecode failed: ${error instanceof Error ? error.message : String(error)}`);
  }
}

function integerParameter(parameters: PdfDictionary | undefined, key: string, fallback: number, maximum: number): number {
  const value = parameters ? dictionaryValue(parameters, key) : null;
  if (value === null) return fallback;
  if (!isNonNegativeInteger(value) || value < 1 || value > maximum) invalid(`decode parameter /${key} is out of range`);
  return value;
}

function undoPredictor(data: Uint8Array, parameters: PdfDictionary | undefined): Uint8Array {
  const predictor = integerParameter(parameters, 'Predictor', 1, 15);
  if (predictor === 1) return data;
  const colors = integerParameter(parameters, 'Colors', 1, 32);
  const bitsPerComponent = integerParameter(parameters, 'BitsPerComponent', 8, 16);
  const columns = integerParameter(parameters, 'Columns', 1, 1 << 24);
  if (![1, 2, 4, 8, 16].includes(bitsPerComponent)) invalid('decode parameter /BitsPerComponent is not 1, 2, 4, 8 or 16');
  if (predictor === 2) return undoTiffPredictor(data, columns, colors, bitsPerComponent);
  if (predictor >= 10) return undoPngPredictor(data, columns, colors, bitsPerComponent);
  return invalid(`unsupported predictor ${predictor}`);
}

function undoTiffPredictor(data: Uint8Array, columns: number, colors: number, bitsPerComponent: number): Uint8Array {
  if (bitsPerComponent !== 8) invalid('TIFF predictor is supported only with 8 bits per component');
  const rowLength = columns * colors;
  const output = Uint8Array.from(data);
  for (let rowStart = 0; rowStart < output.length; rowStart += rowLength) {
    const rowEnd = Math.min(rowStart + rowLength, output.length);
    for (let index = rowStart + colors; index < rowEnd; index++) output[index] = (output[index] + output[index - colors]) & 0xff;
  }
  return output;
}

/** PNG predictors (10-15): every row starts with its own filter type byte, whatever /Predictor says. */
function undoPngPredictor(data: Uint8Array, columns: number, colors: number, bitsPerComponent: number): Uint8Array {
  const bytesPerPixel = Math.max(1, Math.ceil((colors * bitsPerComponent) / 8));
  const rowLength = Math.ceil((columns * colors * bitsPerComponent) / 8);
  const rowCount = Math.floor(data.length / (rowLength + 1));
  const output = new Uint8Array(rowCount * rowLength);
  for (let row = 0; row < rowCount; row++) {
    const filterType = data[row * (rowLength + 1)];
    const source = row * (rowLength + 1) + 1;
    const target = row * rowLength;
    for (let index = 0; index < rowLength; index++) {
      const left = index >= bytesPerPixel ? output[target + index - bytesPerPixel] : 0;
      const up = row > 0 ? output[target - rowLength + index] : 0;
      const upLeft = row > 0 && index >= bytesPerPixel ? output[target - rowLength + index - bytesPerPixel] : 0;
      output[target + index] = (data[source + index] + pngPrediction(filterType, left, up, upLeft)) & 0xff;
    }
  }
  return output;
}

function pngPrediction(filterType: number, left: number, up: number, upLeft: number): number {
  switch (filterType) {
    case 0:
      return 0;
    case 1:
      return left;
    case 2:
      return up;
    case 3:
      return Math.floor((left + up) / 2);
    case 4: {
      const estimate = left + up - upLeft;
      const distanceLeft = Math.abs(estimate - left);
      const distanceUp = Math.abs(estimate - up);
      const distanceUpLeft = Math.abs(estimate - upLeft);
      if (distanceLeft <= distanceUp && distanceLeft <= distanceUpLeft) return left;
      return distanceUp <= distanceUpLeft ? up : upLeft;
    }
    default:
      return invalid(`unknown PNG predictor row type ${filterType}`);
  }
}

// ---------------------------------------------------------------------------------------------
// Cross-reference sections
// ---------------------------------------------------------------------------------------------

type CrossReferenceEntry =
  | { readonly kind: 'free' }
  | { readonly kind: 'inFile'; readonly offset: number; readonly generation: number }
  | { readonly kind: 'inObjectStream'; readonly streamObjectNumber: number; readonly index: number };

type CrossReferenceSection = { entries: Map<number, CrossReferenceEntry>; trailer: PdfDictionary };

/** Shared, since free entries carry nothing we use and can be numerous. */
const FREE_ENTRY: CrossReferenceEntry = { kind: 'free' };

/** Finds the offset after the last `startxref`, refusing files whose end is missing or damaged. */
async function locateNewestCrossReferenceSection(file: PdfFile): Promise<number> {
  const tail = await readBytes(file, Math.max(0, file.size - TAIL_LENGTH), TAIL_LENGTH);
  const endMarker = tail.lastIndexOf('%%EOF');
  if (endMarker === -1) invalid('no %%EOF marker at the end of the file: it is truncated');
  // Anything but whitespace after the last marker is most likely a cut-off incremental update.
  for (let index = endMarker + 5; index < tail.length; index++) {
    if (!isWhitespace(tail[index])) invalid('unexpected data after the final %%EOF: the file is truncated or damaged');
  }
  const startxref = tail.lastIndexOf('startxref', endMarker);
  if (startxref === -1) invalid('no startxref before the final %%EOF');
  const cursor: Cursor = { bytes: tail.subarray(startxref + 'startxref'.length, endMarker), position: 0, complete: true };
  const offset = expectInteger(cursor, 'the startxref offset');
  skipWhitespaceAndComments(cursor);
  if (cursor.position !== cursor.bytes.length) invalid('unexpected data between startxref and %%EOF');
  if (offset >= file.size) invalid('startxref points past the end of the file');
  return offset;
}

/**
 * Follows the /Prev chain from the newest section back to the oldest. An object's newest entry
 * wins, so entries are only added for object numbers no newer section has described.
 */
async function readCrossReferenceChain(file: PdfFile, newestOffset: number): Promise<CrossReferenceSection> {
  const entries = new Map<number, CrossReferenceEntry>();
  const visitedOffsets = new Set<number>();
  let newestTrailer: PdfDictionary | undefined;
  let offset: number | undefined = newestOffset;
  while (offset !== undefined) {
    if (visitedOffsets.has(offset)) invalid('the /Prev chain of cross-reference sections loops');
    if (visitedOffsets.size >= MAX_CROSS_REFERENCE_SECTIONS) invalid('too many cross-reference sections');
    visitedOffsets.add(offset);
    const section = await readCrossReferenceSection(file, offset);
    newestTrailer ??= section.trailer;
    for (const [objectNumber, entry] of section.entries) {
      if (!entries.has(objectNumber)) entries.set(objectNumber, entry);
    }
    const previous = dictionaryValue(section.trailer, 'Prev');
    offset = previous === null ? undefined : requireNonNegativeInteger(previous, '/Prev');
  }
  return { entries, trailer: newestTrailer ?? invalid('no cross-reference section') };
}

async function readCrossReferenceSection(file: PdfFile, offset: number): Promise<CrossReferenceSection> {
  const table = await parseWithGrowingWindow(file, offset, (cursor) => (startsWithXrefKeyword(cursor) ? parseCrossReferenceTable(cursor) : undefined));
  if (table === undefined) return readCrossReferenceStream(file, offset);
  const hiddenStreamOffset = dictionaryValue(table.trailer, 'XRefStm');
  if (hiddenStreamOffset !== null) {
    // Hybrid files hide objects in object streams from pre-1.5 readers: the table leaves them
    // free or absent, and this section's xref stream fills them in, ahead of older sections.
    const stream = await readCrossReferenceStream(file, requireNonNegativeInteger(hiddenStreamOffset, '/XRefStm'));
    for (const [objectNumber, entry] of stream.entries) {
      if ((table.entries.get(objectNumber) ?? FREE_ENTRY).kind === 'free') table.entries.set(objectNumber, entry);
    }
  }
  return table;
}

function startsWithXrefKeyword(cursor: Cursor): boolean {
  const start = cursor.position;
  const found = tryReadToken(cursor, /^xref$/) !== undefined;
  cursor.position = start;
  return found;
}

function parseCrossReferenceTable(cursor: Cursor): CrossReferenceSection {
  expectKeyword(cursor, 'xref');
  const entries = new Map<number, CrossReferenceEntry>();
  for (;;) {
    const token = expectToken(cursor, /^(trailer|\d+)$/, 'a subsection header or "trailer" in the xref table');
    if (token === 'trailer') {
      const trailer = parseValue(cursor);
      if (!isDictionary(trailer)) invalid('the trailer is not a dictionary');
      return { entries, trailer };
    }
    const firstObjectNumber = Number(token);
    const count = expectInteger(cursor, 'an xref subsection entry count');
    if (firstObjectNumber + count > MAX_OBJECT_NUMBER + 1) invalid('an xref subsection exceeds the object number limit');
    for (let index = 0; index < count; index++) {
      const offset = expectInteger(cursor, 'an xref entry offset');
      const generation = expectInteger(cursor, 'an xref entry generation');
      const kind = expectToken(cursor, /^[nf]$/, 'an xref entry type "n" or "f"');
      const objectNumber = firstObjectNumber + index;
      if (entries.has(objectNumber)) continue;
      entries.set(objectNumber, kind === 'n' ? { kind: 'inFile', offset, generation } : FREE_ENTRY);
    }
  }
}

async function readCrossReferenceStream(file: PdfFile, offset: number): Promise<CrossReferenceSection> {
  const object = await readIndirectObject(file, offset);
  const dictionary = object.value;
  if (!isDictionary(dictionary) || !isName(dictionaryValue(dictionary, 'Type'), 'XRef')) {
    invalid(`offset ${offset} holds neither an xref table nor an xref stream`);
  }
  // The spec requires direct values in an xref stream dictionary: there is no xref to resolve with yet.
  const directOnly: ValueResolver = async (value) => (isReference(value) ? invalid('an xref stream dictionary uses an indirect reference') : value);
  const data = await readStreamData(file, object, directOnly);
  const widths = readFieldWidths(dictionaryValue(dictionary, 'W'));
  const size = requireNonNegativeInteger(dictionaryValue(dictionary, 'Size'), 'the xref stream /Size');
  const subsections = readSubsections(dictionaryValue(dictionary, 'Index'), size);
  const rowLength = widths[0] + widths[1] + widths[2];
  const rowCount = subsections.reduce((total, [, count]) => total + count, 0);
  if (rowLength === 0 || data.length < rowCount * rowLength) invalid('the xref stream is shorter than its /W and /Index require');
  const entries = new Map<number, CrossReferenceEntry>();
  let position = 0;
  for (const [firstObjectNumber, count] of subsections) {
    for (let index = 0; index < count; index++, position += rowLength) {
      const objectNumber = firstObjectNumber + index;
      if (!entries.has(objectNumber)) entries.set(objectNumber, decodeStreamEntry(data, position, widths));
    }
  }
  return { entries, trailer: dictionary };
}

function readFieldWidths(value: PdfValue): [number, number, number] {
  // Seven bytes keep every field within Number's exact integer range.
  if (!Array.isArray(value) || value.length !== 3 || !value.every((width) => isNonNegativeInteger(width) && width <= 7)) {
    invalid('the xref stream /W must be three field widths of at most 7 bytes');
  }
  return value as [number, number, number];
}

function readSubsections(value: PdfValue, size: number): Array<[number, number]> {
  if (value === null) return [[0, size]];
  if (!Array.isArray(value) || value.length % 2 !== 0) invalid('the xref stream /Index must hold pairs of integers');
  const subsections: Array<[number, number]> = [];
  for (let index = 0; index < value.length; index += 2) {
    const first = requireNonNegativeInteger(value[index], 'an xref stream /Index start');
    const count = requireNonNegativeInteger(value[index + 1], 'an xref stream /Index count');
    if (first + count > MAX_OBJECT_NUMBER + 1) invalid('an xref stream subsection exceeds the object number limit');
    subsections.push([first, count]);
  }
  return subsections;
}

function readField(data: Uint8Array, position: number, width: number, fallback: number): number {
  if (width === 0) return fallback;
  let value = 0;
  for (let index = 0; index < width; index++) value = value * 256 + data[position + index];
  return value;
}

function decodeStreamEntry(data: Uint8Array, position: number, widths: [number, number, number]): CrossReferenceEntry {
  const type = readField(data, position, widths[0], 1);
  const second = readField(data, position + widths[0], widths[1], 0);
  const third = readField(data, position + widths[0] + widths[1], widths[2], 0);
  if (type === 1) return { kind: 'inFile', offset: second, generation: third };
  if (type === 2) return { kind: 'inObjectStream', streamObjectNumber: second, index: third };
  // Type 0 is a free entry; unknown types must be read as references to the null object.
  return FREE_ENTRY;
}

// ---------------------------------------------------------------------------------------------
// Resolving objects, including those packed in object streams
// ---------------------------------------------------------------------------------------------

type ObjectStreamContents = { objectNumbers: number[]; ranges: Array<[number, number]>; data: Uint8Array };

type ObjectReader = {
  file: PdfFile;
  entries: Map<number, CrossReferenceEntry>;
  objectStreams: Map<number, ObjectStreamContents>;
  cachedObjectStreamBytes: number;
  /** Guards against an object stream whose /Length lives inside itself. */
  loadingObjectStreams: Set<number>;
};

async function resolve(reader: ObjectReader, value: PdfValue): Promise<PdfValue> {
  let current = value;
  for (let hops = 0; isReference(current); hops++) {
    if (hops >= MAX_REFERENCE_CHAIN) invalid('a chain of indirect references is too long');
    current = await loadObject(reader, current);
  }
  return current;
}

async function loadObject(reader: ObjectReader, reference: PdfReference): Promise<PdfValue> {
  const entry = reader.entries.get(reference.objectNumber) ?? FREE_ENTRY;
  // The spec defines a reference to a free or unknown object as a reference to null.
  if (entry.kind === 'free') return null;
  if (entry.kind === 'inObjectStream') {
    if (reference.generation !== 0) return null;
    return loadFromObjectStream(reader, entry.streamObjectNumber, entry.index, reference.objectNumber);
  }
  if (entry.generation !== reference.generation) return null;
  const object = await readIndirectObject(reader.file, entry.offset);
  if (object.objectNumber !== reference.objectNumber || object.generation !== reference.generation) {
    invalid(`the xref entry for object ${reference.objectNumber} points at object ${object.objectNumber} ${object.generation}`);
  }
  return object.value;
}

async function loadFromObjectStream(reader: ObjectReader, streamObjectNumber: number, index: number, objectNumber: number): Promise<PdfValue> {
  const contents = await loadObjectStream(reader, streamObjectNumber);
  if (contents.objectNumbers[index] !== objectNumber) {
    invalid(`object stream ${streamObjectNumber} does not hold object ${objectNumber} at index ${index}`);
  }
  const [start, end] = contents.ranges[index];
  return parseValue({ bytes: contents.data.subarray(start, end), position: 0, complete: true });
}

async function loadObjectStream(reader: ObjectReader, streamObjectNumber: number): Promise<ObjectStreamContents> {
  const cached = reader.objectStreams.get(streamObjectNumber);
  if (cached) return cached;
  if (reader.loadingObjectStreams.has(streamObjectNumber)) invalid(`object stream ${streamObjectNumber} depends on itself`);
  reader.loadingObjectStreams.add(streamObjectNumber);
  try {
    const contents = await readObjectStream(reader, streamObjectNumber);
    if (reader.cachedObjectStreamBytes + contents.data.length > MAX_CACHED_OBJECT_STREAM_BYTES) {
      reader.objectStreams.clear();
      reader.cachedObjectStreamBytes = 0;
    }
    reader.objectStreams.set(streamObjectNumber, contents);
    reader.cachedObjectStreamBytes += contents.data.length;
    return contents;
  } finally {
    reader.loadingObjectStreams.delete(streamObjectNumber);
  }
}

async function readObjectStream(reader: ObjectReader, streamObjectNumber: number): Promise<ObjectStreamContents> {
  const entry = reader.entries.get(streamObjectNumber);
  // Object streams cannot themselves be compressed (and generation is always 0 for them).
  if (!entry || entry.kind !== 'inFile') return invalid(`object stream ${streamObjectNumber} is not a top-level object`);
  const object = await readIndirectObject(reader.file, entry.offset);
  const dictionary = object.value;
  if (object.objectNumber !== streamObjectNumber || !isDictionary(dictionary) || !isName(dictionaryValue(dictionary, 'Type'), 'ObjStm')) {
    return invalid(`object ${streamObjectNumber} is not an object stream`);
  }
  const data = await readStreamData(reader.file, object, (value) => resolve(reader, value));
  const count = requireNonNegativeInteger(await resolve(reader, dictionaryValue(dictionary, 'N')), 'the object stream /N');
  const first = requireNonNegativeInteger(await resolve(reader, dictionaryValue(dictionary, 'First')), 'the object stream /First');
  if (first > data.length) invalid(`object stream ${streamObjectNumber} has /First beyond its data`);
  const header: Cursor = { bytes: data.subarray(0, first), position: 0, complete: true };
  const objectNumbers: number[] = [];
  const offsets: number[] = [];
  for (let index = 0; index < count; index++) {
    objectNumbers.push(expectInteger(header, 'an object number in the object stream header'));
    offsets.push(first + expectInteger(header, 'an offset in the object stream header'));
  }
  // Each object is parsed within its own byte range, so it can never run into the next one.
  const ranges = offsets.map((start, index): [number, number] => [start, offsets[index + 1] ?? data.length]);
  if (ranges.some(([start, end]) => start > end || end > data.length)) invalid(`object stream ${streamObjectNumber} has inconsistent offsets`);
  return { objectNumbers, ranges, data };
}

// ---------------------------------------------------------------------------------------------
// Page tree
// ---------------------------------------------------------------------------------------------

type PageBox = [number, number, number, number];

/** The inheritable page attributes we report on, as they stand at one node of the tree. */
type InheritedPageAttributes = { mediaBox?: PageBox; cropBox?: PageBox; rotation?: number };

type PendingPageTreeNode = { reference: PdfValue; inherited: InheritedPageAttributes };

/**
 * Walks the tree depth-first in document order with an explicit stack, so a deep tree cannot
 * overflow the call stack. /Count is ignored: the leaves found are the truth.
 */
async function collectPages(reader: ObjectReader, pagesRoot: PdfValue, contents: PdfValue[]): Promise<PdfPage[]> {
  const pages: PdfPage[] = [];
  const visited = new Set<number>();
  const pending: PendingPageTreeNode[] = [{ reference: pagesRoot, inherited: {} }];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const { reference, inherited } = next;
    if (!isReference(reference)) invalid('page tree nodes must be indirect objects');
    if (visited.has(reference.objectNumber)) invalid(`the page tree reaches object ${reference.objectNumber} twice`);
    visited.add(reference.objectNumber);
    if (visited.size > MAX_PAGE_TREE_NODES) invalid('the page tree has too many nodes');
    const node = await resolve(reader, reference);
    if (!isDictionary(node)) invalid(`page tree node ${reference.objectNumber} is not a dictionary`);
    const attributes = await inheritPageAttributes(reader, node, inherited);
    if (pageTreeNodeKind(node, reference.objectNumber) === 'Pages') {
      const kids = await resolve(reader, dictionaryValue(node, 'Kids'));
      if (!Array.isArray(kids)) invalid(`page tree node ${reference.objectNumber} has no /Kids array`);
      for (let index = kids.length - 1; index >= 0; index--) pending.push({ reference: kids[index], inherited: attributes });
    } else {
      pages.push(measurePage(attributes, reference.objectNumber));
      contents.push(dictionaryValue(node, 'Contents'));
      if (pages.length > MAX_PAGES) invalid(`the document has more than ${MAX_PAGES} pages`);
    }
  }
  return pages;
}

/** Some writers omit /Type in the page tree; /Kids then tells an inner node from a page. */
function pageTreeNodeKind(node: PdfDictionary, objectNumber: number): 'Pages' | 'Page' {
  const type = dictionaryValue(node, 'Type');
  if (isName(type, 'Pages') || isName(type, 'Page')) return type.value as 'Pages' | 'Page';
  if (type !== null) invalid(`page tree node ${objectNumber} has an unexpected /Type`);
  return node.entries.has('Kids') ? 'Pages' : 'Page';
}

async function inheritPageAttributes(reader: ObjectReader, node: PdfDictionary, inherited: InheritedPageAttributes): Promise<InheritedPageAttributes> {
  return {
    mediaBox: (await readPageBox(reader, node, 'MediaBox')) ?? inherited.mediaBox,
    cropBox: (await readPageBox(reader, node, 'CropBox')) ?? inherited.cropBox,
    rotation: (await readRotation(reader, node)) ?? inherited.rotation,
  };
}

async function readPageBox(reader: ObjectReader, node: PdfDictionary, key: string): Promise<PageBox | undefined> {
  const value = await resolve(reader, dictionaryValue(node, key));
  if (value === null) return undefined;
  if (!Array.isArray(value) || value.length !== 4) return invalid(`/${key} must be an array of four numbers`);
  const box: number[] = [];
  for (const item of value) {
    const coordinate = await resolve(reader, item);
    if (typeof coordinate !== 'number') invalid(`/${key} must be an array of four numbers`);
    box.push(coordinate);
  }
  return box as PageBox;
}

async function readRotation(reader: ObjectReader, node: PdfDictionary): Promise<number | undefined> {
  const value = await resolve(reader, dictionaryValue(node, 'Rotate'));
  if (value === null) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value % 90 !== 0) invalid('/Rotate must be a multiple of 90');
  return ((value % 360) + 360) % 360;
}

function measurePage(attributes: InheritedPageAttributes, objectNumber: number): PdfPage {
  if (!attributes.mediaBox) invalid(`page ${objectNumber} has no /MediaBox, neither its own nor inherited`);
  // ISO 32000 §14.11.2: the CropBox is intersected with the MediaBox; one that misses it
  // entirely is ignored (what viewers, and the renderer, show is then the MediaBox).
  const normal = ([x1, y1, x2, y2]: PageBox) => [Math.min(x1, x2), Math.min(y1, y2), Math.max(x1, x2), Math.max(y1, y2)] as const;
  const media = normal(attributes.mediaBox);
  let [left, bottom, right, top] = media;
  if (attributes.cropBox) {
    const crop = normal(attributes.cropBox);
    const clipped = [Math.max(media[0], crop[0]), Math.max(media[1], crop[1]), Math.min(media[2], crop[2]), Math.min(media[3], crop[3])] as const;
    if (clipped[2] > clipped[0] && clipped[3] > clipped[1]) [left, bottom, right, top] = clipped;
  }
  const width = roundToHundredths(right - left);
  const height = roundToHundredths(top - bottom);
  if (width === 0 || height === 0) invalid(`page ${objectNumber} has an empty page box`);
  const rotation = attributes.rotation ?? 0;
  // Sizes are reported as displayed: a quarter turn puts the long side the other way.
  const quarterTurn = rotation === 90 || rotation === 270;
  return quarterTurn ? { width: height, height: width, rotation } : { width, height, rotation };
}

function roundToHundredths(value: number): number {
  return Math.round(value * 100) / 100;
}

// ---------------------------------------------------------------------------------------------
// Inflated bytes
// ---------------------------------------------------------------------------------------------

/** Records that the stream whose data starts at `streamDataOffset` inflates to `bytes`; refuses the file past the limit. */
function chargeInflated(file: PdfFile, streamDataOffset: number, bytes: number, what: string): void {
  const counted = file.inflated.byStream.get(streamDataOffset) ?? 0;
  if (bytes <= counted) return;
  file.inflated.byStream.set(streamDataOffset, bytes);
  file.inflated.total += bytes - counted;
  if (file.inflated.total > PDF_INFLATED_BYTES_LIMIT) {
    tooComplex(`its streams inflate to more than ${PDF_INFLATED_BYTES_LIMIT} bytes (passed at ${what})`);
  }
}

/** How many more bytes the stream at `streamDataOffset` may inflate to before the file is over the limit. */
function inflatedAllowance(file: PdfFile, streamDataOffset: number): number {
  return PDF_INFLATED_BYTES_LIMIT - file.inflated.total + (file.inflated.byStream.get(streamDataOffset) ?? 0);
}

class InflatedPastAllowance extends Error {}

/**
 * What the bytes `start`..`end` of the file inflate to through `stages` FlateDecode filters,
 * counted and dropped as they come, stopping once past `allowance`. Damaged or cut-off data
 * counts for what inflates before the damage (pdf-lib's decoder keeps that much too).
 */
async function inflatedSize(file: PdfFile, start: number, end: number, stages: number, allowance: number): Promise<number> {
  if (stages === 0) return end - start;
  if (stages === 1 && end - start <= SMALL_ENCODED_STREAM_LENGTH) {
    try {
      return inflateSync(await readBytes(file, start, end - start), { maxOutputLength: Math.max(1, allowance + 1), finishFlush: zlibConstants.Z_SYNC_FLUSH }).length;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') return allowance + 1;
      // Damaged data: counted below, up to the damage.
    }
  }
  let counted = 0;
  async function* encoded() {
    for (let position = start; position < end; position += INFLATE_CHUNK_LENGTH) yield await readBytes(file, position, Math.min(INFLATE_CHUNK_LENGTH, end - position));
  }
  const inflaters = Array.from({ length: stages }, () => createInflate({ chunkSize: INFLATE_CHUNK_LENGTH, finishFlush: zlibConstants.Z_SYNC_FLUSH }));
  const counter = new Writable({
    write(chunk: Buffer, _encoding, done) {
      counted += chunk.length;
      done(counted > allowance ? new InflatedPastAllowance() : null);
    },
  });
  try {
    await pipeline(encoded(), ...(inflaters as [ReturnType<typeof createInflate>]), counter);
  } catch (error) {
    if (error instanceof Error && 'syscall' in error) throw error;
    // Past the allowance, or damaged data: what came out so far is the count.
  }
  return counted;
}

/** The filters of a stream, when they are names (directly or by reference); undefined otherwise. */
async function filterNames(reader: ObjectReader, value: PdfValue): Promise<string[] | undefined> {
  const resolved = await resolve(reader, value);
  const list = resolved === null ? [] : Array.isArray(resolved) ? resolved : [resolved];
  const names: string[] = [];
  for (const item of list) {
    const filter = await resolve(reader, item);
    if (!isName(filter)) return undefined;
    names.push(filter.value);
  }
  return names;
}

const isFlate = (name: string) => name === 'FlateDecode' || name === 'Fl';

/** `work`'s answer, or undefined when what it reads is malformed; other refusals (too complex) stand. */
async function unlessInvalid<T>(work: Promise<T>): Promise<T | undefined> {
  try {
    return await work;
  } catch (error) {
    if (error instanceof PdfInspectionError && error.reason === 'invalid') return undefined;
    throw error;
  }
}

// The pass over the whole file. pdf-lib (PDFParser) reads a file from start to end, every
// "n g obj" it meets, and inflates each object stream and xref stream it finds, whether or not the
// cross-reference names it: so the same objects are looked for here the same way, and where this
// and pdf-lib may disagree, this finds more, never fewer.

type ScanWindow = { start: number; bytes: Buffer; complete: boolean };

type StreamDictionary = { type: PdfValue | undefined; filter: PdfValue | undefined; length: PdfValue | undefined };

type ScanStep =
  | { kind: 'end' }
  | { kind: 'progress' }
  | { kind: 'stream'; objectNumber: number; dictionary: StreamDictionary; dataStart: number };

const DIGIT_0 = 0x30;
const DIGIT_9 = 0x39;

function isDigit(byte: number): boolean {
  return byte >= DIGIT_0 && byte <= DIGIT_9;
}

function hasBytes(cursor: Cursor, count: number): boolean {
  if (cursor.position + count <= cursor.bytes.length) return true;
  if (cursor.complete) return false;
  throw new WindowExhausted('window exhausted');
}

function matchesBytes(cursor: Cursor, text: string): boolean {
  if (!hasBytes(cursor, text.length)) return false;
  for (let index = 0; index < text.length; index++) if (cursor.bytes[cursor.position + index] !== text.charCodeAt(index)) return false;
  return true;
}

/** pdf-lib's reading of an object header: digits, white space or comments, digits, white space or comments, "obj". */
function tryObjectHeader(cursor: Cursor): number | undefined {
  const start = cursor.position;
  const digits = () => {
    const from = cursor.position;
    while (hasBytes(cursor, 1) && isDigit(cursor.bytes[cursor.position])) cursor.position++;
    return cursor.position > from ? Number(latin1(cursor.bytes, from, cursor.position)) : undefined;
  };
  const objectNumber = digits();
  skipWhitespaceAndComments(cursor);
  if (!hasBytes(cursor, 1) || digits() === undefined) return void (cursor.position = start);
  skipWhitespaceAndComments(cursor);
  if (!matchesBytes(cursor, 'obj')) return void (cursor.position = start);
  cursor.position += 3;
  return objectNumber;
}

/**
 * Moves past one value without building it (names, numbers and keywords as one token, strings,
 * arrays and dictionaries with what they hold). Lenient: a stray delimiter is one token.
 */
function skipValue(cursor: Cursor, depth = 0): void {
  if (depth > MAX_NESTING_DEPTH) invalid('objects are nested too deeply');
  skipWhitespaceAndComments(cursor);
  if (!hasBytes(cursor, 1)) return;
  const { bytes } = cursor;
  const byte = bytes[cursor.position];
  if (byte === LESS_THAN && hasBytes(cursor, 2) && bytes[cursor.position + 1] === LESS_THAN) {
    cursor.position += 2;
    for (;;) {
      skipWhitespaceAndComments(cursor);
      if (!hasBytes(cursor, 1)) return;
      if (bytes[cursor.position] === GREATER_THAN) {
        cursor.position += hasBytes(cursor, 2) && bytes[cursor.position + 1] === GREATER_THAN ? 2 : 1;
        return;
      }
      skipValue(cursor, depth + 1);
    }
  }
  if (byte === LEFT_BRACKET) {
    cursor.position++;
    for (;;) {
      skipWhitespaceAndComments(cursor);
      if (!hasBytes(cursor, 1)) return;
      if (bytes[cursor.position] === RIGHT_BRACKET) return void cursor.position++;
      skipValue(cursor, depth + 1);
    }
  }
  if (byte === LEFT_PARENTHESIS) {
    cursor.position++;
    for (let nesting = 1; nesting > 0 && hasBytes(cursor, 1); ) {
      const next = bytes[cursor.position++];
      if (next === BACKSLASH) cursor.position++;
      else if (next === LEFT_PARENTHESIS) nesting++;
      else if (next === RIGHT_PARENTHESIS) nesting--;
    }
    return;
  }
  if (byte === LESS_THAN) {
    while (hasBytes(cursor, 1) && bytes[cursor.position] !== GREATER_THAN) cursor.position++;
    cursor.position++;
    return;
  }
  if (byte === SOLIDUS) cursor.position++;
  const start = cursor.position;
  while (hasBytes(cursor, 1) && isRegular(bytes[cursor.position])) cursor.position++;
  if (cursor.position === start) cursor.position++;
}

/** The first bytes of /Type, /Filter and /Length, also written with a #xx escape. */
const KEY_STARTS = new Set([...'TFL#'].map((character) => character.charCodeAt(0)));

/**
 * A dictionary read as pdf-lib reads one, keeping only the entries that say whether pdf-lib will
 * inflate the stream (values it could not parse count as absent: pdf-lib could not use them
 * either). Undefined when it is not a dictionary pdf-lib would accept (a key that is not a name).
 */
function readStreamDictionary(cursor: Cursor): StreamDictionary | undefined {
  const found: StreamDictionary = { type: undefined, filter: undefined, length: undefined };
  cursor.position += 2;
  for (;;) {
    skipWhitespaceAndComments(cursor);
    if (!hasBytes(cursor, 1)) return undefined;
    const byte = cursor.bytes[cursor.position];
    if (byte === GREATER_THAN) {
      cursor.position += hasBytes(cursor, 2) && cursor.bytes[cursor.position + 1] === GREATER_THAN ? 2 : 1;
      return found;
    }
    if (byte !== SOLIDUS) {
      skipValue(cursor);
      return undefined;
    }
    // Only keys that may spell Type, Filter or Length are decoded (a dictionary may hold a
    // million others).
    let key: string | undefined;
    if (!hasBytes(cursor, 2) || !KEY_STARTS.has(cursor.bytes[cursor.position + 1])) {
      skipValue(cursor);
    } else {
      try {
        key = parseName(cursor).value;
      } catch (error) {
        if (!(error instanceof PdfInspectionError && error.reason === 'invalid')) throw error;
        skipValue(cursor);
      }
    }
    const valueStart = cursor.position;
    if (key !== 'Type' && key !== 'Filter' && key !== 'Length') {
      skipValue(cursor);
      continue;
    }
    let value: PdfValue | undefined;
    try {
      value = parseValue(cursor);
    } catch (error) {
      if (!(error instanceof PdfInspectionError && error.reason === 'invalid')) throw error;
      cursor.position = valueStart;
      skipValue(cursor);
    }
    found[key === 'Type' ? 'type' : key === 'Filter' ? 'filter' : 'length'] = value;
  }
}

/**
 * From `cursor` to the next stream object, past anything else (objects that are not streams,
 * xref tables, trailers, junk); or to a place between two items near the end of the window.
 * `safe` is kept at the start of the item being read: where to read on from if the window ends
 * inside it (everything before is done with).
 */
function scanStep(cursor: Cursor, windowStart: number, safe: { position: number }): ScanStep {
  const { bytes } = cursor;
  for (;;) {
    if (!cursor.complete && cursor.position > bytes.length - SCAN_MARGIN) return { kind: 'progress' };
    safe.position = cursor.position;
    skipWhitespaceAndComments(cursor);
    if (cursor.position >= bytes.length) {
      if (cursor.complete) return { kind: 'end' };
      throw new WindowExhausted('window exhausted');
    }
    const start = cursor.position;
    if (!isDigit(bytes[start])) {
      cursor.position++;
      continue;
    }
    const objectNumber = tryObjectHeader(cursor);
    if (objectNumber === undefined) {
      // No header starts anywhere in this run of digits either.
      while (cursor.position < bytes.length && isDigit(bytes[cursor.position])) cursor.position++;
      continue;
    }
    skipWhitespaceAndComments(cursor);
    const isDictionaryNext = hasBytes(cursor, 2) && bytes[cursor.position] === LESS_THAN && bytes[cursor.position + 1] === LESS_THAN;
    if (!isDictionaryNext) {
      skipValue(cursor);
      continue;
    }
    const dictionary = readStreamDictionary(cursor);
    if (dictionary === undefined) continue;
    skipWhitespaceAndComments(cursor);
    if (!matchesBytes(cursor, 'stream')) continue;
    cursor.position += 6;
    // pdf-lib takes "stream" followed by CRLF, CR, LF or nothing.
    if (hasBytes(cursor, 1) && bytes[cursor.position] === CARRIAGE_RETURN) cursor.position++;
    if (hasBytes(cursor, 1) && bytes[cursor.position] === LINE_FEED) cursor.position++;
    return { kind: 'stream', objectNumber, dictionary, dataStart: windowStart + cursor.position };
  }
}

/** Loads the window that starts at `start`, at least `length` long (less only at the end of the file). */
async function loadWindow(file: PdfFile, start: number, length = SCAN_WINDOW_LENGTH): Promise<ScanWindow> {
  const bytes = await readBytes(file, start, length);
  return { start, bytes, complete: start + bytes.length >= file.size };
}

/** The next scan step from `position`: on the current window while it holds enough, else on one read from there. */
async function scanFrom(file: PdfFile, scan: { window: ScanWindow }, position: number): Promise<{ step: ScanStep; end: number }> {
  let length = SCAN_WINDOW_LENGTH;
  for (;;) {
    const { window } = scan;
    const windowEnd = window.start + window.bytes.length;
    if (position >= window.start && (window.complete ? position <= windowEnd : position < windowEnd - SCAN_MARGIN)) {
      const cursor: Cursor = { bytes: window.bytes, position: position - window.start, complete: window.complete };
      const safe = { position: cursor.position };
      try {
        const step = scanStep(cursor, window.start, safe);
        return { step, end: window.start + cursor.position };
      } catch (error) {
        if (!(error instanceof WindowExhausted)) throw error;
      }
      // One item runs past the window: read on from where it starts, in a larger window when
      // it already started this one.
      position = window.start + safe.position;
      if (position === window.start) {
        if (window.bytes.length >= MAX_WINDOW_LENGTH) invalid(`the structure at offset ${position} is larger than ${MAX_WINDOW_LENGTH} bytes`);
        length = Math.min(MAX_WINDOW_LENGTH, window.bytes.length * 4);
      }
    }
    scan.window = await loadWindow(file, position, length);
  }
}

/**
 * Where pdf-lib ends a stream's data: after /Length bytes when /Length is a number written in the
 * dictionary and "endstream" follows there; otherwise at the matching "endstream" (a "stream"
 * met on the way opens one more), or the end of the file.
 */
async function streamDataEnd(file: PdfFile, dataStart: number, length: PdfValue | undefined): Promise<number> {
  if (typeof length === 'number' && Number.isSafeInteger(length) && length >= 0 && dataStart + length <= file.size) {
    const after = await readBytes(file, dataStart + length, STREAM_END_SLACK);
    const cursor: Cursor = { bytes: after, position: 0, complete: true };
    skipWhitespaceAndComments(cursor);
    if (matchesBytes(cursor, 'endstream')) return dataStart + length;
  }
  const keyword = Buffer.from('stream', 'latin1');
  let nesting = 1;
  // Matches starting before `next` are counted; each window starts three bytes earlier, so an
  // "end" before a "stream" is seen, and windows grow, since most streams end soon.
  let next = dataStart;
  for (let windowLength = 64 * 1024; next < file.size; windowLength = Math.min(windowLength * 4, SCAN_WINDOW_LENGTH)) {
    const windowStart = Math.max(dataStart, next - 3);
    const window = await readBytes(file, windowStart, windowLength);
    for (let index = window.indexOf(keyword, next - windowStart); index !== -1; index = window.indexOf(keyword, index + keyword.length)) {
      const isEnd = index >= 3 && window[index - 3] === 0x65 && window[index - 2] === 0x6e && window[index - 1] === 0x64;
      nesting += isEnd ? -1 : 1;
      if (nesting === 0) return windowStart + index - 3;
    }
    if (windowStart + window.length >= file.size) break;
    next = windowStart + window.length - (keyword.length - 1);
  }
  return file.size;
}

/**
 * Counts every cross-reference and object stream in the file, as pdf-lib will inflate them
 * when it loads the file. Only FlateDecode is accepted for them (as for the streams this
 * inspector reads itself): other filters would let them inflate past any count made here.
 */
async function countStructureStreams(reader: ObjectReader): Promise<void> {
  const { file } = reader;
  const scan = { window: await loadWindow(file, 0) };
  let position = 0;
  while (position < file.size) {
    const { step, end } = await scanFrom(file, scan, position);
    position = end;
    if (step.kind === 'end') return;
    if (step.kind === 'progress') continue;
    const type = await unlessInvalid(resolve(reader, step.dictionary.type ?? null));
    const dataEnd = await streamDataEnd(file, step.dataStart, step.dictionary.length);
    if (isName(type, 'ObjStm') || isName(type, 'XRef')) {
      const filters = await unlessInvalid(filterNames(reader, step.dictionary.filter ?? null));
      const what = `${type.value === 'ObjStm' ? 'object' : 'xref'} stream ${step.objectNumber}`;
      if (filters === undefined) invalid(`${what} has a /Filter that is not a name`);
      const other = filters.find((name) => !isFlate(name));
      if (other !== undefined) invalid(`${what} uses /${other}; only FlateDecode is accepted for object and xref streams`);
      chargeInflated(file, step.dataStart, await inflatedSize(file, step.dataStart, dataEnd, filters.length, inflatedAllowance(file, step.dataStart)), what);
    }
    position = Math.max(position, dataEnd);
  }
}

/**
 * Counts the pages' content streams (each once, however many pages share it), found through the
 * cross-reference as a viewer finds them. FlateDecode is inflated; other filters are counted at
 * their stored size (this service never decodes them, and they are rare in content). A content
 * stream this parser cannot read is left out rather than refused: this service never reads page
 * content, and viewers repair what they can.
 */
async function countContentStreams(reader: ObjectReader, contents: PdfValue[]): Promise<void> {
  const { file } = reader;
  const seen = new Set<number>();
  const pending = [...contents];
  for (let value = pending.pop(); value !== undefined; value = pending.pop()) {
    if (Array.isArray(value)) {
      pending.push(...value);
      continue;
    }
    if (!isReference(value) || seen.has(value.objectNumber)) continue;
    seen.add(value.objectNumber);
    const entry = reader.entries.get(value.objectNumber);
    if (entry === undefined || entry.kind === 'free') continue;
    if (entry.kind === 'inObjectStream') {
      // Not a stream (streams cannot be packed), but it may be the array of a page's streams.
      const resolved = await unlessInvalid(resolve(reader, value));
      if (Array.isArray(resolved)) pending.push(...resolved.filter(isReference));
      continue;
    }
    const object = await unlessInvalid(readIndirectObject(file, entry.offset, CONTENT_STREAM_WINDOW_LENGTH));
    if (object === undefined) continue;
    if (Array.isArray(object.value)) pending.push(...object.value.filter(isReference));
    if (object.streamDataOffset === undefined || !isDictionary(object.value)) continue;
    const start = object.streamDataOffset;
    const length = await unlessInvalid(resolve(reader, dictionaryValue(object.value, 'Length')));
    const end = isNonNegativeInteger(length) ? Math.min(file.size, start + length) : await streamDataEnd(file, start, undefined);
    const filters = (await unlessInvalid(filterNames(reader, dictionaryValue(object.value, 'Filter')))) ?? [];
    const stages = filters.length > 0 && filters.every(isFlate) ? filters.length : 0;
    const what = `content stream ${value.objectNumber}`;
    chargeInflated(file, start, await inflatedSize(file, start, end, stages, inflatedAllowance(file, start)), what);
  }
}
