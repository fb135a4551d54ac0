import { RE2JS } from 're2js';

/**
 * A text field's `config.pattern`, matched on a linear-time engine.
 *
 * JavaScript's RegExp backtracks: `(a+)+b` against 32 `a`s took 23 s, and matching runs on the
 * event loop, so one pattern stalled every request of every team. Patterns are therefore matched
 * with re2js (RE2's automata: time grows with text length × pattern size, never exponentially).
 *
 * A pattern must be both RE2 syntax and a valid JavaScript regular expression with the `u` flag
 * (what the service promised before): every pattern accepted so far that uses neither
 * backreferences nor lookaround keeps its meaning, and a signing page can still check the same
 * pattern in the browser. RE2 still has a cost per character that grows with the compiled
 * program, and with a cold automaton (every check compiles afresh, see below) a program of
 * thousands of steps costs ~100 ns per step per character; so the program size times the
 * field's `maxLength` is bounded as well, which keeps one match in the tens of milliseconds.
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
    return { re2: RE2JS.compile(withRe2UnicodeEscapes(pattern)) };
  } catch (error) {
    const detail = (error as Error).message.replace(/^error parsing regexp: /, '');
    return {
      problem:
        `must use RE2 syntax, which is matched in linear time: backreferences (\\1, \\k<name>), lookahead and lookbehind ` +
        `((?=, (?!, (?<=, (?<!) and repetition counts above 1000 are not supported (${detail})`,
    };
  }
}

const unicodeEscape = /u(?:([0-9A-Fa-f]{4})|\{([0-9A-Fa-f]{1,6})\})/y;

/**
 * JavaScript's `\uXXXX` and `\u{X…}` escapes written as RE2's `\x{X…}`; RE2 has no `\u`, and
 * patterns like `[A-Za-z\u00C0-\u017F]` were valid before. A surrogate pair written as two
 * escapes means one character under the `u` flag, so it becomes one. Every other escape is
 * copied as it is, together with the character after the backslash, so `\\u0041` (a backslash,
 * then "u0041") stays what it was.
 */
function withRe2UnicodeEscapes(pattern: string): string {
  if (!pattern.includes('\\u')) return pattern;
  let result = '';
  let index = 0;
  while (index < pattern.length) {
    const character = pattern[index];
    if (character !== '\\') {
      result += character;
      index += 1;
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
