import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import type { Clock } from '../../shared/clock.ts';
import type { Logger } from '../../shared/logger.ts';
import { inEnvelopeTransaction } from '../envelope/envelope-lock.ts';
import { findTeamEnvelope } from '../envelope/team-envelope.ts';
import type { ServiceContext } from '../service-context.ts';
import { boundedText, parseInput } from '../validation.ts';
import { queueDueReminders } from './reminder.service.ts';
import { runDueScheduledSends } from './scheduled-send.ts';
import { ensureSentAndOpen } from './sender-turn.ts';
import { SandboxDisabledError } from './signing.errors.ts';
import { apiKeyWorkflow, closeEnvelope, type Workflow } from './workflow.ts';

export const MAX_VOID_REASON_LENGTH = 500;

export const voidInput = z.strictObject({ reason: boundedText(0, MAX_VOID_REASON_LENGTH).nullish() });

/**
 * `sent → voided` by the sender (docs/reference/contract.md §5): documents become `voided`, every link dies, the
 * invited people are told. A draft is `Envelope.NotSent` (delete it instead); a closed envelope
 * (including one whose `expiresAt` has passed before the sweep closed it) is `Envelope.Closed`.
 */
export async function voidEnvelope(context: ServiceContext, options: { envelopeId: string; input: unknown }): Promise<void> {
  const input = parseInput(voidInput, options.input);
  const caller = await context.caller();
  await inEnvelopeTransaction(context, caller.teamId, options.envelopeId, async (em) => {
    const envelope = await findTeamEnvelope(em, caller, options.envelopeId, { lock: true });
    const now = context.clock.now();
    ensureSentAndOpen(envelope, now);
    const workflow = apiKeyWorkflow(context, { em, caller, envelopeId: envelope.id, now });
    const reason = input.reason == null || input.reason.trim() === '' ? null : input.reason;
    await closeEnvelope(workflow, { status: 'voided', reason, documentStatus: 'voided', cause: 'void' });
  });
}

export type SweepDependencies = { em: EntityManager; auditKey: Buffer; publicUrl: string; clock: Clock };

const SWEEP_BATCH = 50;

/**
 * Expires every sent envelope whose `expiresAt` has passed on the service clock. Safe with
 * several instances sweeping at once: each claims a batch with `for update skip locked` (an
 * envelope another sweeper or a signer holds is left to them), and the status still moves only
 * through the guarded `where status = 'sent'` update. Answers how many envelopes it expired.
 */
export async function expireDueEnvelopes(dependencies: SweepDependencies): Promise<number> {
  let expired = 0;
  for (;;) {
    const now = dependencies.clock.now();
    const claimed = await dependencies.em.fork().transactional(async (em) => {
      const due = await em.execute<{ id: string; team_id: string }[]>(
        `select id, team_id from envelope where status = 'sent' and expires_at <= ? order by expires_at limit ${SWEEP_BATCH} for update skip locked`,
        [now],
      );
      for (const row of due) {
        const workflow: Workflow = {
          em,
          auditKey: dependencies.auditKey,
          publicUrl: dependencies.publicUrl,
          teamId: row.team_id,
          envelopeId: row.id,
          now,
          actor: { type: 'system', id: null },
          request: null,
        };
        if (await closeEnvelope(workflow, { status: 'expired' })) expired += 1;
      }
      return due.length;
    });
    if (claimed < SWEEP_BATCH) return expired;
  }
}

/** Expiry first: an envelope that just expired gets its notice, not a reminder. */
export async function sweepDue(dependencies: SweepDependencies): Promise<{ expired: number; reminders: number }> {
  const expired = await expireDueEnvelopes(dependencies);
  const reminders = await queueDueReminders(dependencies);
  return { expired, reminders };
}

/**
 * Runs the sweep every `intervalMs` until stopped: expiry, then the reminders that fell due
 * (reminder.service.ts); a failed sweep is logged and retried next time.
 */
export function startExpirySweeper(dependencies: SweepDependencies & { logger: Logger; intervalMs: number }): { stop(): Promise<void> } {
  let running: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    running = running.then(() =>
      sweepDue(dependencies).then(
        ({ expired, reminders }) => {
          if (expired > 0 || reminders > 0) dependencies.logger.info({ expired, reminders }, 'expired envelopes, queued reminders');
        },
        (error: unknown) => dependencies.logger.warn({ err: { message: (error as Error)?.message } }, 'expiry sweep failed'),
      ),
    );
  }, dependencies.intervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}

const MAX_SANDBOX_ADVANCE_SECONDS = 10 * 366 * 24 * 60 * 60;
export const advanceInput = z.strictObject({
  seconds: z
    .number({ error: 'must be a number of seconds' })
    .int('must be a whole number of seconds')
    .min(1, 'must be at least 1')
    .max(MAX_SANDBOX_ADVANCE_SECONDS, `must be at most ${MAX_SANDBOX_ADVANCE_SECONDS} (ten years)`),
});

/**
 * Moves the service clock forward (docs/reference/contract.md §8), then runs what fell due (expiry) before
 * answering, and queues the reminders that fell due. Only with SANDBOX_CLOCK=true (`Sandbox.Disabled` otherwise); any team key may call
 * it. Every team on a sandbox instance sees the same time, and so does every instance on the same
 * database when main shares the clock through it (src/db/shared-sandbox-clock.ts).
 */
export async function advanceSandboxClock(context: ServiceContext, options: { input: unknown }): Promise<{ now: string; expiredEnvelopes: number }> {
  const caller = await context.caller();
  if (!context.sandboxClock) throw new SandboxDisabledError();
  const input = parseInput(advanceInput, options.input);
  if (context.clock.shared) await context.clock.shared.advance(input.seconds);
  else context.clock.advance(input.seconds);
  // The caller's scheduled sends that fell due go out before the answer (their jobs then find them sent).
  await runDueScheduledSends({ auditKey: context.auditKey, publicUrl: context.publicUrl, clock: context.clock }, context.em, caller.teamId);
  const { expired: expiredEnvelopes } = await sweepDue({ em: context.em, auditKey: context.auditKey, publicUrl: context.publicUrl, clock: context.clock });
  return { now: context.clock.now().toISOString(), expiredEnvelopes };
}
