/**
 * A span per SQL statement, hooked where every statement passes: `pg.Client.prototype.query`.
 * The ORM (MikroORM over Kysely over a `pg` pool), the read model, the rate limiter's store and
 * the listeners all use `pg`, and so does the embedded database (PGlite is served over the wire
 * protocol), so one wrapper sees them all; the ORM's own hooks would miss the others. Installed
 * once, when tracing starts (tracing.ts), before any pool opens a connection (the prepared-
 * statement wrapper, db/prepared-statements.ts, binds the method it finds at connect).
 *
 * A statement gets a span only inside another span (a request, an outbox job): the workers'
 * polls, run every second outside any, would otherwise each make a trace of one statement.
 *
 * No parameter values are recorded, and the ORM sends most statements with their values inlined
 * as literals, so the text is recorded with every string and number literal replaced by `?`
 * (`sanitizeSql`): an API key's hash, a token, an e-mail address never reach the span.
 */

import { context, type Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import pg from 'pg';

/** Longest statement text kept on a span (after sanitising); statements of many rows are long. */
const MAX_TEXT = 2000;
/** How much of a statement is sanitised at all: the regular expressions cost time per character. */
const MAX_SCANNED = 8000;

/**
 * Literals, replaced by `?`: E-strings (backslash escapes), plain strings (`''` escapes; one cut
 * off by the scan limit runs to the end, so no half of a literal stays), dollar-quoted bodies,
 * and numbers not part of a name or a `$1` placeholder.
 */
const LITERAL = /[Ee]'(?:[^'\\]|''|\\[\s\S])*(?:'|$)|'(?:[^']|'')*(?:'|$)|\$([A-Za-z_]\w*)?\$[\s\S]*?(?:\$\1\$|$)|(?<![\w$.])-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?\b/g;

/** The statement's text with its literals replaced by `?`, shortened to a span attribute's size. */
export function sanitizeSql(text: string): string {
  const sanitized = text.slice(0, MAX_SCANNED).replace(LITERAL, '?');
  const truncated = text.length > MAX_SCANNED || sanitized.length > MAX_TEXT;
  return truncated ? `${sanitized.slice(0, MAX_TEXT)}…` : sanitized;
}

/** `select`, `insert`, … `begin`, `with`: the statement's first keyword, for the span's name. */
function operationOf(text: string): string | undefined {
  return /^\s*([A-Za-z]+)/.exec(text)?.[1]?.toUpperCase();
}

type Query = (this: pg.Client, ...args: unknown[]) => unknown;
const INSTALLED = Symbol.for('envelope-service.sql-tracing');

/** Wraps `pg.Client.prototype.query` once per process; later calls do nothing. */
export function installSqlTracing(): void {
  const prototype = pg.Client.prototype as unknown as { query: Query; [INSTALLED]?: true };
  if (prototype[INSTALLED]) return;
  const query = prototype.query;
  prototype[INSTALLED] = true;
  prototype.query = function tracedQuery(this: pg.Client, ...args: unknown[]) {
    const parent = trace.getSpan(context.active());
    const [config] = args;
    // Cursors and streams (submittable queries) end on their own events; none is used here.
    if (!parent?.isRecording() || config == null || typeof (config as { submit?: unknown }).submit === 'function') return query.apply(this, args);
    const text = typeof config === 'string' ? config : String((config as { text?: unknown }).text ?? '');
    const operation = operationOf(text);
    const span = trace.getTracer('envelope-service').startSpan(operation ?? 'postgresql', {
      kind: SpanKind.CLIENT,
      attributes: {
        'db.system.name': 'postgresql',
        'db.query.text': sanitizeSql(text),
        ...(operation ? { 'db.operation.name': operation } : {}),
        ...(this.database ? { 'db.namespace': this.database } : {}),
        ...(this.host ? { 'server.address': this.host } : {}),
        ...(this.port ? { 'server.port': this.port } : {}),
      },
    });
    // The callback form (pg's pool, the listeners) and the promise form (Kysely) both end the span.
    const callbackIndex = args.findIndex((arg) => typeof arg === 'function');
    if (callbackIndex !== -1) {
      const callback = args[callbackIndex] as (error: unknown, result: unknown) => void;
      args[callbackIndex] = (error: unknown, result: unknown) => {
        finish(span, error);
        callback(error, result);
      };
      return query.apply(this, args);
    }
    let result: unknown;
    try {
      result = query.apply(this, args);
    } catch (error) {
      finish(span, error);
      throw error;
    }
    if (result && typeof (result as Promise<unknown>).then === 'function') {
      (result as Promise<unknown>).then(
        () => finish(span, undefined),
        (error: unknown) => finish(span, error),
      );
    } else {
      finish(span, undefined);
    }
    return result;
  };
}

function finish(span: Span, error: unknown): void {
  if (error) {
    // PostgreSQL's message may quote a value (a unique violation's key): only the code is kept.
    const code = (error as { code?: unknown }).code;
    span.setStatus({ code: SpanStatusCode.ERROR, message: typeof code === 'string' ? `SQLSTATE ${code}` : 'statement failed' });
    if (typeof code === 'string') span.setAttribute('db.response.status_code', code);
  }
  span.end();
}
