/**
 * Counts the operators of a content stream as its bytes arrive (inflated, a chunk at a time,
 * never kept), and notes which named resources it paints (`/Name Do` for XObjects, `/Name scn`
 * and `/Name SCN` for patterns), so that the inspector can bound what interpreting a page costs
 * (pdf.js interprets every page to find text tags; a signer's viewer does the same to show it).
 *
 * A state machine over bytes rather than a parser: a token may straddle two chunks, and nothing
 * but the operator count, the painted names and the nesting depth is needed.
 */
import { MAX_CONTENT_NESTING_DEPTH, MAX_PAINTED_NAMES_PER_STREAM, tooComplex } from './limits.ts';

// States of the byte machine (plain numbers: Node strips this file's types in the worker thread,
// and enums are not mere types).
const State = {
  Normal: 0,
  Comment: 1,
  LiteralString: 2,
  HexString: 3,
  Token: 4,
  Name: 5,
  /** Inline image data, from after `ID` to `EI` between white space. */
  InlineImage: 6,
} as const;
type State = (typeof State)[keyof typeof State];

/** 1 for PDF white space, by byte: one lookup in the hot loops. */
const WHITE = new Uint8Array(256);
for (const byte of [0x20, 0x0a, 0x0d, 0x09, 0x0c, 0x00]) WHITE[byte] = 1;
const isWhite = (byte: number) => WHITE[byte] === 1;
const isDelimiter = (byte: number) =>
  byte === 0x28 || byte === 0x29 || byte === 0x3c || byte === 0x3e || byte === 0x5b || byte === 0x5d || byte === 0x7b || byte === 0x7d || byte === 0x2f || byte === 0x25;

/** Operators that name a resource with content of its own, and the resource category they name. */
const PAINTING_OPERATORS = new Map([
  ['Do', 'XObject'],
  ['scn', 'Pattern'],
  ['SCN', 'Pattern'],
  ['Tf', 'Font'],
  // A graphics state may carry a soft mask, whose group is a form painted with it.
  ['gs', 'ExtGState'],
]);

/** Longer tokens are kept only this far: operators and resource names are short. */
const MAX_KEPT_TOKEN_LENGTH = 128;

export type ContentStatistics = {
  operators: number;
  /**
   * How often each resource is painted: `Do` uses under `XObject:Name`, pattern uses under
   * `Pattern:Name`, fonts selected (`Tf`, for Type 3 fonts, whose glyphs are content streams) under
   * `Font:Name`, graphics states set (`gs`, for their soft masks' groups) under `ExtGState:Name`.
   */
  painted: Map<string, number>;
};

export class ContentOperatorCounter {
  readonly statistics: ContentStatistics = { operators: 0, painted: new Map() };
  private state: State = State.Normal;
  private token = '';
  private tokenLength = 0;
  /**
   * The last name among the current operator's operands: the resource it names (`/Im1 Do`,
   * `0.5 /P1 scn`, `/F1 12 Tf`). Cleared by each operator only, since a number may follow it.
   */
  private lastName: string | undefined;
  private stringDepth = 0;
  private escaped = false;
  /** `[` and `<<` open, `]` and `>>` close; `<` followed by `<` is told apart with `pendingLess`. */
  private depth = 0;
  private pendingLess = false;
  private pendingGreater = false;
  /** In inline image data: how much of "white E I" has been matched. */
  private imageMatch = 0;

  private readonly what: string;

  constructor(what: string) {
    this.what = what;
  }

  write(chunk: Uint8Array): void {
    const length = chunk.length;
    let index = 0;
    while (index < length) {
      // Fast paths over runs no single byte of which changes anything (white space between tokens,
      // a comment, a hex string): a deflate bomb is 256 MiB of such a run, and a call per byte
      // made counting it several times slower than inflating it.
      const state = this.state;
      if (state === State.Normal && !this.pendingLess && !this.pendingGreater) {
        while (index < length && WHITE[chunk[index]!] === 1) index++;
      } else if (state === State.Comment) {
        while (index < length && chunk[index] !== 0x0a && chunk[index] !== 0x0d) index++;
      } else if (state === State.HexString) {
        while (index < length && chunk[index] !== 0x3e) index++;
      } else if (state === State.LiteralString && !this.escaped) {
        while (index < length) {
          const byte = chunk[index]!;
          if (byte === 0x5c || byte === 0x28 || byte === 0x29) break;
          index++;
        }
      }
      if (index >= length) break;
      this.byte(chunk[index]!);
      index++;
    }
  }

  /** The end of the stream: a token running to the end is complete. */
  end(): ContentStatistics {
    if (this.state === State.Token) this.endToken();
    else if (this.state === State.Name) this.endName();
    this.state = State.Normal;
    return this.statistics;
  }

  private byte(byte: number): void {
    switch (this.state) {
      case State.Comment:
        if (byte === 0x0a || byte === 0x0d) this.state = State.Normal;
        return;
      case State.LiteralString:
        if (this.escaped) this.escaped = false;
        else if (byte === 0x5c) this.escaped = true;
        else if (byte === 0x28) this.stringDepth++;
        else if (byte === 0x29 && --this.stringDepth === 0) this.state = State.Normal;
        return;
      case State.HexString:
        if (byte === 0x3e) this.state = State.Normal;
        return;
      case State.InlineImage:
        // Matches white space, "E", "I", then white space (or the end of the stream).
        if (this.imageMatch === 3) {
          this.imageMatch = 0;
          if (isWhite(byte)) {
            this.state = State.Normal;
            this.operator('EI');
            return;
          }
        }
        if (this.imageMatch === 2) this.imageMatch = byte === 0x49 ? 3 : isWhite(byte) ? 1 : 0;
        else if (this.imageMatch === 1) this.imageMatch = byte === 0x45 ? 2 : isWhite(byte) ? 1 : 0;
        else this.imageMatch = isWhite(byte) ? 1 : 0;
        return;
      case State.Token:
        if (!isWhite(byte) && !isDelimiter(byte)) return this.keep(byte);
        this.endToken();
        break;
      case State.Name:
        if (!isWhite(byte) && !isDelimiter(byte)) return this.keep(byte);
        this.endName();
        break;
      default:
        break;
    }
    // Normal: between tokens.
    if (this.pendingLess) {
      this.pendingLess = false;
      if (byte === 0x3c) return this.open();
      this.state = State.HexString;
      if (byte === 0x3e) this.state = State.Normal;
      return;
    }
    if (this.pendingGreater) {
      this.pendingGreater = false;
      if (byte === 0x3e) return this.close();
    }
    if (isWhite(byte)) return;
    switch (byte) {
      case 0x25:
        this.state = State.Comment;
        return;
      case 0x28:
        this.state = State.LiteralString;
        this.stringDepth = 1;
        return;
      case 0x3c:
        this.pendingLess = true;
        return;
      case 0x3e:
        this.pendingGreater = true;
        return;
      case 0x5b:
        return this.open();
      case 0x5d:
        return this.close();
      case 0x2f:
        this.state = State.Name;
        this.token = '';
        this.tokenLength = 0;
        return;
      case 0x29:
      case 0x7b:
      case 0x7d:
        return;
      default:
        this.state = State.Token;
        this.token = '';
        this.tokenLength = 0;
        this.keep(byte);
    }
  }

  private keep(byte: number): void {
    if (this.tokenLength++ < MAX_KEPT_TOKEN_LENGTH) this.token += String.fromCharCode(byte);
  }

  private open(): void {
    if (++this.depth > MAX_CONTENT_NESTING_DEPTH) {
      tooComplex(`${this.what} nests arrays or dictionaries more than ${MAX_CONTENT_NESTING_DEPTH} deep`, 'content_nesting', MAX_CONTENT_NESTING_DEPTH);
    }
  }

  private close(): void {
    if (this.depth > 0) this.depth--;
  }

  private endName(): void {
    this.state = State.Normal;
    this.lastName = this.tokenLength > MAX_KEPT_TOKEN_LENGTH ? undefined : decodeName(this.token);
  }

  private endToken(): void {
    this.state = State.Normal;
    const token = this.token;
    const first = token.charCodeAt(0);
    // Numbers and the three keywords that are operands, not operators.
    const isNumber = (first >= 0x30 && first <= 0x39) || first === 0x2b || first === 0x2d || first === 0x2e;
    if (isNumber || token === 'true' || token === 'false' || token === 'null') return;
    // Operators inside arrays or dictionaries are not operators (malformed, but viewers skip them).
    if (this.depth > 0) return;
    this.operator(token);
    if (token === 'ID') {
      this.state = State.InlineImage;
      this.imageMatch = 0;
    }
  }

  private operator(token: string): void {
    this.statistics.operators++;
    const name = this.lastName;
    this.lastName = undefined;
    if (name === undefined) return;
    const kind = PAINTING_OPERATORS.get(token);
    if (kind === undefined) return;
    const key = `${kind}:${name}`;
    const { painted } = this.statistics;
    if (!painted.has(key) && painted.size >= MAX_PAINTED_NAMES_PER_STREAM) {
      tooComplex(`${this.what} paints more than ${MAX_PAINTED_NAMES_PER_STREAM} different resources`, 'form_paints', MAX_PAINTED_NAMES_PER_STREAM);
    }
    painted.set(key, (painted.get(key) ?? 0) + 1);
  }
}

/** A name's `#xx` escapes decoded, as resource dictionaries' keys are. */
function decodeName(raw: string): string {
  if (!raw.includes('#')) return raw;
  return raw.replace(/#([0-9A-Fa-f]{2})/g, (_match, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}
