import { defineEntity, p } from '@mikro-orm/core';
import { baseColumns, updatedAtColumn } from '../../db/columns.ts';
import { Envelope } from '../envelope/envelope.entity.ts';

export const recipientTypes = ['signer', 'host', 'in_person_signer', 'delegator', 'viewer', 'approver'] as const;
export type RecipientType = (typeof recipientTypes)[number];

export const signatureLevels = ['simple', 'advanced', 'qualified'] as const;
export type SignatureLevel = (typeof signatureLevels)[number];

/**
 * The columns every recipient table has, an envelope's `recipient` and a template's
 * `template_recipient` (the same keys, the same rules: recipient/recipient.service.ts). Each table
 * adds its owner, its links (they point into the same table) and its own columns.
 */
export function recipientKeyColumns() {
  return {
    identifier: p.string().length(64),
    roleName: p.string().length(100),
    type: p.enum(recipientTypes),
    order: p.integer().default(0),
    required: p.boolean().default(true),
    color: p.string().length(7),
    /** An approver role completes when this many distinct agents approved (1 for every other type). */
    quorum: p.integer().default(1),
    /** `simple` (the service's seal only), `advanced` or `qualified`: the signer also signs with its own certificate at a trust service (issue 35). */
    signatureLevel: p.string().length(16).default('simple'),
    /** The team's trust service (team settings `trustServices[].id`) it signs at; null: the team's first offering its level. */
    trustServiceId: p.string().length(64).nullable(),
  };
}

/**
 * A role in an envelope's workflow. `hostedBy` / `delegatedBy` point at other recipients of the
 * same envelope; the foreign keys have no cascade on purpose: removing a referenced recipient is
 * refused by the service (`Recipient.HostRecipientBound` / `Recipient.DelegatorRecipientBound`)
 * and the database backs that refusal.
 */
export const RecipientSchema = defineEntity({
  name: 'Recipient',
  tableName: 'recipient',
  properties: {
    ...baseColumns(),
    updatedAt: updatedAtColumn(),
    envelope: () => p.manyToOne(Envelope).ref().deleteRule('cascade'),
    ...recipientKeyColumns(),
    hostedBy: () => p.manyToOne(Recipient).ref().nullable().deleteRule('no action').index(),
    delegatedBy: () => p.manyToOne(Recipient).ref().nullable().deleteRule('no action').index(),
    activatedAt: p.datetime().nullable(),
    completedAt: p.datetime().nullable(),
    delegatedAt: p.datetime().nullable(),
    declinedAt: p.datetime().nullable(),
    declineReason: p.text().nullable(),
    removedAt: p.datetime().nullable(),
    version: p.integer().version(),
  },
  uniques: [{ name: 'recipient_envelope_identifier_unique', properties: ['envelope', 'identifier'] }],
});

export class Recipient extends RecipientSchema.class {}
RecipientSchema.setClass(Recipient);
