import type { EntityManager } from '@mikro-orm/postgresql';
import type { Clock } from '../../shared/clock.ts';
import { DomainError } from '../../shared/errors.ts';
import { Envelope } from '../envelope/envelope.entity.ts';
import { inEnvelopeTransaction } from '../envelope/envelope-lock.ts';
import { findTeamEnvelope } from '../envelope/team-envelope.ts';
import type { OutboxHandler } from '../outbox/outbox-worker.ts';
import { OUTBOX_TOPICS, type ScheduledSendPayload } from '../outbox/topics.ts';
import type { ServiceContext } from '../service-context.ts';
import type { TeamCaller } from '../team/team-caller.ts';
import { queueTeamNotice } from '../team/team-notices.ts';
import { performSend, sendProblems } from './send.service.ts';
import { apiKeyWorkflow, lockEnvelope, recordEvent } from './workflow.ts';

/*
 * Send later (docs/reference/workflow.md "Sending", issue 33). `PUT /send` with `sendAt` checks
 * the draft as a send would and moves it `draft → scheduled` (send.service.ts, scheduleDraft),
 * queueing one `envelope.scheduled_send` job due at `sendAt` on the service clock. At that time
 * the job, under the envelope's row lock:
 *
 * - does nothing when the envelope is no longer scheduled for that time (cancelled, rescheduled,
 *   already sent by another instance or by the sandbox clock);
 * - sends it when the send's checks still pass: `scheduled → sent` by a guarded update, so two
 *   workers (or the worker and `advanceSandboxClock`) racing send it exactly once;
 * - otherwise moves it `scheduled → draft` (guarded too), records `envelope.send_failed` with the
 *   problems the send found (webhooks hear of it), and tells the team (`send_failed` notice).
 *
 * A scheduled envelope is not a draft: every draft edit is refused with `Envelope.NotDraft` until
 * the schedule is cancelled (`DELETE /envelopes/{id}/schedule`, `cancelScheduledSend`), which
 * moves it back to `draft`.
 */

export type ScheduledSendSettings = { auditKey: Buffer; publicUrl: string; clock: Clock };

/** What the job did: sent, sent back to draft, or nothing (the schedule is no longer current). */
export type ScheduledSendOutcome = 'sent' | 'failed' | 'stale';

/** Runs one scheduled send (the job's work; also run by `advanceSandboxClock` for what fell due). */
export async function runScheduledSend(settings: ScheduledSendSettings, em: EntityManager, payload: ScheduledSendPayload): Promise<ScheduledSendOutcome> {
  const caller: TeamCaller = { teamId: payload.teamId, workspaceId: payload.workspaceId, apiKeyId: payload.apiKeyId };
  const context = {
    em,
    clock: settings.clock,
    auditKey: settings.auditKey,
    publicUrl: settings.publicUrl,
    metadata: { requestId: `scheduled-send:${payload.envelopeId}`, ip: null, userAgent: null },
  };
  return inEnvelopeTransaction(context, payload.teamId, payload.envelopeId, async (tx) => {
    const envelope = await lockEnvelope(tx, payload.envelopeId);
    if (!envelope || envelope.status !== 'scheduled' || envelope.sendAt?.getTime() !== Date.parse(payload.sendAt)) return 'stale';
    const { problems, content } = await sendProblems(tx, envelope, 'scheduled');
    if (problems.length === 0 && content) {
      await performSend(context, { em: tx, caller, envelope, content, from: 'scheduled' });
      return 'sent';
    }
    const now = settings.clock.now();
    const changed = await tx.nativeUpdate(Envelope, { id: envelope.id, status: 'scheduled' }, { status: 'draft', sendAt: null, updatedAt: now });
    if (changed !== 1) return 'stale';
    const workflow = apiKeyWorkflow(context, { em: tx, caller, envelopeId: envelope.id, now });
    const listed = problems.map((problem) => ({ name: problem.name, description: problem.description, context: problem.context }));
    await recordEvent(workflow, 'envelope.send_failed', { sendAt: payload.sendAt, problems: listed }, { type: 'system', id: null });
    await queueTeamNotice(tx, {
      teamId: payload.teamId,
      envelopeId: envelope.id,
      event: 'send_failed',
      now,
      notice: { error: describe(problems) },
      // One notice per schedule: a rescheduled envelope that fails again is told again.
      dedupe: `${envelope.id}:${payload.sendAt}`,
    });
    return 'failed';
  });
}

/** The problems as one line for the team's notice ("Envelope.NotSendable: … (recipients[buyer].agents: has no agents)"). */
function describe(problems: DomainError[]): string {
  return problems
    .map((problem) => {
      const issues = Array.isArray(problem.context.issues) ? (problem.context.issues as { path: string; message: string }[]) : [];
      return `${problem.name}: ${problem.description}${issues.length > 0 ? ` (${issues.map((issue) => `${issue.path}: ${issue.message}`).join('; ')})` : ''}`;
    })
    .join(' ');
}

/** The outbox handler of `envelope.scheduled_send` (workers.ts registers it). */
export function scheduledSendHandler(settings: ScheduledSendSettings): OutboxHandler<'envelope.scheduled_send'> {
  return async (message, { em }) => {
    await runScheduledSend(settings, em, message.payload);
  };
}

/**
 * Runs the team's scheduled sends that are due now (their jobs not yet done), for
 * `advanceSandboxClock`: a jump of the sandbox clock sends what fell due before it answers. The
 * jobs themselves stay queued and find nothing to do when the worker claims them.
 */
export async function runDueScheduledSends(settings: ScheduledSendSettings, em: EntityManager, teamId: string): Promise<number> {
  const due = await em
    .fork()
    .execute<{ payload: ScheduledSendPayload }[]>(
      `select payload from outbox_message where topic = ? and processed_at is null and failed_at is null and available_at <= ? and payload ->> 'teamId' = ? order by available_at, id`,
      [OUTBOX_TOPICS.scheduledSend, settings.clock.now(), teamId],
    );
  let sent = 0;
  for (const row of due) {
    if ((await runScheduledSend(settings, em.fork(), row.payload)) === 'sent') sent += 1;
  }
  return sent;
}

/** `scheduled → draft` (`DELETE /envelopes/{id}/schedule`, `cancelScheduledSend`): `Envelope.NotScheduled` unless scheduled. */
export async function cancelScheduledSend(context: ServiceContext, options: { envelopeId: string }): Promise<void> {
  const caller = await context.caller();
  await inEnvelopeTransaction(context, caller.teamId, options.envelopeId, async (em) => {
    const envelope = await findTeamEnvelope(em, caller, options.envelopeId, { lock: true });
    const now = context.clock.now();
    const changed = await em.nativeUpdate(Envelope, { id: envelope.id, status: 'scheduled' }, { status: 'draft', sendAt: null, updatedAt: now });
    if (changed !== 1) throw new EnvelopeNotScheduledError(envelope.id, envelope.status);
    await recordEvent(apiKeyWorkflow(context, { em, caller, envelopeId: envelope.id, now }), 'envelope.schedule_cancelled', { sendAt: envelope.sendAt?.toISOString() ?? null });
  });
}

/** `Envelope.NotScheduled` (409): cancelling the schedule of an envelope that is not scheduled; `context.status`. Nothing changed. */
export class EnvelopeNotScheduledError extends DomainError {
  constructor(envelopeId: string, status: string) {
    super('Envelope.NotScheduled', `The envelope is ${status}; only a scheduled envelope has a schedule to cancel.`, { envelopeId, status });
  }
}
