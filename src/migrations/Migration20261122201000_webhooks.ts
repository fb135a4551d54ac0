import { Migration } from '@mikro-orm/migrations';

export class Migration20261122201000_webhooks extends Migration {
  override name = 'Migration20261122201000_webhooks';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "webhook_endpoint" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "team_id" uuid not null, "url" varchar(2000) not null, "event_types" text[] not null default '{}', "enabled" boolean not null default true, "description" varchar(500) null, "secret_ciphertext" text not null, "disabled_reason" varchar(1000) null, "disabled_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`create index "webhook_endpoint_team_created_idx" on "webhook_endpoint" ("team_id", "created_at", "id");`);
    this.addSql(`create index "webhook_endpoint_team_enabled_idx" on "webhook_endpoint" ("team_id") where "enabled" = true;`);

    this.addSql(
      `create table "webhook_delivery" ("id" uuid not null, "created_at" timestamptz not null, "team_id" uuid not null, "endpoint_id" uuid not null, "event_id" uuid not null, "event_type" varchar(64) not null, "payload" jsonb not null, "state" varchar(16) not null default 'pending', "attempt_count" int not null default 0, "last_status_code" int null, "last_error" text null, "last_attempt_at" timestamptz null, "next_attempt_at" timestamptz null, "delivered_at" timestamptz null, "failed_at" timestamptz null, "outbox_message_id" uuid null, primary key ("id"));`,
    );
    this.addSql(`create index "webhook_delivery_endpoint_created_idx" on "webhook_delivery" ("endpoint_id", "created_at", "id");`);
    this.addSql(`alter table "webhook_delivery" add constraint "webhook_delivery_endpoint_event_unique" unique ("endpoint_id", "event_id");`);

    this.addSql(
      `create table "webhook_attempt" ("id" uuid not null, "created_at" timestamptz not null, "delivery_id" uuid not null, "status_code" int null, "duration_ms" int not null, "error" text null, "next_retry_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`create index "webhook_attempt_delivery_created_idx" on "webhook_attempt" ("delivery_id", "created_at");`);

    this.addSql(`alter table "webhook_endpoint" add constraint "webhook_endpoint_team_id_foreign" foreign key ("team_id") references "team" ("id") on delete cascade;`);

    this.addSql(`alter table "webhook_delivery" add constraint "webhook_delivery_endpoint_id_foreign" foreign key ("endpoint_id") references "webhook_endpoint" ("id") on delete cascade;`);

    this.addSql(`alter table "webhook_attempt" add constraint "webhook_attempt_delivery_id_foreign" foreign key ("delivery_id") references "webhook_delivery" ("id") on delete cascade;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "webhook_delivery" drop constraint "webhook_delivery_endpoint_id_foreign";`);
    this.addSql(`alter table "webhook_attempt" drop constraint "webhook_attempt_delivery_id_foreign";`);

    this.addSql(`drop table if exists "webhook_endpoint" cascade;`);
    this.addSql(`drop table if exists "webhook_delivery" cascade;`);
    this.addSql(`drop table if exists "webhook_attempt" cascade;`);
  }
}
