/**
 * Reminders (docs/reference/workflow.md "Reminders"), driven by the service clock: the sweep that expires
 * envelopes (main.ts, every 30 s) and `advanceSandboxClock` both run `queueDueReminders`.
 *
 * Windows of an active, not completed recipient of a sent envelope: `n1` at
 * activation + `reminderInitialDelayDays`, then `n2`, `n3`… every `reminderRepeatIntervalDays`;
 * and `expiry` at `expiresAt − reminderBeforeExpirationDays`, the last one (periodic windows from
 * then on are not sent). When the clock passes several windows at once (a sandbox jump, a long
 * outage), only the latest is sent: one reminder says what the missed ones would have.
 *
 * Exactly once per window and recipient, with any number of instances: the window is queued in a
 * transaction holding the envelope's row lock, after checking the trail for its
 * `reminder.queued` event (written in that same transaction); the outbox rows' dedupe keys
 * (`reminder:<recipient>:<window>:<agent>:<person>`) would refuse a second one anyway.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Clock } from '../../shared/clock.ts';
import { Recipient } from '../recipient/recipient.entity.ts';
import { isPastExpiry } from './expiry.ts';
import { inviteRecipient, lockEnvelope, recordEvent, type Workflow } from './workflow.ts';

const DAY_MS = 24 * 60 * 60 * 1000;

export type ReminderSettings = {
  activatedAt: Date;
  expiresAt: Date | null;
  initialDelayDays: number;
  repeatIntervalDays: number;
  beforeExpirationDays: number;
};

/** The latest window due at `now` (its key and time), or null when none is. */
export function dueReminderWindow(settings: ReminderSettings, now: Date): { key: string; at: Date } | null {
  const time = now.getTime();
  if (isPastExpiry(settings.expiresAt, now)) return null;
  const expiryAt = settings.beforeExpirationDays > 0 && settings.expiresAt ? settings.expiresAt.getTime() - settings.beforeExpirationDays * DAY_MS : null;
  // A before-expiration time at or before the activation would remind someone just invited.
  const expiryWindow = expiryAt !== null && expiryAt > settings.activatedAt.getTime() ? expiryAt : null;
  if (expiryWindow !== null && time >= expiryWindow) return { key: 'expiry', at: new Date(expiryWindow) };
  if (settings.initialDelayDays <= 0) return null;
  const first = settings.activatedAt.getTime() + settings.initialDelayDays * DAY_MS;
  if (time < first) return null;
  const repeat = settings.repeatIntervalDays * DAY_MS;
  const index = repeat > 0 ? Math.floor((time - first) / repeat) : 0;
  const at = first + index * repeat;
  // The before-expiration reminder is the last: no periodic one at or after its time.
  if (expiryWindow !== null && at >= expiryWindow) return null;
  return { key: `n${index + 1}`, at: new Date(at) };
}

/**
 * Every window a recipient activated at `settings.activatedAt` would be reminded in, in time
 * order, by the same rule as dueReminderWindow (a send's dry run shows them). At most one
 * periodic window per day of the envelope's life, so the list is short.
 */
export function reminderWindows(settings: ReminderSettings): { window: string; at: Date }[] {
  const windows: { window: string; at: Date }[] = [];
  const end = settings.expiresAt?.getTime() ?? Infinity;
  const expiryAt = settings.beforeExpirationDays > 0 && settings.expiresAt ? settings.expiresAt.getTime() - settings.beforeExpirationDays * DAY_MS : null;
  const expiryWindow = expiryAt !== null && expiryAt > settings.activatedAt.getTime() ? expiryAt : null;
  const stop = Math.min(end, expiryWindow ?? Infinity);
  if (settings.initialDelayDays > 0) {
    const first = settings.activatedAt.getTime() + settings.initialDelayDays * DAY_MS;
    const repeat = settings.repeatIntervalDays * DAY_MS;
    for (let index = 0, at = first; at < stop; index += 1, at = first + index * repeat) {
      windows.push({ window: `n${index + 1}`, at: new Date(at) });
      // Without a repeat interval there is one periodic reminder; and never more than a window a
      // day for the envelope's longest life (the expiry bounds the loop anyway).
      if (repeat <= 0 || index >= 400) break;
    }
  }
  if (expiryWindow !== null && expiryWindow < end) windows.push({ window: 'expiry', at: new Date(expiryWindow) });
  return windows;
}

export type ReminderDependencies = {
  em: EntityManager;
  auditKey: Buffer;
  publicUrl: string;
  clock: Clock;
  /** Only this team's envelopes: tests on a shared database keep a sweep to their own rows. */
  teamId?: string;
};

type Candidate = {
  recipient_id: string;
  envelope_id: string;
  team_id: string;
  activated_at: Date | string;
  expires_at: Date | string | null;
  reminder_initial_delay_days: number;
  reminder_repeat_interval_days: number;
  reminder_before_expiration_days: number;
};

/** Queues every due reminder window not queued yet; answers how many windows it queued. */
export async function queueDueReminders(dependencies: ReminderDependencies): Promise<number> {
  const now = dependencies.clock.now();
  // Recipients who are invited and still owe their part: hosts act through their hosted signers
  // and are reminded; in-person signers are reached through their host; viewers never act.
  const candidates = await dependencies.em.fork().execute<Candidate[]>(
    `select r.id as recipient_id, r.envelope_id, e.team_id, r.activated_at, e.expires_at,
            e.reminder_initial_delay_days, e.reminder_repeat_interval_days, e.reminder_before_expiration_days
       from recipient r join envelope e on e.id = r.envelope_id
      where e.status = 'sent' and (e.expires_at is null or e.expires_at > ?)
        and r.activated_at is not null and r.completed_at is null and r.type in ('signer', 'delegator', 'host', 'approver')
        and (e.reminder_initial_delay_days > 0 or e.reminder_before_expiration_days > 0)
        ${dependencies.teamId === undefined ? '' : 'and e.team_id = ?'}`,
    [now, ...(dependencies.teamId === undefined ? [] : [dependencies.teamId])],
  );
  let queued = 0;
  for (const candidate of candidates) {
    const window = dueReminderWindow(
      {
        activatedAt: new Date(candidate.activated_at),
        expiresAt: candidate.expires_at === null ? null : new Date(candidate.expires_at),
        initialDelayDays: candidate.reminder_initial_delay_days,
        repeatIntervalDays: candidate.reminder_repeat_interval_days,
        beforeExpirationDays: candidate.reminder_before_expiration_days,
      },
      now,
    );
    if (!window) continue;
    const done = await dependencies.em.fork().transactional(async (em) => {
      const envelope = await lockEnvelope(em, candidate.envelope_id);
      if (!envelope || envelope.status !== 'sent') return false;
      const [already] = await em.execute<{ n: number }[]>(
        `select 1 as n from audit_event where envelope_id = ? and type = 'reminder.queued' and details ->> 'recipientId' = ? and details ->> 'window' = ? limit 1`,
        [candidate.envelope_id, candidate.recipient_id, window.key],
      );
      if (already) return false;
      const recipient = await em.findOne(Recipient, { id: candidate.recipient_id }, { refresh: true });
      if (!recipient || recipient.completedAt || !recipient.activatedAt) return false;
      const workflow: Workflow = {
        em,
        auditKey: dependencies.auditKey,
        publicUrl: dependencies.publicUrl,
        teamId: candidate.team_id,
        envelopeId: candidate.envelope_id,
        now,
        actor: { type: 'system', id: null },
        request: null,
      };
      await inviteRecipient(workflow, recipient, { reminderWindow: window.key });
      await recordEvent(workflow, 'reminder.queued', { recipientId: recipient.id, window: window.key, windowAt: window.at.toISOString() });
      return true;
    });
    if (done) queued += 1;
  }
  return queued;
}
