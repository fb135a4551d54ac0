/** The PDF object model and its tokenizer: values parsed from a window of bytes, never the whole file. */
import { invalid, MAX_NESTING_DEPTH } from './limits.ts';

// ---------------------------------------------------------------------------------------------
// Object model and tokenizer
// ---------------------------------------------------------------------------------------------

type PdfName = { readonly kind: 'name'; readonly value: string };
type PdfString = { readonly kind: 'string'; readonly bytes: Uint8Array };
export type PdfReference = { readonly kind: 'reference'; readonly objectNumber: number; readonly generation: number };
export type PdfDictionary = { readonly kind: 'dictionary'; readonly entries: Map<string, PdfValue> };
export type PdfValue = null | boolean | number | PdfName | PdfString | PdfReference | PdfDictionary | PdfValue[];

/**
 * `complete` says the bytes run to the true end of the data (end of file, or a whole decoded
 * object stream), so running out is an error rather than a reason to read a larger window.
 */
export type Cursor = { bytes: Uint8Array; position: number; complete: boolean };

/** Internal signal: the parse needs bytes beyond the current window. */
export class WindowExhausted extends Error {}

function outOfData(cursor: Cursor): never {
  if (cursor.complete) invalid('unexpected end of data');
  throw new WindowExhausted('window exhausted');
}

export const LINE_FEED = 0x0a;
export const CARRIAGE_RETURN = 0x0d;
const PERCENT = 0x25;
export const SOLIDUS = 0x2f;
export const BACKSLASH = 0x5c;
const NUMBER_SIGN = 0x23;
export const LEFT_PARENTHESIS = 0x28;
export const RIGHT_PARENTHESIS = 0x29;
export const LESS_THAN = 0x3c;
export const GREATER_THAN = 0x3e;
export const LEFT_BRACKET = 0x5b;
export const RIGHT_BRACKET = 0x5d;
const DELIMITERS = new Set([...'()<>[]{}/%'].map((character) => character.charCodeAt(0)));

const NUMBER_PATTERN = /^[+-]?(?:\d+\.?\d*|\.\d+)$/;
const UNSIGNED_INTEGER_PATTERN = /^\d+$/;

export function isWhitespace(byte: number): boolean {
  return byte === 0x20 || byte === LINE_FEED || byte === CARRIAGE_RETURN || byte === 0x09 || byte === 0x0c || byte === 0x00;
}

export function isRegular(byte: number): boolean {
  return !isWhitespace(byte) && !DELIMITERS.has(byte);
}

function hexDigitValue(byte: number): number {
  if (byte >= 0x30 && byte <= 0x39) return byte - 0x30;
  if (byte >= 0x41 && byte <= 0x46) return byte - 0x41 + 10;
  if (byte >= 0x61 && byte <= 0x66) return byte - 0x61 + 10;
  return -1;
}

export function latin1(bytes: Uint8Array, start: number, end: number): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset + start, end - start).toString('latin1');
}

export function skipWhitespaceAndComments(cursor: Cursor): void {
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

export function byteAhead(cursor: Cursor, distance: number): number {
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

export function expectToken(cursor: Cursor, pattern: RegExp, description: string): string {
  skipWhitespaceAndComments(cursor);
  if (cursor.position >= cursor.bytes.length) outOfData(cursor);
  const token = readRegularToken(cursor);
  if (!pattern.test(token)) invalid(`expected ${description}, found "${token.slice(0, 20)}"`);
  return token;
}

export function expectInteger(cursor: Cursor, description: string): number {
  return Number(expectToken(cursor, UNSIGNED_INTEGER_PATTERN, description));
}

export function expectKeyword(cursor: Cursor, keyword: string): void {
  expectToken(cursor, new RegExp(`^${keyword}$`), `"${keyword}"`);
}

/** Looks for a token matching `pattern` without consuming anything when there is none. */
export function tryReadToken(cursor: Cursor, pattern: RegExp): string | undefined {
  skipWhitespaceAndComments(cursor);
  if (cursor.position >= cursor.bytes.length) {
    if (cursor.complete) return undefined;
    throw new WindowExhausted('window exhausted');
  }
  const token = readRegularToken(cursor);
  return pattern.test(token) ? token : undefined;
}

export function parseValue(cursor: Cursor, depth = 0): PdfValue {
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

export function parseName(cursor: Cursor): PdfName {
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

export function isDictionary(value: PdfValue | undefined): value is PdfDictionary {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && value.kind === 'dictionary';
}

export function isReference(value: PdfValue | undefined): value is PdfReference {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && value.kind === 'reference';
}

export function isName(value: PdfValue | undefined, expected?: string): value is PdfName {
  if (typeof value !== 'object' || value === null || Array.isArray(value) || value.kind !== 'name') return false;
  return expected === undefined || value.value === expected;
}

export function isNonNegativeInteger(value: PdfValue | undefined): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

/** A missing key and an explicit null mean the same thing in PDF. */
export function dictionaryValue(dictionary: PdfDictionary, key: string): PdfValue {
  return dictionary.entries.get(key) ?? null;
}

export function requireNonNegativeInteger(value: PdfValue, description: string): number {
  if (!isNonNegativeInteger(value)) invalid(`${description} must be a non-negative integer`);
  return value;
}
