import { defineEntity, p } from '@mikro-orm/core';
import { baseColumns, type JsonObject, updatedAtColumn } from '../../db/columns.ts';
import { Envelope } from '../envelope/envelope.entity.ts';
import { Recipient } from '../recipient/recipient.entity.ts';
import { Template } from '../template/template.entity.ts';
import { TemplateRecipient } from '../template/template-recipient.entity.ts';

export const fieldTypes = [
  'simple_signature',
  'biometric_signature',
  'text',
  'checkbox',
  'radio',
  'binary_choice',
  // Issue 32.
  'initials',
  'date_signed',
  'full_name',
  'email',
  'date',
  'number',
  'dropdown',
  'formula',
  'attachment',
] as const;
export type FieldType = (typeof fieldTypes)[number];

/**
 * An interactive element of an envelope or a template (exactly one owner), assigned to a
 * recipient of the same owner. `value` and `config` are typed per field type (docs/fields.md)
 * and validated by the field service on every write. Removing the recipient removes the field.
 */
export const FieldSchema = defineEntity({
  name: 'Field',
  tableName: 'field',
  properties: {
    ...baseColumns(),
    updatedAt: updatedAtColumn(),
    envelope: () => p.manyToOne(Envelope).ref().nullable().deleteRule('cascade'),
    template: () => p.manyToOne(Template).ref().nullable().deleteRule('cascade'),
    recipient: () => p.manyToOne(Recipient).ref().nullable().deleteRule('cascade').index(),
    templateRecipient: () => p.manyToOne(TemplateRecipient).ref().nullable().deleteRule('cascade').index(),
    identifier: p.string().length(64),
    type: p.enum(fieldTypes),
    label: p.string().length(200).nullable(),
    tooltip: p.string().length(500).nullable(),
    required: p.boolean().default(false),
    readonly: p.boolean().default(false),
    value: p.json<JsonObject>().nullable(),
    config: p.json<JsonObject>().default('{}'),
    /** Conditions under which the field is shown (issue 32, field-rules.js); null: always. */
    visibleWhen: p.json<JsonObject>().nullable(),
    submittedAt: p.datetime().nullable(),
    version: p.integer().version(),
  },
  uniques: [
    { name: 'field_envelope_identifier_unique', properties: ['envelope', 'identifier'] },
    { name: 'field_template_identifier_unique', properties: ['template', 'identifier'] },
  ],
  checks: [
    { name: 'field_one_owner_check', expression: '(envelope_id is null) <> (template_id is null)' },
    {
      name: 'field_recipient_matches_owner_check',
      expression:
        '(envelope_id is not null and recipient_id is not null and template_recipient_id is null) or (template_id is not null and template_recipient_id is not null and recipient_id is null)',
    },
  ],
});

export class Field extends FieldSchema.class {}
FieldSchema.setClass(Field);
