/** The cross-reference sections (tables and streams) and the trailer chain that locate every object. */

import { type PdfFile, parseWithGrowingWindow, readBytes } from './file.ts';
import {
  type Cursor,
  dictionaryValue,
  expectInteger,
  expectKeyword,
  expectToken,
  isDictionary,
  isName,
  isNonNegativeInteger,
  isReference,
  isWhitespace,
  type PdfDictionary,
  type PdfValue,
  parseValue,
  requireNonNegativeInteger,
  skipWhitespaceAndComments,
  tryReadToken,
} from './lexer.ts';
import { invalid, MAX_CROSS_REFERENCE_SECTIONS, MAX_OBJECT_NUMBER, TAIL_LENGTH } from './limits.ts';
import { type CrossReferenceEntry, FREE_ENTRY, readIndirectObject, readStreamData, type ValueResolver } from './objects.ts';

type CrossReferenceSection = { entries: Map<number, CrossReferenceEntry>; trailer: PdfDictionary };

/** Finds the offset after the last `startxref`, refusing files whose end is missing or damaged. */
export async function locateNewestCrossReferenceSection(file: PdfFile): Promise<number> {
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
export async function readCrossReferenceChain(file: PdfFile, newestOffset: number): Promise<CrossReferenceSection> {
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
