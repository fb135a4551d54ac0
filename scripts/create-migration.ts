/**
 * Generates the next migration by diffing the entities against a scratch database that has every
 * committed migration applied. Needs a PostgreSQL server (DATABASE_URL, default the local one);
 * the scratch database is created and dropped here.
 *
 *   npm run migration:create -- <name>
 */
import fs from 'node:fs';
import path from 'node:path';
import { MikroORM } from '@mikro-orm/postgresql';
import pg from 'pg';
import { createOrmConfig } from '../mikro-orm.config.ts';

const name = process.argv[2];
const serverUrl = new URL(process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres');
const scratchName = `migration_scratch_${process.pid}`;
const admin = new pg.Client({ connectionString: serverUrl.toString() });
await admin.connect();
await admin.query(`create database ${scratchName}`);
const scratchUrl = new URL(serverUrl);
scratchUrl.pathname = `/${scratchName}`;
let orm: MikroORM | undefined;
try {
  orm = await MikroORM.init(createOrmConfig({ clientUrl: scratchUrl.toString() }));
  await orm.migrator.up();
  const result = await orm.migrator.create('src/migrations', false, false, name);
  if (!result.fileName) {
    console.log('No schema changes: no migration written.');
  } else {
    const className = path.basename(result.fileName, '.ts');
    const indexPath = 'src/migrations/index.ts';
    const index = fs.readFileSync(indexPath, 'utf8');
    const importLine = `import { ${className} } from './${className}.ts';\n`;
    // The import goes after the last import (or first, in an empty list); the class is appended to the list.
    const lines = index.split('\n');
    const lastImport = lines.reduce((found, line, position) => (line.startsWith('import ') ? position : found), -1);
    lines.splice(lastImport + 1, 0, importLine.trimEnd());
    const updated = lines.join('\n').replace(/export const migrations = \[([^]*?)\];/, (_, list: string) => {
      const entries = list
        .split(',')
        .map((entry) => entry.trim())
        .filter(Boolean);
      entries.push(className);
      return `export const migrations = [${entries.join(', ')}];`;
    });
    fs.writeFileSync(indexPath, updated);
    console.log(`Wrote src/migrations/${result.fileName} and registered it in ${indexPath}.`);
  }
} finally {
  await orm?.close(true);
  await admin.query(`drop database if exists ${scratchName}`);
  await admin.end();
}
