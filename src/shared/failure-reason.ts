/**
 * What a caller is told about work that failed after their request was answered: a mail, an SMS
 * or WhatsApp message, a webhook POST. A stable snake_case `code` (listed in docs/errors.md,
 * "Delivery failure reasons") and a short description for people. Never an error's class name,
 * message or stack, nor a detail of the service's own infrastructure (its mail relay's reply
 * text, an address a host name resolved to, file paths, SQL): those stay in the log, under the
 * record's id (outbox-worker.ts logs them with the message id).
 */
export type FailureReason = { code: string; description: string };

/** An error that says what its caller may be told; its `message` is the detail, for the log only. */
export class ReasonedError extends Error {
  readonly reason: FailureReason;

  constructor(reason: FailureReason, detail?: string, options?: { cause?: unknown }) {
    super(detail ?? reason.description, options);
    this.name = 'ReasonedError';
    this.reason = reason;
  }
}

/** What callers see for anything thrown that does not say what they may be told. */
export const UNEXPECTED_FAILURE: FailureReason = {
  code: 'internal_error',
  description: 'the service hit an unexpected error; its operators find the details in the log',
};

export function failureReasonOf(error: unknown): FailureReason {
  return error instanceof ReasonedError ? error.reason : UNEXPECTED_FAILURE;
}

/** The detail of a failure, for the log and operators: the error's name and message, and its cause's. */
export function failureDetail(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? ` (cause: ${error.cause.name}: ${error.cause.message})` : '';
  return `${error.name}: ${error.message}${cause}`;
}
