import { Migration } from '@mikro-orm/migrations';

export class Migration20261122001538_initial extends Migration {
  override name = 'Migration20261122001538_initial';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "audit_event" ("id" uuid not null, "team_id" uuid not null, "stream_id" uuid not null, "envelope_id" uuid null, "seq" int not null, "type" varchar(64) not null, "at" timestamptz not null, "actor_type" text not null, "actor_id" varchar(64) null, "ip" varchar(64) null, "user_agent" varchar(512) null, "details" jsonb not null default '{}', "prev_hash" varchar(64) not null, "hash" varchar(64) not null, primary key ("id"));`,
    );
    this.addSql(`create index "audit_event_team_id_index" on "audit_event" ("team_id");`);
    this.addSql(`alter table "audit_event" add constraint "audit_event_stream_seq_unique" unique ("stream_id", "seq");`);

    this.addSql(
      `create table "idempotency_record" ("id" uuid not null, "created_at" timestamptz not null, "team_id" uuid not null, "key" varchar(255) not null, "fingerprint" varchar(64) not null, "response" jsonb null, "completed_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`create index "idempotency_record_created_idx" on "idempotency_record" ("created_at");`);
    this.addSql(`alter table "idempotency_record" add constraint "idempotency_record_team_key_unique" unique ("team_id", "key");`);

    this.addSql(
      `create table "outbox_message" ("id" uuid not null, "created_at" timestamptz not null, "topic" varchar(64) not null, "payload" jsonb not null, "dedupe_key" varchar(200) null, "available_at" timestamptz not null, "attempts" int not null default 0, "locked_until" timestamptz null, "processed_at" timestamptz null, "last_error" text null, primary key ("id"));`,
    );
    this.addSql(`alter table "outbox_message" add constraint "outbox_message_dedupe_key_unique" unique ("dedupe_key");`);
    this.addSql(`create index "outbox_message_due_idx" on "outbox_message" ("available_at") where "processed_at" is null;`);

    this.addSql(`create table "workspace" ("id" uuid not null, "created_at" timestamptz not null, "name" varchar(120) not null, primary key ("id"));`);

    this.addSql(`create table "team" ("id" uuid not null, "created_at" timestamptz not null, "workspace_id" uuid not null, "name" varchar(120) not null, primary key ("id"));`);
    this.addSql(`create index "team_workspace_id_index" on "team" ("workspace_id");`);

    this.addSql(
      `create table "template" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "team_id" uuid not null, "name" varchar(48) not null, "description" text null, "team_scope" text[] not null default '{}', "version" int not null default 1, primary key ("id"));`,
    );
    this.addSql(`create index "template_team_created_idx" on "template" ("team_id", "created_at", "id");`);
    this.addSql(`create index "template_team_scope_idx" on "template" using gin ("team_scope");`);

    this.addSql(
      `create table "team_user" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "team_id" uuid not null, "name" varchar(200) not null, "email" varchar(320) not null, "phone" varchar(20) null, "locale" varchar(5) not null default 'en-US', primary key ("id"));`,
    );
    this.addSql(`alter table "team_user" add constraint "team_user_team_email_unique" unique ("team_id", "email");`);

    this.addSql(
      `create table "envelope" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "team_id" uuid not null, "template_id" uuid null, "name" varchar(48) not null, "status" text not null default 'draft', "expiration_period_days" int not null, "reminder_initial_delay_days" int not null default 0, "reminder_repeat_interval_days" int not null default 0, "reminder_before_expiration_days" int not null default 0, "context" jsonb not null default '{}', "sent_at" timestamptz null, "expires_at" timestamptz null, "completed_at" timestamptz null, "voided_at" timestamptz null, "void_reason" text null, "expired_at" timestamptz null, "version" int not null default 1, primary key ("id"));`,
    );
    this.addSql(`create index "envelope_template_id_index" on "envelope" ("template_id");`);
    this.addSql(`create index "envelope_expires_at_index" on "envelope" ("expires_at");`);
    this.addSql(`create index "envelope_team_created_idx" on "envelope" ("team_id", "created_at", "id");`);
    this.addSql(`create index "envelope_team_status_created_idx" on "envelope" ("team_id", "status", "created_at", "id");`);

    this.addSql(
      `create table "recipient" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "envelope_id" uuid not null, "identifier" varchar(64) not null, "role_name" varchar(100) not null, "type" text not null, "order" int not null default 0, "required" boolean not null default true, "color" varchar(7) not null, "hosted_by_id" uuid null, "delegated_by_id" uuid null, "activated_at" timestamptz null, "completed_at" timestamptz null, "delegated_at" timestamptz null, "declined_at" timestamptz null, "decline_reason" text null, "removed_at" timestamptz null, "version" int not null default 1, primary key ("id"));`,
    );
    this.addSql(`create index "recipient_hosted_by_id_index" on "recipient" ("hosted_by_id");`);
    this.addSql(`create index "recipient_delegated_by_id_index" on "recipient" ("delegated_by_id");`);
    this.addSql(`alter table "recipient" add constraint "recipient_envelope_identifier_unique" unique ("envelope_id", "identifier");`);

    this.addSql(
      `create table "document" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "envelope_id" uuid null, "template_id" uuid null, "name" varchar(140) not null, "order" int not null default 0, "context" jsonb not null default '{}', "status" text null, "page_count" int not null, "pages" jsonb not null, "content_sha256" varchar(64) not null, "byte_size" bigint not null, "sealed_sha256" varchar(64) null, primary key ("id"));`,
    );
    this.addSql(`create index "document_envelope_order_idx" on "document" ("envelope_id", "order");`);
    this.addSql(`create index "document_template_order_idx" on "document" ("template_id", "order");`);

    this.addSql(
      `create table "contact_group" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "team_id" uuid not null, "name" varchar(200) not null, primary key ("id"));`,
    );
    this.addSql(`create index "contact_group_team_id_index" on "contact_group" ("team_id");`);

    this.addSql(
      `create table "contact" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "team_id" uuid not null, "name" varchar(200) not null, "email" varchar(320) null, "phone" varchar(20) null, "locale" varchar(5) null, "phone_contact_method" varchar(10) null, primary key ("id"));`,
    );
    this.addSql(`create index "contact_team_id_index" on "contact" ("team_id");`);

    this.addSql(
      `create table "template_recipient" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "template_id" uuid not null, "identifier" varchar(64) not null, "role_name" varchar(100) not null, "type" text not null, "order" int not null default 0, "required" boolean not null default true, "color" varchar(7) not null, "fixed" boolean not null default false, "hosted_by_id" uuid null, "delegated_by_id" uuid null, "user_id" uuid null, "contact_id" uuid null, "contact_group_id" uuid null, primary key ("id"));`,
    );
    this.addSql(`create index "template_recipient_hosted_by_id_index" on "template_recipient" ("hosted_by_id");`);
    this.addSql(`create index "template_recipient_delegated_by_id_index" on "template_recipient" ("delegated_by_id");`);
    this.addSql(`create index "template_recipient_user_id_index" on "template_recipient" ("user_id");`);
    this.addSql(`create index "template_recipient_contact_id_index" on "template_recipient" ("contact_id");`);
    this.addSql(`create index "template_recipient_contact_group_id_index" on "template_recipient" ("contact_group_id");`);
    this.addSql(`alter table "template_recipient" add constraint "template_recipient_template_identifier_unique" unique ("template_id", "identifier");`);

    this.addSql(
      `create table "field" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "envelope_id" uuid null, "template_id" uuid null, "recipient_id" uuid null, "template_recipient_id" uuid null, "identifier" varchar(64) not null, "type" text not null, "label" varchar(200) null, "tooltip" varchar(500) null, "required" boolean not null default false, "readonly" boolean not null default false, "value" jsonb null, "config" jsonb not null default '{}', "submitted_at" timestamptz null, "version" int not null default 1, primary key ("id"));`,
    );
    this.addSql(`create index "field_recipient_id_index" on "field" ("recipient_id");`);
    this.addSql(`create index "field_template_recipient_id_index" on "field" ("template_recipient_id");`);
    this.addSql(`alter table "field" add constraint "field_envelope_identifier_unique" unique ("envelope_id", "identifier");`);
    this.addSql(`alter table "field" add constraint "field_template_identifier_unique" unique ("template_id", "identifier");`);

    this.addSql(
      `create table "field_view" ("id" uuid not null, "created_at" timestamptz not null, "field_id" uuid not null, "document_id" uuid not null, "position" int not null default 0, "page" int not null, "x" double precision not null, "y" double precision not null, "width" double precision not null, "height" double precision not null, primary key ("id"));`,
    );
    this.addSql(`create index "field_view_document_id_index" on "field_view" ("document_id");`);
    this.addSql(`create index "field_view_field_position_idx" on "field_view" ("field_id", "position");`);

    this.addSql(`create table "contact_group_member" ("group_id" uuid not null, "contact_id" uuid not null, "created_at" timestamptz not null, primary key ("group_id", "contact_id"));`);
    this.addSql(`create index "contact_group_member_contact_id_index" on "contact_group_member" ("contact_id");`);

    this.addSql(
      `create table "agent" ("id" uuid not null, "created_at" timestamptz not null, "recipient_id" uuid not null, "position" int not null default 0, "kind" text not null, "info" jsonb null, "contact_id" uuid null, "group_id" uuid null, "user_id" uuid null, "snapshot" jsonb null, "snapshot_at" timestamptz null, "revoked_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`create index "agent_contact_id_index" on "agent" ("contact_id");`);
    this.addSql(`create index "agent_group_id_index" on "agent" ("group_id");`);
    this.addSql(`create index "agent_user_id_index" on "agent" ("user_id");`);
    this.addSql(`create index "agent_recipient_position_idx" on "agent" ("recipient_id", "position");`);

    this.addSql(
      `create table "signing_token" ("id" uuid not null, "created_at" timestamptz not null, "recipient_id" uuid not null, "agent_id" uuid not null, "person_index" int not null default 0, "token_hash" varchar(64) not null, "revoked_at" timestamptz null, "last_used_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`create index "signing_token_recipient_id_index" on "signing_token" ("recipient_id");`);
    this.addSql(`create index "signing_token_agent_id_index" on "signing_token" ("agent_id");`);
    this.addSql(`alter table "signing_token" add constraint "signing_token_token_hash_unique" unique ("token_hash");`);

    this.addSql(
      `create table "api_key" ("id" uuid not null, "created_at" timestamptz not null, "team_id" uuid not null, "key_hash" varchar(64) not null, "prefix" varchar(16) not null, "label" varchar(120) null, "revoked_at" timestamptz null, "last_used_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`create index "api_key_team_id_index" on "api_key" ("team_id");`);
    this.addSql(`alter table "api_key" add constraint "api_key_key_hash_unique" unique ("key_hash");`);

    this.addSql(`alter table "audit_event" add constraint "audit_event_actor_type_check" check ("actor_type" in ('api_key', 'agent', 'system'));`);

    this.addSql(`alter table "team" add constraint "team_workspace_id_foreign" foreign key ("workspace_id") references "workspace" ("id") on delete cascade;`);

    this.addSql(`alter table "template" add constraint "template_team_id_foreign" foreign key ("team_id") references "team" ("id") on delete cascade;`);

    this.addSql(`alter table "team_user" add constraint "team_user_team_id_foreign" foreign key ("team_id") references "team" ("id") on delete cascade;`);

    this.addSql(`alter table "envelope" add constraint "envelope_team_id_foreign" foreign key ("team_id") references "team" ("id") on delete cascade;`);
    this.addSql(`alter table "envelope" add constraint "envelope_template_id_foreign" foreign key ("template_id") references "template" ("id") on delete set null;`);
    this.addSql(`alter table "envelope" add constraint "envelope_expiration_period_days_check" check (expiration_period_days >= 1 and expiration_period_days <= 90);`);
    this.addSql(
      `alter table "envelope" add constraint "envelope_reminder_days_check" check (reminder_initial_delay_days >= 0 and reminder_initial_delay_days <= 30 and reminder_repeat_interval_days >= 0 and reminder_repeat_interval_days <= 30 and reminder_before_expiration_days >= 0 and reminder_before_expiration_days <= 30);`,
    );
    this.addSql(`alter table "envelope" add constraint "envelope_status_check" check ("status" in ('draft', 'sent', 'finalized', 'voided', 'expired'));`);

    this.addSql(`alter table "recipient" add constraint "recipient_envelope_id_foreign" foreign key ("envelope_id") references "envelope" ("id") on delete cascade;`);
    this.addSql(`alter table "recipient" add constraint "recipient_hosted_by_id_foreign" foreign key ("hosted_by_id") references "recipient" ("id") on delete no action;`);
    this.addSql(`alter table "recipient" add constraint "recipient_delegated_by_id_foreign" foreign key ("delegated_by_id") references "recipient" ("id") on delete no action;`);
    this.addSql(`alter table "recipient" add constraint "recipient_type_check" check ("type" in ('signer', 'host', 'in_person_signer', 'delegator', 'viewer'));`);

    this.addSql(`alter table "document" add constraint "document_envelope_id_foreign" foreign key ("envelope_id") references "envelope" ("id") on delete cascade;`);
    this.addSql(`alter table "document" add constraint "document_template_id_foreign" foreign key ("template_id") references "template" ("id") on delete cascade;`);
    this.addSql(`alter table "document" add constraint "document_one_owner_check" check ((envelope_id is null) <> (template_id is null));`);
    this.addSql(`alter table "document" add constraint "document_order_check" check ("order" >= 0);`);
    this.addSql(`alter table "document" add constraint "document_status_check" check ("status" in ('completed', 'declined', 'voided'));`);

    this.addSql(`alter table "contact_group" add constraint "contact_group_team_id_foreign" foreign key ("team_id") references "team" ("id") on delete cascade;`);

    this.addSql(`alter table "contact" add constraint "contact_team_id_foreign" foreign key ("team_id") references "team" ("id") on delete cascade;`);

    this.addSql(`alter table "template_recipient" add constraint "template_recipient_template_id_foreign" foreign key ("template_id") references "template" ("id") on delete cascade;`);
    this.addSql(
      `alter table "template_recipient" add constraint "template_recipient_hosted_by_id_foreign" foreign key ("hosted_by_id") references "template_recipient" ("id") on delete no action;`,
    );
    this.addSql(
      `alter table "template_recipient" add constraint "template_recipient_delegated_by_id_foreign" foreign key ("delegated_by_id") references "template_recipient" ("id") on delete no action;`,
    );
    this.addSql(`alter table "template_recipient" add constraint "template_recipient_user_id_foreign" foreign key ("user_id") references "team_user" ("id") on delete set null;`);
    this.addSql(`alter table "template_recipient" add constraint "template_recipient_contact_id_foreign" foreign key ("contact_id") references "contact" ("id") on delete set null;`);
    this.addSql(
      `alter table "template_recipient" add constraint "template_recipient_contact_group_id_foreign" foreign key ("contact_group_id") references "contact_group" ("id") on delete set null;`,
    );
    this.addSql(`alter table "template_recipient" add constraint "template_recipient_one_assignment_check" check (num_nonnulls(user_id, contact_id, contact_group_id) <= 1);`);
    this.addSql(`alter table "template_recipient" add constraint "template_recipient_type_check" check ("type" in ('signer', 'host', 'in_person_signer', 'delegator', 'viewer'));`);

    this.addSql(`alter table "field" add constraint "field_envelope_id_foreign" foreign key ("envelope_id") references "envelope" ("id") on delete cascade;`);
    this.addSql(`alter table "field" add constraint "field_template_id_foreign" foreign key ("template_id") references "template" ("id") on delete cascade;`);
    this.addSql(`alter table "field" add constraint "field_recipient_id_foreign" foreign key ("recipient_id") references "recipient" ("id") on delete cascade;`);
    this.addSql(`alter table "field" add constraint "field_template_recipient_id_foreign" foreign key ("template_recipient_id") references "template_recipient" ("id") on delete cascade;`);
    this.addSql(`alter table "field" add constraint "field_one_owner_check" check ((envelope_id is null) <> (template_id is null));`);
    this.addSql(
      `alter table "field" add constraint "field_recipient_matches_owner_check" check ((envelope_id is not null and recipient_id is not null and template_recipient_id is null) or (template_id is not null and template_recipient_id is not null and recipient_id is null));`,
    );
    this.addSql(`alter table "field" add constraint "field_type_check" check ("type" in ('simple_signature', 'biometric_signature', 'text', 'checkbox', 'radio', 'binary_choice'));`);

    this.addSql(`alter table "field_view" add constraint "field_view_field_id_foreign" foreign key ("field_id") references "field" ("id") on delete cascade;`);
    this.addSql(`alter table "field_view" add constraint "field_view_document_id_foreign" foreign key ("document_id") references "document" ("id") on delete cascade;`);
    this.addSql(`alter table "field_view" add constraint "field_view_page_check" check (page >= 0);`);

    this.addSql(
      `alter table "contact_group_member" add constraint "contact_group_member_group_id_foreign" foreign key ("group_id") references "contact_group" ("id") on update cascade on delete cascade;`,
    );
    this.addSql(
      `alter table "contact_group_member" add constraint "contact_group_member_contact_id_foreign" foreign key ("contact_id") references "contact" ("id") on update cascade on delete cascade;`,
    );

    this.addSql(`alter table "agent" add constraint "agent_recipient_id_foreign" foreign key ("recipient_id") references "recipient" ("id") on delete cascade;`);
    this.addSql(`alter table "agent" add constraint "agent_contact_id_foreign" foreign key ("contact_id") references "contact" ("id") on delete set null;`);
    this.addSql(`alter table "agent" add constraint "agent_group_id_foreign" foreign key ("group_id") references "contact_group" ("id") on delete set null;`);
    this.addSql(`alter table "agent" add constraint "agent_user_id_foreign" foreign key ("user_id") references "team_user" ("id") on delete set null;`);
    this.addSql(`alter table "agent" add constraint "agent_kind_check" check ("kind" in ('info', 'contact', 'group', 'user'));`);

    this.addSql(`alter table "signing_token" add constraint "signing_token_recipient_id_foreign" foreign key ("recipient_id") references "recipient" ("id") on delete cascade;`);
    this.addSql(`alter table "signing_token" add constraint "signing_token_agent_id_foreign" foreign key ("agent_id") references "agent" ("id") on delete cascade;`);

    this.addSql(`alter table "api_key" add constraint "api_key_team_id_foreign" foreign key ("team_id") references "team" ("id") on delete cascade;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "team" drop constraint "team_workspace_id_foreign";`);
    this.addSql(`alter table "template" drop constraint "template_team_id_foreign";`);
    this.addSql(`alter table "team_user" drop constraint "team_user_team_id_foreign";`);
    this.addSql(`alter table "envelope" drop constraint "envelope_team_id_foreign";`);
    this.addSql(`alter table "contact_group" drop constraint "contact_group_team_id_foreign";`);
    this.addSql(`alter table "contact" drop constraint "contact_team_id_foreign";`);
    this.addSql(`alter table "api_key" drop constraint "api_key_team_id_foreign";`);
    this.addSql(`alter table "envelope" drop constraint "envelope_template_id_foreign";`);
    this.addSql(`alter table "document" drop constraint "document_template_id_foreign";`);
    this.addSql(`alter table "template_recipient" drop constraint "template_recipient_template_id_foreign";`);
    this.addSql(`alter table "field" drop constraint "field_template_id_foreign";`);
    this.addSql(`alter table "template_recipient" drop constraint "template_recipient_user_id_foreign";`);
    this.addSql(`alter table "agent" drop constraint "agent_user_id_foreign";`);
    this.addSql(`alter table "recipient" drop constraint "recipient_envelope_id_foreign";`);
    this.addSql(`alter table "document" drop constraint "document_envelope_id_foreign";`);
    this.addSql(`alter table "field" drop constraint "field_envelope_id_foreign";`);
    this.addSql(`alter table "recipient" drop constraint "recipient_hosted_by_id_foreign";`);
    this.addSql(`alter table "recipient" drop constraint "recipient_delegated_by_id_foreign";`);
    this.addSql(`alter table "field" drop constraint "field_recipient_id_foreign";`);
    this.addSql(`alter table "agent" drop constraint "agent_recipient_id_foreign";`);
    this.addSql(`alter table "signing_token" drop constraint "signing_token_recipient_id_foreign";`);
    this.addSql(`alter table "field_view" drop constraint "field_view_document_id_foreign";`);
    this.addSql(`alter table "template_recipient" drop constraint "template_recipient_contact_group_id_foreign";`);
    this.addSql(`alter table "contact_group_member" drop constraint "contact_group_member_group_id_foreign";`);
    this.addSql(`alter table "agent" drop constraint "agent_group_id_foreign";`);
    this.addSql(`alter table "template_recipient" drop constraint "template_recipient_contact_id_foreign";`);
    this.addSql(`alter table "contact_group_member" drop constraint "contact_group_member_contact_id_foreign";`);
    this.addSql(`alter table "agent" drop constraint "agent_contact_id_foreign";`);
    this.addSql(`alter table "template_recipient" drop constraint "template_recipient_hosted_by_id_foreign";`);
    this.addSql(`alter table "template_recipient" drop constraint "template_recipient_delegated_by_id_foreign";`);
    this.addSql(`alter table "field" drop constraint "field_template_recipient_id_foreign";`);
    this.addSql(`alter table "field_view" drop constraint "field_view_field_id_foreign";`);
    this.addSql(`alter table "signing_token" drop constraint "signing_token_agent_id_foreign";`);

    this.addSql(`drop table if exists "audit_event" cascade;`);
    this.addSql(`drop table if exists "idempotency_record" cascade;`);
    this.addSql(`drop table if exists "outbox_message" cascade;`);
    this.addSql(`drop table if exists "workspace" cascade;`);
    this.addSql(`drop table if exists "team" cascade;`);
    this.addSql(`drop table if exists "template" cascade;`);
    this.addSql(`drop table if exists "team_user" cascade;`);
    this.addSql(`drop table if exists "envelope" cascade;`);
    this.addSql(`drop table if exists "recipient" cascade;`);
    this.addSql(`drop table if exists "document" cascade;`);
    this.addSql(`drop table if exists "contact_group" cascade;`);
    this.addSql(`drop table if exists "contact" cascade;`);
    this.addSql(`drop table if exists "template_recipient" cascade;`);
    this.addSql(`drop table if exists "field" cascade;`);
    this.addSql(`drop table if exists "field_view" cascade;`);
    this.addSql(`drop table if exists "contact_group_member" cascade;`);
    this.addSql(`drop table if exists "agent" cascade;`);
    this.addSql(`drop table if exists "signing_token" cascade;`);
    this.addSql(`drop table if exists "api_key" cascade;`);
  }
}
