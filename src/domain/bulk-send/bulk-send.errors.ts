import { DomainError, type ValidationIssue } from '../../shared/errors.ts';

/** `BulkSend.NotFound` (404): no bulk send with this id exists for your team (unknown, malformed and other teams' ids alike). */
export class BulkSendNotFoundError extends DomainError {
  constructor(bulkSendId: string) {
    super('BulkSend.NotFound', 'No bulk send with this id exists for your team.', { bulkSendId });
  }
}

/** `BulkSend.TooManyRows` (422): more rows than one bulk send takes; nothing was created. Split the list. */
export class BulkSendTooManyRowsError extends DomainError {
  constructor(limit: number, given: number) {
    super('BulkSend.TooManyRows', `A bulk send takes at most ${limit} rows; this one has ${given}. Split it into several.`, { limit, given });
  }
}

/** `BulkSend.Finished` (409): the bulk send already completed; there is nothing left to cancel. */
export class BulkSendFinishedError extends DomainError {
  constructor(bulkSendId: string, status: string) {
    super('BulkSend.Finished', 'This bulk send has already completed: every row was sent or failed.', { bulkSendId, status });
  }
}

/** One invalid row: its index in the request (0-based), its CSV line when it came from a file, and every problem. */
export type InvalidRow = { index: number; line?: number; issues: ValidationIssue[] };

/**
 * `Request.Invalid` for a bulk send: `context.rows` lists every invalid row by index with its
 * problems (and `context.issues` the same problems with paths from the request's root,
 * `rows[3].recipients[0]...`, as every `Request.Invalid` has). Nothing was created.
 */
export class BulkSendInvalidRowsError extends DomainError {
  constructor(rows: InvalidRow[]) {
    super('Request.Invalid', `${rows.length} row(s) are invalid; see context.rows for each row's problems. Nothing was created (skipInvalidRows: true sends the valid rows).`, {
      rows,
      issues: rows.flatMap((row) => row.issues.map((issue) => ({ path: issue.path === '' ? `rows[${row.index}]` : `rows[${row.index}].${issue.path}`, message: issue.message }))),
    });
  }
}
