/** What the file's streams inflate to, counted in one pass as pdf-lib reads the file, never kept. */
import { type Transform, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createInflate, inflateSync, constants as zlibConstants } from 'node:zlib';
import { Ascii85Decoder, AsciiHexDecoder } from './ascii-decoders.ts';
import { ContentOperatorCounter, type ContentStatistics } from './content-operators.ts';
import { chargeInflated, type PdfFile, readBytes } from './file.ts';
import {
  BACKSLASH,
  CARRIAGE_RETURN,
  type Cursor,
  dictionaryValue,
  GREATER_THAN,
  isDictionary,
  isName,
  isNonNegativeInteger,
  isReference,
  isRegular,
  LEFT_BRACKET,
  LEFT_PARENTHESIS,
  LESS_THAN,
  LINE_FEED,
  latin1,
  type PdfDictionary,
  type PdfReference,
  type PdfValue,
  parseName,
  parseValue,
  RIGHT_BRACKET,
  RIGHT_PARENTHESIS,
  SOLIDUS,
  skipWhitespaceAndComments,
  WindowExhausted,
} from './lexer.ts';
import {
  CONTENT_STREAM_WINDOW_LENGTH,
  INFLATE_CHUNK_LENGTH,
  invalid,
  MAX_FORM_NESTING,
  MAX_NESTING_DEPTH,
  MAX_PAINTED_NAMES_PER_STREAM,
  MAX_WINDOW_LENGTH,
  PDF_CONTENT_OPERATORS_LIMIT,
  PDF_FORM_PAINTS_LIMIT,
  PDF_INFLATED_BYTES_LIMIT,
  PdfInspectionError,
  SCAN_MARGIN,
  SCAN_WINDOW_LENGTH,
  SMALL_ENCODED_STREAM_LENGTH,
  STREAM_END_SLACK,
  tooComplex,
} from './limits.ts';
import { type ObjectReader, readIndirectObject, resolve } from './objects.ts';
import type { PageContent } from './page-tree.ts';

/** How many more bytes the stream at `streamDataOffset` may inflate to before the file is over the limit. */
function inflatedAllowance(file: PdfFile, streamDataOffset: number): number {
  return PDF_INFLATED_BYTES_LIMIT - file.inflated.total + (file.inflated.byStream.get(streamDataOffset) ?? 0);
}

class InflatedPastAllowance extends Error {}

/** The filters the inspector decodes, in the order they are undone. */
type Decoder = 'flate' | 'hex' | 'ascii85';

function decoderStream(decoder: Decoder): Transform {
  if (decoder === 'hex') return new AsciiHexDecoder();
  if (decoder === 'ascii85') return new Ascii85Decoder();
  return createInflate({ chunkSize: INFLATE_CHUNK_LENGTH, finishFlush: zlibConstants.Z_SYNC_FLUSH });
}

/**
 * What the bytes `start`..`end` of the file decode to through `decoders` (FlateDecode filters
 * and the two ASCII ones),
 * counted and dropped as they come, stopping once past `allowance`. Damaged or cut-off data
 * counts for what inflates before the damage (pdf-lib's decoder keeps that much too). `sink`, when
 * given, sees every inflated chunk first (a content stream's operators are counted there).
 */
async function inflatedSize(file: PdfFile, start: number, end: number, decoders: Decoder[], allowance: number, sink?: (chunk: Uint8Array) => void): Promise<number> {
  if (decoders.length === 0 && sink === undefined) return end - start;
  if (decoders.length === 1 && decoders[0] === 'flate' && end - start <= SMALL_ENCODED_STREAM_LENGTH) {
    try {
      const inflated = inflateSync(await readBytes(file, start, end - start), { maxOutputLength: Math.max(1, allowance + 1), finishFlush: zlibConstants.Z_SYNC_FLUSH });
      sink?.(inflated);
      return inflated.length;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') return allowance + 1;
      if (error instanceof PdfInspectionError) throw error;
      // Damaged data: counted below, up to the damage.
    }
  }
  let counted = 0;
  async function* encoded() {
    for (let position = start; position < end; position += INFLATE_CHUNK_LENGTH) yield await readBytes(file, position, Math.min(INFLATE_CHUNK_LENGTH, end - position));
  }
  const inflaters = decoders.map(decoderStream);
  let refusal: PdfInspectionError | undefined;
  const counter = new Writable({
    write(chunk: Buffer, _encoding, done) {
      counted += chunk.length;
      if (counted > allowance) return done(new InflatedPastAllowance());
      try {
        sink?.(chunk);
      } catch (error) {
        // A refusal stands; anything else ends the stream as damaged data would.
        if (error instanceof PdfInspectionError) refusal = error;
        return done(error instanceof Error ? error : new Error(String(error)));
      }
      done(null);
    },
  });
  try {
    await pipeline(encoded(), ...(inflaters as [Transform]), counter);
  } catch (error) {
    if (error instanceof Error && 'syscall' in error) throw error;
    // Past the allowance, or damaged data: what came out so far is the count.
  }
  if (refusal !== undefined) throw refusal;
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

type ScanStep = { kind: 'end' } | { kind: 'progress' } | { kind: 'stream'; objectNumber: number; dictionary: StreamDictionary; dataStart: number };

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
export async function countStructureStreams(reader: ObjectReader): Promise<void> {
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
      chargeInflated(
        file,
        step.dataStart,
        await inflatedSize(
          file,
          step.dataStart,
          dataEnd,
          filters.map((): Decoder => 'flate'),
          inflatedAllowance(file, step.dataStart),
        ),
        what,
      );
    }
    position = Math.max(position, dataEnd);
  }
}

/** A content stream as the inspector finds it: where its data is and how it is encoded. */
/** `decoders` undefined: encoded in a way the inspector does not decode (`undecodable` says how). */
type ContentStream = { objectNumber: number; dictionary: PdfDictionary; start: number; end: number; decoders: Decoder[] | undefined; undecodable?: string };

const CONTENT_DECODERS = new Map<string, Decoder>([
  ['FlateDecode', 'flate'],
  ['Fl', 'flate'],
  ['ASCIIHexDecode', 'hex'],
  ['AHx', 'hex'],
  ['ASCII85Decode', 'ascii85'],
  ['A85', 'ascii85'],
]);

/** Whether decode parameters (one dictionary, or one per filter) ask for a predictor. */
async function hasPredictor(reader: ObjectReader, value: PdfValue): Promise<boolean> {
  const resolved = await unlessInvalid(resolve(reader, value));
  for (const item of Array.isArray(resolved) ? resolved : [resolved ?? null]) {
    const parameters = await unlessInvalid(resolve(reader, item));
    if (!isDictionary(parameters)) continue;
    const predictor = await unlessInvalid(resolve(reader, dictionaryValue(parameters, 'Predictor')));
    if (typeof predictor === 'number' && predictor > 1) return true;
  }
  return false;
}

/** A stream object in the file (not packed: streams cannot be), or undefined when there is none this parser can read. */
async function readContentStream(reader: ObjectReader, reference: PdfReference): Promise<{ stream?: ContentStream; array?: PdfValue[] } | undefined> {
  const { file } = reader;
  const entry = reader.entries.get(reference.objectNumber);
  if (entry === undefined || entry.kind === 'free') return undefined;
  if (entry.kind === 'inObjectStream') {
    // Not a stream (streams cannot be packed), but it may be the array of a page's streams.
    const resolved = await unlessInvalid(resolve(reader, reference));
    return Array.isArray(resolved) ? { array: resolved } : undefined;
  }
  const object = await unlessInvalid(readIndirectObject(file, entry.offset, CONTENT_STREAM_WINDOW_LENGTH));
  if (object === undefined) return undefined;
  if (Array.isArray(object.value)) return { array: object.value };
  if (object.streamDataOffset === undefined || !isDictionary(object.value)) return undefined;
  const start = object.streamDataOffset;
  const length = await unlessInvalid(resolve(reader, dictionaryValue(object.value, 'Length')));
  const end = isNonNegativeInteger(length) ? Math.min(file.size, start + length) : await streamDataEnd(file, start, undefined);
  const filters = (await unlessInvalid(filterNames(reader, dictionaryValue(object.value, 'Filter')))) ?? [];
  const stream = { objectNumber: reference.objectNumber, dictionary: object.value, start, end };
  // pdf.js decodes every filter (LZW expands thousands to one) and undoes predictors; what the
  // inspector could not decode it could not count, so such content is refused where it is read.
  const other = filters.find((name) => !CONTENT_DECODERS.has(name));
  if (other !== undefined) return { stream: { ...stream, decoders: undefined, undecodable: `/${other}` } };
  if (await hasPredictor(reader, dictionaryValue(object.value, 'DecodeParms'))) return { stream: { ...stream, decoders: undefined, undecodable: 'a /Predictor' } };
  return { stream: { ...stream, decoders: filters.map((name) => CONTENT_DECODERS.get(name)!) } };
}

/** What interpreting a content stream (with everything it paints) costs: operators run and forms or patterns painted. */
type ContentCost = { operators: number; paints: number };

/**
 * Counts what the document's pages cost to interpret, and what their streams inflate to.
 *
 * Every page's content streams, and every form XObject, tiling pattern and soft-mask group (a
 * graphics state's /SMask /G, painted by `gs`) they paint (and those paint), are inflated and their operators counted, each stream once (`statistics`, by object
 * number). What a page costs is then its streams' operators plus, for each resource it paints,
 * the times it paints it multiplied by what that resource costs, worked out once per form and
 * resources (`costs`): a visited bound, so ten forms nested ten deep, each painting the next ten
 * times, are read ten times, not ten billion, while the count says ten billion and is refused.
 * The counts stop at the limits (`PDF_CONTENT_OPERATORS_LIMIT`, `PDF_FORM_PAINTS_LIMIT`), as soon
 * as they are passed. A stream this parser cannot read is left out rather than refused (viewers
 * repair what they can); one painted from itself, or forms nested deeper than `MAX_FORM_NESTING`,
 * are refused. The glyph procedures of a Type 3 font are content streams too (and may paint
 * forms): each font a page selects (`Tf`) is counted once per document, as pdf.js loads it once.
 * Annotation appearances are not counted: nothing in this service interprets them (pdf.js reads
 * tags with annotations left out).
 */
export async function countContentStreams(reader: ObjectReader, pages: PageContent[]): Promise<void> {
  const { file } = reader;
  const statistics = new Map<number, ContentStatistics>();
  const costs = new Map<string, ContentCost>();
  const resourceIds = new WeakMap<object, number>();
  let nextResourceId = 1;
  const total: ContentCost = { operators: 0, paints: 0 };
  /** Different resource names painted, over all the streams counted (each stream's are kept). */
  let paintedNames = 0;
  /** Type 3 fonts whose glyph procedures were counted: once per document, as pdf.js loads a font once. */
  const countedFonts = new Set<string>();

  const resourcesKey = (resources: PdfValue): string => {
    if (isReference(resources)) return `r${resources.objectNumber}`;
    if (resources === null || typeof resources !== 'object') return 'none';
    let id = resourceIds.get(resources);
    if (id === undefined) resourceIds.set(resources, (id = nextResourceId++));
    return `d${id}`;
  };

  const checkLimits = (cost: ContentCost, where: string) => {
    if (cost.operators > PDF_CONTENT_OPERATORS_LIMIT) {
      tooComplex(`its pages run more than ${PDF_CONTENT_OPERATORS_LIMIT} content operators (passed at ${where})`, 'content_operators', PDF_CONTENT_OPERATORS_LIMIT);
    }
    if (cost.paints > PDF_FORM_PAINTS_LIMIT) {
      tooComplex(`its pages paint forms and patterns more than ${PDF_FORM_PAINTS_LIMIT} times (passed at ${where})`, 'form_paints', PDF_FORM_PAINTS_LIMIT);
    }
  };

  /** Inflates and counts one stream once; charges what it inflates to. */
  const statisticsOf = async (stream: ContentStream): Promise<ContentStatistics> => {
    const known = statistics.get(stream.objectNumber);
    if (known !== undefined) return known;
    const what = `content stream ${stream.objectNumber}`;
    const counter = new ContentOperatorCounter(what);
    if (stream.decoders === undefined) {
      tooComplex(`${what} is encoded with ${stream.undecodable}, which this service does not decode to count its operators`, 'content_encoding', undefined);
    }
    const inflated = await inflatedSize(file, stream.start, stream.end, stream.decoders, inflatedAllowance(file, stream.start), (chunk) => counter.write(chunk));
    chargeInflated(file, stream.start, inflated, what);
    const counted = counter.end();
    // What is kept per stream (the names it paints) is bounded over the document too, not only per stream.
    paintedNames += counted.painted.size;
    if (paintedNames > MAX_PAINTED_NAMES_PER_STREAM) {
      tooComplex(`its content streams paint more than ${MAX_PAINTED_NAMES_PER_STREAM} different resources`, 'form_paints', PDF_FORM_PAINTS_LIMIT);
    }
    statistics.set(stream.objectNumber, counted);
    return counted;
  };

  /** What the streams of `contents` cost with what they paint, names looked up in `resources`. */
  const costOf = async (streams: ContentStream[], resources: PdfValue, depth: number, painting: Set<number>): Promise<ContentCost> => {
    const cost: ContentCost = { operators: 0, paints: 0 };
    const resolvedResources = await unlessInvalid(resolve(reader, resources));
    for (const stream of streams) {
      const counted = await statisticsOf(stream);
      cost.operators += counted.operators;
      checkLimits({ operators: total.operators + cost.operators, paints: total.paints + cost.paints }, `content stream ${stream.objectNumber}`);
      for (const [key, times] of counted.painted) {
        const separator = key.indexOf(':');
        const category = key.slice(0, separator);
        const name = key.slice(separator + 1);
        if (category === 'Font') {
          const glyphs = await type3Glyphs(isDictionary(resolvedResources) ? resolvedResources : undefined, name);
          if (glyphs === undefined || countedFonts.has(glyphs.key)) continue;
          countedFonts.add(glyphs.key);
          const inner = await costOf(glyphs.procedures, glyphs.resources ?? resources, depth + 1, painting);
          cost.operators += inner.operators;
          cost.paints += inner.paints;
          checkLimits({ operators: total.operators + cost.operators, paints: total.paints + cost.paints }, `Type 3 font ${name}`);
          continue;
        }
        const target = await paintedStream(isDictionary(resolvedResources) ? resolvedResources : undefined, category, name);
        if (target === undefined) continue;
        const inner = await formCost(target, resources, depth + 1, painting);
        cost.operators += times * inner.operators;
        cost.paints += times * (1 + inner.paints);
        checkLimits({ operators: total.operators + cost.operators, paints: total.paints + cost.paints }, `${category === 'Pattern' ? 'pattern' : 'form'} ${target.objectNumber}`);
      }
    }
    return cost;
  };

  /** The form XObject or tiling pattern a name stands for in `resources`, when it is one. */
  const paintedStream = async (resources: PdfDictionary | undefined, category: string, name: string): Promise<ContentStream | undefined> => {
    if (resources === undefined) return undefined;
    const dictionary = await unlessInvalid(resolve(reader, dictionaryValue(resources, category)));
    if (!isDictionary(dictionary)) return undefined;
    let reference = dictionary.entries.get(name);
    if (category === 'ExtGState') {
      // A graphics state with a soft mask paints the mask's group, a form (/SMask << /G form >>).
      const state = await unlessInvalid(resolve(reader, reference ?? null));
      const mask = isDictionary(state) ? await unlessInvalid(resolve(reader, dictionaryValue(state, 'SMask'))) : null;
      reference = isDictionary(mask) ? mask.entries.get('G') : undefined;
      category = 'XObject';
    }
    if (!isReference(reference)) return undefined;
    const found = await readContentStream(reader, reference);
    const stream = found?.stream;
    if (stream === undefined) return undefined;
    if (category === 'XObject') {
      const subtype = await unlessInvalid(resolve(reader, dictionaryValue(stream.dictionary, 'Subtype')));
      return isName(subtype, 'Form') ? stream : undefined;
    }
    const patternType = await unlessInvalid(resolve(reader, dictionaryValue(stream.dictionary, 'PatternType')));
    return patternType === 1 ? stream : undefined;
  };

  /**
   * The glyph procedures of the Type 3 font a name stands for in `resources` (each a content
   * stream, which may paint forms), with the font's own resources; undefined for other fonts.
   */
  const type3Glyphs = async (resources: PdfDictionary | undefined, name: string): Promise<{ key: string; procedures: ContentStream[]; resources: PdfValue | undefined } | undefined> => {
    if (resources === undefined) return undefined;
    const fonts = await unlessInvalid(resolve(reader, dictionaryValue(resources, 'Font')));
    if (!isDictionary(fonts)) return undefined;
    const reference = fonts.entries.get(name) ?? null;
    const font = await unlessInvalid(resolve(reader, reference));
    if (!isDictionary(font) || !isName(await unlessInvalid(resolve(reader, dictionaryValue(font, 'Subtype'))), 'Type3')) return undefined;
    const charProcs = await unlessInvalid(resolve(reader, dictionaryValue(font, 'CharProcs')));
    const procedures: ContentStream[] = [];
    if (isDictionary(charProcs)) {
      for (const value of charProcs.entries.values()) {
        if (!isReference(value)) continue;
        const stream = (await readContentStream(reader, value))?.stream;
        if (stream !== undefined) procedures.push(stream);
      }
    }
    return { key: isReference(reference) ? `r${reference.objectNumber}` : resourcesKey(font), procedures, resources: font.entries.get('Resources') };
  };

  /** What one form (or tiling pattern) costs each time it is painted, worked out once per form and resources. */
  const formCost = async (form: ContentStream, inheritedResources: PdfValue, depth: number, painting: Set<number>): Promise<ContentCost> => {
    if (painting.has(form.objectNumber)) tooComplex(`form ${form.objectNumber} paints itself`, 'form_nesting', MAX_FORM_NESTING);
    if (depth > MAX_FORM_NESTING) tooComplex(`forms are nested more than ${MAX_FORM_NESTING} deep (at form ${form.objectNumber})`, 'form_nesting', MAX_FORM_NESTING);
    // A form without resources of its own uses those of what paints it (PDF 1.1 files do this).
    const own = form.dictionary.entries.get('Resources');
    const resources = own ?? inheritedResources;
    const key = own === undefined ? `${form.objectNumber}@${resourcesKey(inheritedResources)}` : `${form.objectNumber}`;
    const known = costs.get(key);
    if (known !== undefined) return known;
    painting.add(form.objectNumber);
    try {
      const cost = await costOf([form], resources, depth, painting);
      costs.set(key, cost);
      return cost;
    } finally {
      painting.delete(form.objectNumber);
    }
  };

  /** A page's /Contents as its streams, in order (a stream, or an array of them, directly or by reference). */
  const pageStreams = async (contents: PdfValue): Promise<ContentStream[]> => {
    const streams: ContentStream[] = [];
    const seen = new Set<number>();
    // A stack, each array pushed last item first, so the streams come out in order.
    const pending: PdfValue[] = [contents];
    const pushAll = (values: PdfValue[]) => {
      for (let index = values.length - 1; index >= 0; index--) pending.push(values[index]!);
    };
    for (let value = pending.pop(); value !== undefined; value = pending.pop()) {
      if (Array.isArray(value)) {
        pushAll(value);
        continue;
      }
      if (!isReference(value) || seen.has(value.objectNumber)) continue;
      seen.add(value.objectNumber);
      const found = await readContentStream(reader, value);
      if (found?.array !== undefined) pushAll(found.array.filter(isReference));
      if (found?.stream !== undefined) streams.push(found.stream);
    }
    return streams;
  };

  for (const page of pages) {
    const cost = await costOf(await pageStreams(page.contents), page.resources, 0, new Set());
    total.operators += cost.operators;
    total.paints += cost.paints;
  }
}
