import { Migration } from '@mikro-orm/migrations';

/** The housekeeping prune finds settled history by age without reading the whole table. */
export class Migration20261122203000_delivery_history_indexes extends Migration {
  override name = 'Migration20261122203000_delivery_history_indexes';

  override up(): void | Promise<void> {
    this.addSql(`create index "outbox_message_processed_idx" on "outbox_message" ("processed_at");`);
    this.addSql(`create index "outbox_message_failed_idx" on "outbox_message" ("failed_at");`);
    this.addSql(`create index "webhook_delivery_state_created_idx" on "webhook_delivery" ("state", "created_at");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index if exists "outbox_message_processed_idx";`);
    this.addSql(`drop index if exists "outbox_message_failed_idx";`);
    this.addSql(`drop index if exists "webhook_delivery_state_created_idx";`);
  }
}
