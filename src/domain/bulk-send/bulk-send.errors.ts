import { DomainError, MAX_LISTED_ITEMS, type ValidationIssue } from '../../shared/errors.ts';

/** `BulkSend.NotFound` (404): no bulk send with this id exists for your team (unknown, malformed and other teams' ids alike). */
export class BulkSendNotFoundError extends DomainError {
  constructor(bulkSendId: string) {
    super('BulkSend.NotFound', 'No bulk send with this id exists for your team.', { bulkSendId });
  }
}

/**
 * `BulkSend.TooManyRows` (422): more rows than one bulk send takes; nothing was created. Split the
 * list. `given` is absent when reading a CSV file stopped at its limit (blank lines count there).
 */
export class BulkSendTooManyRowsError extends DomainError {
  constructor(limit: number, given?: number) {
    super(
      'BulkSend.TooManyRows',
      given === undefined
        ? `A bulk send takes at most ${limit} rows; this file has more (reading stopped there; blank lines count too, at most 100 of them). Split it into several.`
        : `A bulk send takes at most ${limit} rows; this one has ${given}. Split it into several.`,
      given === undefined ? { limit } : { limit, given },
    );
  }
}

/** `BulkSend.Finished` (409): the bulk send already completed; there is nothing left to cancel. */
export class BulkSendFinishedError extends DomainError {
  constructor(bulkSendId: string, status: string) {
    super('BulkSend.Finished', 'This bulk send has already completed: every row was sent or failed.', { bulkSendId, status });
  }
}

/** One invalid row: its index in the request (0-based), its CSV line when it came from a file, its first problems and how many more (`issuesOmitted`). */
export type InvalidRow = { index: number; line?: number; issues: ValidationIssue[]; issuesOmitted?: number };

/**
 * `Request.Invalid` for a bulk send: `context.rows` lists the invalid rows by index with their
 * problems (and `context.issues` the same problems with paths from the request's root,
 * `rows[3].recipients[0]...`, as every `Request.Invalid` has), each list its first
 * MAX_LISTED_ITEMS entries and the rest counted (`rowsOmitted`, `issuesOmitted`). Nothing was created.
 */
export class BulkSendInvalidRowsError extends DomainError {
  constructor(rows: InvalidRow[]) {
    // Built only as far as it is kept: a thousand rows of a hundred problems each are not copied.
    const issues: ValidationIssue[] = [];
    let total = 0;
    for (const row of rows) {
      total += row.issues.length + (row.issuesOmitted ?? 0);
      for (const issue of row.issues) {
        if (issues.length >= MAX_LISTED_ITEMS) break;
        issues.push({ path: issue.path === '' ? `rows[${row.index}]` : `rows[${row.index}].${issue.path}`, message: issue.message });
      }
    }
    super('Request.Invalid', `${rows.length} row(s) are invalid; see context.rows for each row's problems. Nothing was created (skipInvalidRows: true sends the valid rows).`, {
      invalidRows: rows.length,
      rows: rows.slice(0, MAX_LISTED_ITEMS),
      ...(rows.length > MAX_LISTED_ITEMS ? { rowsOmitted: rows.length - MAX_LISTED_ITEMS } : {}),
      issues,
      ...(total > issues.length ? { issuesOmitted: total - issues.length } : {}),
    });
  }
}
