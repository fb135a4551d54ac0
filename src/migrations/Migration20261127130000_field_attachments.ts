import { Migration } from '@mikro-orm/migrations';

/** The attachment field type (issue 32): files signers upload, one row each (field-attachment.entity.ts). */
export class Migration20261127130000_field_attachments extends Migration {
  override name = 'Migration20261127130000_field_attachments';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "field_attachment" ("id" uuid not null, "created_at" timestamptz not null, "envelope_id" uuid not null, "field_id" uuid not null, "recipient_id" uuid not null, "name" varchar(200) not null, "content_type" text not null, "byte_size" int not null, "sha256" varchar(64) not null, primary key ("id"));`,
    );
    this.addSql(`create index "field_attachment_envelope_id_index" on "field_attachment" ("envelope_id");`);
    this.addSql(`create index "field_attachment_recipient_id_index" on "field_attachment" ("recipient_id");`);
    this.addSql(`create index "field_attachment_field_recipient_idx" on "field_attachment" ("field_id", "recipient_id");`);
    this.addSql(`create index "field_attachment_sha256_idx" on "field_attachment" ("sha256");`);

    this.addSql(`alter table "field" drop constraint "field_type_check";`);
    this.addSql(
      `alter table "field" add constraint "field_type_check" check ("type" in ('simple_signature', 'biometric_signature', 'text', 'checkbox', 'radio', 'binary_choice', 'initials', 'date_signed', 'full_name', 'email', 'date', 'number', 'dropdown', 'formula', 'attachment'));`,
    );

    this.addSql(`alter table "field_attachment" add constraint "field_attachment_envelope_id_foreign" foreign key ("envelope_id") references "envelope" ("id") on delete cascade;`);
    this.addSql(`alter table "field_attachment" add constraint "field_attachment_field_id_foreign" foreign key ("field_id") references "field" ("id") on delete cascade;`);
    this.addSql(`alter table "field_attachment" add constraint "field_attachment_recipient_id_foreign" foreign key ("recipient_id") references "recipient" ("id") on delete cascade;`);
    this.addSql(`alter table "field_attachment" add constraint "field_attachment_byte_size_check" check (byte_size > 0);`);
    this.addSql(`alter table "field_attachment" add constraint "field_attachment_content_type_check" check ("content_type" in ('application/pdf', 'image/png', 'image/jpeg'));`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "field_attachment" cascade;`);
    this.addSql(`delete from "field" where "type" = 'attachment';`);

    this.addSql(`alter table "field" drop constraint "field_type_check";`);
    this.addSql(
      `alter table "field" add constraint "field_type_check" check ("type" in ('simple_signature', 'biometric_signature', 'text', 'checkbox', 'radio', 'binary_choice', 'initials', 'date_signed', 'full_name', 'email', 'date', 'number', 'dropdown', 'formula'));`,
    );
  }
}
