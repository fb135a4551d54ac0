import { defineEntity, p } from '@mikro-orm/core';
import { baseColumns } from '../../db/columns.ts';
import { Contact } from '../contact/contact.entity.ts';
import { ContactGroup } from '../contact/contact-group.entity.ts';
import type { AgentInfo } from '../person/person.ts';
import { TeamUser } from '../team/team-user.entity.ts';
import { Recipient } from './recipient.entity.ts';

export const agentKinds = ['info', 'contact', 'group', 'user'] as const;
export type AgentKind = (typeof agentKinds)[number];

// A person's vocabulary lives in person/ (below contact/ and team/, which use it too); re-exported
// here, where the agent's callers have always found it.
export { type AgentInfo, isEmbedded, type Locale, locales, type PhoneContactMethod, phoneContactMethods } from '../person/person.ts';
/** What the sender sees on an agent whose message could not be delivered (both faces). */
export type AgentNotificationFailure = {
  /** What the message was: invitation, your_turn, reminder, voided, completed, … */
  kind: string;
  channel: string | null;
  /** Why, as a stable code (docs/errors.md, "Delivery failure reasons"): `mail_refused`, `phone_provider_refused`, `no_address`, … */
  reason: string;
  /** The same for people: no class name, stack or detail of the service's infrastructure (those are in its log). */
  error: string;
  attempts: number;
  failedAt: string;
};

/**
 * A person (or a reference to people) behind a recipient role: inline `info`, or a contact,
 * contact group or team user of the same team. References are resolved and copied into
 * `snapshot` at send time, so later edits of a contact do not change who signs.
 */
export const AgentSchema = defineEntity({
  name: 'Agent',
  tableName: 'agent',
  properties: {
    ...baseColumns(),
    recipient: () => p.manyToOne(Recipient).ref().deleteRule('cascade'),
    position: p.integer().default(0),
    kind: p.enum(agentKinds),
    info: p.json<AgentInfo>().nullable(),
    contact: () => p.manyToOne(Contact).ref().nullable().deleteRule('set null').index(),
    group: () => p.manyToOne(ContactGroup).ref().nullable().deleteRule('set null').index(),
    user: () => p.manyToOne(TeamUser).ref().nullable().deleteRule('set null').index(),
    snapshot: p.json<AgentInfo[]>().nullable(),
    snapshotAt: p.datetime().nullable(),
    revokedAt: p.datetime().nullable(),
    /** When a message to this agent's people was last delivered (invitation, reminder, notice). */
    notifiedAt: p.datetime().nullable(),
    /** The last message to this agent that was given up for good; cleared by a later delivery. */
    notificationFailure: p.json<AgentNotificationFailure>().nullable(),
  },
  indexes: [
    { name: 'agent_recipient_position_idx', properties: ['recipient', 'position'] },
    // Finding envelopes by a person's address (the function is the migration's).
    { name: 'agent_emails_idx', expression: 'create index "agent_emails_idx" on "agent" using gin (agent_emails("info", "snapshot"))' },
  ],
});

export class Agent extends AgentSchema.class {}
AgentSchema.setClass(Agent);
