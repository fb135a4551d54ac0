/*
 * JSON text from PostgreSQL as JavaScript's `JSON.stringify(JSON.parse(text))` would write it,
 * without building the value: the REST face splices the read model's `::text` answers into its
 * body instead of parsing and writing them again (docs/decisions.md, "Reads straight on pg").
 * PostgreSQL writes rows compactly (`to_json`), but stored `jsonb` (contexts, field values) with a
 * space after each `:` and `,`, and `json_agg` puts `, \n ` between a list's elements (every
 * answer with a list of documents, recipients or fields); that whitespace is dropped here.
 * Whatever the scan cannot vouch for (a number JavaScript would write differently, an escape it
 * would write differently, a key that looks like an array index, which JavaScript moves to the
 * front of its object) answers null, and the caller parses and writes the text as before.
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const SPACE = 0x20;
const NEWLINE = 0x0a;
const COLON = 0x3a;

/** Whitespace PostgreSQL writes between tokens: jsonb's spaces and `json_agg`'s `, \n `. */
function isBetweenTokens(code: number): boolean {
  return code === SPACE || code === NEWLINE;
}

/**
 * Numbers JavaScript writes back as they are: no exponent, no trailing zero after a point, not
 * `-0`, not below 1e-6 (written with an exponent), and at most 15 significant digits (any such
 * decimal is the shortest text of the double nearest to it).
 */
const PLAIN_NUMBER = /^-?(?:0\.(?!0{6})\d{0,14}[1-9]|[1-9]\d*(?:\.\d*[1-9])?|0)$/;

function isPlainNumber(token: string): boolean {
  if (!PLAIN_NUMBER.test(token) || token === '-0') return false;
  const digits = token.replace(/^-?0?\.?0*/, '').replace('.', '');
  return digits.length <= 15;
}
/** Escapes JSON.stringify writes the same way (PostgreSQL's `\u00XX` is lower case, as JavaScript's). */
const SAME_ESCAPE = /^\\(?:["\\bfnrt]|u00[01][0-9a-f])$/;
/** A key that is an array index: JavaScript orders such keys first, ascending. */
const INDEX_KEY = /^"(?:0|[1-9]\d*)"$/;

export function canonicalJson(text: string): string | null {
  let out = '';
  let copiedTo = 0;
  const length = text.length;
  let index = 0;
  while (index < length) {
    const code = text.charCodeAt(index);
    if (code === QUOTE) {
      const start = index;
      index += 1;
      for (;;) {
        if (index >= length) return null;
        const inner = text.charCodeAt(index);
        if (inner === QUOTE) break;
        if (inner === BACKSLASH) {
          const escape = text.charCodeAt(index + 1) === 0x75 ? text.slice(index, index + 6) : text.slice(index, index + 2);
          if (!SAME_ESCAPE.test(escape)) return null;
          index += escape.length;
          continue;
        }
        // A pair is written as it is; a lone surrogate JSON.stringify would escape (PostgreSQL cannot store one).
        if (inner >= 0xd800 && inner <= 0xdfff) {
          const low = text.charCodeAt(index + 1);
          if (inner > 0xdbff || !(low >= 0xdc00 && low <= 0xdfff)) return null;
          index += 2;
          continue;
        }
        index += 1;
      }
      index += 1;
      // A key: the next character that is not whitespace is a colon.
      let next = index;
      while (isBetweenTokens(text.charCodeAt(next))) next += 1;
      const first = text.charCodeAt(start + 1);
      if (first >= 0x30 && first <= 0x39 && text.charCodeAt(next) === COLON && INDEX_KEY.test(text.slice(start, index))) return null;
      continue;
    }
    if (isBetweenTokens(code)) {
      out += text.slice(copiedTo, index);
      index += 1;
      copiedTo = index;
      continue;
    }
    if (code === 0x2d || (code >= 0x30 && code <= 0x39)) {
      const start = index;
      let digitsOnly = code !== 0x2d;
      index += 1;
      while (index < length) {
        const inner = text.charCodeAt(index);
        if (inner === 0x2c || inner === 0x7d || inner === 0x5d || isBetweenTokens(inner)) break;
        if (inner < 0x30 || inner > 0x39) digitsOnly = false;
        index += 1;
      }
      // Most numbers are small counts and positions: no need to look closer.
      const plainCount = digitsOnly && index - start <= 15 && (index - start === 1 || code !== 0x30);
      if (!plainCount && !isPlainNumber(text.slice(start, index))) return null;
      continue;
    }
    // Structure, `true`, `false`, `null`; anything else (a tab, a carriage return) is not PostgreSQL's output.
    if (code < SPACE) return null;
    index += 1;
  }
  return copiedTo === 0 ? text : out + text.slice(copiedTo);
}
