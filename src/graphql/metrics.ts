import { type DocumentNode, type ExecutionResult, getOperationAST } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { observeLabelled } from '../shared/histogram-children.ts';
import type { Metrics } from '../shared/metrics.ts';

/**
 * One executed operation into `graphql_operation_duration_seconds`, its series resolved once per
 * label set (shared/histogram-children.ts): by the plugin below and by the pass-through served
 * beside yoga (graphql/pass-through-http.ts).
 */
export function observeOperation(
  metrics: Pick<Metrics, 'graphqlOperationDuration'>,
  operation: { operation_name: string; operation_type: string; result: 'success' | 'error'; startedAt: bigint },
): void {
  const { operation_name, operation_type, result, startedAt } = operation;
  const seconds = Number(process.hrtime.bigint() - startedAt) / 1e9;
  observeLabelled(metrics.graphqlOperationDuration, { operation_name, operation_type, result }, [operation_name, operation_type, result], seconds);
}

/**
 * `graphql_operation_duration_seconds`: each executed operation by its (bounded) name and type,
 * over HTTP and WebSocket alike (both run through these hooks). Timed from execution's start,
 * after parsing and validation (cached per document, and refused operations never execute), to
 * its result; a subscription until its event stream is set up, since its lifetime is the
 * client's choice. `result` is `error` when the answer carries errors. Our own plugin rather than
 * @graphql-yoga/plugin-prometheus: see docs/decisions.md#metrics.
 */
export function graphqlMetricsPlugin(metrics: Pick<Metrics, 'graphqlOperationDuration' | 'operationNameLabel'>): Plugin {
  function labelsOf(document: DocumentNode, operationName: string | null | undefined) {
    const operation = getOperationAST(document, operationName);
    return {
      operation_name: metrics.operationNameLabel(operation?.name?.value ?? operationName),
      operation_type: operation?.operation ?? 'unknown',
    };
  }
  function hasErrors(result: unknown): boolean {
    return typeof result === 'object' && result !== null && Array.isArray((result as ExecutionResult).errors) && (result as ExecutionResult).errors!.length > 0;
  }
  return {
    onExecute({ args }) {
      const startedAt = process.hrtime.bigint();
      return {
        onExecuteDone({ result }) {
          // An incremental result (an async iterable) counts once it is handed back.
          observeOperation(metrics, { ...labelsOf(args.document, args.operationName), result: hasErrors(result) ? 'error' : 'success', startedAt });
        },
      };
    },
    onSubscribe({ args }) {
      const endTimer = metrics.graphqlOperationDuration.startTimer(labelsOf(args.document, args.operationName));
      return {
        onSubscribeResult({ result }) {
          endTimer({ result: hasErrors(result) ? 'error' : 'success' });
        },
        onSubscribeError() {
          endTimer({ result: 'error' });
        },
      };
    },
  };
}
