import { Migration } from '@mikro-orm/migrations';

export class Migration20261122200500_agent_notification extends Migration {
  override name = 'Migration20261122200500_agent_notification';

  override up(): void | Promise<void> {
    this.addSql(`alter table "agent" add "notified_at" timestamptz null, add "notification_failure" jsonb null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "agent" drop column "notified_at", drop column "notification_failure";`);
  }
}
