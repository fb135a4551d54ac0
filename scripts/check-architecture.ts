/**
 * Checks the one-way arrows of the code base (docs/architecture.md) and fails, listing every
 * offence, when:
 *   - any import circle exists under src/ (type-only imports count: a circle closed through
 *     `import type` still says a name lives in the wrong module);
 *   - anything under src/domain/ imports a face (src/graphql, src/rest, src/mcp, src/signing-page) or the
 *     HTTP wing (src/http);
 *   - a face imports another face, or the HTTP wing imports a face (the faces share src/http,
 *     never each other);
 *   - a file outside the outbox module (src/domain/outbox/) writes into the outbox table;
 *   - the PDF wing (src/domain/pdf/) imports anything of the domain outside itself (the document
 *     and artefact services call it, never the other way round);
 *   - a team filter on a gated aggregate's table is written outside its tenant gate file
 *     (check-team-filters.ts);
 *   - anything under src/domain/ imports a face's package (graphql-yoga, Pothos, graphql-ws,
 *     busboy, graphql-upload-minimal, the MCP SDK): a rule written against those belongs in a face;
 *   - a relative import names no file under src/ (it would otherwise drop out of every rule here);
 *   - src/shared/ imports upward (domain, db, graphql, rest, http, app, main, …): it is imported by
 *     all and imports none of them;
 *   - a face imports src/app.ts or src/main.ts, the composition root that wires it;
 *   - a file of src/db/ other than entities.ts (the ORM's entity list) imports the domain: the
 *     entities import db/columns.ts, so db/ imports the domain only to list them;
 *   - a function takes five or more positional parameters, outside the commented allow-list
 *     (check-parameters.ts): an options object names them at the call;
 *   - a getter or setter is written in an object literal made at every call of a function, outside
 *     the commented allow-list (check-accessors.ts): each call would make a hidden class of its own;
 *   - more pairs of domain folders import each other both ways than the ratchet in
 *     architecture-ratchet.json allows (and, when fewer do, it says to lower the number), or the
 *     ratchet lists more than MAX_FOLDER_PAIRS (5).
 *
 *   npm run check:architecture [-- ROOT]     ROOT defaults to this repository
 *
 * Imports are read with TypeScript's own parser, so comments and strings never count as imports.
 */
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { accessorOffences } from './check-accessors.ts';
import { positionalParameterOffences } from './check-parameters.ts';
import { teamFilterOffences } from './check-team-filters.ts';

export type ArchitectureReport = { files: number; offences: string[] };

const FACES = ['graphql', 'rest', 'mcp', 'signing-page'] as const;
const OUTBOX_MODULE = 'domain/outbox/';
/** Packages of the faces: the domain states its rules without them. */
const FACE_PACKAGES = [/^@modelcontextprotocol\/sdk(\/|$)/, /^graphql-yoga(\/|$)/, /^@graphql-yoga\//, /^@pothos\//, /^graphql-ws(\/|$)/, /^busboy(\/|$)/, /^graphql-upload-minimal(\/|$)/];
/** What src/shared/ may import of src/: itself and config.ts (`shared/, db/ → config`), nothing above it. */
const SHARED_MAY_IMPORT = (target: string) => target.startsWith('shared/') || target === 'config.ts';
/** The composition root: it wires the faces, so no face imports it. */
const COMPOSITION_ROOT = new Set(['app.ts', 'main.ts', 'server.ts', 'workers.ts']);
/** The one file of src/db/ that imports the domain: the entities the ORM maps. */
const DB_ENTITY_LIST = 'db/entities.ts';
/** The committed ceiling of domain-folder pairs that import each other both ways (see docs/architecture.md). */
const RATCHET_FILE = 'scripts/architecture-ratchet.json';
/**
 * However the ratchet file is edited, it may not list more pairs than this (issue 34: at most 5).
 * Lower it with the list; raising it is a design decision for docs/architecture.md first.
 */
export const MAX_FOLDER_PAIRS = 5;

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

/**
 * What one file says on its own, by its path under src/ and its text: the specifiers it imports and
 * the offences found in it alone (team filters, positional parameters, accessors, outbox writes).
 * Kept per process: test/architecture.test.ts checks a dozen copies of src/ that differ from the
 * tree by a planted file or two, and parsing every file of each copy again took most of its time.
 */
const factsOfFiles = new Map<string, { specifiers: string[]; offences: string[] }>();

function factsOf(relative: string, text: string): { specifiers: string[]; offences: string[] } {
  const key = `${relative}\0${text}`;
  let facts = factsOfFiles.get(key);
  if (!facts) {
    const offences = [...teamFilterOffences(relative, text), ...positionalParameterOffences(relative, text), ...accessorOffences(relative, text)];
    if (!relative.startsWith(OUTBOX_MODULE) && !relative.startsWith('migrations/')) {
      text.split('\n').forEach((line, lineIndex) => {
        if (OUTBOX_WRITE_PATTERNS.some((pattern) => pattern.test(line))) {
          offences.push(`writes the outbox outside ${OUTBOX_MODULE}: ${relative}:${lineIndex + 1} (use enqueue())`);
        }
      });
    }
    facts = { specifiers: importedSpecifiers(relative, text), offences };
    factsOfFiles.set(key, facts);
  }
  return facts;
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
    const facts = factsOf(relative, fs.readFileSync(file, 'utf8'));
    const targets = new Set<string>();
    for (const specifier of facts.specifiers) {
      const from = wingOf(relative);
      if (!specifier.startsWith('.')) {
        if (from === 'domain' && FACE_PACKAGES.some((pattern) => pattern.test(specifier))) {
          offences.push(`domain imports a face's package: ${relative} → ${specifier}`);
        }
        continue;
      }
      const target = relativeOf(path.resolve(path.dirname(file), specifier));
      if (!known.has(target)) {
        // The signing page imports modules the service serves from elsewhere (field-rules.js, pdf.mjs),
        // each typed by a declaration file beside it; anything else is a typo or a deleted file.
        const resolved = path.resolve(path.dirname(file), specifier);
        const declaration = resolved.replace(/\.(m?)js$/, '.d.$1ts');
        if (!fs.existsSync(resolved) && !(declaration !== resolved && fs.existsSync(declaration))) {
          offences.push(`an import names no file: ${relative} → ${specifier}`);
        }
        continue;
      }
      targets.add(target);
      const to = wingOf(target);
      if (from === 'shared' && !SHARED_MAY_IMPORT(target)) {
        offences.push(`shared imports upward: ${relative} → ${target}`);
      }
      if (from === 'db' && to === 'domain' && relative !== DB_ENTITY_LIST) {
        offences.push(`db imports the domain outside the entity list (${DB_ENTITY_LIST}): ${relative} → ${target}`);
      }
      if (FACES.includes(from as never) && COMPOSITION_ROOT.has(target)) {
        offences.push(`a face imports the composition root: ${relative} → ${target}`);
      }
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
    offences.push(...facts.offences);
  }
  for (const component of circles(graph)) {
    const route = pathAround(component, graph);
    const others = component.filter((member) => !route.includes(member));
    offences.push(`import circle: ${route.join(' → ')}${others.length > 0 ? ` (with ${others.join(', ')})` : ''}`);
  }
  offences.push(...ratchetOffences(root, folderPairs(graph)));
  return { files: files.length, offences };
}

/** The domain folder a file lives in (domain/audit/x.ts → audit), or undefined for domain/*.ts and outside the domain. */
function domainFolderOf(relative: string): string | undefined {
  const parts = relative.split('/');
  return parts[0] === 'domain' && parts.length > 2 ? parts[1] : undefined;
}

/** Pairs of domain folders that import each other both ways, as "a↔b" with a < b, sorted. */
export function folderPairs(graph: Map<string, Set<string>>): string[] {
  const arrows = new Set<string>();
  for (const [from, targets] of graph) {
    const fromFolder = domainFolderOf(from);
    if (!fromFolder) continue;
    for (const target of targets) {
      const toFolder = domainFolderOf(target);
      if (toFolder && toFolder !== fromFolder) arrows.add(`${fromFolder}→${toFolder}`);
    }
  }
  const pairs = new Set<string>();
  for (const arrow of arrows) {
    const [a, b] = arrow.split('→');
    if (a < b && arrows.has(`${b}→${a}`)) pairs.add(`${a}↔${b}`);
  }
  return [...pairs].sort();
}

/**
 * The ratchet: the committed list of folder pairs may only shrink. A pair not on it is an
 * offence; a pair on it that is gone is one too, so the list (and docs/architecture.md) is
 * lowered in the same change that removed it.
 */
function ratchetOffences(root: string, pairs: string[]): string[] {
  const file = path.join(root, RATCHET_FILE);
  const allowed: string[] = fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, 'utf8')).folderPairs : [];
  const offences: string[] = [];
  if (allowed.length > MAX_FOLDER_PAIRS) {
    offences.push(`the ratchet (${RATCHET_FILE}) lists ${allowed.length} folder pairs, more than the ceiling of ${MAX_FOLDER_PAIRS}`);
  }
  for (const pair of pairs) {
    if (!allowed.includes(pair)) offences.push(`domain folders import each other both ways, beyond the ratchet (${RATCHET_FILE}): ${pair}`);
  }
  for (const pair of allowed) {
    if (!pairs.includes(pair)) offences.push(`the ratchet allows a folder pair that no longer imports both ways: ${pair} (remove it from ${RATCHET_FILE} and docs/architecture.md)`);
  }
  return offences;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const root = path.resolve(process.argv[2] ?? path.join(import.meta.dirname, '..'));
  const report = checkArchitecture(root);
  for (const offence of report.offences) console.log(offence);
  console.log(`${report.files} files checked, ${report.offences.length} offence(s)`);
  process.exitCode = report.offences.length === 0 ? 0 : 1;
}
