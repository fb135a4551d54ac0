import { Migration } from '@mikro-orm/migrations';

export class Migration20261126104933_outbox_claimed_by extends Migration {
  override name = 'Migration20261126104933_outbox_claimed_by';

  override up(): void | Promise<void> {
    this.addSql(`alter table "outbox_message" add "claimed_by" varchar(200) null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "outbox_message" drop column "claimed_by";`);
  }
}
