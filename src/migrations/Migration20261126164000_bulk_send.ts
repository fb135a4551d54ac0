import { Migration } from '@mikro-orm/migrations';

/** Bulk send (issue 22): one record per bulk send and one row per envelope it makes (bulk-send.entity.ts). */

export class Migration20261126164000_bulk_send extends Migration {
  override name = 'Migration20261126164000_bulk_send';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "bulk_send" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "team_id" uuid not null, "template_id" uuid not null, "api_key_id" uuid not null, "workspace_id" uuid not null, "name" varchar(200) null, "status" text not null default 'queued', "total" int not null, "created_count" int not null default 0, "sent_count" int not null default 0, "failed_count" int not null default 0, "completed_at" timestamptz null, "cancelled_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`create index "bulk_send_team_created_idx" on "bulk_send" ("team_id", "created_at", "id");`);

    this.addSql(
      `create table "bulk_send_row" ("id" uuid not null, "created_at" timestamptz not null, "bulk_send_id" uuid not null, "position" int not null, "status" text not null default 'pending', "input" jsonb not null, "envelope_id" uuid null, "error" jsonb null, "processed_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`create index "bulk_send_row_status_idx" on "bulk_send_row" ("bulk_send_id", "status", "position");`);
    this.addSql(`alter table "bulk_send_row" add constraint "bulk_send_row_position_unique" unique ("bulk_send_id", "position");`);

    this.addSql(`alter table "bulk_send" add constraint "bulk_send_team_id_foreign" foreign key ("team_id") references "team" ("id") on delete cascade;`);
    this.addSql(`alter table "bulk_send" add constraint "bulk_send_status_check" check ("status" in ('queued', 'running', 'completed', 'cancelled'));`);

    this.addSql(`alter table "bulk_send_row" add constraint "bulk_send_row_bulk_send_id_foreign" foreign key ("bulk_send_id") references "bulk_send" ("id") on delete cascade;`);
    this.addSql(`alter table "bulk_send_row" add constraint "bulk_send_row_status_check" check ("status" in ('pending', 'created', 'sent', 'failed', 'cancelled'));`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "bulk_send_row" drop constraint "bulk_send_row_bulk_send_id_foreign";`);

    this.addSql(`drop table if exists "bulk_send_row" cascade;`);
    this.addSql(`drop table if exists "bulk_send" cascade;`);
  }
}
