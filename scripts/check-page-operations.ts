/**
 * The signing page's GraphQL operations, checked against schema.graphql (run by `npm run
 * typecheck`): the page is plain JavaScript with its operations in strings (src/signing-page/
 * api.js), which no compiler reads, so a field renamed in the schema would break the page only in
 * a browser. Each string constant of a page module that holds an operation (`query …`,
 * `mutation …`, `subscription …`; `${NAME}` in a template filled from the module's other string
 * constants) is parsed and validated with graphql-js's `validate`, the rules a server applies.
 *
 *   node scripts/check-page-operations.ts [ROOT]     ROOT defaults to this repository
 */
import fs from 'node:fs';
import path from 'node:path';
import { buildSchema, type GraphQLSchema, parse, validate } from 'graphql';
import ts from 'typescript';

export type PageOperations = { operations: string[]; problems: string[] };

const OPERATION = /^\s*(query|mutation|subscription)\b/;

function pageModules(directory: string): string[] {
  return fs.readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(directory, entry.name);
    if (entry.isDirectory()) return pageModules(full);
    return entry.name.endsWith('.js') ? [full] : [];
  });
}

/** A module's string constants (`const NAME = '…'` or a template of other such constants), by name, in order. */
function stringConstants(file: string, text: string): { constants: Map<string, string>; unresolved: string[] } {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.JS);
  const constants = new Map<string, string>();
  const unresolved: string[] = [];
  const valueOf = (node: ts.Expression, name: string): string | undefined => {
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return node.text;
    if (!ts.isTemplateExpression(node)) return undefined;
    let value = node.head.text;
    for (const span of node.templateSpans) {
      const filled = ts.isIdentifier(span.expression) ? constants.get(span.expression.text) : undefined;
      if (filled === undefined) {
        // A template that looks like an operation but cannot be filled here cannot be checked either.
        if (OPERATION.test(node.head.text)) unresolved.push(`${name} (\${${span.expression.getText(source)}})`);
        return undefined;
      }
      value += filled + span.literal.text;
    }
    return value;
  };
  for (const statement of source.statements) {
    const declarations = ts.isVariableStatement(statement) ? statement.declarationList.declarations : [];
    for (const declaration of declarations) {
      if (!ts.isIdentifier(declaration.name) || !declaration.initializer) continue;
      const value = valueOf(declaration.initializer, declaration.name.text);
      if (value !== undefined) constants.set(declaration.name.text, value);
    }
  }
  return { constants, unresolved };
}

/** Every operation of the page's modules under `pageDirectory`, validated against `schema`. */
export function checkPageOperations(pageDirectory: string, schema: GraphQLSchema): PageOperations {
  const operations: string[] = [];
  const problems: string[] = [];
  for (const file of pageModules(pageDirectory)) {
    const relative = path.relative(pageDirectory, file);
    const { constants, unresolved } = stringConstants(file, fs.readFileSync(file, 'utf8'));
    for (const name of unresolved) {
      problems.push(`${relative}: ${name}: an operation must be built from the module's string constants only`);
    }
    for (const [name, text] of constants) {
      if (!OPERATION.test(text)) continue;
      operations.push(`${relative}: ${name}`);
      let document;
      try {
        document = parse(text);
      } catch (error) {
        problems.push(`${relative}: ${name}: ${(error as Error).message}`);
        continue;
      }
      for (const error of validate(schema, document)) problems.push(`${relative}: ${name}: ${error.message}`);
    }
  }
  return { operations, problems };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const root = path.resolve(process.argv[2] ?? path.join(import.meta.dirname, '..'));
  const schema = buildSchema(fs.readFileSync(path.join(root, 'schema.graphql'), 'utf8'));
  const { operations, problems } = checkPageOperations(path.join(root, 'src/signing-page'), schema);
  for (const problem of problems) console.log(problem);
  console.log(`signing page: ${operations.length} GraphQL operations checked against schema.graphql, ${problems.length} problem(s)`);
  process.exitCode = problems.length === 0 && operations.length > 0 ? 0 : 1;
}
