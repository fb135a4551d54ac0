import { Migration } from '@mikro-orm/migrations';

/** Fields that real agreements need (issue 32): eight more field types (docs/fields.md). */
export class Migration20261127120000_field_types extends Migration {
  override name = 'Migration20261127120000_field_types';

  override up(): void | Promise<void> {
    this.addSql(`alter table "field" drop constraint if exists "field_type_check";`);
    this.addSql(
      `alter table "field" add constraint "field_type_check" check ("type" in ('simple_signature', 'biometric_signature', 'text', 'checkbox', 'radio', 'binary_choice', 'initials', 'date_signed', 'full_name', 'email', 'date', 'number', 'dropdown', 'formula'));`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`delete from "field" where "type" in ('initials', 'date_signed', 'full_name', 'email', 'date', 'number', 'dropdown', 'formula');`);
    this.addSql(`alter table "field" drop constraint if exists "field_type_check";`);
    this.addSql(`alter table "field" add constraint "field_type_check" check ("type" in ('simple_signature', 'biometric_signature', 'text', 'checkbox', 'radio', 'binary_choice'));`);
  }
}
