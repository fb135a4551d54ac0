import { Migration } from '@mikro-orm/migrations';

export class Migration20261122201500_signing_otp extends Migration {
  override name = 'Migration20261122201500_signing_otp';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "signing_otp" ("id" uuid not null, "created_at" timestamptz not null, "token_id" uuid not null, "agent_id" uuid not null, "person_index" int not null default 0, "channel" varchar(16) not null, "code_hash" varchar(64) not null, "expires_at" timestamptz not null, "attempts" int not null default 0, "verified_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`create index "signing_otp_token_id_index" on "signing_otp" ("token_id");`);
    this.addSql(`create index "signing_otp_agent_person_created_idx" on "signing_otp" ("agent_id", "person_index", "created_at");`);

    this.addSql(
      `create table "phone_message" ("id" uuid not null, "created_at" timestamptz not null, "agent_id" uuid not null, "person_index" int not null default 0, "envelope_id" uuid not null, "kind" varchar(16) not null, "outbox_message_id" uuid not null, primary key ("id"));`,
    );
    this.addSql(`alter table "phone_message" add constraint "phone_message_outbox_message_id_unique" unique ("outbox_message_id");`);
    this.addSql(`create index "phone_message_agent_person_created_idx" on "phone_message" ("agent_id", "person_index", "created_at");`);

    this.addSql(`alter table "signing_otp" add constraint "signing_otp_token_id_foreign" foreign key ("token_id") references "signing_token" ("id") on delete cascade;`);
    this.addSql(`alter table "signing_otp" add constraint "signing_otp_agent_id_foreign" foreign key ("agent_id") references "agent" ("id") on delete cascade;`);

    this.addSql(`alter table "phone_message" add constraint "phone_message_agent_id_foreign" foreign key ("agent_id") references "agent" ("id") on delete cascade;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "signing_otp" cascade;`);
    this.addSql(`drop table if exists "phone_message" cascade;`);
  }
}
