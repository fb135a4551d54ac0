import { Migration } from '@mikro-orm/migrations';

/**
 * Approvers with a quorum (issue 33): the `approver` recipient type, each role's `quorum` (1 for
 * every existing role) and the approvals an approver role collects, one per agent.
 */
export class Migration20261127123559_approvers extends Migration {
  override name = 'Migration20261127123559_approvers';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "approval" ("id" uuid not null, "created_at" timestamptz not null, "recipient_id" uuid not null, "agent_id" uuid not null, "person_index" int not null default 0, "comment" text null, "made_quorum" boolean not null default false, primary key ("id"));`,
    );
    this.addSql(`create index "approval_agent_id_index" on "approval" ("agent_id");`);
    this.addSql(`alter table "approval" add constraint "approval_recipient_agent_unique" unique ("recipient_id", "agent_id");`);

    this.addSql(`alter table "recipient" drop constraint "recipient_type_check";`);
    this.addSql(`alter table "recipient" add "quorum" int not null default 1;`);
    this.addSql(`alter table "recipient" add constraint "recipient_type_check" check ("type" in ('signer', 'host', 'in_person_signer', 'delegator', 'viewer', 'approver'));`);

    this.addSql(`alter table "template_recipient" drop constraint "template_recipient_type_check";`);
    this.addSql(`alter table "template_recipient" add "quorum" int not null default 1;`);
    this.addSql(
      `alter table "template_recipient" add constraint "template_recipient_type_check" check ("type" in ('signer', 'host', 'in_person_signer', 'delegator', 'viewer', 'approver'));`,
    );

    this.addSql(`alter table "approval" add constraint "approval_recipient_id_foreign" foreign key ("recipient_id") references "recipient" ("id") on delete cascade;`);
    this.addSql(`alter table "approval" add constraint "approval_agent_id_foreign" foreign key ("agent_id") references "agent" ("id") on delete cascade;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "approval" cascade;`);

    this.addSql(`alter table "recipient" drop constraint "recipient_type_check";`);
    this.addSql(`alter table "recipient" drop column "quorum";`);
    this.addSql(`alter table "recipient" add constraint "recipient_type_check" check ("type" in ('signer', 'host', 'in_person_signer', 'delegator', 'viewer'));`);

    this.addSql(`alter table "template_recipient" drop constraint "template_recipient_type_check";`);
    this.addSql(`alter table "template_recipient" drop column "quorum";`);
    this.addSql(`alter table "template_recipient" add constraint "template_recipient_type_check" check ("type" in ('signer', 'host', 'in_person_signer', 'delegator', 'viewer'));`);
  }
}
