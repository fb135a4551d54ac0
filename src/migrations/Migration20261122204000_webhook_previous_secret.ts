import { Migration } from '@mikro-orm/migrations';

export class Migration20261122204000_webhook_previous_secret extends Migration {
  override name = 'Migration20261122204000_webhook_previous_secret';

  override up(): void | Promise<void> {
    this.addSql(`alter table "webhook_endpoint" add "previous_secret_ciphertext" text null, add "previous_secret_expires_at" timestamptz null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "webhook_endpoint" drop column "previous_secret_ciphertext", drop column "previous_secret_expires_at";`);
  }
}
