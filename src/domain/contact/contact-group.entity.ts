import { defineEntity, p } from '@mikro-orm/core';
import { baseColumns, updatedAtColumn } from '../../db/columns.ts';
import { Team } from '../team/team.entity.ts';
import { Contact } from './contact.entity.ts';

/** A named set of contacts; naming it as an agent makes every member an agent of the role. */
export const ContactGroupSchema = defineEntity({
  name: 'ContactGroup',
  tableName: 'contact_group',
  properties: {
    ...baseColumns(),
    updatedAt: updatedAtColumn(),
    team: () => p.manyToOne(Team).ref().deleteRule('cascade'),
    name: p.string().length(200),
  },
  indexes: [{ name: 'contact_group_team_created_idx', properties: ['team', 'createdAt', 'id'] }],
});

export class ContactGroup extends ContactGroupSchema.class {}
ContactGroupSchema.setClass(ContactGroup);

/** Membership of a contact in a group; removing either side removes the membership. */
export const ContactGroupMemberSchema = defineEntity({
  name: 'ContactGroupMember',
  tableName: 'contact_group_member',
  properties: {
    group: () => p.manyToOne(ContactGroup).ref().primary().deleteRule('cascade'),
    contact: () => p.manyToOne(Contact).ref().primary().deleteRule('cascade').index(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});

export class ContactGroupMember extends ContactGroupMemberSchema.class {}
ContactGroupMemberSchema.setClass(ContactGroupMember);
