import { Migration } from '@mikro-orm/migrations';

/**
 * Visible stamps (issue 23): an envelope's `stamp` setting. Null: the team's default
 * (settings.artefacts.stamp, itself on unless set off), read when the envelope is sealed.
 */
export class Migration20261126162000_envelope_stamp extends Migration {
  override name = 'Migration20261126162000_envelope_stamp';

  override up(): void | Promise<void> {
    this.addSql(`alter table "envelope" add column "stamp" boolean null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "envelope" drop column "stamp";`);
  }
}
