import { maxAliasesRule } from '@escape.tech/graphql-armor-max-aliases';
import { maxDepthRule } from '@escape.tech/graphql-armor-max-depth';
import { maxDirectivesRule } from '@escape.tech/graphql-armor-max-directives';
import { maxTokensPlugin } from '@escape.tech/graphql-armor-max-tokens';
import {
  type FieldNode,
  GraphQLError,
  type GraphQLField,
  type GraphQLNamedType,
  type GraphQLOutputType,
  type GraphQLSchema,
  getNamedType,
  isInterfaceType,
  isListType,
  isNonNullType,
  isObjectType,
  Kind,
  type OperationDefinitionNode,
  parse,
  type SelectionSetNode,
  type ValidationContext,
  type ValidationRule,
  validate,
} from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { PAGE_SIZE } from '../domain/pagination.ts';
import { httpStatusForError } from '../shared/errors.ts';

/*
 * What one GraphQL operation may ask for, checked while the document is parsed and validated,
 * so a refused operation never reaches a resolver (or the database). Every value is far above
 * what a real query of this schema needs: the deepest path (envelopes → edges → node → fields →
 * views → location → x) is 7 levels; a page of 100 envelopes with every field and every nested
 * list selected costs about 513 000 (see `estimateCost`); GraphiQL's introspection query is ~600
 * tokens and is not counted for depth or cost. docs/limits.md lists them with their error names.
 */
export const GRAPHQL_LIMITS = {
  /** Nesting of selections (fragments do not add a level; `__schema` is not counted). */
  depth: 12,
  /** The estimated number of values an answer can hold (see `estimateCost`). */
  cost: 1_000_000,
  /** Aliased fields, `__typename` included: each alias re-runs its field. */
  aliases: 20,
  /** Directives (`@include`, `@skip`…) anywhere in the operation. */
  directives: 50,
  /** Lexical tokens of the whole document, counted while parsing. */
  tokens: 5000,
} as const;

/** The page size of a paged field without `first`, and the largest it accepts. */
const DEFAULT_PAGE_SIZE = PAGE_SIZE.default;
const MAX_PAGE_SIZE = PAGE_SIZE.max;
/**
 * A list that is not paged (an envelope's documents, recipients and fields, a document's pages,
 * a group's members) is counted as this many items: typical, not worst-case, so that a full
 * nested page still passes while multiplying several such pages does not.
 */
const UNPAGED_LIST_SIZE = 10;

export type GraphQLLimitName = 'GraphQL.DepthLimit' | 'GraphQL.CostLimit' | 'GraphQL.AliasLimit' | 'GraphQL.DirectiveLimit' | 'GraphQL.TokenLimit';

/** A refused operation: a validation error with a stable name in `extensions.code`, as domain errors have. */
export function limitError(name: GraphQLLimitName | 'GraphQL.IntrospectionDisabled', message: string, context: Record<string, unknown>): GraphQLError {
  return new GraphQLError(message, { extensions: { code: name, name, context } });
}

/**
 * GraphQL Armor's rules report "Syntax Error: <what>" without a name; ours keep the message (it
 * says the limit and what was found) under a name. `propagateOnRejection: false` makes the rule
 * report through the validation context instead of throwing, so other validation errors of the
 * same document are still listed.
 */
function named(name: GraphQLLimitName, limit: number) {
  return {
    propagateOnRejection: false,
    onReject: [
      (context: ValidationContext | null, error: GraphQLError) => {
        const found = /found (\d+)/.exec(error.message);
        context?.reportError(limitError(name, error.message.replace(/^Syntax Error: /, ''), { limit, ...(found ? { found: Number(found[1]) } : {}) }));
      },
    ],
  };
}

// ---------------------------------------------------------------------------------------------
// Cost.

/**
 * An estimate of how many values an answer may hold, computed from the document and the schema
 * alone: every selected field counts 1 for each time it is resolved, and a list multiplies what is
 * below it by its size. A list inside a paged field (the `edges`/`nodes` of `envelopes(first:)`),
 * or a list field that takes `first` itself, has the page size: `first` when written in the document, the default page size (20) when
 * absent, and the largest page (100) when it comes from a variable (validation runs once per
 * document, before variable values are looked at, so the worst case is assumed). Other lists
 * count as UNPAGED_LIST_SIZE items. `__schema`/`__type` count 1 (introspection is bounded by the
 * token limit and can be switched off). Fragments are followed; a spread already being expanded
 * (a cycle, which validation reports anyway) counts nothing.
 */
export function estimateCost(context: ValidationContext, operation: OperationDefinitionNode): number {
  const schema = context.getSchema();
  const root = operation.operation === 'mutation' ? schema.getMutationType() : operation.operation === 'subscription' ? schema.getSubscriptionType() : schema.getQueryType();
  if (!root) return 0;
  return selectionCost(context, operation.selectionSet, root, undefined, new Set());
}

function selectionCost(context: ValidationContext, selectionSet: SelectionSetNode, parentType: GraphQLNamedType, pageSize: number | undefined, expanding: Set<string>): number {
  let cost = 0;
  for (const selection of selectionSet.selections) {
    if (selection.kind === Kind.FIELD) {
      cost += fieldCost(context, selection, parentType, pageSize, expanding);
    } else if (selection.kind === Kind.INLINE_FRAGMENT) {
      const type = selection.typeCondition ? (context.getSchema().getType(selection.typeCondition.name.value) ?? parentType) : parentType;
      cost += selectionCost(context, selection.selectionSet, type, pageSize, expanding);
    } else {
      const name = selection.name.value;
      const fragment = context.getFragment(name);
      if (!fragment || expanding.has(name)) continue;
      const type = context.getSchema().getType(fragment.typeCondition.name.value) ?? parentType;
      cost += selectionCost(context, fragment.selectionSet, type, pageSize, new Set([...expanding, name]));
    }
  }
  return cost;
}

function fieldCost(context: ValidationContext, node: FieldNode, parentType: GraphQLNamedType, pageSize: number | undefined, expanding: Set<string>): number {
  const name = node.name.value;
  if (name === '__schema' || name === '__type' || name === '__typename') return 1;
  const field: GraphQLField<unknown, unknown> | undefined = isObjectType(parentType) || isInterfaceType(parentType) ? parentType.getFields()[name] : undefined;
  // An unknown field is reported by graphql-js's own rules; it adds nothing here.
  if (!field) return 0;
  const list = isList(field.type);
  const pagedBy = field.args.some((argument) => argument.name === 'first') ? pageSizeOf(node) : undefined;
  // A paged list is its own page; a paged connection hands its page size to its edges/nodes.
  const size = list ? (pagedBy ?? pageSize ?? UNPAGED_LIST_SIZE) : 1;
  const below = node.selectionSet ? selectionCost(context, node.selectionSet, getNamedType(field.type), list ? undefined : pagedBy, expanding) : 0;
  return size * (1 + below);
}

function isList(type: GraphQLOutputType): boolean {
  return isListType(isNonNullType(type) ? type.ofType : type);
}

function pageSizeOf(node: FieldNode): number {
  const first = node.arguments?.find((argument) => argument.name.value === 'first');
  if (!first) return DEFAULT_PAGE_SIZE;
  if (first.value.kind === Kind.INT) return Math.max(0, Math.min(MAX_PAGE_SIZE, Number(first.value.value)));
  if (first.value.kind === Kind.NULL) return DEFAULT_PAGE_SIZE;
  return MAX_PAGE_SIZE;
}

/** The estimated cost of each operation of a document (for tests and for sizing the limit). */
export function operationCosts(schema: GraphQLSchema, source: string): number[] {
  const costs: number[] = [];
  validate(schema, parse(source), [
    (context) => ({
      OperationDefinition(operation) {
        costs.push(estimateCost(context, operation));
      },
    }),
  ]);
  return costs;
}

const costLimitRule: ValidationRule = (context) => ({
  OperationDefinition(operation) {
    const cost = estimateCost(context, operation);
    if (cost > GRAPHQL_LIMITS.cost) {
      context.reportError(limitError('GraphQL.CostLimit', `Query cost limit of ${GRAPHQL_LIMITS.cost} exceeded, found ${cost}.`, { limit: GRAPHQL_LIMITS.cost, found: cost }));
    }
  },
});

// ---------------------------------------------------------------------------------------------
// Introspection switch and suggestions.

/** `GRAPHQL_INTROSPECTION=false`: `__schema` and `__type` are refused (`__typename` stays). */
const noIntrospectionRule: ValidationRule = (context) => ({
  Field(node) {
    if (node.name.value !== '__schema' && node.name.value !== '__type') return;
    context.reportError(
      limitError('GraphQL.IntrospectionDisabled', `Introspection is disabled on this server; "${node.name.value}" cannot be queried.`, {
        field: node.name.value,
      }),
    );
  },
});

/** "Did you mean …" in any form graphql-js writes it (fields, arguments, types, enum values). */
const SUGGESTION = /\s*Did you mean [^?]*\?/g;

function withoutSuggestions(error: GraphQLError): GraphQLError {
  if (!SUGGESTION.test(error.message)) return error;
  SUGGESTION.lastIndex = 0;
  return new GraphQLError(error.message.replace(SUGGESTION, ''), {
    nodes: error.nodes,
    source: error.source,
    positions: error.positions,
    path: error.path,
    originalError: error.originalError,
    extensions: error.extensions,
  });
}

/**
 * Hides "Did you mean …" from every answer, for every caller: suggestions let anyone map the
 * schema even where introspection is off. Done on the result rather than with GraphQL Armor's
 * block-field-suggestions plugin, which only rewrites validation errors and only the quoted form:
 * enum values ("Did you mean the enum value …") and variable values checked at execution would
 * still leak.
 */
function hideSuggestionsPlugin(): Plugin {
  return {
    onResultProcess({ result, setResult }) {
      if (Array.isArray(result) || !result || typeof result !== 'object' || !('errors' in result) || !result.errors) return;
      setResult({ ...result, errors: result.errors.map((error) => withoutSuggestions(error as GraphQLError)) });
    },
  };
}

/**
 * A document refused before execution (no `data`) with a named error (`GraphQL.AliasLimit`, the
 * other limits, `Request.Invalid` for a `__proto__` literal) is answered with that name's status
 * (400) on POST and GET, whichever JSON media type the client accepts. Yoga would answer these 200
 * to a client that accepts only the legacy `application/json` (graphql-over-http's rule for
 * validation errors, which it also forces on errors thrown while parsing, as the token limit's is);
 * an unnamed validation or syntax error keeps that rule. The status is set on the result's
 * `extensions.http`, which yoga reads for the status and leaves out of the answer.
 * docs/decisions.md ("GraphQL refusals and HTTP status").
 */
function namedRefusalStatusPlugin(): Plugin {
  return {
    onResultProcess({ result, setResult }) {
      if (Array.isArray(result) || !result || typeof result !== 'object' || 'data' in result || !('errors' in result) || !result.errors?.length) return;
      const statuses = result.errors
        .map((error) => (error as GraphQLError).extensions?.code)
        .filter((code): code is string => typeof code === 'string' && /^[A-Z][A-Za-z]*\.[A-Z][A-Za-z]*$/.test(code))
        .map(httpStatusForError);
      if (statuses.length === 0) return;
      const extensions = (result.extensions ?? {}) as Record<string, unknown>;
      const http = (extensions.http ?? {}) as { status?: number };
      setResult({ ...result, extensions: { ...extensions, http: { ...http, status: Math.max(http.status ?? 0, ...statuses) } } });
    },
  };
}

/** Every GraphQL limit of one operation, as yoga plugins; `introspection: false` also refuses introspection. */
export function graphqlLimitPlugins(options: { introspection: boolean }): Plugin[] {
  const rules: ValidationRule[] = [
    maxDepthRule({ n: GRAPHQL_LIMITS.depth, flattenFragments: true, ignoreIntrospection: true, ...named('GraphQL.DepthLimit', GRAPHQL_LIMITS.depth) }),
    // `allowList: []`: Armor lets `__typename` aliases through by default, which would make
    // `a1: __typename … a9999: __typename` free; the token limit alone is not enough.
    maxAliasesRule({ n: GRAPHQL_LIMITS.aliases, allowList: [], ...named('GraphQL.AliasLimit', GRAPHQL_LIMITS.aliases) }),
    maxDirectivesRule({ n: GRAPHQL_LIMITS.directives, ...named('GraphQL.DirectiveLimit', GRAPHQL_LIMITS.directives) }),
    costLimitRule,
    ...(options.introspection ? [] : [noIntrospectionRule]),
  ];
  return [
    {
      onValidate({ addValidationRule }) {
        for (const rule of rules) addValidationRule(rule);
      },
    },
    // Tokens are counted by the parser, before there is a validation context to report to: the
    // handler throws the named error in place of Armor's unnamed one.
    maxTokensPlugin({
      n: GRAPHQL_LIMITS.tokens,
      onReject: [
        () => {
          throw limitError('GraphQL.TokenLimit', `Token limit of ${GRAPHQL_LIMITS.tokens} exceeded.`, { limit: GRAPHQL_LIMITS.tokens });
        },
      ],
    }) as Plugin,
    hideSuggestionsPlugin(),
    namedRefusalStatusPlugin(),
  ];
}
