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
    // Every list an error carries is often one entry per item of the caller's input (a CSV's
    // columns, a batch's fields, a bulk send's rows): capped here, at the one door every error
    // passes, so no builder of a list can forget it (docs/errors.md, "Lists in an error").
    this.context = boundErrorContext(context);
  }
}

/*
 * Bounds of what an error answer carries. An error answer is built from the caller's input, so
 * without them it is as large as the input is wide: 262,144 commas in a CSV header once made a
 * 42.6 MB answer of one issue per column. Lists keep their first entries and count the rest in a
 * sibling `<list>Omitted`; texts keep their first characters; and the whole answer, whatever it
 * holds, is fitted under MAX_ERROR_ANSWER_BYTES where both faces serialise it (answerableError).
 */

/** Entries any one list in an error's context keeps; the rest are counted in `<list>Omitted`. */
export const MAX_LISTED_ITEMS = 100;
/** Characters any one text in an error's context keeps (longer ones end in "…"). */
export const MAX_CONTEXT_TEXT_CHARS = 1_000;
/** Keys any one object in an error's context keeps. */
const MAX_CONTEXT_KEYS = 200;
/** Levels of nesting an error's context keeps (deeper values become null). */
const MAX_CONTEXT_DEPTH = 8;
/** No error answer, on either face, is larger than this (bytes of its JSON). */
export const MAX_ERROR_ANSWER_BYTES = 64 * 1024;
/** Characters of an error's description in an answer (the rest of the answer's bytes are the context's). */
const MAX_DESCRIPTION_CHARS = 2_000;
/** Bytes of an answer besides its description and context: the name, the framing, a GraphQL error's locations and path. */
const ANSWER_FRAMING_BYTES = 4 * 1024;

type ContextBounds = { items: number; textChars: number };

/** The text's first `limit` characters and "…" when it is longer (a surrogate pair is never cut). */
export function truncatedText(text: string, limit: number): string {
  if (text.length <= limit) return text;
  let end = limit;
  // Never cut a surrogate pair in two: half of one is not text.
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return `${text.slice(0, end)}…`;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object') return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

function boundedValue(value: unknown, bounds: ContextBounds, depth: number): unknown {
  if (typeof value === 'string') return truncatedText(value, bounds.textChars);
  if (Array.isArray(value)) {
    if (depth >= MAX_CONTEXT_DEPTH) return [];
    // Only the kept entries are visited: a list of a million costs what a list of a hundred does.
    const kept: unknown[] = [];
    for (let index = 0; index < value.length && index < bounds.items; index += 1) kept.push(boundedValue(value[index], bounds, depth + 1));
    return kept;
  }
  if (isPlainObject(value)) {
    if (depth >= MAX_CONTEXT_DEPTH) return null;
    const result: Record<string, unknown> = {};
    let keys = 0;
    for (const key of Object.keys(value)) {
      // An object is a list of its keys: a few hundred are kept.
      if (keys >= MAX_CONTEXT_KEYS) break;
      keys += 1;
      const child = value[key];
      const boundedKey = truncatedText(key, bounds.textChars);
      // A count a longer sibling list already set (adding to this one) stands.
      if (Object.hasOwn(result, boundedKey)) continue;
      result[boundedKey] = boundedValue(child, bounds, depth + 1);
      if (Array.isArray(child) && child.length > bounds.items) {
        const omittedKey = `${boundedKey}Omitted`;
        const already = typeof value[omittedKey] === 'number' ? (value[omittedKey] as number) : 0;
        result[omittedKey] = already + child.length - bounds.items;
      }
    }
    return result;
  }
  return value;
}

/**
 * The context with every list cut to its first `items` entries (the rest counted in a sibling
 * `<list>Omitted`, added to any count already there), every text to `textChars` characters, and
 * nesting to 8 levels. Visits only what it keeps.
 */
export function boundErrorContext(context: Record<string, unknown>, bounds: ContextBounds = { items: MAX_LISTED_ITEMS, textChars: MAX_CONTEXT_TEXT_CHARS }): Record<string, unknown> {
  return boundedValue(context, bounds, 0) as Record<string, unknown>;
}

function jsonBytes(value: unknown): number {
  try {
    return Buffer.byteLength(JSON.stringify(value) ?? '');
  } catch {
    return Number.POSITIVE_INFINITY;
  }
}

/** Ever tighter bounds, tried in turn until a context fits its bytes. */
const TIGHTER_BOUNDS: ContextBounds[] = [
  { items: 20, textChars: 300 },
  { items: 5, textChars: 200 },
  { items: 1, textChars: 100 },
  { items: 0, textChars: 100 },
];

/**
 * What an answer of either face says of an error: its name, its description (at most 2,000
 * characters) and its context with `extra` (the request id), fitted so that the answer stays
 * under MAX_ERROR_ANSWER_BYTES whatever the error holds. The last guard, applied where both faces
 * serialise an error (REST's body, GraphQL's error mask, the refusals written below yoga): lists
 * are cut further until the context fits, then only its plain values are kept, then only as many
 * of those as fit. `contextTrimmed: true` says the context was cut to fit.
 */
export function answerableError(error: DomainError, extra: Record<string, unknown> = {}): { name: string; description: string; context: Record<string, unknown> } {
  const description = truncatedText(error.description, MAX_DESCRIPTION_CHARS);
  // The description's bytes as serialised (escapes included) leave the rest to the context.
  const contextBytes = MAX_ERROR_ANSWER_BYTES - ANSWER_FRAMING_BYTES - jsonBytes(description);
  const full = { ...error.context, ...extra };
  if (jsonBytes(full) <= contextBytes) return { name: error.name, description, context: full };
  for (const bounds of TIGHTER_BOUNDS) {
    const context = { ...boundErrorContext(error.context, bounds), ...extra, contextTrimmed: true };
    if (jsonBytes(context) <= contextBytes) return { name: error.name, description, context };
  }
  // Plain values only, as many as fit.
  const context: Record<string, unknown> = { ...extra, contextTrimmed: true };
  let bytes = jsonBytes(context);
  for (const [key, value] of Object.entries(boundErrorContext(error.context, { items: 0, textChars: 100 }))) {
    if (value !== null && typeof value === 'object') continue;
    const entryBytes = jsonBytes({ [key]: value });
    if (bytes + entryBytes > contextBytes) break;
    context[key] = value;
    bytes += entryBytes;
  }
  return { name: error.name, description, context };
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
    super('Request.IdempotencyKeyReused', 'This Idempotency-Key was already used with a different request within the last 24 hours.', { idempotencyKey: key });
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

/**
 * Seconds a 503 answer tells the caller to wait (`Retry-After`, and `context.retryAfterSeconds`)
 * when its error names no time of its own: every 503 the REST face answers carries one
 * (http/contract-body.ts), so clients and proxies back off instead of retrying at once.
 */
export const DEFAULT_RETRY_AFTER_SECONDS = 5;

/** `Server.Unavailable`: a dependency (the database) cannot be reached right now; retry after `context.retryAfterSeconds`. */
export class ServiceUnavailableError extends DomainError {
  constructor() {
    super('Server.Unavailable', 'The service is temporarily unable to reach its database; retry shortly.', { retryAfterSeconds: DEFAULT_RETRY_AFTER_SECONDS });
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
    super('Storage.ObjectMissing', 'A stored file this request needs is missing from the file storage; nothing was changed. It has been logged; retry later or quote the requestId.', {
      retryAfterSeconds: 60,
    });
  }
}

/** `Server.Busy`: too much work of one kind is waiting (e.g. PDFs to inspect); nothing was stored, retry after `context.retryAfterSeconds`. */
export class ServerBusyError extends DomainError {
  constructor(description: string, context: Record<string, unknown> = {}) {
    super('Server.Busy', description, { retryAfterSeconds: DEFAULT_RETRY_AFTER_SECONDS, ...context });
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
  'Envelope.AlreadySigned': 409,
  'Recipient.AlreadyCompleted': 409,
  'Envelope.AuditNotFound': 404,
  'Recipient.HasFields': 409,
  'Field.InUse': 409,
  'Recipient.QuorumExceedsAgents': 422,
  'Recipient.QuorumNotApprover': 422,
  'Field.NotAllowedForRecipient': 422,
  'Envelope.CapacityExceeded': 422,
  'ContactGroup.CapacityExceeded': 422,
  'Contact.InUse': 409,
  'ContactGroup.InUse': 409,
  'ContactGroup.MemberNotFound': 404,
  'User.InUse': 409,
  'Webhook.Disabled': 409,
  'Webhook.CapacityExceeded': 422,
  'PublicLink.Unavailable': 404,
  'PublicLink.Expired': 410,
  'PublicLink.Exhausted': 410,
  'Sandbox.Disabled': 403,
  'Download.InvalidLink': 403,
  'Template.NotOwner': 403,
  'Template.NotReady': 409,
  'Template.DataTagsInvalid': 422,
  'BulkSend.TooManyRows': 422,
  'BulkSend.Finished': 409,
  'Template.CapacityExceeded': 422,
  'Jumpstart.UnknownRecipient': 400,
  'Envelope.NotSent': 409,
  'Envelope.NotScheduled': 409,
  'Signing.MissingToken': 401,
  'Signing.InvalidToken': 401,
  'Signing.NotYourTurn': 409,
  'Signing.RecipientCompleted': 409,
  'Signing.EnvelopeChanged': 409,
  'Signing.FieldNotAssigned': 403,
  'Attachment.TooLarge': 413,
  'Attachment.TooManyFiles': 422,
  'Attachment.UnsupportedType': 415,
  'Attachment.TypeNotAccepted': 415,
  'Attachment.ImageTooLarge': 422,
  'Attachment.InvalidImage': 422,
  'Attachment.InvalidPdf': 422,
  'Attachment.UploadIncomplete': 400,
  'Attachment.NotAttachmentField': 422,
  'Attachment.UnknownFile': 422,
  'Attachment.NotPrefillable': 422,
  'Attachment.NotFound': 404,
  'Document.PageNotFound': 404,
  'Signing.FieldReadonly': 409,
  'Signing.RequiredFieldsMissing': 409,
  'Signing.ValueDoesNotFit': 422,
  'Signing.NotDelegator': 403,
  'Signing.AlreadyDelegated': 409,
  'Signing.NotHost': 403,
  'Signing.NotHostedSigner': 404,
  'Signing.HostCannotSubmit': 409,
  'Signing.ApproverCannotSubmit': 409,
  'Signing.NotApprover': 403,
  'Signing.AlreadyApproved': 409,
  'Signing.RoleCompleted': 410,
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
  'Signing.TrustServiceFailed': 502,
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

/** The names the table maps to `status` exactly (tests: every 503 carries Retry-After). */
export function errorNamesWithStatus(status: number): string[] {
  return Object.keys(statusByName).filter((name) => statusByName[name] === status);
}

export function httpStatusForError(name: string): number {
  const exact = statusByName[name];
  if (exact !== undefined) return exact;
  const reason = name.slice(name.indexOf('.') + 1);
  if (reason === 'NotFound') return 404;
  if (reason.endsWith('Bound') || reason === 'Conflict' || reason.startsWith('Duplicate')) return 409;
  return 400;
}
