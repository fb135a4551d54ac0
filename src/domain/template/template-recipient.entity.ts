import { defineEntity, p } from '@mikro-orm/core';
import { baseColumns, updatedAtColumn } from '../../db/columns.ts';
import { Contact } from '../contact/contact.entity.ts';
import { ContactGroup } from '../contact/contact-group.entity.ts';
import { recipientKeyColumns } from '../recipient/recipient.entity.ts';
import { TeamUser } from '../team/team-user.entity.ts';
import { Template } from './template.entity.ts';

/**
 * A recipient role of a template (docs/reference/interface-spec.md §2.7). At most one pre-assigned person (user, contact or
 * contact group); `fixed` locks that assignment against jumpstart overrides.
 */
export const TemplateRecipientSchema = defineEntity({
  name: 'TemplateRecipient',
  tableName: 'template_recipient',
  properties: {
    ...baseColumns(),
    updatedAt: updatedAtColumn(),
    template: () => p.manyToOne(Template).ref().deleteRule('cascade'),
    ...recipientKeyColumns(),
    fixed: p.boolean().default(false),
    hostedBy: () => p.manyToOne(TemplateRecipient).ref().nullable().deleteRule('no action').index(),
    delegatedBy: () => p.manyToOne(TemplateRecipient).ref().nullable().deleteRule('no action').index(),
    user: () => p.manyToOne(TeamUser).ref().nullable().deleteRule('set null').index(),
    contact: () => p.manyToOne(Contact).ref().nullable().deleteRule('set null').index(),
    contactGroup: () => p.manyToOne(ContactGroup).ref().nullable().deleteRule('set null').index(),
  },
  uniques: [{ name: 'template_recipient_template_identifier_unique', properties: ['template', 'identifier'] }],
  checks: [
    {
      name: 'template_recipient_one_assignment_check',
      expression: 'num_nonnulls(user_id, contact_id, contact_group_id) <= 1',
    },
  ],
});

export class TemplateRecipient extends TemplateRecipientSchema.class {}
TemplateRecipientSchema.setClass(TemplateRecipient);
