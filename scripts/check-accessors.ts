/**
 * The accessor rule of `npm run check:architecture`: a getter or setter written in an object
 * literal inside a function (so made anew at every call) is an offence under src/, outside the
 * browser's scripts. V8 keeps an accessor's function in the object's hidden class, so each call
 * makes a hidden class of its own; it lives in old space until the next full collection and holds
 * the accessor's closure, and through it everything the call reached, past every young-generation
 * collection. Per request, that promoted each request whole and ran a full collection about every
 * second under load (docs/performance.md, "What survived young collections"). A class's accessors
 * (one function on its prototype) and accessors shared by every call (src/context.ts,
 * `lazyAccessors`) are fine; so is a literal made once per process, named below with its reason.
 */
import ts from 'typescript';

/** Functions whose object literals may hold accessors, as `file#name` (file relative to src/), each made once per process. */
export const ACCESSOR_EXCEPTIONS: Record<string, string> = {
  'graphql/pass-through-http.ts#createPassThroughHttp': 'made once per app',
  'domain/pdf/worker-pool.ts#createPdfWorkerPool': 'made once per process',
};

function functionName(node: ts.Node, source: ts.SourceFile): string {
  if ((ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node) || ts.isFunctionExpression(node)) && node.name) return node.name.getText(source);
  const parent = node.parent;
  if (parent && (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent))) return parent.name.getText(source);
  return '(anonymous)';
}

/** The offences of one file (relative to src/), as messages. */
export function accessorOffences(relative: string, text: string): string[] {
  // The signing page's and public-link page's scripts run in the signer's browser, once per page.
  if (relative.endsWith('.js') || relative.endsWith('.mjs')) return [];
  const source = ts.createSourceFile(relative, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const offences: string[] = [];
  const visit = (node: ts.Node, enclosing: ts.Node | undefined): void => {
    if ((ts.isGetAccessorDeclaration(node) || ts.isSetAccessorDeclaration(node)) && ts.isObjectLiteralExpression(node.parent) && enclosing) {
      const name = functionName(enclosing, source);
      if (!(`${relative}#${name}` in ACCESSOR_EXCEPTIONS)) {
        const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
        offences.push(`an accessor in an object literal made at every call (a class, or accessors shared by every call): ${relative}:${line} ${node.name.getText(source)} in ${name}`);
      }
    }
    const isFunction = ts.isFunctionLike(node) && !ts.isGetAccessorDeclaration(node) && !ts.isSetAccessorDeclaration(node) && 'body' in node && node.body !== undefined;
    // Inside a class, a method's literal is per call too; the outermost function names the offence.
    ts.forEachChild(node, (child) => visit(child, enclosing ?? (isFunction ? node : undefined)));
  };
  visit(source, undefined);
  return offences;
}
