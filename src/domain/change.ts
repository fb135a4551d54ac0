/**
 * The unit of work every audited change shares, whatever it changes (an envelope, a template, a
 * contact, a webhook, a user): reads that see the change's own transaction, and the change's
 * audit event written in that same transaction. A module of its own so that every service records
 * its changes through this one door rather than through the audit trail itself (services do import
 * each other for other things: docs/architecture.md, "Folder pairs").
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { appendAuditEvent } from './audit/audit.service.ts';
import { answerOf, runIdempotently } from './idempotency/idempotency.service.ts';
import { readerOf } from './read-model.ts';
import type { ServiceContext } from './service-context.ts';
import type { TeamCaller } from './team/team-caller.ts';

/** A change in progress: its transaction, who makes it, and when (the service clock). */
export type ChangeScope = { em: EntityManager; caller: TeamCaller; now: Date };

/** The audit trail's actor for a change made through an API key. */
export function apiKeyActor(caller: TeamCaller) {
  return { type: 'api_key' as const, id: caller.apiKeyId };
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
  context: Pick<ServiceContext, 'auditKey' | 'metadata'>,
  change: ChangeScope,
  event: { envelopeId: string | null; type: string; details?: Record<string, unknown>; newStream?: boolean },
) {
  const appended = await appendAuditEvent(change.em, context.auditKey, {
    ...(event.newStream ? { newStream: true } : {}),
    teamId: change.caller.teamId,
    envelopeId: event.envelopeId,
    type: event.type,
    actor: apiKeyActor(change.caller),
    request: context.metadata,
    details: event.details,
    at: change.now,
  });
  await change.em.flush();
  return appended;
}

/**
 * Records a change the service makes on its own, with no caller (a webhook disabled after its
 * failures, …): appends its audit event, actor `system`, in the change's transaction, and flushes.
 * The same door as `auditChange`, so a feature whose events the trail fans out (webhooks) records
 * its own changes without importing the trail.
 */
export async function auditSystemChange(
  em: EntityManager,
  auditKey: Buffer,
  event: { teamId: string; envelopeId: string | null; type: string; details?: Record<string, unknown>; at: Date },
) {
  const appended = await appendAuditEvent(em, auditKey, { ...event, actor: { type: 'system', id: null }, request: null });
  await em.flush();
  return appended;
}

/**
 * Creates an aggregate (an envelope, a template, a contact…) in one transaction, idempotent per
 * `Idempotency-Key`: `create` writes it with its audit event and answers its id; `read` answers
 * it, on the transaction for the answer stored with the key, and afresh for a replay, which gets
 * the stored first answer even after the aggregate changed or was deleted. `operation` and the
 * raw `input` are what make two requests "the same".
 */
export async function createIdempotently<T>(
  context: ServiceContext,
  request: { operation: string; input: unknown; idempotencyKey: string | undefined },
  create: (change: ChangeScope) => Promise<string>,
  read: (context: ServiceContext, id: string) => Promise<T>,
): Promise<T> {
  const caller = await context.caller();
  const outcome = await context.em.transactional((em) =>
    runIdempotently(
      em,
      { teamId: caller.teamId, key: request.idempotencyKey, fingerprintOf: { operation: request.operation, input: request.input } },
      { perform: () => create({ em, caller, now: context.clock.now() }), answer: (id) => read(inTransaction(context, em), id) },
    ),
  );
  return answerOf(outcome, (id) => read(context, id));
}
