import { defineEntity, p } from '@mikro-orm/core';
import { baseColumns, type JsonObject, updatedAtColumn } from '../../db/columns.ts';
import { Envelope } from '../envelope/envelope.entity.ts';
import { Template } from '../template/template.entity.ts';

export const documentStatuses = ['completed', 'declined', 'voided'] as const;
export type DocumentStatus = (typeof documentStatuses)[number];

/** A page's size in PDF points as a viewer shows it (MediaBox/CropBox with /Rotate applied). */
export type PageSize = { width: number; height: number; rotation: number };

/**
 * A PDF of an envelope or of a template (exactly one owner). The original is stored once in the
 * blob store under `contentSha256`; the page geometry read at upload lets field placements be
 * checked without opening the file again.
 */
export const DocumentSchema = defineEntity({
  name: 'Document',
  tableName: 'document',
  properties: {
    ...baseColumns(),
    updatedAt: updatedAtColumn(),
    envelope: () => p.manyToOne(Envelope).ref().nullable().deleteRule('cascade'),
    template: () => p.manyToOne(Template).ref().nullable().deleteRule('cascade'),
    name: p.string().length(140),
    order: p.integer().default(0),
    context: p.json<JsonObject>().default('{}'),
    status: p.enum(documentStatuses).nullable(),
    pageCount: p.integer(),
    pages: p.json<PageSize[]>(),
    contentSha256: p.string().length(64),
    byteSize: p.bigint('number'),
    sealedSha256: p.string().length(64).nullable(),
    /** The file as its last signer with a digital signature left it (issue 35): the final seal is drawn and sealed onto it, as updates. */
    workingSha256: p.string().length(64).nullable(),
  },
  indexes: [
    { name: 'document_envelope_order_idx', properties: ['envelope', 'order'] },
    { name: 'document_template_order_idx', properties: ['template', 'order'] },
  ],
  checks: [
    { name: 'document_one_owner_check', expression: '(envelope_id is null) <> (template_id is null)' },
    { name: 'document_order_check', expression: '"order" >= 0' },
  ],
});

export class Document extends DocumentSchema.class {}
DocumentSchema.setClass(Document);
