/**
 * The read model's table types (`ReadDatabase` in src/domain/read-model.ts) are kept by hand,
 * so they must not drift from the migrated database: every table and column they name exists,
 * with a matching type and nullability. (A column the database has and the type leaves out is
 * fine: the read model names only what it reads.)
 */
import fs from 'node:fs';
import pg from 'pg';
import ts from 'typescript';
import { describe, expect, inject, it } from 'vitest';

type DeclaredColumn = { table: string; column: string; type: string; nullable: boolean };

/** The tables and columns `ReadDatabase` declares, read from its source with TypeScript's parser. */
function declaredColumns(): DeclaredColumn[] {
  const file = new URL('../src/domain/read-model.ts', import.meta.url);
  const source = ts.createSourceFile(file.pathname, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const alias = source.statements.find((statement): statement is ts.TypeAliasDeclaration => ts.isTypeAliasDeclaration(statement) && statement.name.text === 'ReadDatabase');
  if (!alias || !ts.isTypeLiteralNode(alias.type)) throw new Error('ReadDatabase is not a type literal');
  const columns: DeclaredColumn[] = [];
  for (const table of alias.type.members) {
    if (!ts.isPropertySignature(table) || !table.type || !ts.isTypeLiteralNode(table.type)) continue;
    for (const column of table.type.members) {
      if (!ts.isPropertySignature(column) || !column.type) continue;
      const parts = ts.isUnionTypeNode(column.type) ? column.type.types.map((part) => part.getText(source)) : [column.type.getText(source)];
      columns.push({
        table: table.name.getText(source),
        column: column.name.getText(source),
        type: parts.filter((part) => part !== 'null').join(' | '),
        nullable: parts.includes('null'),
      });
    }
  }
  return columns;
}

/** The TypeScript type the read model uses for each PostgreSQL type (as node-postgres returns it). */
const TYPE_OF_UDT: Record<string, string> = {
  uuid: 'string',
  text: 'string',
  varchar: 'string',
  bpchar: 'string',
  inet: 'string',
  int2: 'number',
  int4: 'number',
  // node-postgres returns a bigint as text: no precision is lost.
  int8: 'string',
  float8: 'number',
  bool: 'boolean',
  timestamptz: 'Timestamp',
  timestamp: 'Timestamp',
  jsonb: 'Json',
  json: 'Json',
  _text: 'string[]',
  _varchar: 'string[]',
};

describe('the read model schema', () => {
  it('names only tables and columns the migrated database has, with their types and nullability', async () => {
    const client = new pg.Client({ connectionString: inject('databaseUrl') });
    await client.connect();
    try {
      const { rows } = await client.query<{ table_name: string; column_name: string; udt_name: string; is_nullable: 'YES' | 'NO' }>(
        `select table_name, column_name, udt_name, is_nullable from information_schema.columns where table_schema = current_schema()`,
      );
      const actual = new Map(rows.map((row) => [`${row.table_name}.${row.column_name}`, row]));
      const declared = declaredColumns();
      expect(declared.length).toBeGreaterThan(100);
      const drift: string[] = [];
      for (const column of declared) {
        const row = actual.get(`${column.table}.${column.column}`);
        if (!row) {
          drift.push(`${column.table}.${column.column}: not in the database`);
          continue;
        }
        const expectedType = TYPE_OF_UDT[row.udt_name] ?? `(${row.udt_name})`;
        // Json stands for any JSON value, null included.
        if (column.type !== expectedType) drift.push(`${column.table}.${column.column}: declared ${column.type}, the database has ${row.udt_name}`);
        else if (column.type !== 'Json' && column.nullable !== (row.is_nullable === 'YES')) {
          drift.push(`${column.table}.${column.column}: declared ${column.nullable ? 'nullable' : 'not null'}, the database says ${row.is_nullable === 'YES' ? 'nullable' : 'not null'}`);
        }
      }
      expect(drift).toEqual([]);
    } finally {
      await client.end();
    }
  });
});
