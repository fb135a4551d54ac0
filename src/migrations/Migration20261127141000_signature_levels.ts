import { Migration } from '@mikro-orm/migrations';

/**
 * Advanced and qualified signatures per signer (issue 35 item 2): each recipient's (and template
 * role's) `signature_level` and trust service, the signer's signature in progress
 * (`signer_signature`), and each document's working file (as its last such signer signed it).
 */
export class Migration20261127141000_signature_levels extends Migration {
  override name = 'Migration20261127141000_signature_levels';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "signer_signature" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "envelope_id" uuid not null, "recipient_id" uuid not null, "agent_id" uuid not null, "token_id" uuid not null, "person_index" int not null default 0, "level" varchar(16) not null, "trust_service_id" varchar(64) not null, "status" varchar(24) not null, "state_hash" varchar(64) null, "return_token" text null, "credential_id" text null, "certificates" jsonb null, "certificate" jsonb null, "prepared" jsonb null, "consent" text null, "error" jsonb null, "signed_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`create index "signer_signature_envelope_id_index" on "signer_signature" ("envelope_id");`);
    this.addSql(`alter table "signer_signature" add constraint "signer_signature_recipient_id_unique" unique ("recipient_id");`);
    this.addSql(`alter table "signer_signature" add constraint "signer_signature_state_hash_unique" unique ("state_hash");`);
    this.addSql(`alter table "signer_signature" add constraint "signer_signature_envelope_id_foreign" foreign key ("envelope_id") references "envelope" ("id") on delete cascade;`);
    this.addSql(`alter table "signer_signature" add constraint "signer_signature_recipient_id_foreign" foreign key ("recipient_id") references "recipient" ("id") on delete cascade;`);
    this.addSql(`alter table "recipient" add "signature_level" varchar(16) not null default 'simple', add "trust_service_id" varchar(64) null;`);
    this.addSql(`alter table "template_recipient" add "signature_level" varchar(16) not null default 'simple', add "trust_service_id" varchar(64) null;`);
    this.addSql(`alter table "document" add "working_sha256" varchar(64) null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "signer_signature" cascade;`);
    this.addSql(`alter table "recipient" drop column "signature_level", drop column "trust_service_id";`);
    this.addSql(`alter table "template_recipient" drop column "signature_level", drop column "trust_service_id";`);
    this.addSql(`alter table "document" drop column "working_sha256";`);
  }
}
