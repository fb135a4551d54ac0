import { z } from 'zod';
import { auditChange, createIdempotently } from '../change.ts';
import type { ServiceContext } from '../service-context.ts';
import { Team } from '../team/team.entity.ts';
import { boundedInteger, givenKeys, jsonObject, parseInput, readableName } from '../validation.ts';
import { changeDraftEnvelope } from './draft-edit.ts';
import { Envelope } from './envelope.entity.ts';
import { EnvelopeNotDeletableError } from './envelope.errors.ts';
import { type EnvelopeData, type EnvelopeInclude, readEnvelope } from './envelope.read.ts';
import { inEnvelopeTransaction } from './envelope-lock.ts';
import { findTeamEnvelope } from './team-envelope.ts';

export const DEFAULT_EXPIRATION_PERIOD_DAYS = 30;

export const envelopeSettings = {
  name: readableName(2, 48),
  expirationPeriodDays: boundedInteger(1, 90),
  reminderInitialDelayDays: boundedInteger(0, 30),
  reminderRepeatIntervalDays: boundedInteger(0, 30),
  reminderBeforeExpirationDays: boundedInteger(0, 30),
  context: jsonObject,
  /** Visible stamps on the sealed documents; null: the team's default (settings.artefacts.stamp, on unless set off). */
  stamp: z.boolean().nullable(),
};

export const createEnvelopeInput = z.strictObject({
  name: envelopeSettings.name,
  expirationPeriodDays: envelopeSettings.expirationPeriodDays.default(DEFAULT_EXPIRATION_PERIOD_DAYS),
  reminderInitialDelayDays: envelopeSettings.reminderInitialDelayDays.default(0),
  reminderRepeatIntervalDays: envelopeSettings.reminderRepeatIntervalDays.default(0),
  reminderBeforeExpirationDays: envelopeSettings.reminderBeforeExpirationDays.default(0),
  context: envelopeSettings.context.default({}),
  stamp: envelopeSettings.stamp.optional(),
});

export const updateEnvelopeInput = z.strictObject(envelopeSettings).partial();

export type CreateEnvelopeInput = z.input<typeof createEnvelopeInput>;
export type UpdateEnvelopeInput = z.input<typeof updateEnvelopeInput>;

/**
 * Everything a new envelope's answer can show: its nested lists are empty but for the creation's
 * audit event, and are stored with the answer so that a GraphQL replay can show any selection.
 */
const CREATED_ENVELOPE_INCLUDE: EnvelopeInclude = { documents: true, recipients: true, agents: true, fields: true, views: true, auditEvents: true, progress: true };

/**
 * Creates a draft envelope (docs/reference/interface-spec.md §4.1) and answers it as it was created. Idempotent per
 * `Idempotency-Key`: a repeat answers the stored first answer, even after the envelope changed
 * or was deleted.
 */
export async function createEnvelope(context: ServiceContext, options: { input: unknown; idempotencyKey?: string }): Promise<EnvelopeData> {
  const input = parseInput(createEnvelopeInput, options.input);
  return createIdempotently(
    context,
    { operation: 'createEnvelope', input: options.input, idempotencyKey: options.idempotencyKey },
    async (change) => {
      const envelope = change.em.create(Envelope, {
        ...input,
        team: change.em.getReference(Team, change.caller.teamId),
        status: 'draft',
        createdAt: change.now,
        updatedAt: change.now,
      });
      await change.em.persist(envelope).flush();
      await auditChange(context, change, { envelopeId: envelope.id, type: 'envelope.created', details: { name: input.name } });
      return envelope.id;
    },
    (reading, envelopeId) => readEnvelope(reading, envelopeId, CREATED_ENVELOPE_INCLUDE),
  );
}

/**
 * Changes settings of a draft envelope; only the given keys change. Answers nothing: each face
 * reads the envelope back through the read model with what it needs nested.
 */
export async function updateEnvelope(context: ServiceContext, options: { envelopeId: string; input: unknown }): Promise<void> {
  const input = parseInput(updateEnvelopeInput, options.input);
  await changeDraftEnvelope(context, options.envelopeId, async (draft) => {
    const changed = givenKeys(input);
    // An empty patch is answered (a draft check included) but records nothing.
    if (changed.length === 0) return;
    draft.em.assign(draft.envelope, input);
    await auditChange(context, draft, { envelopeId: draft.envelope.id, type: 'envelope.updated', details: { changed } });
  });
}

/**
 * Deletes a draft with everything in it. A sent envelope is never deleted (it is voided), so
 * its audit trail stays complete. The guard and the delete are one statement.
 */
export async function deleteEnvelope(context: ServiceContext, options: { envelopeId: string }): Promise<void> {
  const caller = await context.caller();
  await inEnvelopeTransaction(context, caller.teamId, options.envelopeId, async (em) => {
    const envelope = await findTeamEnvelope(em, caller, options.envelopeId, { lock: true });
    if (envelope.status !== 'draft') throw new EnvelopeNotDeletableError(envelope.id, envelope.status);
    await auditChange(
      context,
      { em, caller, now: context.clock.now() },
      {
        envelopeId: envelope.id,
        type: 'envelope.deleted',
        details: { name: envelope.name },
      },
    );
    await em.nativeDelete(Envelope, { id: envelope.id, team: caller.teamId, status: 'draft' });
  });
}
