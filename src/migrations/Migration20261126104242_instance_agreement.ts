import { Migration } from '@mikro-orm/migrations';

export class Migration20261126104242_instance_agreement extends Migration {
  override name = 'Migration20261126104242_instance_agreement';

  override up(): void | Promise<void> {
    this.addSql(`create table "sandbox_clock" ("id" smallint primary key, "offset_ms" bigint not null default '0', "changed_at" timestamptz not null default now());`);

    this.addSql(
      `create table "shared_secret_fingerprint" ("name" varchar(64) not null, "fingerprint" varchar(128) not null, "recorded_at" timestamptz not null default now(), primary key ("name"));`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "sandbox_clock" cascade;`);
    this.addSql(`drop table if exists "shared_secret_fingerprint" cascade;`);
  }
}
