import type { EntityManager } from '@mikro-orm/postgresql';
import { AttachmentUnknownFileError } from '../field/attachment.errors.ts';
import type { Field } from '../field/field.entity.ts';
import { FieldAttachment } from '../field/field-attachment.entity.ts';
import type { AttachmentFile } from '../field/field-values.ts';
import type { Recipient } from '../recipient/recipient.entity.ts';

/*
 * What a submission does with attachment values (issue 32, docs/fields.md#attachment): the ids
 * the signer names become the files' own records; at completion, uploads not kept are dropped.
 * Apart from attachment.service.ts (the upload), which needs the signing service's token checks.
 */

/**
 * Turns the submitted attachment values (`{ files: [{ id }] }`, checked by parseFieldValue) into
 * the stored ones: each id must be a file this recipient uploaded for that field of this
 * envelope, and the value then carries each file's own record (name, type, size, hash), never
 * what the signer sent along. Anything else is `Attachment.UnknownFile`, naming every such id.
 */
export async function resolveAttachmentValues(em: EntityManager, recipient: Recipient, accepted: { field: Field; value: Record<string, unknown> | null }[]): Promise<void> {
  const wanted = accepted.filter((entry) => entry.field.type === 'attachment' && entry.value !== null);
  if (wanted.length === 0) return;
  const ids = wanted.flatMap((entry) => (entry.value!.files as { id: string }[]).map((file) => file.id));
  const rows = await em.find(FieldAttachment, { id: { $in: ids }, recipient: recipient.id, envelope: recipient.envelope.id });
  const byId = new Map(rows.map((row) => [row.id, row]));
  const unknown: string[] = [];
  for (const entry of wanted) {
    const files: AttachmentFile[] = [];
    for (const { id } of entry.value!.files as { id: string }[]) {
      const row = byId.get(id);
      if (!row || row.field.id !== entry.field.id) unknown.push(id);
      else files.push({ id: row.id, name: row.name, contentType: row.contentType, size: row.byteSize, sha256: row.sha256 });
    }
    entry.value = { files };
  }
  if (unknown.length > 0) throw new AttachmentUnknownFileError(unknown);
}

/**
 * At completion, the recipient's uploads its values do not name are dropped: the signer did not
 * keep them, the sender never sees them, and their objects go with the orphan sweep.
 */
export async function dropUnkeptAttachments(em: EntityManager, recipient: Recipient, fields: Field[]): Promise<void> {
  const kept = fields.filter((field) => field.type === 'attachment').flatMap((field) => ((field.value?.files as AttachmentFile[] | undefined) ?? []).map((file) => file.id));
  await em.nativeDelete(FieldAttachment, { recipient: recipient.id, ...(kept.length > 0 ? { id: { $nin: kept } } : {}) });
}
