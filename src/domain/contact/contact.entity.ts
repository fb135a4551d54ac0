import { defineEntity, p } from '@mikro-orm/core';
import { baseColumns, updatedAtColumn } from '../../db/columns.ts';
import { Team } from '../team/team.entity.ts';

/** An address-book entry of a team; can be named as an agent by `contactId`. */
export const ContactSchema = defineEntity({
  name: 'Contact',
  tableName: 'contact',
  properties: {
    ...baseColumns(),
    updatedAt: updatedAtColumn(),
    team: () => p.manyToOne(Team).ref().deleteRule('cascade'),
    name: p.string().length(200),
    email: p.string().length(320).nullable(),
    phone: p.string().length(20).nullable(),
    locale: p.string().length(5).nullable(),
    phoneContactMethod: p.string().length(10).nullable(),
  },
  // The listing: a team's contacts, newest first, keyset-paginated on (createdAt, id).
  indexes: [{ name: 'contact_team_created_idx', properties: ['team', 'createdAt', 'id'] }],
});

export class Contact extends ContactSchema.class {}
ContactSchema.setClass(Contact);
