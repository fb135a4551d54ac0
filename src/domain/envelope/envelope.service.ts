import { LockMode, LockWaitTimeoutException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { isUuid } from '../../shared/ids.ts';
import { appendAuditEvent } from '../audit/audit.service.ts';
import { answerOf, createIdempotentlyUnderLock, runIdempotently } from '../idempotency/idempotency.service.ts';
import { readerOf } from '../read-model.ts';
import type { ServiceContext } from '../service-context.ts';
import type { TeamCaller } from '../team/team.service.ts';
import { Team } from '../team/team.entity.ts';
import { boundedInteger, jsonObject, parseInput, readableName } from '../validation.ts';
import { Envelope } from './envelope.entity.ts';
import { readEnvelope, type EnvelopeData, type EnvelopeInclude } from './envelope.read.ts';
import { draftGateFor } from './draft-gate.ts';
import { EnvelopeBusyError, EnvelopeNotDeletableError, EnvelopeNotDraftError, EnvelopeNotFoundError } from './envelope.errors.ts';

export const DEFAULT_EXPIRATION_PERIOD_DAYS = 30;

export const envelopeSettings = {
  name: readableName(2, 48),
  expirationPeriodDays: boundedInteger(1, 90),
  reminderInitialDelayDays: boundedInteger(0, 30),
  reminderRepeatIntervalDays: boundedInteger(0, 30),
  reminderBeforeExpirationDays: boundedInteger(0, 30),
  context: jsonObject,
};

export const createEnvelopeInput = z.strictObject({
  name: envelopeSettings.name,
  expirationPeriodDays: envelopeSettings.expirationPeriodDays.default(DEFAULT_EXPIRATION_PERIOD_DAYS),
  reminderInitialDelayDays: envelopeSettings.reminderInitialDelayDays.default(0),
  reminderRepeatIntervalDays: envelopeSettings.reminderRepeatIntervalDays.default(0),
  reminderBeforeExpirationDays: envelopeSettings.reminderBeforeExpirationDays.default(0),
  context: envelopeSettings.context.default({}),
});

export const updateEnvelopeInput = z.strictObject(envelopeSettings).partial();

export type CreateEnvelopeInput = z.input<typeof createEnvelopeInput>;
export type UpdateEnvelopeInput = z.input<typeof updateEnvelopeInput>;

export function apiKeyActor(caller: TeamCaller) {
  return { type: 'api_key' as const, id: caller.apiKeyId };
}

/**
 * The tenant boundary for envelopes, in one place: an envelope is visible only to its own team.
 * Unknown, malformed and foreign ids all give the same `Envelope.NotFound`.
 */
export async function findTeamEnvelope(
  em: EntityManager,
  caller: TeamCaller,
  envelopeId: string,
  options: { lock?: boolean } = {},
): Promise<Envelope> {
  if (!isUuid(envelopeId)) throw new EnvelopeNotFoundError(envelopeId);
  const envelope = await em.findOne(
    Envelope,
    { id: envelopeId, team: caller.teamId },
    options.lock ? { lockMode: LockMode.PESSIMISTIC_WRITE } : {},
  );
  if (!envelope) throw new EnvelopeNotFoundError(envelopeId);
  return envelope;
}

export type DraftChange = { em: EntityManager; envelope: Envelope; caller: TeamCaller; now: Date };

/**
 * How long a change to a draft may wait for its turn in this process (draft-gate.ts), and then,
 * inside its transaction, for the envelope's row lock (`lock_timeout`, against other processes
 * and sends). Either running out is `Envelope.Busy` (409, Retry-After).
 */
export const DRAFT_LOCK_TIMEOUT_MS = 5_000;
const BUSY_RETRY_AFTER_SECONDS = 1;

/** PostgreSQL's lock_not_available (55P03): `lock_timeout` ran out. */
function isLockTimeout(error: unknown): boolean {
  for (let current = error, depth = 0; current && depth < 5; current = (current as { cause?: unknown }).cause, depth += 1) {
    if (current instanceof LockWaitTimeoutException || (current as { code?: unknown }).code === '55P03') return true;
  }
  return false;
}

/**
 * Runs `work` in a transaction that will take the envelope's row lock, fairly: after its turn at
 * the draft gate (holding no connection while it waits) and with the lock wait bounded. Staging
 * (an upload's bytes, its PDF inspection) happens before this, never inside it.
 */
async function inDraftTransaction<T>(context: ServiceContext, caller: TeamCaller, envelopeId: string, work: (em: EntityManager) => Promise<T>): Promise<T> {
  return inEnvelopeTransaction(context, caller.teamId, envelopeId, work);
}

/**
 * The same fair turn for any change that takes an envelope's row lock (draft changes, sending,
 * signing, voiding): signers of one envelope finishing at once queue here holding no connection,
 * one at a time, instead of each holding a pooled connection while waiting for the row.
 */
export async function inEnvelopeTransaction<T>(context: Pick<ServiceContext, 'em'>, teamId: string, envelopeId: string, work: (em: EntityManager) => Promise<T>): Promise<T> {
  const poolMax = (context.em.config.get('pool') as { max?: number } | undefined)?.max ?? 10;
  const leave = await draftGateFor(context.em.config, poolMax).enter(teamId, envelopeId, DRAFT_LOCK_TIMEOUT_MS);
  if (!leave) throw new EnvelopeBusyError(envelopeId, BUSY_RETRY_AFTER_SECONDS);
  try {
    return await context.em.transactional(async (em) => {
      await em.execute(`set local lock_timeout = ${DRAFT_LOCK_TIMEOUT_MS}`);
      return work(em);
    });
  } catch (error) {
    if (isLockTimeout(error)) throw new EnvelopeBusyError(envelopeId, BUSY_RETRY_AFTER_SECONDS);
    throw error;
  } finally {
    leave();
  }
}

/**
 * Runs a change to a draft envelope (its settings, documents, recipients or fields) in one
 * transaction that holds the envelope's row lock. Sending takes the same lock (its guarded
 * `status` update), so a change and a send never interleave: the change either lands before the
 * send or is refused with `Envelope.NotDraft` and changes nothing. A change that cannot get its
 * turn or the lock in time is `Envelope.Busy` and changes nothing.
 */
export async function changeDraftEnvelope<T>(
  context: ServiceContext,
  envelopeId: string,
  change: (draft: DraftChange) => Promise<T>,
): Promise<T> {
  const caller = await context.caller();
  return inDraftTransaction(context, caller, envelopeId, async (em) => {
    const envelope = await findTeamEnvelope(em, caller, envelopeId, { lock: true });
    if (envelope.status !== 'draft') throw new EnvelopeNotDraftError(envelope.id, envelope.status);
    return change({ em, envelope, caller, now: context.clock.now() });
  });
}

/**
 * Creates something inside a draft (a document, a recipient, fields), idempotent per
 * `Idempotency-Key`: a repeat of a completed request answers the stored first answer, even if
 * the envelope has left draft, or the created thing was changed or deleted, since; otherwise
 * `create` runs under the draft lock, and `read` reads its answer in the same transaction, which
 * is stored with the key. `request` is what makes two requests "the same" (operation and body);
 * the envelope id is added here.
 */
export async function createInDraftEnvelope<T>(
  context: ServiceContext,
  options: { envelopeId: string; idempotencyKey: string | undefined; request: Record<string, unknown> },
  create: (draft: DraftChange) => Promise<string>,
  read: (context: ServiceContext, resourceId: string) => Promise<T>,
): Promise<T> {
  const caller = await context.caller();
  return createIdempotentlyUnderLock<T, DraftChange>(
    {
      em: context.em,
      request: { teamId: caller.teamId, key: options.idempotencyKey, fingerprintOf: { ...options.request, envelopeId: options.envelopeId.toLowerCase() } },
      underLock: (work) => changeDraftEnvelope(context, options.envelopeId, work),
    },
    create,
    (em, resourceId) => read(inTransaction(context, em), resourceId),
    (resourceId) => read(context, resourceId),
  );
}

/** The context with reads on a write's transaction, so they see what it wrote before it commits. */
export function inTransaction(context: ServiceContext, em: EntityManager): ServiceContext {
  return { ...context, em, reader: readerOf(em) };
}

/**
 * Records a change made by the calling API key: appends its audit event and flushes, so the
 * change and its event are written together in the caller's transaction.
 */
export async function auditChange(
  context: ServiceContext,
  draft: Pick<DraftChange, 'em' | 'caller' | 'now'>,
  event: { envelopeId: string | null; type: string; details?: Record<string, unknown> },
) {
  const appended = await appendAuditEvent(draft.em, context.auditKey, {
    teamId: draft.caller.teamId,
    envelopeId: event.envelopeId,
    type: event.type,
    actor: apiKeyActor(draft.caller),
    request: context.metadata,
    details: event.details,
    at: draft.now,
  });
  await draft.em.flush();
  return appended;
}

/**
 * Everything a new envelope's answer can show: its nested lists are empty but for the creation's
 * audit event, and are stored with the answer so that a GraphQL replay can show any selection.
 */
const CREATED_ENVELOPE_INCLUDE: EnvelopeInclude = { documents: true, recipients: true, agents: true, fields: true, views: true, auditEvents: true };

/**
 * Creates a draft envelope (spec §4.1) and answers it as it was created. Idempotent per
 * `Idempotency-Key`: a repeat answers the stored first answer, even after the envelope changed
 * or was deleted.
 */
export async function createEnvelope(context: ServiceContext, options: { input: unknown; idempotencyKey?: string }): Promise<EnvelopeData> {
  const input = parseInput(createEnvelopeInput, options.input);
  const caller = await context.caller();
  const outcome = await context.em.transactional((em) =>
    runIdempotently(
      em,
      { teamId: caller.teamId, key: options.idempotencyKey, fingerprintOf: { operation: 'createEnvelope', input: options.input } },
      {
        perform: async () => {
          const now = context.clock.now();
          const envelope = em.create(Envelope, {
            ...input,
            team: em.getReference(Team, caller.teamId),
            status: 'draft',
            createdAt: now,
            updatedAt: now,
          });
          await em.persist(envelope).flush();
          await auditChange(context, { em, caller, now }, { envelopeId: envelope.id, type: 'envelope.created', details: { name: input.name } });
          return envelope.id;
        },
        answer: (envelopeId) => readEnvelope(inTransaction(context, em), envelopeId, CREATED_ENVELOPE_INCLUDE),
      },
    ),
  );
  return answerOf(outcome, (envelopeId) => readEnvelope(context, envelopeId, CREATED_ENVELOPE_INCLUDE));
}

/**
 * Changes settings of a draft envelope; only the given keys change. Answers nothing: each face
 * reads the envelope back through the read model with what it needs nested.
 */
export async function updateEnvelope(context: ServiceContext, options: { envelopeId: string; input: unknown }): Promise<void> {
  const input = parseInput(updateEnvelopeInput, options.input);
  await changeDraftEnvelope(context, options.envelopeId, async (draft) => {
    const changed = Object.keys(input).filter((key) => input[key as keyof typeof input] !== undefined);
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
  await inDraftTransaction(context, caller, options.envelopeId, async (em) => {
    const envelope = await findTeamEnvelope(em, caller, options.envelopeId, { lock: true });
    if (envelope.status !== 'draft') throw new EnvelopeNotDeletableError(envelope.id, envelope.status);
    await auditChange(context, { em, caller, now: context.clock.now() }, {
      envelopeId: envelope.id,
      type: 'envelope.deleted',
      details: { name: envelope.name },
    });
    await em.nativeDelete(Envelope, { id: envelope.id, team: caller.teamId, status: 'draft' });
  });
}
