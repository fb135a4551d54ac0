import { GraphQLError } from 'graphql';
import { DomainError, httpStatusForError } from '../shared/errors.ts';
import { normalizeError } from '../shared/normalize-error.ts';
import type { Logger } from '../shared/logger.ts';

/**
 * Yoga's error mask, kept on: domain errors reach GraphQL clients with the same name, description
 * and context as on REST (`extensions.code` = the name); anything else is logged and shown as
 * `Server.Internal`. GraphQL validation and syntax errors pass unchanged.
 */
export function createErrorMask(logger: Logger) {
  return (error: unknown): Error => {
    if (error instanceof GraphQLError && !(error.originalError instanceof Error)) return error;
    const original = error instanceof GraphQLError ? error.originalError : error;
    if (original instanceof GraphQLError) return original;
    const requestId = (error instanceof GraphQLError && (error.extensions?.requestId as string)) || undefined;
    const domainError = normalizeError(original, logger);
    return toGraphQLError(domainError, error instanceof GraphQLError ? error : undefined, requestId);
  };
}

function toGraphQLError(domainError: DomainError, located: GraphQLError | undefined, requestId: string | undefined): GraphQLError {
  const status = httpStatusForError(domainError.name);
  return new GraphQLError(domainError.description, {
    nodes: located?.nodes,
    source: located?.source,
    positions: located?.positions,
    path: located?.path,
    extensions: {
      code: domainError.name,
      name: domainError.name,
      context: requestId ? { ...domainError.context, requestId } : domainError.context,
      // Only authentication failures change the HTTP status: a GraphQL response with data and
      // errors side by side is otherwise a 200, as the GraphQL-over-HTTP spec expects.
      ...(status === 401 ? { http: { status } } : {}),
    },
  });
}
