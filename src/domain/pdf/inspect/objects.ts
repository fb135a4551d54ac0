/** Indirect objects and their streams, and resolving references, including objects packed in object streams. */
import { inflateSync } from 'node:zlib';
import { chargeInflated, type PdfFile, parseWithGrowingWindow, readBytes } from './file.ts';
import {
  byteAhead,
  CARRIAGE_RETURN,
  type Cursor,
  dictionaryValue,
  expectInteger,
  expectKeyword,
  expectToken,
  isDictionary,
  isName,
  isNonNegativeInteger,
  isReference,
  LINE_FEED,
  type PdfDictionary,
  type PdfReference,
  type PdfValue,
  parseValue,
  requireNonNegativeInteger,
  WindowExhausted,
} from './lexer.ts';
import { invalid, MAX_CACHED_OBJECT_STREAM_BYTES, MAX_DECODED_STREAM_LENGTH, MAX_ENCODED_STREAM_LENGTH, MAX_REFERENCE_CHAIN, PdfInspectionError, STREAM_END_SLACK } from './limits.ts';

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

export function readIndirectObject(file: PdfFile, offset: number, initialWindowLength?: number): Promise<IndirectObject> {
  return parseWithGrowingWindow(file, offset, (cursor) => parseIndirectObject(cursor, offset), initialWindowLength);
}

export type ValueResolver = (value: PdfValue) => Promise<PdfValue>;

/** Reads and decodes a stream's data; used only for xref streams and object streams. */
export async function readStreamData(file: PdfFile, object: IndirectObject, resolveValue: ValueResolver): Promise<Uint8Array> {
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
// Resolving objects, including those packed in object streams
// ---------------------------------------------------------------------------------------------

type ObjectStreamContents = { objectNumbers: number[]; ranges: Array<[number, number]>; data: Uint8Array };

export type ObjectReader = {
  file: PdfFile;
  entries: Map<number, CrossReferenceEntry>;
  objectStreams: Map<number, ObjectStreamContents>;
  cachedObjectStreamBytes: number;
  /** Guards against an object stream whose /Length lives inside itself. */
  loadingObjectStreams: Set<number>;
};

export async function resolve(reader: ObjectReader, value: PdfValue): Promise<PdfValue> {
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

/** Shared, since free entries carry nothing we use and can be numerous. */
export const FREE_ENTRY: CrossReferenceEntry = { kind: 'free' };

// ---------------------------------------------------------------------------------------------
// Cross-reference sections
// ---------------------------------------------------------------------------------------------

export type CrossReferenceEntry =
  | { readonly kind: 'free' }
  | { readonly kind: 'inFile'; readonly offset: number; readonly generation: number }
  | { readonly kind: 'inObjectStream'; readonly streamObjectNumber: number; readonly index: number };
