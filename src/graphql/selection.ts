import { type FieldNode, type GraphQLResolveInfo, Kind, type SelectionSetNode, valueFromASTUntyped } from 'graphql';
import type { ContactGroupInclude } from '../domain/contact/contact.read.ts';
import { type AuditEventPage, type EnvelopeInclude, MAX_AUDIT_EVENTS_PER_PAGE, parseAuditEventPage } from '../domain/envelope/envelope.read.ts';
import type { TemplateInclude } from '../domain/template/template.read.ts';

/**
 * The fields selected below a field, by name (aliases and fragments merged): `tree.get('nodes')
 * ?.get('documents')`. Root fields use it to ask the read model for everything the query will
 * resolve in one statement, before any nested resolver runs. Directives (`@skip`, `@include`) are
 * not evaluated: a skipped field is fetched and not shown, which costs a little and is never wrong.
 */
export type SelectionTree = Map<string, SelectionTree>;

/** The arguments of every occurrence of a selected field (aliases may ask with different ones). */
const argumentsOf = new WeakMap<SelectionTree, Record<string, unknown>[]>();

function collect(selectionSet: SelectionSetNode | undefined, info: GraphQLResolveInfo, into: SelectionTree, seenFragments: Set<string>) {
  if (!selectionSet) return;
  for (const selection of selectionSet.selections) {
    if (selection.kind === Kind.FIELD) {
      const name = selection.name.value;
      let child = into.get(name);
      if (!child) {
        child = new Map();
        into.set(name, child);
      }
      const args = Object.fromEntries((selection.arguments ?? []).map((arg) => [arg.name.value, valueFromASTUntyped(arg.value, info.variableValues)]));
      argumentsOf.set(child, [...(argumentsOf.get(child) ?? []), args]);
      collect(selection.selectionSet, info, child, seenFragments);
    } else if (selection.kind === Kind.INLINE_FRAGMENT) {
      collect(selection.selectionSet, info, into, seenFragments);
    } else {
      const name = selection.name.value;
      // Validation forbids fragment cycles; the guard keeps a bad document from looping anyway.
      if (seenFragments.has(name)) continue;
      const fragment = info.fragments[name];
      if (fragment) collect(fragment.selectionSet, info, into, new Set([...seenFragments, name]));
    }
  }
}

/** The selection below the field being resolved (all of its occurrences merged). */
export function selectionOf(info: GraphQLResolveInfo): SelectionTree {
  const tree: SelectionTree = new Map();
  for (const node of info.fieldNodes as readonly FieldNode[]) collect(node.selectionSet, info, tree, new Set());
  return tree;
}

const EMPTY: SelectionTree = new Map();

/** The subtree at a path of field names (empty when not selected). */
export function selectedAt(tree: SelectionTree, ...path: string[]): SelectionTree {
  let current = tree;
  for (const name of path) current = current.get(name) ?? EMPTY;
  return current;
}

function merge(...trees: SelectionTree[]): SelectionTree {
  const merged: SelectionTree = new Map();
  for (const tree of trees) {
    for (const [name, child] of tree) merged.set(name, merged.has(name) ? merge(merged.get(name)!, child) : child);
  }
  return merged;
}

/** The fields selected on an object: the keys its read must answer (GraphQL names are the data's keys). */
function keysOf(tree: SelectionTree): ReadonlySet<string> {
  return new Set(tree.keys());
}

/** What an `Envelope` selection needs, nested lists and keys, for the read model. */
export function envelopeIncludeOf(envelope: SelectionTree): EnvelopeInclude {
  return {
    documents: envelope.has('documents'),
    attachments: envelope.has('attachments'),
    recipients: envelope.has('recipients'),
    agents: selectedAt(envelope, 'recipients').has('agents'),
    fields: envelope.has('fields'),
    views: selectedAt(envelope, 'fields').has('views'),
    auditEvents: envelope.has('auditEvents'),
    progress: envelope.has('progress'),
    auditEventPage: auditEventWindowOf(selectedAt(envelope, 'auditEvents')),
    keys: {
      envelope: keysOf(envelope),
      document: keysOf(selectedAt(envelope, 'documents')),
      recipient: keysOf(selectedAt(envelope, 'recipients')),
      field: keysOf(selectedAt(envelope, 'fields')),
      // `seq` always: the field's window (`first`, `afterSeq`) is cut by it (auditEventWindow).
      auditEvent: new Set([...keysOf(selectedAt(envelope, 'auditEvents')), 'seq']),
    },
  };
}

/** What a `Template` selection needs, nested lists and keys, for the read model. */
export function templateIncludeOf(template: SelectionTree): TemplateInclude {
  return {
    documents: template.has('documents'),
    recipients: template.has('recipients'),
    fields: template.has('fields'),
    views: selectedAt(template, 'fields').has('views'),
    keys: {
      template: keysOf(template),
      document: keysOf(selectedAt(template, 'documents')),
      recipient: keysOf(selectedAt(template, 'recipients')),
      field: keysOf(selectedAt(template, 'fields')),
    },
  };
}

/**
 * The audit events to read for every `auditEvents(first, afterSeq)` of the query: the one window
 * asked for, or, when aliases ask for different ones, all that any of them could show (each field
 * then picks its own window out of it; see `auditEventWindow`).
 */
function auditEventWindowOf(tree: SelectionTree): AuditEventPage | undefined {
  const windows = (argumentsOf.get(tree) ?? []).map((args) =>
    parseAuditEventPage({ afterSeq: (args.afterSeq as number | null | undefined) ?? undefined, limit: (args.first as number | null | undefined) ?? undefined }),
  );
  if (windows.length === 0) return undefined;
  const alike = windows.every((window) => window.afterSeq === windows[0].afterSeq && window.limit === windows[0].limit);
  return alike ? windows[0] : { afterSeq: Math.min(...windows.map((window) => window.afterSeq)), limit: MAX_AUDIT_EVENTS_PER_PAGE };
}

/** One field's window out of the events its envelope read (the same list when only one window was asked). */
export function auditEventWindow<T extends { seq: number }>(events: T[], args: { first?: number | null; afterSeq?: number | null }): T[] {
  const window = parseAuditEventPage({ afterSeq: args.afterSeq ?? undefined, limit: args.first ?? undefined });
  return events.filter((event) => event.seq > window.afterSeq).slice(0, window.limit);
}

/** What a `ContactGroup` selection needs nested, for the read model. */
export function contactGroupIncludeOf(group: SelectionTree): ContactGroupInclude {
  return { members: group.has('members') };
}

/** The node selection of a connection (of envelopes, contact groups…): its `nodes` and `edges { node }` together. */
export function connectionNodesOf(connection: SelectionTree): SelectionTree {
  return merge(selectedAt(connection, 'nodes'), selectedAt(connection, 'edges', 'node'));
}

/**
 * A nested list the root field should have read with its parent. Missing means the look-ahead and
 * the schema disagree, a bug to fix in the look-ahead, never a reason for a second query.
 */
export function nested<T>(list: T[] | undefined, what: string): T[] {
  if (list === undefined) throw new Error(`${what} was not read with its parent: the selection look-ahead missed it`);
  return list;
}
