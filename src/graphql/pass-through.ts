import {
  type DocumentNode,
  type ExecutionArgs,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLObjectType,
  type GraphQLSchema,
  getArgumentValues,
  getNamedType,
  getVariableValues,
  Kind,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { LRUCache } from 'lru-cache';
import { ANSWER_FIELDS, type AnswerKind, type AnswerShape, readEnvelopePageAnswer } from '../domain/envelope/envelope.answer.ts';
import type { ServiceContext } from '../domain/service-context.ts';
import { envelopePageOptionsOf } from './types/envelope.ts';

/*
 * The pass-through: a query whose every root field is an envelope page (`envelopes`) and whose
 * selection is plain (fields the read model can answer exactly, aliases, __typename, a fragment on
 * the field's own type alone in its selection set; no directives) is answered with the JSON text PostgreSQL writes for it
 * (domain/envelope/envelope.answer.ts), sent as it is: no resolvers, no parsing of the statement's
 * JSON and no serialising it again. It replaces only the execute step, so parse, validation, the
 * limits, rate limits, tracing and metrics run as for any operation. Anything else, and any
 * error on the way (a bad cursor or filter, no caller), goes to ordinary execution, which answers
 * exactly as without the pass-through (test/graphql-passthrough.test.ts compares the bytes).
 */

/** The read-model kind of each GraphQL object type the pass-through answers. */
const KIND_OF_TYPE: Record<string, AnswerKind> = {
  EnvelopeConnection: 'envelopePage',
  EnvelopeEdge: 'envelopeEdge',
  PageInfo: 'pageInfo',
  Envelope: 'envelope',
  Document: 'document',
  Recipient: 'recipient',
  Agent: 'agent',
  AgentInfo: 'agentInfo',
  Field: 'field',
  FieldView: 'fieldView',
  Point: 'point',
  Size: 'size',
};

type RootPlan = { key: string; constant: string } | { key: string; node: FieldNode; shape: AnswerShape };
export type Plan = { operation: OperationDefinitionNode; roots: RootPlan[] };

class NotPlain extends Error {}

/** The fields of a selection set by response key, in order (fragments inlined), as GraphQL collects them. */
function collectFields(
  selectionSet: SelectionSetNode,
  type: GraphQLObjectType,
  fragments: Record<string, FragmentDefinitionNode>,
  into = new Map<string, FieldNode[]>(),
  seen = new Set<string>(),
): Map<string, FieldNode[]> {
  // graphql-jit orders the fields of fragments mixed with fields (or with other fragments) its own
  // way; a fragment alone in its selection set gives its fields in their order either way.
  const fragmentCount = selectionSet.selections.filter((selection) => selection.kind !== Kind.FIELD).length;
  if (fragmentCount > 0 && selectionSet.selections.length > 1) throw new NotPlain();
  for (const selection of selectionSet.selections) {
    if (selection.directives?.length) throw new NotPlain();
    if (selection.kind === Kind.FIELD) {
      const key = selection.alias?.value ?? selection.name.value;
      into.set(key, [...(into.get(key) ?? []), selection]);
    } else if (selection.kind === Kind.INLINE_FRAGMENT) {
      if (selection.typeCondition && selection.typeCondition.name.value !== type.name) throw new NotPlain();
      collectFields(selection.selectionSet, type, fragments, into, seen);
    } else {
      const fragment = fragments[selection.name.value];
      if (!fragment || seen.has(fragment.name.value) || fragment.typeCondition.name.value !== type.name || fragment.directives?.length) throw new NotPlain();
      collectFields(fragment.selectionSet, type, fragments, into, new Set([...seen, fragment.name.value]));
    }
  }
  return into;
}

function shapeOf(nodes: FieldNode[], type: GraphQLObjectType, fragments: Record<string, FragmentDefinitionNode>): AnswerShape {
  const kind = KIND_OF_TYPE[type.name];
  if (!kind) throw new NotPlain();
  const merged = new Map<string, FieldNode[]>();
  for (const node of nodes) if (node.selectionSet) collectFields(node.selectionSet, type, fragments, merged);
  return [...merged].map(([key, fields]) => {
    const name = fields[0].name.value;
    if (name === '__typename') return { key, constant: type.name };
    if (!(name in ANSWER_FIELDS[kind]) || fields.some((field) => field.arguments?.length)) throw new NotPlain();
    const childKind = ANSWER_FIELDS[kind][name];
    if (childKind === null) return { key, field: name };
    const childType = getNamedType(type.getFields()[name].type) as GraphQLObjectType;
    if (KIND_OF_TYPE[childType.name] !== childKind) throw new NotPlain();
    return { key, field: name, shape: shapeOf(fields, childType, fragments) };
  });
}

function planOf(schema: GraphQLSchema, document: DocumentNode, operationName: string | null | undefined): Plan | null {
  const operations = document.definitions.filter((definition): definition is OperationDefinitionNode => definition.kind === Kind.OPERATION_DEFINITION);
  const operation = operationName ? operations.find((candidate) => candidate.name?.value === operationName) : operations.length === 1 ? operations[0] : undefined;
  const queryType = schema.getQueryType();
  if (!operation || operation.operation !== 'query' || operation.directives?.length || !queryType) return null;
  const fragments: Record<string, FragmentDefinitionNode> = {};
  for (const definition of document.definitions) if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments[definition.name.value] = definition;
  try {
    const roots = [...collectFields(operation.selectionSet, queryType, fragments)].map(([key, fields]): RootPlan => {
      const name = fields[0].name.value;
      if (name === '__typename') return { key, constant: queryType.name };
      // Two `envelopes` under one key merge their arguments' checks in validation; keep it simple.
      if (name !== 'envelopes' || fields.length !== 1) throw new NotPlain();
      const type = getNamedType(queryType.getFields()[name].type) as GraphQLObjectType;
      return { key, node: fields[0], shape: shapeOf(fields, type, fragments) };
    });
    return roots.some((root) => 'node' in root) ? { operation, roots } : null;
  } catch (error) {
    if (error instanceof NotPlain) return null;
    throw error;
  }
}

const NO_PLAN = Symbol('no plan');

/** A document that reached execution (so it parsed and passed every validation rule and limit) and that the pass-through answered. */
export type KnownOperation = { plan: Plan; schema: GraphQLSchema; document: DocumentNode; operationName: string | null | undefined };

/**
 * Pass-through operations by their request's text (operation name and query), for serving them
 * beside yoga (graphql/pass-through-http.ts). Only text yoga parsed and validated, and whose
 * answer came from the pass-through, is ever added; bounded like the read model's shapes.
 */
export class KnownOperations {
  readonly #byText = new LRUCache<string, KnownOperation>({ max: 500 });
  static key(query: string, operationName: string | null | undefined): string {
    return `${operationName ?? ''}\u0000${query}`;
  }
  get size(): number {
    return this.#byText.size;
  }
  get(key: string): KnownOperation | undefined {
    return this.#byText.get(key);
  }
  /** Remembers an operation the pass-through answered, by the request text yoga parsed it from (its `params`). */
  learn(params: { query?: unknown; operationName?: unknown } | undefined, operation: KnownOperation): void {
    if (typeof params?.query !== 'string' || (params.operationName != null && typeof params.operationName !== 'string')) return;
    const key = KnownOperations.key(params.query, params.operationName as string | null | undefined);
    if (!this.#byText.has(key)) this.#byText.set(key, operation);
  }
}

/**
 * The pass-through as an envelop plugin; put it after graphql-jit's, whose execute it falls back to.
 * `known` hears of each operation it answered, with the request text yoga parsed it from.
 */
export function graphqlPassThroughPlugin(known?: KnownOperations): Plugin {
  const plans = new WeakMap<DocumentNode, Map<string, Plan | typeof NO_PLAN>>();
  const planFor = (args: ExecutionArgs): Plan | null => {
    let byName = plans.get(args.document);
    if (!byName) {
      byName = new Map();
      plans.set(args.document, byName);
    }
    const name = args.operationName ?? '';
    let plan = byName.get(name);
    if (plan === undefined) {
      plan = planOf(args.schema, args.document, args.operationName) ?? NO_PLAN;
      byName.set(name, plan);
    }
    return plan === NO_PLAN ? null : plan;
  };

  return {
    onExecute({ executeFn, setExecuteFn }) {
      const execute = executeFn as (args: ExecutionArgs) => unknown;
      setExecuteFn(((args: ExecutionArgs) => {
        const plan = planFor(args);
        if (!plan) return execute(args);
        return answerPlan(plan, { schema: args.schema, variableValues: args.variableValues, context: args.contextValue as ServiceContext }).then(
          (text) => {
            if (text === null) return execute(args);
            known?.learn((args.contextValue as { params?: { query?: unknown; operationName?: unknown } }).params, {
              plan,
              schema: args.schema,
              document: args.document,
              operationName: args.operationName,
            });
            return passedThrough(text);
          },
          () => execute(args),
        );
      }) as typeof executeFn);
    },
  };
}

/** The operation's `{"data":…}` text, or null when it must be executed after all (a failure rejects). */
export async function answerPlan(plan: Plan, args: { schema: GraphQLSchema; variableValues: unknown; context: ServiceContext }): Promise<string | null> {
  const variables = getVariableValues(args.schema, plan.operation.variableDefinitions ?? [], (args.variableValues ?? {}) as Record<string, unknown>);
  if (variables.errors) return null;
  const queryType = args.schema.getQueryType()!;
  const parts = await Promise.all(
    plan.roots.map(async (root) => {
      if ('constant' in root) return `${JSON.stringify(root.key)}:${JSON.stringify(root.constant)}`;
      const fieldArgs = getArgumentValues(queryType.getFields()[root.node.name.value], root.node, variables.coerced);
      const text = await readEnvelopePageAnswer(args.context, envelopePageOptionsOf(fieldArgs), root.shape);
      return `${JSON.stringify(root.key)}:${text}`;
    }),
  );
  return `{"data":{${parts.join(',')}}}`;
}

/**
 * An execution result whose serialisation is the text itself (yoga calls a result's `stringify`,
 * detached). `data` is parsed only if a plugin asks; a class, so that accessor is one function on
 * its prototype, not a hidden class per result (src/context.ts, `lazyAccessors`).
 */
class PassedThrough {
  readonly stringify: () => string;
  readonly #text: string;
  #data: unknown;
  constructor(text: string) {
    this.#text = text;
    this.stringify = () => text;
  }
  get data(): unknown {
    this.#data ??= (JSON.parse(this.#text) as { data: unknown }).data;
    return this.#data;
  }
}

function passedThrough(text: string) {
  return new PassedThrough(text);
}
