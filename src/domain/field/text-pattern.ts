import { RE2JS } from 're2js';

/**
 * A text field's `config.pattern`, matched on a linear-time engine.
 *
 * JavaScript's RegExp backtracks: `(a+)+b` against 32 `a`s took 23 s, and matching runs on the
 * event loop, so one pattern stalled every request of every team. Patterns are therefore matched
 * with re2js (RE2's automata: time grows with text length × pattern size, never exponentially).
 *
 * A pattern must be both RE2 syntax and a valid JavaScript regular expression with the `u` flag
 * (what the service promised before), and it is rewritten where the two read the same text
 * differently (`.`, `\s`, `\u` escapes; see toRe2Syntax): patterns accepted so far keep their
 * meaning or are refused with a reason (backreferences, lookaround, long Unicode property names,
 * counts above 1000), and a signing page can still check the same pattern in the browser.
 * RE2's cost per character still grows with the compiled program, faster when many paths run
 * side by side (optional parts, alternatives); so (branches + 1) × steps × `maxLength` is bounded too, which keeps one match within tens of
 * milliseconds even with a cold automaton (every check compiles afresh, see below).
 */

export const patternLimits = {
  /**
   * (branches + 1) × program steps × `maxLength`. Branches bound how many paths run side by side,
   * steps what each costs per character; at this bound one match took at most ~30 ms on the
   * slowest patterns measured, while a 500-character literal still fits `maxLength` 1000.
   */
  maxCost: 25_000_000,
} as const;

export type TextPatternMatcher = { matches(text: string): boolean };

// re2js's instruction codes for a branch (Inst.ALT and Inst.ALT_MATCH in its source).
const BRANCH_OPS = new Set([1, 2]);

/**
 * The matcher for a pattern under a field's `maxLength`, or why the pattern is refused: not valid
 * JavaScript (u flag), not RE2, or too costly. Not cached on purpose: each compiled pattern grows
 * a lazy automaton of up to 8 MB as it matches, and a cache of them would let senders fill the
 * heap; compiling a pattern of at most 500 characters costs well under a millisecond for any
 * ordinary one.
 */
export function compileTextPattern(pattern: string, maxLength: number): { matcher: TextPatternMatcher } | { problem: string } {
  try {
    // Only parsed, never executed: the JavaScript engine is not what matches.
    new RegExp(pattern, 'u');
    new RegExp(`^(?:${pattern})$`, 'u');
  } catch (error) {
    return { problem: `must be a valid JavaScript regular expression (u flag): ${(error as Error).message}` };
  }
  const compiled = compileRe2(pattern);
  if ('problem' in compiled) return compiled;
  const program = compiled.re2.re2Input.prog as { inst: Array<{ op: number }> };
  const steps = program.inst.length;
  const branches = program.inst.reduce((count, instruction) => count + (BRANCH_OPS.has(instruction.op) ? 1 : 0), 0);
  const cost = (branches + 1) * steps * maxLength;
  if (cost > patternLimits.maxCost) {
    return {
      problem:
        `is too complex for maxLength ${maxLength}: it compiles to ${steps} steps with ${branches} branches, and ` +
        `(branches + 1) × steps × maxLength may be at most ${patternLimits.maxCost} (got ${cost}); use smaller counted ` +
        `repetitions such as {1,30}, fewer optional parts, or a lower maxLength`,
    };
  }
  // `matches` is a full match, as `^(?:pattern)$` was: the whole text must match.
  return { matcher: { matches: (text) => compiled.re2.matches(text) } };
}

function compileRe2(pattern: string): { re2: RE2JS } | { problem: string } {
  try {
    return { re2: RE2JS.compile(toRe2Syntax(pattern)) };
  } catch (error) {
    const detail = (error as Error).message.replace(/^error parsing regexp: /, '');
    return {
      problem:
        `must use RE2 syntax, which is matched in linear time: backreferences (\\1, \\k<name>), lookahead and lookbehind ` +
        `((?=, (?!, (?<=, (?<!), long Unicode property names (write \\p{L} or \\p{Script=Greek}, not \\p{Letter}, ` +
        `\\p{Script_Extensions=Greek} or \\p{Alphabetic}) and repetition counts above 1000 are not supported (${detail})`,
    };
  }
}

const unicodeEscape = /u(?:([0-9A-Fa-f]{4})|\{([0-9A-Fa-f]{1,6})\})/y;
const unicodeProperty = /([pP])\{(?:Script|sc|General_Category|gc)=([A-Za-z_]+)\}/y;

// JavaScript's white space (WhiteSpace and LineTerminator); RE2's `\s` is only [\t\n\f\r ].
const javascriptSpaces = '\\t\\n\\x{b}\\f\\r \\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}\\x{202f}\\x{205f}\\x{3000}\\x{feff}';
// What `.` leaves out in JavaScript; RE2's `.` leaves out only \n.
const javascriptLineTerminators = '\\n\\r\\x{2028}\\x{2029}';

/**
 * Rewrites a pattern (already valid JavaScript with the u flag) so that RE2 reads it as
 * JavaScript does, where the two differ on common syntax:
 * - `\uXXXX` and `\u{X…}` (RE2 has no `\u`) become `\x{X…}`; two escapes forming a surrogate
 *   pair are one character under the u flag, so they become one;
 * - `.` excludes \r, U+2028 and U+2029 as well as \n;
 * - `\s` and `\S` mean JavaScript's Unicode white space, not ASCII only (except `\S` inside a
 *   character class, which RE2 cannot complement there; it keeps RE2's meaning);
 * - `[\b]` (a backspace) and `\cX` (a control character) become `\x{…}`;
 * - `\p{Script=X}`, `\p{sc=X}`, `\p{General_Category=X}` and `\p{gc=X}` become `\p{X}`.
 * Every other escape is copied with the character after its backslash, so `\\u0041` (a
 * backslash, then "u0041") and `\.` stay what they were. Classes do not nest in JavaScript
 * without the v flag, so one flag tracks whether we are inside one.
 */
function toRe2Syntax(pattern: string): string {
  let result = '';
  let inClass = false;
  let index = 0;
  while (index < pattern.length) {
    const character = pattern[index];
    if (character !== '\\') {
      if (character === '[' && !inClass) inClass = true;
      else if (character === ']' && inClass) inClass = false;
      result += character === '.' && !inClass ? `[^${javascriptLineTerminators}]` : character;
      index += 1;
      continue;
    }
    const escaped = pattern[index + 1];
    if (escaped === 's') {
      result += inClass ? javascriptSpaces : `[${javascriptSpaces}]`;
      index += 2;
      continue;
    }
    if (escaped === 'S' && !inClass) {
      result += `[^${javascriptSpaces}]`;
      index += 2;
      continue;
    }
    // Backspace inside a class, and control letters (\cJ is a line feed): RE2 has neither.
    const control = escaped === 'c' ? pattern[index + 2] : undefined;
    if ((escaped === 'b' && inClass) || (control !== undefined && /^[A-Za-z]$/.test(control))) {
      result += `\\x{${(control === undefined ? 8 : control.charCodeAt(0) % 32).toString(16)}}`;
      index += control === undefined ? 2 : 3;
      continue;
    }
    // \p{Script=Greek} and \p{gc=Lu} are JavaScript's spellings of RE2's \p{Greek} and \p{Lu}.
    unicodeProperty.lastIndex = index + 1;
    const property = unicodeProperty.exec(pattern);
    if (property !== null) {
      result += `\\${property[1]}{${property[2]}}`;
      index = unicodeProperty.lastIndex;
      continue;
    }
    const first = readUnicodeEscape(pattern, index + 1);
    if (first === undefined) {
      result += pattern.slice(index, index + 2);
      index += 2;
      continue;
    }
    let codePoint = first.codePoint;
    index = first.end;
    if (codePoint >= 0xd800 && codePoint <= 0xdbff && pattern[index] === '\\') {
      const second = readUnicodeEscape(pattern, index + 1);
      if (second !== undefined && second.codePoint >= 0xdc00 && second.codePoint <= 0xdfff) {
        codePoint = 0x10000 + ((codePoint - 0xd800) << 10) + (second.codePoint - 0xdc00);
        index = second.end;
      }
    }
    result += `\\x{${codePoint.toString(16)}}`;
  }
  return result;
}

function readUnicodeEscape(pattern: string, position: number): { codePoint: number; end: number } | undefined {
  unicodeEscape.lastIndex = position;
  const match = unicodeEscape.exec(pattern);
  if (match === null) return undefined;
  return { codePoint: Number.parseInt(match[1] ?? match[2], 16), end: unicodeEscape.lastIndex };
}
