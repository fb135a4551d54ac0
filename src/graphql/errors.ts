import { type ExecutionResult, GraphQLError } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { answerableError, type DomainError, httpStatusForError, MAX_ERROR_ANSWER_BYTES, truncatedText } from '../shared/errors.ts';

const MAX_GRAPHQL_MESSAGE_CHARS = 2_000;

import type { Logger } from '../shared/logger.ts';
import { normalizeError } from '../shared/normalize-error.ts';

/**
 * Yoga's error mask, kept on: domain errors reach GraphQL clients with the same name, description
 * and context as on REST (`extensions.code` = the name); anything else is logged and shown as
 * `Server.Internal`. GraphQL validation and syntax errors pass unchanged.
 */
export function createErrorMask(logger: Logger) {
  return (error: unknown): Error => {
    const original = innermostError(error);
    // Errors graphql-js raised itself (syntax, validation, bad variable values) are the
    // client's to see. Checked by name, not instanceof: a second copy of graphql (ESM and CJS
    // builds) must not turn them into Server.Internal.
    if (original.name === 'GraphQLError') return boundedMessage(withReason(error as GraphQLError, original));
    const located = error instanceof Error && error.name === 'GraphQLError' ? (error as GraphQLError) : undefined;
    const requestId = (located?.extensions?.requestId as string | undefined) || undefined;
    return toGraphQLError(normalizeError(original, logger), located, requestId);
  };
}

/**
 * graphql-jit reports a variable a scalar refused as "…; Expected type X." and keeps the scalar's
 * own explanation (e.g. how deep JSON may nest) only as the cause: put it back in the message.
 */
function withReason(error: GraphQLError, cause: Error): GraphQLError {
  if (error === cause || !error.message || error.message.includes(cause.message)) return error;
  return new GraphQLError(`${error.message} ${cause.message}`, {
    nodes: error.nodes,
    source: error.source,
    positions: error.positions,
    path: error.path,
    extensions: error.extensions,
  });
}

/**
 * graphql-js quotes the refused value in its message ("Boolean cannot represent a non boolean
 * value: …"), however long the caller made it: the message keeps its first 2,000 characters, so
 * this answer too stays within the 64 KB every error answer keeps to (shared/errors.ts).
 */
function boundedMessage(error: GraphQLError): GraphQLError {
  const message = truncatedText(error.message, MAX_GRAPHQL_MESSAGE_CHARS);
  if (message === error.message) return error;
  return new GraphQLError(message, { nodes: error.nodes, source: error.source, positions: error.positions, path: error.path, extensions: error.extensions });
}

/** Follows `originalError` links down to the error that was actually thrown. */
function innermostError(error: unknown): Error {
  let current: unknown = error;
  for (let depth = 0; depth < 10; depth += 1) {
    const next = (current as { originalError?: unknown } | null)?.originalError;
    if (!(next instanceof Error)) break;
    current = next;
  }
  return current instanceof Error ? current : new Error(String(current));
}

function toGraphQLError(domainError: DomainError, located: GraphQLError | undefined, requestId: string | undefined): GraphQLError {
  const status = httpStatusForError(domainError.name);
  // Fitted under 64 KB whatever the error holds, as on REST (shared/errors.ts).
  const { description, context } = answerableError(domainError, requestId ? { requestId } : {});
  return new GraphQLError(description, {
    nodes: located?.nodes,
    source: located?.source,
    positions: located?.positions,
    path: located?.path,
    extensions: {
      code: domainError.name,
      name: domainError.name,
      context,
      // Only authentication failures change the HTTP status: a GraphQL response with data and
      // errors side by side is otherwise a 200, as the GraphQL-over-HTTP spec expects.
      ...(status === 401 ? { http: { status } } : {}),
    },
  });
}

/** Bytes the `errors` of one GraphQL answer may take: the answer's bound less room for the rest of it. */
const MAX_ERRORS_BYTES = MAX_ERROR_ANSWER_BYTES - 4 * 1024;

/**
 * The last guard on the GraphQL face: each error is bounded by the mask, but graphql-js reports
 * up to 100 validation errors at once, each quoting what the caller wrote (a field name thousands
 * of characters long). An answer's `errors` keep as many as fit in 60 KB, in order, always the
 * first; `extensions.errorsOmitted` counts the rest. REST answers one error, fitted in
 * contract-body.ts; both bounds are the one MAX_ERROR_ANSWER_BYTES.
 */
export function boundedErrorsPlugin(): Plugin {
  return {
    onResultProcess({ result, setResult }) {
      if (Array.isArray(result) || Symbol.asyncIterator in (result as object)) return;
      const single = result as ExecutionResult;
      const errors = single.errors;
      if (!errors || errors.length === 0) return;
      const kept: (typeof errors)[number][] = [];
      let bytes = 0;
      for (const error of errors) {
        const size = Buffer.byteLength(JSON.stringify(error) ?? '') + 1;
        if (kept.length > 0 && bytes + size > MAX_ERRORS_BYTES) break;
        kept.push(error);
        bytes += size;
      }
      if (kept.length === errors.length) return;
      setResult({ ...single, errors: kept, extensions: { ...single.extensions, errorsOmitted: errors.length - kept.length } });
    },
  };
}
