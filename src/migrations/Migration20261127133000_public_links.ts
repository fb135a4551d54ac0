import { Migration } from '@mikro-orm/migrations';

/**
 * Public links (issue 36): the links, each visitor's try (with the code mailed to them), and the
 * link an envelope was made through (`envelope.public_link_id`, no foreign key: a deleted link's
 * envelopes keep naming it, so they stay findable by `?publicLinkId=`).
 */
export class Migration20261127133000_public_links extends Migration {
  override name = 'Migration20261127133000_public_links';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "public_link" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "team_id" uuid not null, "template_id" uuid not null, "role" varchar(64) not null, "name" varchar(200) null, "slug" varchar(64) not null, "verify_email" boolean not null default true, "max_uses" int null, "uses" int not null default 0, "expires_at" timestamptz null, "disabled_at" timestamptz null, "redirect_url" varchar(2000) null, "prefill" jsonb not null default '{}', "api_key_id" uuid not null, "workspace_id" uuid not null, primary key ("id"));`,
    );
    this.addSql(`create index "public_link_template_id_index" on "public_link" ("template_id");`);
    this.addSql(`alter table "public_link" add constraint "public_link_slug_unique" unique ("slug");`);
    this.addSql(`create index "public_link_team_created_idx" on "public_link" ("team_id", "created_at", "id");`);

    this.addSql(
      `create table "public_link_visit" ("id" uuid not null, "created_at" timestamptz not null, "public_link_id" uuid not null, "token_hash" varchar(64) not null, "name" varchar(200) not null, "email" varchar(320) not null, "phone" varchar(32) null, "locale" varchar(10) not null, "code_hash" varchar(64) not null, "code_expires_at" timestamptz not null, "attempts" int not null default 0, "verified_at" timestamptz null, "envelope_id" uuid null, "ip" varchar(64) null, "user_agent" varchar(512) null, primary key ("id"));`,
    );
    this.addSql(`alter table "public_link_visit" add constraint "public_link_visit_token_hash_unique" unique ("token_hash");`);
    this.addSql(`create index "public_link_visit_link_email_idx" on "public_link_visit" ("public_link_id", "email", "created_at");`);

    this.addSql(`alter table "envelope" add "public_link_id" uuid null;`);
    this.addSql(`create index "envelope_team_public_link_idx" on "envelope" ("team_id", "public_link_id", "created_at", "id");`);

    this.addSql(`alter table "public_link" add constraint "public_link_team_id_foreign" foreign key ("team_id") references "team" ("id") on delete cascade;`);
    this.addSql(`alter table "public_link" add constraint "public_link_template_id_foreign" foreign key ("template_id") references "template" ("id") on delete cascade;`);
    this.addSql(`alter table "public_link" add constraint "public_link_uses_check" check (uses >= 0 and (max_uses is null or uses <= max_uses));`);

    this.addSql(
      `alter table "public_link_visit" add constraint "public_link_visit_public_link_id_foreign" foreign key ("public_link_id") references "public_link" ("id") on delete cascade;`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "public_link_visit" cascade;`);
    this.addSql(`drop table if exists "public_link" cascade;`);

    this.addSql(`drop index "envelope_team_public_link_idx";`);
    this.addSql(`alter table "envelope" drop column "public_link_id";`);
  }
}
