import { Migration } from '@mikro-orm/migrations';

export class Migration20261122003526_listing_indexes extends Migration {
  override name = 'Migration20261122003526_listing_indexes';

  override up(): void | Promise<void> {
    this.addSql(`create index "team_user_team_created_idx" on "team_user" ("team_id", "created_at", "id");`);

    this.addSql(`drop index "contact_group_team_id_index";`);
    this.addSql(`create index "contact_group_team_created_idx" on "contact_group" ("team_id", "created_at", "id");`);

    this.addSql(`drop index "contact_team_id_index";`);
    this.addSql(`create index "contact_team_created_idx" on "contact" ("team_id", "created_at", "id");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "contact_team_created_idx";`);
    this.addSql(`create index "contact_team_id_index" on "contact" ("team_id");`);

    this.addSql(`drop index "contact_group_team_created_idx";`);
    this.addSql(`create index "contact_group_team_id_index" on "contact_group" ("team_id");`);

    this.addSql(`drop index "team_user_team_created_idx";`);
  }
}
