import { type ASTVisitor, GraphQLError, Kind, type ValidationContext, type ValueNode } from 'graphql';
import { exceedsJsonDepth, MAX_JSON_DEPTH } from '../shared/json-depth.ts';
import { builder } from './builder.ts';

builder.scalarType('DateTime', {
  description: 'An instant in time, as an ISO 8601 string in UTC (e.g. 2026-11-21T09:30:00.000Z).',
  // The read model already answers timestamps in this exact form; Dates come from elsewhere.
  serialize: (value) => (typeof value === 'string' ? value : value instanceof Date ? value.toISOString() : new Date(value as number).toISOString()),
  parseValue: (value) => {
    const date = typeof value === 'string' ? new Date(value) : new Date(Number.NaN);
    if (Number.isNaN(date.getTime())) throw new GraphQLError('DateTime must be an ISO 8601 string');
    return date;
  },
});

function literalToValue(node: ValueNode): unknown {
  switch (node.kind) {
    case Kind.STRING:
    case Kind.BOOLEAN:
      return node.value;
    case Kind.INT:
    case Kind.FLOAT:
      return Number(node.value);
    case Kind.NULL:
      return null;
    case Kind.LIST:
      return node.values.map(literalToValue);
    case Kind.OBJECT:
      return Object.fromEntries(node.fields.map((field) => [field.name.value, literalToValue(field.value)]));
    default:
      throw new GraphQLError('JSONObject literals cannot contain variables');
  }
}

function requireObject(value: unknown): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new GraphQLError('JSONObject must be a JSON object');
  }
  if (exceedsJsonDepth(value, MAX_JSON_DEPTH)) throw new GraphQLError(`JSONObject may nest at most ${MAX_JSON_DEPTH} levels deep`);
  return value as Record<string, unknown>;
}

builder.scalarType('JSONObject', {
  description: 'An arbitrary JSON object (caller metadata, field values and configuration).',
  serialize: (value) => value as Record<string, unknown>,
  parseValue: requireObject,
  parseLiteral: (node) => requireObject(literalToValue(node)),
});

/**
 * graphql-jit compiles an operation's literal argument values into JavaScript source as object
 * literals, where a `"__proto__"` key sets the object's prototype instead of creating a key: a
 * JSONObject literal would lose it silently. No input type of the schema can have a field of that
 * name (names starting with "__" are reserved), so the key can only be caller JSON; such a literal
 * is refused by name, and the same object sent in a variable is kept exactly.
 */
export function protoKeyInLiteralRule(context: ValidationContext): ASTVisitor {
  return {
    ObjectField(node) {
      if (node.name.value !== '__proto__') return;
      const message = 'A "__proto__" key cannot be written in a JSONObject literal; send the object in a variable, where every key is kept.';
      context.reportError(
        new GraphQLError(message, {
          nodes: [node],
          extensions: { code: 'Request.Invalid', name: 'Request.Invalid', context: { issues: [{ path: '__proto__', message }] } },
        }),
      );
    },
  };
}
