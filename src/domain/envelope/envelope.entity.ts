import { defineEntity, p } from '@mikro-orm/core';
import { baseColumns, type JsonObject, updatedAtColumn } from '../../db/columns.ts';
import { Team } from '../team/team.entity.ts';
import { Template } from '../template/template.entity.ts';

export const envelopeStatuses = ['draft', 'scheduled', 'sent', 'finalized', 'voided', 'expired'] as const;
export type EnvelopeStatus = (typeof envelopeStatuses)[number];

/** The statuses an envelope never leaves: its artefacts and audit log are final, its links dead. */
export const closedEnvelopeStatuses: readonly EnvelopeStatus[] = ['finalized', 'voided', 'expired'];

export function isClosedEnvelopeStatus(status: string): boolean {
  return (closedEnvelopeStatuses as readonly string[]).includes(status);
}

/** The fixed certificates of completion of a closed envelope, by locale. */
export type EnvelopeCertificates = Partial<Record<'en-US' | 'tr-TR', { sha256: string; byteSize: number; chainSeq: number; chainHead: string; generatedAt: string }>>;

/**
 * One signing session. `status` only moves through guarded single-row updates
 * (`update ... where status = <expected>`), never read-then-write; `version` guards draft edits
 * made concurrently through the ORM.
 */
export const EnvelopeSchema = defineEntity({
  name: 'Envelope',
  tableName: 'envelope',
  properties: {
    ...baseColumns(),
    updatedAt: updatedAtColumn(),
    team: () => p.manyToOne(Team).ref().deleteRule('cascade'),
    template: () => p.manyToOne(Template).ref().nullable().deleteRule('set null').index(),
    /** The public link a visitor made it through (issue 36); kept when the link is deleted, so its envelopes stay findable. */
    publicLinkId: p.uuid().nullable(),
    name: p.string().length(48),
    status: p.enum(envelopeStatuses).default('draft'),
    expirationPeriodDays: p.integer(),
    reminderInitialDelayDays: p.integer().default(0),
    reminderRepeatIntervalDays: p.integer().default(0),
    reminderBeforeExpirationDays: p.integer().default(0),
    context: p.json<JsonObject>().default('{}'),
    /** Visible stamps on the sealed documents (docs/artefacts.md); null: the team's default. */
    stamp: p.boolean().nullable(),
    /** A scheduled envelope's send time (`scheduled` only; null otherwise). */
    sendAt: p.datetime().nullable(),
    sentAt: p.datetime().nullable(),
    expiresAt: p.datetime().nullable().index(),
    completedAt: p.datetime().nullable(),
    voidedAt: p.datetime().nullable(),
    voidReason: p.text().nullable(),
    expiredAt: p.datetime().nullable(),
    /**
     * The certificate of completion fixed at closing, per locale (docs/artefacts.md): the SHA-256
     * of the sealed PDF stored content-addressed, and the last audit event it includes. Written
     * once per locale by a guarded update; null until the first one is recorded.
     */
    certificates: p.json<EnvelopeCertificates>().nullable(),
    /**
     * 0 at send, one more for every correction of the sent envelope (owner/correction.ts), moved
     * only by a guarded single-row update under the envelope's row lock. A signer's submission
     * names the revision its page loaded and is refused (`Signing.EnvelopeChanged`) when it is older.
     */
    revision: p.integer().default(0),
    version: p.integer().version(),
  },
  indexes: [
    // The listing query: a team's envelopes, newest first, optionally by status.
    { name: 'envelope_team_created_idx', properties: ['team', 'createdAt', 'id'] },
    { name: 'envelope_team_status_created_idx', properties: ['team', 'status', 'createdAt', 'id'] },
    // Finding envelopes (readEnvelopePage's filters); the functions are the migration's.
    { name: 'envelope_team_completed_idx', properties: ['team', 'completedAt'] },
    // `?publicLinkId=`: one link's envelopes, newest first.
    { name: 'envelope_team_public_link_idx', properties: ['team', 'publicLinkId', 'createdAt', 'id'] },
    { name: 'envelope_name_search_idx', expression: 'create index "envelope_name_search_idx" on "envelope" using gin (envelope_search_key("name") gin_trgm_ops)' },
    { name: 'envelope_context_idx', expression: 'create index "envelope_context_idx" on "envelope" using gin ("context" jsonb_path_ops)' },
  ],
  checks: [
    { name: 'envelope_expiration_period_days_check', expression: 'expiration_period_days >= 1 and expiration_period_days <= 90' },
    {
      name: 'envelope_reminder_days_check',
      expression: [
        'reminder_initial_delay_days >= 0 and reminder_initial_delay_days <= 30',
        'reminder_repeat_interval_days >= 0 and reminder_repeat_interval_days <= 30',
        'reminder_before_expiration_days >= 0 and reminder_before_expiration_days <= 30',
      ].join(' and '),
    },
  ],
});

export class Envelope extends EnvelopeSchema.class {}
EnvelopeSchema.setClass(Envelope);
