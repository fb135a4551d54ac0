import { Migration } from '@mikro-orm/migrations';

/**
 * Correcting a sent envelope (issue 33): the envelope's revision, 0 at send and one more for every
 * correction, so a signing session can tell it loaded an older one (`Signing.EnvelopeChanged`).
 */
export class Migration20261127131000_envelope_revision extends Migration {
  override name = 'Migration20261127131000_envelope_revision';

  override up(): void | Promise<void> {
    this.addSql(`alter table "envelope" add column "revision" int not null default 0;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "envelope" drop column "revision";`);
  }
}
