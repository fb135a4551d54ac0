import { Migration } from '@mikro-orm/migrations';

/**
 * Finding envelopes (issue 24): the folded name a search compares (`envelope_search_key`: accents
 * and case gone, Turkish dotted and dotless i alike) with a trigram index for "contains", the
 * addresses of an agent (`agent_emails`, given and resolved at send time) with a GIN index, the
 * context's containment index and the team's completions by time.
 *
 * Both functions are SQL, not application code, so that the indexes and the statements that use
 * them fold text exactly alike. pg_trgm is a trusted extension: a database owner may create it.
 */
export class Migration20261126150000_envelope_finding extends Migration {
  override name = 'Migration20261126150000_envelope_finding';

  override up(): void | Promise<void> {
    this.addSql(`create extension if not exists pg_trgm;`);
    this.addSql(
      `create or replace function envelope_search_key(value text) returns text language sql immutable strict parallel safe as $$ select lower(regexp_replace(normalize(translate(value, 'ıİ', 'iI'), NFD), '[\\u0300-\\u036f]', '', 'g')) $$;`,
    );
    this.addSql(
      `create or replace function agent_emails(info jsonb, snapshot jsonb) returns text[] language sql immutable parallel safe as $$ select array(select distinct lower(address) from (select info ->> 'email' as address union all select person ->> 'email' from jsonb_array_elements(case when jsonb_typeof(snapshot) = 'array' then snapshot else '[]'::jsonb end) person) addresses where address is not null) $$;`,
    );
    this.addSql(`create index "envelope_name_search_idx" on "envelope" using gin (envelope_search_key("name") gin_trgm_ops);`);
    this.addSql(`create index "envelope_context_idx" on "envelope" using gin ("context" jsonb_path_ops);`);
    this.addSql(`create index "envelope_team_completed_idx" on "envelope" ("team_id", "completed_at");`);
    this.addSql(`create index "agent_emails_idx" on "agent" using gin (agent_emails("info", "snapshot"));`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index if exists "agent_emails_idx";`);
    this.addSql(`drop index if exists "envelope_team_completed_idx";`);
    this.addSql(`drop index if exists "envelope_context_idx";`);
    this.addSql(`drop index if exists "envelope_name_search_idx";`);
    this.addSql(`drop function if exists agent_emails(jsonb, jsonb);`);
    this.addSql(`drop function if exists envelope_search_key(text);`);
  }
}
