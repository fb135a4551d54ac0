import { Migration } from '@mikro-orm/migrations';

/**
 * `js_number_json(double precision)`: a double as JSON.stringify writes it, for the read model's
 * answers written by PostgreSQL (src/domain/envelope/envelope.answer.ts). PostgreSQL writes the
 * same shortest digits, but switches to an exponent outside [1e-4, 1e15) where JavaScript does
 * outside [1e-6, 1e21), and keeps -0's sign. The statements keep the common case inline
 * (`to_json(value + 0)`) and call this for the rare rest: written inline, the rewrite made every
 * page statement's plan larger by a dozen sub-plans that PostgreSQL set up at each execution,
 * and the page cost 1.8× as much (docs/performance.md, "What survived young collections").
 * PL/pgSQL, so the planner never inlines it back.
 */
export class Migration20261128110000_js_number_json extends Migration {
  override name = 'Migration20261128110000_js_number_json';

  override up(): void | Promise<void> {
    this.addSql(`create or replace function js_number_json(value double precision) returns json
language plpgsql immutable strict parallel safe as $fn$
declare
  sign text := case when value < 0 then '-' else '' end;
  mantissa text := split_part(ltrim(value::text, '-'), 'e', 1);
  e int := nullif(split_part(ltrim(value::text, '-'), 'e', 2), '')::int;
  digits text := replace(mantissa, '.', '');
begin
  if value = 0 then return '0'::json; end if;
  if abs(value) >= 1e-4 and abs(value) < 1e15 then return to_json(value); end if;
  return (case when e < -6 or e >= 21 then sign || mantissa || 'e' || (case when e < 0 then '-' else '+' end) || abs(e)::text
    when e < 0 then sign || '0.' || repeat('0', -e - 1) || digits
    when length(digits) <= e + 1 then sign || rpad(digits, e + 1, '0')
    else sign || left(digits, e + 1) || '.' || substr(digits, e + 2) end)::json;
end
$fn$;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop function if exists js_number_json(double precision);`);
  }
}
