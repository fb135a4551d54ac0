/**
 * The team filters rule of `npm run check:architecture` (docs/architecture.md "One door each"):
 * a statement under src/domain/ that filters rows of a gated aggregate by team (`e.team_id = ?`,
 * `.where('w.team_id', …)`) outside the aggregate's tenant gate file (`domain/<feature>/team-*.ts`)
 * is an offence: it writes the tenant rule a second time, where it can drift from the gate's.
 *
 * Which table a filter is on is read from the file's own SQL and Kysely text: the alias of
 * `from|join|update|into <table> [as] <alias>` and `'<table> as <alias>'`; an unqualified
 * `team_id` belongs to the last table named before it.
 */

/** The tables whose tenant filter lives in a gate file, and the gate. */
export const GATED_TABLES: Record<string, string> = {
  envelope: 'envelope/team-envelope.ts',
  contact: 'contact/team-contact.ts',
  contact_group: 'contact/team-contact.ts',
  webhook_endpoint: 'webhook/team-webhook.ts',
  webhook_delivery: 'webhook/team-webhook.ts',
};

/**
 * Files allowed a team filter on a gated table, each with its reason. Housekeeping sweeps run for
 * every team and narrow to one only when a test asks (`teamId`), which is no tenant read.
 */
export const TEAM_FILTER_EXCEPTIONS: Record<string, string> = {
  'domain/notification/delivery-history.ts': 'the retention sweep of every team, narrowed to one team by tests only',
  'domain/signing/reminder.service.ts': 'the reminder sweep of every team, narrowed to one team by the sandbox clock and tests',
};

const TABLE_NAMES = Object.keys(GATED_TABLES).join('|');
/** `from envelope e`, `join envelope as e`, `update webhook_endpoint w`, `'envelope as e'`. */
const ALIASING = new RegExp(
  `(?:\\b(?:from|join|update|into)\\s+"?(${TABLE_NAMES}|\\w+)"?(?:\\s+(?:as\\s+)?(?!where\\b|set\\b|on\\b|join\\b|left\\b|inner\\b|using\\b|returning\\b|order\\b|limit\\b|group\\b)(\\w+))?|['"\`](${TABLE_NAMES}|\\w+) as (\\w+)['"\`])`,
  'gi',
);
/** A filter on a team column: SQL `x.team_id = ?` / `= any(` / `= ${…}`, or Kysely `.where('x.team_id'`, `eb('x.team_id'`. */
const FILTER = /(?:\b(?:(\w+)\.)?team_id\s*=\s*(?:\?|any\b|\$\{))|(?:(?:\.where|\beb)\(\s*['"`](?:(\w+)\.)?team_id['"`])/g;

/** The offences of one file (relative to src/), as messages. */
export function teamFilterOffences(relative: string, text: string): string[] {
  if (!relative.startsWith('domain/') || /^domain\/[\w-]+\/team-[\w-]+\.ts$/.test(relative) || relative in TEAM_FILTER_EXCEPTIONS) return [];
  const aliases = new Map<string, string>();
  const named: { at: number; table: string }[] = [];
  for (const match of text.matchAll(ALIASING)) {
    const table = (match[1] ?? match[3])!.toLowerCase();
    const alias = match[2] ?? match[4];
    named.push({ at: match.index!, table });
    aliases.set(table, table);
    if (alias) aliases.set(alias, table);
  }
  const offences: string[] = [];
  for (const match of text.matchAll(FILTER)) {
    const alias = match[1] ?? match[2];
    const table = alias ? aliases.get(alias) : named.filter((entry) => entry.at < match.index!).at(-1)?.table;
    if (table === undefined || !(table in GATED_TABLES)) continue;
    const line = text.slice(0, match.index).split('\n').length;
    offences.push(`a team filter on ${table} outside its gate (${GATED_TABLES[table]}): ${relative}:${line}`);
  }
  return offences;
}
