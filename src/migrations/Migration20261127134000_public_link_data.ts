import { Migration } from '@mikro-orm/migrations';

/**
 * Data merge through public links (issue 36 item 2): the `data` a link's envelopes fill the
 * template's `{{data:…}}` tags with, and what a tag whose path it lacks does.
 */
export class Migration20261127134000_public_link_data extends Migration {
  override name = 'Migration20261127134000_public_link_data';

  override up(): void | Promise<void> {
    this.addSql(`alter table "public_link" add "data" jsonb null, add "missing_data" varchar(8) not null default 'refuse';`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "public_link" drop column "data", drop column "missing_data";`);
  }
}
