/**
 * Checks the one-way arrows of the code base (docs/architecture.md) and fails, listing every
 * offence, when:
 *   - any import circle exists under src/ (type-only imports count: a circle closed through
 *     `import type` still says a name lives in the wrong module);
 *   - anything under src/domain/ imports a face (src/graphql, src/rest, src/signing-page) or the
 *     HTTP wing (src/http);
 *   - a face imports another face, or the HTTP wing imports a face (the faces share src/http,
 *     never each other);
 *   - a file outside the outbox module (src/domain/outbox/) writes into the outbox table;
 *   - the PDF wing (src/domain/pdf/) imports anything of the domain outside itself (the document
 *     and artefact services call it, never the other way round);
 *   - a team filter on a gated aggregate's table is written outside its tenant gate file
 *     (check-team-filters.ts).
 *
 *   npm run check:architecture [-- ROOT]     ROOT defaults to this repository
 *
 * Imports are read with TypeScript's own parser, so comments and strings never count as imports.
 */
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { teamFilterOffences } from './check-team-filters.ts';

export type ArchitectureReport = { files: number; offences: string[] };

const FACES = ['graphql', 'rest', 'signing-page'] as const;
const OUTBOX_MODULE = 'domain/outbox/';
/** How a statement writes a row of the outbox: raw SQL, Kysely, or the entity. */
const OUTBOX_WRITE_PATTERNS = [/insert\s+into\s+"?outbox_message"?/i, /insertInto\(\s*['"]outbox_message['"]/, /\.create\(\s*OutboxMessage\b/, /new\s+OutboxMessage\b/];

function sourceFiles(directory: string): string[] {
  const found: string[] = [];
  for (const entry of fs.readdirSync(directory, { withFileTypes: true })) {
    const full = path.join(directory, entry.name);
    if (entry.isDirectory()) found.push(...sourceFiles(full));
    else if (/\.(ts|js|mts|mjs)$/.test(entry.name) && !entry.name.endsWith('.d.ts')) found.push(full);
  }
  return found;
}

/** Every module specifier a file imports or re-exports, static or dynamic, type-only included. */
function importedSpecifiers(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false);
  const specifiers: string[] = [];
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      specifiers.push(node.moduleSpecifier.text);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments[0] && ts.isStringLiteral(node.arguments[0])) {
      specifiers.push(node.arguments[0].text);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      specifiers.push(node.argument.literal.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return specifiers;
}

/** The wing a file (relative to src/) belongs to: a face, the HTTP wing, the domain, or another top-level part. */
function wingOf(relative: string): string {
  const [first] = relative.split('/');
  return relative.includes('/') ? first : '(root)';
}

/** Strongly connected components with more than one file (or a file importing itself): Tarjan's algorithm. */
function circles(graph: Map<string, Set<string>>): string[][] {
  let index = 0;
  const indices = new Map<string, number>();
  const lowLinks = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const connect = (node: string): void => {
    indices.set(node, index);
    lowLinks.set(node, index);
    index += 1;
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!indices.has(next)) {
        connect(next);
        lowLinks.set(node, Math.min(lowLinks.get(node)!, lowLinks.get(next)!));
      } else if (onStack.has(next)) {
        lowLinks.set(node, Math.min(lowLinks.get(node)!, indices.get(next)!));
      }
    }
    if (lowLinks.get(node) === indices.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1 || graph.get(node)?.has(node)) found.push(component.sort());
    }
  };
  for (const node of [...graph.keys()].sort()) if (!indices.has(node)) connect(node);
  return found;
}

/** One path around a circle, for a readable message: a → b → … → a. */
function pathAround(component: string[], graph: Map<string, Set<string>>): string[] {
  const members = new Set(component);
  const start = component[0];
  const previous = new Map<string, string>();
  const queue = [start];
  const seen = new Set([start]);
  while (queue.length > 0) {
    const node = queue.shift()!;
    for (const next of graph.get(node) ?? []) {
      if (!members.has(next)) continue;
      if (next === start) {
        const route = [node];
        while (route[0] !== start) route.unshift(previous.get(route[0])!);
        return [...route, start];
      }
      if (!seen.has(next)) {
        seen.add(next);
        previous.set(next, node);
        queue.push(next);
      }
    }
  }
  return component;
}

export function checkArchitecture(root: string): ArchitectureReport {
  const sourceRoot = path.join(root, 'src');
  const files = sourceFiles(sourceRoot);
  const relativeOf = (file: string) => path.relative(sourceRoot, file).split(path.sep).join('/');
  const known = new Set(files.map(relativeOf));
  const graph = new Map<string, Set<string>>();
  const offences: string[] = [];

  for (const file of files) {
    const relative = relativeOf(file);
    const text = fs.readFileSync(file, 'utf8');
    const targets = new Set<string>();
    for (const specifier of importedSpecifiers(file, text)) {
      if (!specifier.startsWith('.')) continue;
      const target = relativeOf(path.resolve(path.dirname(file), specifier));
      if (!known.has(target)) continue;
      targets.add(target);
      const from = wingOf(relative);
      const to = wingOf(target);
      if (from === 'domain' && (FACES.includes(to as never) || to === 'http')) {
        offences.push(`domain imports a face or the HTTP wing: ${relative} → ${target}`);
      }
      if (relative.startsWith('domain/pdf/') && target.startsWith('domain/') && !target.startsWith('domain/pdf/')) {
        offences.push(`the PDF wing imports the domain: ${relative} → ${target}`);
      }
      if (from === 'http' && FACES.includes(to as never)) {
        offences.push(`the HTTP wing imports a face: ${relative} → ${target}`);
      }
      if (FACES.includes(from as never) && FACES.includes(to as never) && from !== to) {
        offences.push(`a face imports another face: ${relative} → ${target}`);
      }
    }
    graph.set(relative, targets);
    offences.push(...teamFilterOffences(relative, text));
    if (!relative.startsWith(OUTBOX_MODULE) && !relative.startsWith('migrations/')) {
      text.split('\n').forEach((line, lineIndex) => {
        if (OUTBOX_WRITE_PATTERNS.some((pattern) => pattern.test(line))) {
          offences.push(`writes the outbox outside ${OUTBOX_MODULE}: ${relative}:${lineIndex + 1} (use enqueue())`);
        }
      });
    }
  }
  for (const component of circles(graph)) {
    const route = pathAround(component, graph);
    const others = component.filter((member) => !route.includes(member));
    offences.push(`import circle: ${route.join(" → ")}${others.length > 0 ? ` (with ${others.join(", ")})` : ""}`);
  }
  return { files: files.length, offences };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const root = path.resolve(process.argv[2] ?? path.join(import.meta.dirname, '..'));
  const report = checkArchitecture(root);
  for (const offence of report.offences) console.log(offence);
  console.log(`${report.files} files checked, ${report.offences.length} offence(s)`);
  process.exitCode = report.offences.length === 0 ? 0 : 1;
}
