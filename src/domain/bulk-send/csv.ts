/**
 * RFC 4180 CSV: fields separated by commas, records by CRLF or LF (a lone CR too), a field in
 * double quotes may hold commas, line breaks and doubled quotes (`""` for `"`). UTF-8 with or
 * without a byte order mark. Nothing beyond the RFC (no other separators, no trimming), so a value
 * arrives exactly as written.
 *
 * Written here rather than taken from a package: the grammar is a dozen lines, and the problems
 * it reports (a stray quote, an unclosed field) name the line, which a caller needs to fix a file.
 *
 * The file is the caller's, so every limit is checked while reading, never after: a record of a
 * million commas stops at the column past the limit, a million blank lines at the record past it,
 * and nothing of the rest is read or kept. The text is read in chunks with a turn of the event
 * loop between them, so a 2 MB file never holds other requests back for the whole of its parse.
 */

export type CsvProblem = { line: number; message: string };

export type CsvRecord = { line: number; values: string[] };

export type CsvTable = { header: string[]; records: CsvRecord[] };

/** What one file may hold; each is checked as the text is read. */
export type CsvLimits = {
  /** Records, the header and blank lines included. */
  maxRecords: number;
  /** Fields of one record. */
  maxColumns: number;
  /** Characters of one field (as read, without its quotes). */
  maxFieldChars: number;
  /** Characters of one record as written (quotes, separators and line breaks inside quotes included). */
  maxRecordChars: number;
  /** Characters read between two turns of the event loop. */
  chunkChars?: number;
};

/** A malformed file, or a record past a limit: the line says where. */
export class CsvSyntaxError extends Error {
  readonly problem: CsvProblem;
  constructor(problem: CsvProblem) {
    super(`line ${problem.line}: ${problem.message}`);
    this.problem = problem;
  }
}

/** More records than `maxRecords` (blank lines count): reading stopped at the first one past it. */
export class CsvTooManyRecordsError extends Error {
  readonly limit: number;
  constructor(limit: number) {
    super(`more than ${limit} records`);
    this.limit = limit;
  }
}

/** Characters read between two turns of the event loop: a fraction of a millisecond of work. */
export const CSV_CHUNK_CHARS = 64 * 1024;

const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

const COMMA = 0x2c;
const QUOTE = 0x22;
const CR = 0x0d;
const LF = 0x0a;

/**
 * Whether the UTF-16 unit at `index` is not storable text: U+0000 (PostgreSQL cannot store it) or
 * half of a surrogate pair. Text decoded from UTF-8 never has the latter; a GraphQL string can.
 */
function isUnstorableAt(source: string, index: number, code: number): boolean {
  if (code === 0) return true;
  if (code < 0xd800 || code > 0xdfff) return false;
  if (code <= 0xdbff) {
    const next = source.charCodeAt(index + 1);
    return !(next >= 0xdc00 && next <= 0xdfff);
  }
  const previous = index > 0 ? source.charCodeAt(index - 1) : 0;
  return !(previous >= 0xd800 && previous <= 0xdbff);
}

const grouped = (value: number) => value.toLocaleString('en-US');

/**
 * Parses the text into records of fields. Throws CsvSyntaxError at the first malformed field or
 * the first record past a limit of `limits`, CsvTooManyRecordsError at the record past
 * `maxRecords`; yields to the event loop every `chunkChars` characters.
 */
export async function parseCsvRecords(text: string, limits: CsvLimits): Promise<CsvRecord[]> {
  const source = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  const chunkChars = limits.chunkChars ?? CSV_CHUNK_CHARS;
  const records: CsvRecord[] = [];
  const length = source.length;
  let values: string[] = [];
  let line = 1;
  let recordLine = 1;
  let recordStart = 0;
  let index = 0;
  let nextYield = chunkChars;
  const fail = (message: string, at = line): never => {
    throw new CsvSyntaxError({ line: at, message });
  };
  const checkRecordLength = () => {
    if (index - recordStart > limits.maxRecordChars) fail(`a record may be at most ${grouped(limits.maxRecordChars)} characters long`, recordLine);
  };
  const pushField = (field: string) => {
    if (values.length >= limits.maxColumns) fail(`a record may have at most ${grouped(limits.maxColumns)} fields`, recordLine);
    values.push(field);
  };
  const checkCharacter = (code: number) => {
    if (isUnstorableAt(source, index, code)) fail('contains U+0000 (NUL) or broken Unicode (a lone surrogate), which no text may hold');
  };

  while (index < length) {
    // A record begins here.
    if (records.length >= limits.maxRecords) throw new CsvTooManyRecordsError(limits.maxRecords);
    recordLine = line;
    recordStart = index;
    values = [];
    let recordEnded = false;
    while (!recordEnded) {
      if (index >= nextYield) {
        await yieldToEventLoop();
        nextYield = index + chunkChars;
      }
      let field: string;
      if (source.charCodeAt(index) === QUOTE) {
        // A quoted field: up to the closing quote, which must end the field.
        const openedAt = line;
        index += 1;
        const parts: string[] = [];
        let partStart = index;
        let fieldChars = 0;
        for (;;) {
          if (index >= length) fail('a quoted field is not closed', openedAt);
          if (index >= nextYield) {
            await yieldToEventLoop();
            nextYield = index + chunkChars;
          }
          const code = source.charCodeAt(index);
          if (code === QUOTE) {
            parts.push(source.slice(partStart, index));
            if (source.charCodeAt(index + 1) === QUOTE) {
              parts.push('"');
              fieldChars += 1;
              index += 2;
              partStart = index;
              continue;
            }
            index += 1;
            break;
          }
          checkCharacter(code);
          if (code === LF || (code === CR && source.charCodeAt(index + 1) !== LF)) line += 1;
          fieldChars += 1;
          index += 1;
          if (fieldChars > limits.maxFieldChars) fail(`a field may be at most ${grouped(limits.maxFieldChars)} characters long`, openedAt);
          if (index - recordStart > limits.maxRecordChars) checkRecordLength();
        }
        field = parts.join('');
        const next = source.charCodeAt(index);
        if (index < length && next !== COMMA && next !== LF && next !== CR) {
          fail('a quoted field must end at its closing quote (write a quote inside it as "")');
        }
      } else {
        const start = index;
        for (; index < length; index += 1) {
          const code = source.charCodeAt(index);
          if (code === COMMA || code === LF || code === CR) break;
          if (code === QUOTE) fail('a quote inside an unquoted field (quote the whole field and double the quote)');
          checkCharacter(code);
          if (index - start >= limits.maxFieldChars) fail(`a field may be at most ${grouped(limits.maxFieldChars)} characters long`);
          if (index >= nextYield) break;
        }
        field = source.slice(start, index);
        // A chunk's end inside an unquoted field: yield, then read on into the same field.
        while (index < length && index >= nextYield) {
          await yieldToEventLoop();
          nextYield = index + chunkChars;
          const continued = index;
          for (; index < length; index += 1) {
            const code = source.charCodeAt(index);
            if (code === COMMA || code === LF || code === CR) break;
            if (code === QUOTE) fail('a quote inside an unquoted field (quote the whole field and double the quote)');
            checkCharacter(code);
            if (field.length + index - continued >= limits.maxFieldChars) fail(`a field may be at most ${grouped(limits.maxFieldChars)} characters long`);
            if (index >= nextYield) break;
          }
          field += source.slice(continued, index);
        }
      }
      pushField(field);
      checkRecordLength();
      if (index >= length) {
        recordEnded = true;
        continue;
      }
      const separator = source.charCodeAt(index);
      if (separator === COMMA) {
        index += 1;
        if (index >= length) {
          // A comma at the very end of the text still ends a field: the record's last one is empty.
          pushField('');
          recordEnded = true;
        }
        continue;
      }
      // CR, LF or CRLF: the record ends.
      index += separator === CR && source.charCodeAt(index + 1) === LF ? 2 : 1;
      line += 1;
      recordEnded = true;
    }
    records.push({ line: recordLine, values });
  }
  return records;
}

/**
 * The header row and the records after it; records of only one empty field (blank lines) are
 * skipped, though they count against `maxRecords`, as they cost reading like any other.
 */
export async function parseCsvTable(text: string, limits: CsvLimits): Promise<CsvTable> {
  const records = (await parseCsvRecords(text, limits)).filter((record) => !(record.values.length === 1 && record.values[0] === ''));
  const [header, ...rest] = records;
  if (!header) throw new CsvSyntaxError({ line: 1, message: 'the file is empty: a header row is needed' });
  return { header: header.values, records: rest };
}
