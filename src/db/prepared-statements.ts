import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type pg from 'pg';

/** Distinct statements one connection keeps prepared; later new ones run unnamed (planned each time). */
const MAX_PREPARED_PER_CONNECTION = 200;

/**
 * Makes a pooled connection prepare every statement that is sent with parameters: the read
 * model's Kysely queries, whose text depends only on what is read, never on the values. PostgreSQL
 * then parses and plans each shape once per connection instead of on every request (for a nested
 * page, planning cost about a third of the statement). The ORM's own statements arrive with their
 * values inlined and no parameters, so they are left alone.
 *
 * The name is a hash of the text, so one name never stands for two texts. The number of
 * prepared statements per connection is bounded, as GraphQL selections can be spelled in many
 * ways. Not for the embedded database: PGlite shares one namespace of prepared statements among
 * all its connections, so two connections preparing the same name would collide.
 */
/**
 * Statement names by text, shared by every connection: hashing a nested read's few kilobytes of
 * SQL cost more than the rest of a light read's work in this process. The read model hands the
 * same string object for a shape each time (its compiled-shape cache), so the lookup hashes no
 * text. Bounded like the read model's shapes.
 */
const namesByText = new LRUCache<string, string>({ max: 2_000 });

function statementName(text: string): string {
  let name = namesByText.get(text);
  if (name === undefined) {
    name = `r${createHash('sha1').update(text).digest('base64url')}`;
    namesByText.set(text, name);
  }
  return name;
}

export function prepareParameterizedStatements(client: pg.Client): void {
  const prepared = new Set<string>();
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
    // Kysely sends (text, values); the direct read path (db/direct-reads.ts) one unnamed config, a caller may add its callback.
    const [first, second] = args;
    const config =
      typeof first === 'object' && first !== null && !('name' in first) && (args.length === 1 || (args.length === 2 && typeof second === 'function')) ? (first as pg.QueryConfig) : undefined;
    const [text, values] = config ? [config.text, config.values] : args;
    if (typeof text !== 'string' || !Array.isArray(values) || values.length === 0 || (!config && args.length !== 2)) return query(...args);
    const name = statementName(text);
    if (!prepared.has(name)) {
      if (prepared.size >= MAX_PREPARED_PER_CONNECTION) return query(...args);
      prepared.add(name);
    }
    return config && args.length === 2 ? query({ ...config, name, text, values }, second) : query({ ...config, name, text, values });
  };
}
