/**
 * RFC 4180 CSV, read whole (a bulk send's file is at most a few megabytes): fields separated by
 * commas, records by CRLF or LF (a lone CR too), a field in double quotes may hold commas, line
 * breaks and doubled quotes (`""` for `"`). UTF-8 with or without a byte order mark. Nothing
 * beyond the RFC (no other separators, no trimming), so a value arrives exactly as written.
 *
 * Written here rather than taken from a package: the grammar is a dozen lines, and the problems
 * it reports (a stray quote, an unclosed field) name the line, which a caller needs to fix a file.
 */

export type CsvProblem = { line: number; message: string };

export type CsvTable = { header: string[]; records: { line: number; values: string[] }[] };

export class CsvSyntaxError extends Error {
  readonly problem: CsvProblem;
  constructor(problem: CsvProblem) {
    super(`line ${problem.line}: ${problem.message}`);
    this.problem = problem;
  }
}

/** Parses the text into records of fields; throws CsvSyntaxError at the first malformed field. */
export function parseCsvRecords(text: string): { line: number; values: string[] }[] {
  const source = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  const records: { line: number; values: string[] }[] = [];
  let values: string[] = [];
  let field = '';
  let line = 1;
  let recordLine = 1;
  let index = 0;
  // Whether the current record has begun (an empty last line is no record).
  let started = false;
  // The current field was quoted and its closing quote read: only a separator may follow.
  let closed = false;
  const endField = () => {
    values.push(field);
    field = '';
    closed = false;
  };
  const endRecord = () => {
    endField();
    records.push({ line: recordLine, values });
    values = [];
    started = false;
  };
  while (index < source.length) {
    const character = source[index];
    if (!started) {
      started = true;
      recordLine = line;
    }
    if (character === '"' && field === '' && !closed) {
      // A quoted field: up to the closing quote, which must end the field.
      const openedAt = line;
      index += 1;
      for (;;) {
        if (index >= source.length) throw new CsvSyntaxError({ line: openedAt, message: 'a quoted field is not closed' });
        const inner = source[index];
        if (inner === '"') {
          if (source[index + 1] === '"') {
            field += '"';
            index += 2;
            continue;
          }
          index += 1;
          break;
        }
        if (inner === '\n' || (inner === '\r' && source[index + 1] !== '\n')) line += 1;
        field += inner;
        index += 1;
      }
      const next = source[index];
      if (next !== undefined && next !== ',' && next !== '\n' && next !== '\r') {
        throw new CsvSyntaxError({ line, message: 'a quoted field must end at its closing quote (write a quote inside it as "")' });
      }
      closed = true;
      continue;
    }
    if (character === ',') {
      endField();
      index += 1;
      continue;
    }
    if (character === '\r' || character === '\n') {
      endRecord();
      index += character === '\r' && source[index + 1] === '\n' ? 2 : 1;
      line += 1;
      continue;
    }
    if (character === '"') throw new CsvSyntaxError({ line, message: 'a quote inside an unquoted field (quote the whole field and double the quote)' });
    field += character;
    index += 1;
  }
  if (started) endRecord();
  return records;
}

/** The header row and the records after it; records of only one empty field (blank lines) are skipped. */
export function parseCsvTable(text: string): CsvTable {
  const records = parseCsvRecords(text).filter((record) => !(record.values.length === 1 && record.values[0] === ''));
  const [header, ...rest] = records;
  if (!header) throw new CsvSyntaxError({ line: 1, message: 'the file is empty: a header row is needed' });
  return { header: header.values, records: rest };
}
