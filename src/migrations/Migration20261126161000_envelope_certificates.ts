import { Migration } from '@mikro-orm/migrations';

/**
 * The certificate of completion fixed at closing (issue 23): per locale, the SHA-256 of the sealed
 * PDF stored content-addressed in the blob store, its size, and the last audit event it includes.
 */
export class Migration20261126161000_envelope_certificates extends Migration {
  override name = 'Migration20261126161000_envelope_certificates';

  override up(): void | Promise<void> {
    this.addSql(`alter table "envelope" add "certificates" jsonb null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "envelope" drop column "certificates";`);
  }
}
