import { defineEntity, p } from '@mikro-orm/core';
import { baseColumns } from '../../db/columns.ts';
import { Document } from '../document/document.entity.ts';
import { Field } from './field.entity.ts';

/**
 * One placement of a field on a document page, in PDF points from the page's top-left corner
 * (docs/reference/interface-spec.md §2.5). Removing the field or the document removes the view; the field service removes a
 * field left without views when its document goes.
 */
export const FieldViewSchema = defineEntity({
  name: 'FieldView',
  tableName: 'field_view',
  properties: {
    ...baseColumns(),
    field: () => p.manyToOne(Field).ref().deleteRule('cascade'),
    document: () => p.manyToOne(Document).ref().deleteRule('cascade').index(),
    position: p.integer().default(0),
    page: p.integer(),
    x: p.double(),
    y: p.double(),
    width: p.double(),
    height: p.double(),
  },
  indexes: [{ name: 'field_view_field_position_idx', properties: ['field', 'position'] }],
  // Box geometry (inside the page, positive size) is checked by the field service against the
  // page size; the database only guards the page index.
  checks: [{ name: 'field_view_page_check', expression: 'page >= 0' }],
});

export class FieldView extends FieldViewSchema.class {}
FieldViewSchema.setClass(FieldView);
