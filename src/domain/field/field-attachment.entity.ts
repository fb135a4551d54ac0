import { defineEntity, p } from '@mikro-orm/core';
import { baseColumns } from '../../db/columns.ts';
import { Envelope } from '../envelope/envelope.entity.ts';
import { Recipient } from '../recipient/recipient.entity.ts';
import { Field } from './field.entity.ts';
import { ATTACHMENT_CONTENT_TYPES } from './field-values.ts';

/**
 * One file a signer uploaded for an attachment field (issue 32, docs/fields.md#attachment). The
 * bytes live in the blob store under `sha256` (the store is content-addressed, so the hash is the
 * blob key; orphan-blobs.ts counts this column as naming its object). `contentType` is what the
 * bytes are, never what the name or the browser claimed. A row the field's submitted value does not
 * name is an upload the signer did not keep: never shown to the sender, and removed when the
 * recipient completes (signing/attachment.service.ts).
 */
export const FieldAttachmentSchema = defineEntity({
  name: 'FieldAttachment',
  tableName: 'field_attachment',
  properties: {
    ...baseColumns(),
    envelope: () => p.manyToOne(Envelope).ref().deleteRule('cascade').index(),
    field: () => p.manyToOne(Field).ref().deleteRule('cascade'),
    recipient: () => p.manyToOne(Recipient).ref().deleteRule('cascade').index(),
    name: p.string().length(200),
    contentType: p.enum(ATTACHMENT_CONTENT_TYPES),
    byteSize: p.integer(),
    sha256: p.string().length(64),
  },
  indexes: [
    { name: 'field_attachment_field_recipient_idx', properties: ['field', 'recipient'] },
    { name: 'field_attachment_sha256_idx', properties: ['sha256'] },
  ],
  checks: [{ name: 'field_attachment_byte_size_check', expression: 'byte_size > 0' }],
});

export class FieldAttachment extends FieldAttachmentSchema.class {}
FieldAttachmentSchema.setClass(FieldAttachment);
