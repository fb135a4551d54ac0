import { Migration } from '@mikro-orm/migrations';

export class Migration20261122155122_rate_limit extends Migration {
  override name = 'Migration20261122155122_rate_limit';

  override up(): void | Promise<void> {
    this.addSql(`create table "rate_limit" ("key" varchar(255) not null, "points" int not null default 0, "expire" bigint null, primary key ("key"));`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "rate_limit" cascade;`);
  }
}
