/**
 * The parameter-list rule of `npm run check:architecture` (issue 34, item 6): a function, method,
 * arrow or constructor under src/ that takes five or more positional parameters is an offence.
 * At five, a call reads as a row of values whose meaning is their order (`ensure(a, 'x', 5, 3, 1)`),
 * and two of the same type swap without a compiler noticing; an options object names each one at
 * the call. Four or fewer stay positional: `(context, options)` and `(em, teamId, id)` read well.
 *
 * The exceptions below are named with their reason; a new one is a decision, made here.
 */
import ts from 'typescript';

/** The most positional parameters a function may take. */
export const MAX_POSITIONAL_PARAMETERS = 4;

/**
 * Functions allowed five or more positional parameters, as `file#name` (file relative to src/),
 * each with its reason.
 */
export const POSITIONAL_PARAMETER_EXCEPTIONS: Record<string, string> = {
  // Recursive walks over a GraphQL selection: the same accumulators are threaded through every
  // level, as graphql-js's own collectFields does; the call sites are the function itself.
  'graphql/limits.ts#selectionCost': 'recursive walk: the accumulators thread through each level',
  'graphql/limits.ts#fieldCost': 'recursive walk: the accumulators thread through each level',
  'graphql/pass-through.ts#collectFields': 'recursive walk, after graphql-js collectFields (into, seen thread through)',
  // The PDF inspector's inner loop over a stream's filters: called once per stream from the same
  // file, and recursively per filter; it allocates nothing per call on purpose.
  'domain/pdf/inspect/inflation.ts#inflatedSize': "the inspector's inner loop: no allocation per call",
  // As createIdempotently (change.ts) takes (context, request, create, read): the two callbacks
  // come last, written as closures at the call, after the owner and what to create.
  'domain/owner/owner.ts#createInOwner': 'owner, context, request, then the create and read callbacks (as createIdempotently)',
};

/** The name an allow-list entry uses for a function-like node. */
function nameOf(node: ts.SignatureDeclaration, source: ts.SourceFile): string {
  if (ts.isConstructorDeclaration(node)) {
    const owner = node.parent;
    return `${ts.isClassLike(owner) && owner.name ? owner.name.text : '(anonymous class)'}.constructor`;
  }
  if (node.name) return node.name.getText(source);
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) return parent.name.getText(source);
  return `(anonymous, line ${source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1})`;
}

/** The offences of one file (relative to src/), as messages. Type signatures (no body) do not count. */
export function positionalParameterOffences(relative: string, text: string): string[] {
  const kind = relative.endsWith('.js') || relative.endsWith('.mjs') ? ts.ScriptKind.JS : ts.ScriptKind.TS;
  const source = ts.createSourceFile(relative, text, ts.ScriptTarget.Latest, true, kind);
  const offences: string[] = [];
  const visit = (node: ts.Node): void => {
    if (
      (ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node) || ts.isArrowFunction(node) || ts.isFunctionExpression(node) || ts.isConstructorDeclaration(node)) &&
      node.body !== undefined &&
      node.parameters.length > MAX_POSITIONAL_PARAMETERS
    ) {
      const name = nameOf(node, source);
      if (!(`${relative}#${name}` in POSITIONAL_PARAMETER_EXCEPTIONS)) {
        const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
        offences.push(`${node.parameters.length} positional parameters (at most ${MAX_POSITIONAL_PARAMETERS}; take an options object): ${relative}:${line} ${name}`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return offences;
}
