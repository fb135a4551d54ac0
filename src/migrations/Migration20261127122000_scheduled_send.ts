import { Migration } from '@mikro-orm/migrations';

/**
 * Send later (issue 33): the `scheduled` status and the time a scheduled envelope is sent at.
 */
export class Migration20261127122000_scheduled_send extends Migration {
  override name = 'Migration20261127122000_scheduled_send';

  override up(): void | Promise<void> {
    this.addSql(`alter table "envelope" drop constraint if exists "envelope_status_check";`);
    this.addSql(`alter table "envelope" add constraint "envelope_status_check" check ("status" in ('draft', 'scheduled', 'sent', 'finalized', 'voided', 'expired'));`);
    this.addSql(`alter table "envelope" add column "send_at" timestamptz null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "envelope" drop column "send_at";`);
    this.addSql(`alter table "envelope" drop constraint if exists "envelope_status_check";`);
    this.addSql(`alter table "envelope" add constraint "envelope_status_check" check ("status" in ('draft', 'sent', 'finalized', 'voided', 'expired'));`);
  }
}
