/**
 * The one error family every caller-visible failure belongs to. `name` is a stable
 * `Resource.Reason` string that both faces report unchanged; `context` holds only details that
 * are safe to show the caller (field paths, limits, the current status), never internals.
 *
 * Which HTTP status a name maps to lives in one table (`httpStatusForError`), so that REST and
 * GraphQL can never disagree about what kind of failure something is.
 */
export class DomainError extends Error {
  override readonly name: string;
  readonly description: string;
  readonly context: Record<string, unknown>;

  constructor(name: string, description: string, context: Record<string, unknown> = {}) {
    super(description);
    this.name = name;
    this.description = description;
    this.context = context;
  }
}

export type ValidationIssue = { path: string; message: string };

/** `Request.Invalid`: the request is malformed; every problem is listed in `context.issues`. */
export class InvalidRequestError extends DomainError {
  constructor(issues: ValidationIssue[], description = 'The request is invalid; see context.issues for every problem.') {
    super('Request.Invalid', description, { issues });
  }
}

/** `Request.IdempotencyKeyReused`: the Idempotency-Key was already used with a different request. */
export class IdempotencyKeyReusedError extends DomainError {
  constructor(key: string) {
    super(
      'Request.IdempotencyKeyReused',
      'This Idempotency-Key was already used with a different request within the last 24 hours.',
      { idempotencyKey: key },
    );
  }
}

/** `Request.PayloadTooLarge`: a JSON body beyond the accepted size. */
export class PayloadTooLargeError extends DomainError {
  constructor(limitBytes: number) {
    super('Request.PayloadTooLarge', `The request body exceeds ${limitBytes} bytes.`, { limitBytes });
  }
}

/** `Request.Timeout`: the request body stalled, trickled or took too long; nothing was done with it. */
export class RequestTimeoutError extends DomainError {
  constructor(limits: { idleMs: number; minBytesPerSecond: number; totalMs: number }) {
    super(
      'Request.Timeout',
      `The request body did not arrive in time (no byte for ${limits.idleMs / 1000} s, under ${limits.minBytesPerSecond} bytes/s, or over ${limits.totalMs / 1000} s in all); nothing was done with it.`,
      limits,
    );
  }
}

/** `Route.NotFound`: no REST route matches the method and path. */
export class RouteNotFoundError extends DomainError {
  constructor(method: string, path: string) {
    super('Route.NotFound', `No route matches ${method} ${path}.`, { method, path });
  }
}

/** `Route.MethodNotAllowed`: the path exists, but not with this method; `context.allowed` lists the methods. */
export class MethodNotAllowedError extends DomainError {
  constructor(method: string, allowed: string[]) {
    super('Route.MethodNotAllowed', `${method} is not supported on this path.`, { method, allowed });
  }
}

/** `Auth.MissingApiKey`: the request carries no X-Service-Api-Key header. */
export class MissingApiKeyError extends DomainError {
  constructor() {
    super('Auth.MissingApiKey', 'This operation needs the team API key in the X-Service-Api-Key header.');
  }
}

/** `Auth.InvalidApiKey`: the key is unknown or revoked (deliberately not told apart). */
export class InvalidApiKeyError extends DomainError {
  constructor() {
    super('Auth.InvalidApiKey', 'The API key in X-Service-Api-Key is not valid (unknown or revoked).');
  }
}

/** `Server.Internal`: an unexpected failure; the details are only in the server log. */
/** `Auth.InvalidMetricsToken`: GET /metrics on the main port without `Authorization: Bearer <METRICS_TOKEN>`. */
export class InvalidMetricsTokenError extends DomainError {
  constructor() {
    super('Auth.InvalidMetricsToken', 'GET /metrics needs Authorization: Bearer <METRICS_TOKEN>; the token is missing or wrong.');
  }
}

export class InternalServerError extends DomainError {
  constructor() {
    super('Server.Internal', 'An unexpected error occurred. It has been logged; quote the requestId when reporting it.');
  }
}

/** `Server.Unavailable`: a dependency (the database) cannot be reached right now. */
export class ServiceUnavailableError extends DomainError {
  constructor() {
    super('Server.Unavailable', 'The service is temporarily unable to reach its database; retry shortly.');
  }
}

/** `Storage.Full`: the file storage (DATA_DIR) has no space left; nothing was stored, retry once an operator freed some. */
export class StorageFullError extends DomainError {
  constructor() {
    super('Storage.Full', 'The service has no storage space left for files; nothing was stored. Retry later.');
  }
}

/**
 * `Storage.Unavailable`: the object store (BLOB_STORE_URL) cannot be reached or refused the
 * request; nothing was stored or changed. Retry after `context.retryAfterSeconds` (also the
 * `Retry-After` header).
 */
export class StorageUnavailableError extends DomainError {
  constructor() {
    super('Storage.Unavailable', 'The service cannot reach its file storage right now; nothing was stored or changed. Retry shortly.', { retryAfterSeconds: 10 });
  }
}

/**
 * `Storage.ObjectMissing`: a file the request needs is not in the file storage (an instance with
 * another store, a migration not finished). An operator's matter; nothing was changed.
 */
export class StorageObjectMissingError extends DomainError {
  constructor() {
    super('Storage.ObjectMissing', 'A stored file this request needs is missing from the file storage; nothing was changed. It has been logged; retry later or quote the requestId.', { retryAfterSeconds: 60 });
  }
}

/** `Server.Busy`: too much work of one kind is waiting (e.g. PDFs to inspect); nothing was stored, retry shortly. */
export class ServerBusyError extends DomainError {
  constructor(description: string, context: Record<string, unknown> = {}) {
    super('Server.Busy', description, context);
  }
}

/**
 * The one table from error names to HTTP statuses (docs/reference/contract.md §4). Exact names first, then the
 * `*.Reason` suffix rules, then 400 for anything else a caller caused.
 */
const statusByName: Record<string, number> = {
  'Request.Invalid': 400,
  'Request.PayloadTooLarge': 413,
  'Request.Timeout': 408,
  'Request.IdempotencyKeyReused': 409,
  'Request.RateLimited': 429,
  'Route.NotFound': 404,
  'Route.MethodNotAllowed': 405,
  'Auth.MissingApiKey': 401,
  'Auth.InvalidApiKey': 401,
  'Auth.InvalidMetricsToken': 401,
  'Document.TooLarge': 413,
  'Document.NotPdf': 415,
  'Document.InvalidPdf': 422,
  'Document.Encrypted': 422,
  'Document.InspectionLimitExceeded': 422,
  'Document.TooComplex': 422,
  'Document.TooManyTags': 422,
  'Envelope.NotDraft': 409,
  'Envelope.Closed': 409,
  'Envelope.NotSendable': 409,
  'Envelope.NotFinalized': 409,
  'Envelope.NotDeletable': 409,
  'Envelope.Busy': 409,
  'Envelope.AuditNotFound': 404,
  'Recipient.HasFields': 409,
  'Field.InUse': 409,
  'Envelope.CapacityExceeded': 422,
  'ContactGroup.CapacityExceeded': 422,
  'Contact.InUse': 409,
  'ContactGroup.InUse': 409,
  'ContactGroup.MemberNotFound': 404,
  'User.InUse': 409,
  'Webhook.Disabled': 409,
  'Webhook.CapacityExceeded': 422,
  'Sandbox.Disabled': 403,
  'Download.InvalidLink': 403,
  'Template.NotOwner': 403,
  'Template.NotReady': 409,
  'BulkSend.TooManyRows': 422,
  'BulkSend.Finished': 409,
  'Template.CapacityExceeded': 422,
  'Jumpstart.UnknownRecipient': 400,
  'Envelope.NotSent': 409,
  'Signing.MissingToken': 401,
  'Signing.InvalidToken': 401,
  'Signing.Expired': 409,
  'Signing.NotYourTurn': 409,
  'Signing.RecipientCompleted': 409,
  'Signing.FieldNotAssigned': 403,
  'Signing.FieldReadonly': 409,
  'Signing.RequiredFieldsMissing': 409,
  'Signing.NotDelegator': 403,
  'Signing.AlreadyDelegated': 409,
  'Signing.NotHost': 403,
  'Signing.NotHostedSigner': 404,
  'Signing.HostCannotSubmit': 409,
  'Signing.OtpRequired': 403,
  'Signing.OtpNotRequired': 409,
  'Signing.OtpNotRequested': 409,
  'Signing.OtpInvalid': 400,
  'Signing.OtpExpired': 409,
  'Signing.OtpAttemptsExhausted': 409,
  'Signing.OtpAlreadyUsed': 409,
  'Signing.OtpRateLimited': 429,
  'Signing.PhoneMessageCapReached': 429,
  'Signing.FrameOriginNotAllowed': 400,
  'Signing.SessionExpired': 401,
  'Envelope.RemindTooSoon': 429,
  'Signing.EmbeddedAgent': 409,
  'Server.Internal': 500,
  'Server.Unavailable': 503,
  'Subscription.Unavailable': 503,
  'Subscription.TooMany': 429,
  'Server.Busy': 503,
  'Storage.Full': 507,
  'Storage.Unavailable': 503,
  'Storage.ObjectMissing': 503,
};

export function httpStatusForError(name: string): number {
  const exact = statusByName[name];
  if (exact !== undefined) return exact;
  const reason = name.slice(name.indexOf('.') + 1);
  if (reason === 'NotFound') return 404;
  if (reason.endsWith('Bound') || reason === 'Conflict' || reason.startsWith('Duplicate')) return 409;
  return 400;
}
