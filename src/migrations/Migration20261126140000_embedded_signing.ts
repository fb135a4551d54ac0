import { Migration } from '@mikro-orm/migrations';

/**
 * Embedded signing (issue 21): one-use signing URLs (`signing_url`), the session credential's
 * expiry and framing on `signing_token`, and each team's settings document on `team`.
 */
export class Migration20261126140000_embedded_signing extends Migration {
  override name = 'Migration20261126140000_embedded_signing';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "signing_url" ("id" uuid not null, "created_at" timestamptz not null, "recipient_id" uuid not null, "agent_id" uuid not null, "person_index" int not null default 0, "token_hash" varchar(64) not null, "expires_at" timestamptz not null, "consumed_at" timestamptz null, "session_id" uuid null, "frame_origin" varchar(300) null, "return_url" varchar(2000) null, "locale" varchar(10) null, "created_by_id" uuid null, primary key ("id"));`,
    );
    this.addSql(`create index "signing_url_recipient_id_index" on "signing_url" ("recipient_id");`);
    this.addSql(`alter table "signing_url" add constraint "signing_url_token_hash_unique" unique ("token_hash");`);

    this.addSql(`alter table "team" add "settings" jsonb not null default '{}', add "settings_version" int not null default 0;`);

    this.addSql(`alter table "signing_token" add "expires_at" timestamptz null, add "embedding" jsonb null;`);

    this.addSql(`alter table "signing_url" add constraint "signing_url_recipient_id_foreign" foreign key ("recipient_id") references "recipient" ("id") on delete cascade;`);
    this.addSql(`alter table "signing_url" add constraint "signing_url_agent_id_foreign" foreign key ("agent_id") references "agent" ("id") on delete cascade;`);
    this.addSql(`alter table "signing_url" add constraint "signing_url_session_id_foreign" foreign key ("session_id") references "signing_token" ("id") on delete set null;`);
    this.addSql(`alter table "signing_url" add constraint "signing_url_created_by_id_foreign" foreign key ("created_by_id") references "api_key" ("id") on delete set null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "signing_url" cascade;`);

    this.addSql(`alter table "signing_token" drop column "expires_at", drop column "embedding";`);

    this.addSql(`alter table "team" drop column "settings", drop column "settings_version";`);
  }
}
