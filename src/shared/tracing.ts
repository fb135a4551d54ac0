/**
 * Traces (OpenTelemetry), instrumented by hand: a span per HTTP request (http/request-tracing.ts),
 * per GraphQL operation (graphql/tracing.ts), per SQL statement (shared/sql-tracing.ts), per
 * outbox job and per PDF task. Off unless `OTEL_EXPORTER_OTLP_ENDPOINT` (or the traces-only
 * endpoint) is set: then `tracer` is the API's no-op tracer and `withSpan` calls its function with
 * a no-op span and nothing else, so the instrumented paths cost a boolean test.
 *
 * On: one tracer provider with a batch processor and the OTLP/HTTP exporter (which reads the
 * standard `OTEL_EXPORTER_OTLP_*` variables itself: endpoint, headers, timeout, compression), the
 * AsyncLocalStorage context manager (a span started inside `context.with` is the parent of all
 * work its callbacks and awaits do) and the W3C trace-context propagator (`traceparent`).
 *
 * Nothing secret goes into a span: callers name routes by their template, never the URL;
 * statement text is stripped of literals (sql-tracing.ts); exception messages and stacks are
 * redacted (`redactSecrets`) before they are recorded.
 */
import {
  type Attributes,
  type Context,
  context,
  INVALID_SPAN_CONTEXT,
  type Link,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, SimpleSpanProcessor, type SpanExporter, type SpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { redactSecrets } from './redact.ts';
import { installSqlTracing } from './sql-tracing.ts';

export const TRACER_NAME = 'envelope-service';
export { type Attributes, type Span, SpanKind, SpanStatusCode };

type Running = { provider: TracerProvider; tracer: Tracer };
let running: Running | undefined;
const w3c = new W3CTraceContextPropagator();
/** What `withSpan` hands its work while tracing is off: records nothing. */
const NO_SPAN = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

/** Whether spans are being recorded: every instrumentation point asks this first. */
export function isTracing(): boolean {
  return running !== undefined;
}

/**
 * The service's tracer: the running provider's, else the API's no-op one. A stable object, so it
 * may be imported once and still follow `startTracing`/`stopTracing` (tests turn tracing on and off).
 */
export const tracer: Tracer = {
  startSpan: (name, options, parent) => currentTracer().startSpan(name, options, parent),
  startActiveSpan: ((...args: unknown[]) => {
    const current = currentTracer();
    return (current.startActiveSpan as (...given: unknown[]) => unknown).apply(current, args);
  }) as Tracer['startActiveSpan'],
};

function currentTracer(): Tracer {
  return running?.tracer ?? trace.getTracer(TRACER_NAME);
}

export type TracingOptions = {
  /** `service.name` when `OTEL_SERVICE_NAME`/`OTEL_RESOURCE_ATTRIBUTES` do not say (default envelope-service). */
  serviceName?: string;
  /**
   * Where spans go. Default: the OTLP/HTTP exporter behind a batch processor (exports in the
   * background, every 5 s or 512 spans). A given exporter (tests: InMemorySpanExporter) is called
   * synchronously at each span's end instead, so a test sees a span as soon as it ended.
   */
  exporter?: SpanExporter;
};

/**
 * Turns tracing on for the process (once; a second call is refused). Registers the provider,
 * context manager and propagator with the OpenTelemetry API, so any code using the API joins the
 * same traces, and hooks SQL statements (sql-tracing.ts). `stopTracing` flushes and undoes it.
 */
export function startTracing(options: TracingOptions = {}): void {
  if (running) throw new Error('tracing is already started');
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over the default name (the spec's order).
  const resource = resourceFromAttributes({ 'service.name': options.serviceName ?? TRACER_NAME }).merge(detectResources({ detectors: [envDetector] }));
  const processor: SpanProcessor = options.exporter ? new SimpleSpanProcessor({ exporter: options.exporter }) : new BatchSpanProcessor({ exporter: new OTLPTraceExporter() });
  const provider = new TracerProvider({ resource, spanProcessors: [processor] });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(w3c);
  trace.setGlobalTracerProvider(provider);
  installSqlTracing();
  running = { provider, tracer: provider.getTracer(TRACER_NAME) };
}

/** Exports what is buffered and turns tracing off (graceful shutdown; tests). Never throws. */
export async function stopTracing(): Promise<void> {
  const stopping = running;
  if (!stopping) return;
  running = undefined;
  try {
    await stopping.provider.shutdown();
  } catch {
    // An unreachable collector must not hold up or fail the shutdown.
  }
  trace.disable();
  propagation.disable();
  context.disable();
}

/**
 * Runs `work` in a new span, a child of the active one (or of `options.parent`), and ends it
 * when `work` settles. A throw or rejection is recorded on the span (redacted) and its status set
 * to error; the error is rethrown unchanged. With tracing off, `work` runs with a no-op span.
 */
export async function withSpan<T>(
  name: string,
  attributes: Attributes,
  work: (span: Span) => Promise<T> | T,
  options: { kind?: SpanKind; parent?: Context; links?: Link[] } = {},
): Promise<T> {
  if (!running) return work(NO_SPAN);
  const span = running.tracer.startSpan(name, { kind: options.kind ?? SpanKind.INTERNAL, attributes, links: options.links }, options.parent);
  try {
    return await context.with(trace.setSpan(options.parent ?? context.active(), span), () => work(span));
  } catch (error) {
    recordFailure(span, error);
    throw error;
  } finally {
    span.end();
  }
}

/**
 * Marks a span failed by `error`: an `exception` event (type, message and stack, redacted: an
 * error may quote a signing link) and status error with the message. For failures a caller
 * handles itself (the outbox worker settles a failed job instead of throwing).
 */
export function recordFailure(span: Span, error: unknown): void {
  const message = redactSecrets(error instanceof Error ? error.message : String(error)).slice(0, 1000);
  span.addEvent('exception', {
    'exception.type': error instanceof Error ? error.name : typeof error,
    'exception.message': message,
    ...(error instanceof Error && error.stack ? { 'exception.stacktrace': redactSecrets(error.stack).slice(0, 8000) } : {}),
  });
  span.setStatus({ code: SpanStatusCode.ERROR, message });
}

/** `recordFailure` on the active span (the job's, the operation's), when there is one. */
export function recordActiveFailure(error: unknown): void {
  if (!running) return;
  const span = trace.getSpan(context.active());
  if (span) recordFailure(span, error);
}

/**
 * The active span's W3C `traceparent`, to carry work into another process or a later time (an
 * outbox row); null when tracing is off or no span is active.
 */
export function activeTraceparent(): string | null {
  if (!running) return null;
  const carrier: Record<string, string> = {};
  w3c.inject(context.active(), carrier, { set: (target, key, value) => (target[key] = value) });
  return carrier.traceparent ?? null;
}

/** The context a stored or received `traceparent` names (ROOT when absent or malformed): a remote parent. */
export function contextFromTraceparent(traceparent: string | null | undefined, base: Context = ROOT_CONTEXT): Context {
  if (!traceparent) return base;
  return w3c.extract(base, { traceparent }, { get: (carrier, key) => carrier[key as 'traceparent'], keys: () => ['traceparent'] });
}
