import { Migration } from '@mikro-orm/migrations';

/**
 * Failure reasons callers read (docs/errors.md, "Delivery failure reasons"): a stable code beside
 * the words on webhook attempts and deliveries. Records written before it showed the worker's
 * error class names (`PermanentOutboxError: …`, `Error: …`); they are cleaned here, and agents'
 * notification failures get the reason `unknown`. (The audit trail is hash-chained and keeps its
 * old text.)
 */
export class Migration20261123090000_failure_reasons extends Migration {
  override name = 'Migration20261123090000_failure_reasons';

  override up(): void | Promise<void> {
    this.addSql(`alter table "webhook_attempt" add "error_code" varchar(64) null;`);
    this.addSql(`alter table "webhook_delivery" add "last_error_code" varchar(64) null;`);
    this.addSql(`update "webhook_delivery" set "last_error" = regexp_replace("last_error", '^[A-Za-z]*Error: ', '') where "last_error" ~ '^[A-Za-z]*Error: ';`);
    this.addSql(
      `update "webhook_endpoint" set "disabled_reason" = regexp_replace("disabled_reason", 'attempt\\(s\\): [A-Za-z]*Error: ', 'attempt(s): ') where "disabled_reason" ~ 'attempt\\(s\\): [A-Za-z]*Error: ';`,
    );
    this.addSql(
      `update "agent" set "notification_failure" = jsonb_set("notification_failure", '{error}', to_jsonb(regexp_replace("notification_failure" ->> 'error', '^[A-Za-z]*Error: ', ''))) || '{"reason": "unknown"}'::jsonb where "notification_failure" is not null and ("notification_failure" -> 'reason') is null;`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "webhook_attempt" drop column "error_code";`);
    this.addSql(`alter table "webhook_delivery" drop column "last_error_code";`);
  }
}
