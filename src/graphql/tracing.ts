import { context, trace } from '@opentelemetry/api';
import { type DocumentNode, getOperationAST } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { isTracing, recordFailure, type Span, SpanKind, tracer } from '../shared/tracing.ts';

/** The spans this plugin started: only those are named by the execute hooks. */
const operationSpans = new WeakSet<Span>();

function nameOperation(document: DocumentNode, operationName: string | null | undefined): void {
  const span = trace.getSpan(context.active());
  if (!span || !operationSpans.has(span)) return;
  const operation = getOperationAST(document, operationName);
  if (!operation) return;
  const name = operation.name?.value;
  span.updateName(`graphql.operation ${operation.operation}${name ? ` ${name}` : ''}`);
  span.setAttribute('graphql.operation.type', operation.operation);
  if (name) span.setAttribute('graphql.operation.name', name);
}

/**
 * A span per GraphQL operation, a child of the request's span (http/request-tracing.ts): it wraps
 * parsing, validation, the context and execution (yoga's `operation` instrumentation), so the
 * statements the resolvers run are its children. Named `graphql.operation <type> <name>` once the
 * document is parsed (a document that fails to parse keeps `graphql.operation`). The document
 * itself is not recorded: its literals may hold anything a caller typed (a webhook secret). A
 * subscription's span covers setting it up; its events are not traced.
 */
export function graphqlTracingPlugin(): Plugin {
  return {
    instrumentation: {
      operation(_payload, wrapped) {
        if (!isTracing()) return wrapped();
        return inOperationSpan(SpanKind.INTERNAL, {}, async () => {
          await wrapped();
        });
      },
    },
    onExecute({ args }) {
      nameOperation(args.document, args.operationName);
      return {
        onExecuteDone({ result }) {
          // Errors in an answer are mostly refusals (a domain error's name), not faults: counted, not failed.
          const span = trace.getSpan(context.active());
          if (span && operationSpans.has(span) && !(Symbol.asyncIterator in result) && result.errors?.length) {
            span.setAttribute('graphql.response.error_count', result.errors.length);
          }
        },
      };
    },
    onSubscribe({ args }) {
      nameOperation(args.document, args.operationName);
    },
  };
}

/**
 * Runs `work` as one operation's span (named by the execute hooks above once its document is
 * known). Over HTTP it is the request span's child (SpanKind.INTERNAL); over WebSocket, which
 * yoga's instrumentation does not see (graphql/websocket.ts runs each operation itself), it is the
 * root of its own trace (SpanKind.SERVER), as no request carries it.
 */
export function inOperationSpan<T>(kind: SpanKind, attributes: Record<string, string>, work: () => Promise<T> | T): Promise<T> | T {
  if (!isTracing()) return work();
  const span = tracer.startSpan('graphql.operation', { kind, attributes });
  operationSpans.add(span);
  return context.with(trace.setSpan(context.active(), span), async () => {
    try {
      return await work();
    } catch (error) {
      recordFailure(span, error);
      throw error;
    } finally {
      span.end();
    }
  });
}
