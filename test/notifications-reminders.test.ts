import { MikroORM } from '@mikro-orm/postgresql';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createOrmConfig } from '../mikro-orm.config.ts';
import { dueReminderWindow, queueDueReminders } from '../src/domain/signing/reminder.service.ts';
import { type Clock, createClock } from '../src/shared/clock.ts';
import { restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { buildEnvelope, SESSION_QUERY, signAndComplete, signingClient } from './helpers/signing.ts';
import { signingLinkIn, startSmtpServer, type TestSmtpServer } from './helpers/smtp.ts';
import { mainWorkerFor } from './helpers/workers.ts';

/*
 * Reminders through a whole schedule. The schedule moves a clock of this test's own (the sweeps
 * and workers here read it) rather than the sandbox clock of a shared app: moving an app's
 * clock days ahead would also expire other test files' envelopes on the shared database. The
 * sweeps are kept to this test's team; signing-expiry.test.ts shows advanceSandboxClock firing a
 * reminder through the face. This app's clock starts 20 days ahead, so that the sandbox sweeps of
 * other files (whose clocks stay within days of now) never reach these envelopes' windows.
 */

const DAY = 24 * 3600;
const AHEAD = 20 * DAY;
let app: TestApp;
let secondOrm: MikroORM;
let smtp: TestSmtpServer;
beforeAll(async () => {
  smtp = await startSmtpServer();
  app = await startTestApp({ env: { SMTP_URL: smtp.url } });
  app.dependencies.clock.advance(AHEAD);
  // A second ORM stands for a second instance of the service: its own connection pool.
  secondOrm = await MikroORM.init(
    createOrmConfig({ clientUrl: inject('databaseUrl'), poolMax: inject('databaseKind') === 'embedded' ? 1 : 4, prepareStatements: inject('databaseKind') === 'server' }),
  );
});
afterAll(async () => {
  await secondOrm.close(true);
  await app.close();
  await smtp.close();
});

function reminderSubjects(address: string): string[] {
  return smtp
    .to(address)
    .map((entry) => entry.mail.subject ?? '')
    .filter((subject) => /^(Reminder|Hatırlatma)/.test(subject));
}

describe('the reminder schedule', () => {
  it('windows: first after the initial delay, then every interval, the before-expiration one last; a jump sends only the latest', () => {
    const activatedAt = new Date('2026-01-01T00:00:00Z');
    const settings = { activatedAt, expiresAt: new Date('2026-01-07T00:00:00Z'), initialDelayDays: 1, repeatIntervalDays: 2, beforeExpirationDays: 1 };
    const at = (days: number) => new Date(activatedAt.getTime() + days * DAY * 1000);
    expect(dueReminderWindow(settings, at(0.9))).toBeNull();
    expect(dueReminderWindow(settings, at(1))?.key).toBe('n1');
    expect(dueReminderWindow(settings, at(2.9))?.key).toBe('n1');
    expect(dueReminderWindow(settings, at(3))?.key).toBe('n2');
    // n3 would fall on day 5, the before-expiration time: that one is sent instead, and is last.
    expect(dueReminderWindow(settings, at(5))?.key).toBe('expiry');
    expect(dueReminderWindow(settings, at(5.9))?.key).toBe('expiry');
    expect(dueReminderWindow(settings, at(6))).toBeNull();
    expect(dueReminderWindow({ ...settings, initialDelayDays: 0 }, at(3))).toBeNull();
    expect(dueReminderWindow({ ...settings, repeatIntervalDays: 0 }, at(4.5))?.key).toBe('n1');
    expect(dueReminderWindow({ ...settings, beforeExpirationDays: 0 }, at(5.5))?.key).toBe('n3');
  });

  it('two instances sweeping often through six days send exactly the expected reminders: none to a finished or not yet active recipient, none after a void', async () => {
    const team: SeededTeam = await seedTeam(app);
    const reminders = { reminderInitialDelayDays: 1, reminderRepeatIntervalDays: 2, reminderBeforeExpirationDays: 1 };
    const built = await buildEnvelope(app, team.apiKey, {
      name: 'Reminded',
      expirationPeriodDays: 6,
      reminders,
      recipients: [
        { identifier: 'stay', order: 1, agents: [{ info: { name: 'Stays', email: 'stay-rem@example.com', locale: 'tr-TR' } }] },
        { identifier: 'leave', order: 1, agents: [{ info: { name: 'Leaves', email: 'leave-rem@example.com' } }] },
        { identifier: 'later', order: 2, agents: [{ info: { name: 'Later', email: 'later-rem@example.com' } }] },
      ],
    });
    const voided = await buildEnvelope(app, team.apiKey, {
      name: 'Voided',
      expirationPeriodDays: 6,
      reminders,
      recipients: [{ identifier: 'gone', agents: [{ info: { name: 'Gone', email: 'gone-rem@example.com' } }] }],
    });
    for (const envelopeId of [built.envelopeId, voided.envelopeId]) expect((await restClient(app, team.apiKey).put(`/envelopes/${envelopeId}/send`)).status).toBe(200);
    expect((await restClient(app, team.apiKey).post(`/envelopes/${voided.envelopeId}/void`, {})).status).toBe(200);

    // The schedule's clock: starts where the app's is, and moves on its own.
    const clock: Clock = createClock();
    clock.advance(AHEAD);
    const auditKey = app.dependencies.auditKey;
    const publicUrl = app.dependencies.config.publicUrl;
    const sweepers = [app.orm, secondOrm].map((orm) => () => queueDueReminders({ em: orm.em, auditKey, publicUrl, clock, teamId: team.teamId }));
    // Two instances' workers (one per connection pool), as main.ts runs them, on the schedule's clock.
    const workers = [app.orm, secondOrm].map((orm) => mainWorkerFor(app, team.teamId, { clock, dependencies: { em: orm.em } }));
    const step = async () => {
      // Both instances sweep twice at once, then both workers deliver at once.
      await Promise.all([...sweepers, ...sweepers].map((sweep) => sweep()));
      await Promise.all(workers.map((worker) => worker.drain()));
    };
    await step();
    const leaveLink = signingLinkIn(smtp.to('leave-rem@example.com')[0]!)!;

    // Every 3 hours through day 5.75 (the envelope expires on day 6).
    const seen: Record<string, number[]> = { stay: [], leave: [] };
    for (let hours = 3; hours <= 5.75 * 24; hours += 3) {
      clock.advance(3 * 3600);
      await step();
      seen.stay!.push(reminderSubjects('stay-rem@example.com').length);
      seen.leave!.push(reminderSubjects('leave-rem@example.com').length);
      // "leave" finishes on day 2 (after its first reminder).
      if (hours === 48) expect((await signAndComplete(app, leaveLink.token)).errors).toBeUndefined();
    }
    // Day 1, day 3, and the before-expiration reminder on day 5: three, each once.
    expect(reminderSubjects('stay-rem@example.com')).toEqual([
      'Hatırlatma: “Reminded” imzanızı bekliyor',
      'Hatırlatma: “Reminded” imzanızı bekliyor',
      'Hatırlatma: “Reminded” imzanızı bekliyor',
    ]);
    const countAt = (days: number) => seen.stay![days * 8 - 1];
    // None before day 1 (21 h), then one at each window as the clock reaches it.
    expect([seen.stay![6], countAt(1), countAt(3), countAt(5)]).toEqual([0, 1, 2, 3]);
    expect(reminderSubjects('leave-rem@example.com')).toEqual(['Reminder: “Reminded” is waiting for your signature']);
    expect(smtp.to('later-rem@example.com')).toHaveLength(0);
    expect(reminderSubjects('gone-rem@example.com')).toHaveLength(0);

    // Each reminder has one Message-ID, and its fresh link opens the recipient's session.
    const stayMails = smtp.to('stay-rem@example.com').filter((entry) => entry.mail.subject?.startsWith('Hatırlatma'));
    expect(new Set(stayMails.map((entry) => entry.mail.messageId)).size).toBe(3);
    const session = await signingClient(app, signingLinkIn(stayMails[2]!)!.token)(SESSION_QUERY);
    expect(session.data.signingSession).toMatchObject({ recipient: { id: built.recipients.stay }, isMyTurn: true });

    // The trail: one reminder.queued and one reminder.sent per window.
    const events = await app.orm.em
      .fork()
      .execute<{ type: string; details: any }[]>(`select type, details from audit_event where envelope_id = ? and type like 'reminder.%' order by seq`, [built.envelopeId]);
    const queued = events.filter((event) => event.type === 'reminder.queued').map((event) => `${event.details.recipientId}:${event.details.window}`);
    expect(queued.sort()).toEqual([`${built.recipients.leave}:n1`, `${built.recipients.stay}:expiry`, `${built.recipients.stay}:n1`, `${built.recipients.stay}:n2`].sort());
    expect(events.filter((event) => event.type === 'reminder.sent')).toHaveLength(4);
  });
});
