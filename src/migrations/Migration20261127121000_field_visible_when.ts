import { Migration } from '@mikro-orm/migrations';

/** Conditions on fields (issue 32): `visibleWhen`, null for a field always shown (docs/fields.md). */
export class Migration20261127121000_field_visible_when extends Migration {
  override name = 'Migration20261127121000_field_visible_when';

  override up(): void | Promise<void> {
    this.addSql(`alter table "field" add column "visible_when" jsonb null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "field" drop column "visible_when";`);
  }
}
