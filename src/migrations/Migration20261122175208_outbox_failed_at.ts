import { Migration } from '@mikro-orm/migrations';

export class Migration20261122175208_outbox_failed_at extends Migration {
  override name = 'Migration20261122175208_outbox_failed_at';

  override up(): void | Promise<void> {
    this.addSql(`alter table "outbox_message" add "failed_at" timestamptz null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "outbox_message" drop column "failed_at";`);
  }
}
