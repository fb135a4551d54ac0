import { type ASTVisitor, type ExecutionResult, GraphQLError, type ValidationContext } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { isStorableText, UNSTORABLE_TEXT_MESSAGE, unstorableTextIssues } from '../domain/validation.ts';
import { InvalidRequestError, type ValidationIssue } from '../shared/errors.ts';

/*
 * The GraphQL face of the one text check (domain/validation.ts, unstorableTextIssues): a NUL or a
 * lone surrogate anywhere in an operation's variables, or in a string literal of its document
 * (`"\u0000"` is a valid GraphQL escape), is `Request.Invalid` before any resolver runs, as it is
 * for every REST body, query string and form. Checked when the operation is executed or
 * subscribed, so HTTP, SSE and WebSocket operations all pass through it.
 */

function refusal(issues: ValidationIssue[]): ExecutionResult {
  const error = new InvalidRequestError(issues);
  return { errors: [new GraphQLError(error.description, { extensions: { code: error.name, name: error.name, context: error.context } })] };
}

/** A string literal holding unstorable text, refused by name at validation. */
function unstorableLiteralRule(context: ValidationContext): ASTVisitor {
  return {
    StringValue(node) {
      if (isStorableText(node.value)) return;
      const message = `A string literal ${UNSTORABLE_TEXT_MESSAGE}.`;
      context.reportError(
        new GraphQLError(message, {
          nodes: [node],
          extensions: { code: 'Request.Invalid', name: 'Request.Invalid', context: { issues: [{ path: '', message: `a string literal ${UNSTORABLE_TEXT_MESSAGE}` }] } },
        }),
      );
    },
  };
}

export function unstorableTextPlugin(): Plugin {
  const checkVariables = ({ args, setResultAndStopExecution }: { args: { variableValues?: unknown }; setResultAndStopExecution: (result: ExecutionResult) => void }) => {
    const issues = unstorableTextIssues(args.variableValues ?? {});
    if (issues.length > 0) setResultAndStopExecution(refusal(issues));
  };
  return {
    onValidate({ addValidationRule }) {
      addValidationRule(unstorableLiteralRule);
    },
    onExecute: checkVariables,
    onSubscribe: checkVariables as NonNullable<Plugin['onSubscribe']>,
  };
}
