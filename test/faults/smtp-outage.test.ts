/**
 * Fault: the mail server is down for minutes, then back. Minutes are not waited for: the test
 * drives the service's clock (the app's injectable clock, which the worker reads for due times)
 * forward in 30-second steps and lets the production worker (test/helpers/workers.ts builds it
 * from src/workers.ts, with its real retry policy: 10 attempts, 5 s doubling, jittered 50–100 %,
 * capped at 30 min) run at each step. The SMTP server (test/helpers/fault-smtp.ts) is a real one
 * that refuses connections, greets with 421, or defers recipients with 450.
 *
 * Promised (docs/operations.md, "What happens when the mail server is down"): every mail arrives
 * once, under its Message-ID, whatever the outage looked like, as long as it is shorter than the
 * mail retry budget (the waits add up to at least 21 minutes, at most 43); past it, each mail is
 * recorded as failed (`failed_at`; `notification.failed` in the envelope's trail and
 * `notificationFailure` on the agent) and is delivered once after an operator clears `failed_at`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FaultSmtpServer, startFaultSmtpServer } from '../helpers/fault-smtp.ts';
import { restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from '../helpers/harness.ts';
import { buildEnvelope } from '../helpers/signing.ts';
import { mainWorkerFor } from '../helpers/workers.ts';

let app: TestApp;
let smtp: FaultSmtpServer;

beforeAll(async () => {
  smtp = await startFaultSmtpServer('refuse-connections');
  app = await startTestApp({ env: { SMTP_URL: smtp.url } });
});

afterAll(async () => {
  await app?.close();
  await smtp?.close();
});

type Row = { id: string; attempts: number; processed_at: Date | null; failed_at: Date | null; last_error: string | null };

async function invitationRows(team: SeededTeam): Promise<Row[]> {
  return app.orm.em
    .fork()
    .execute<Row[]>(`select id, attempts, processed_at, failed_at, last_error from outbox_message where topic = 'signing.invitation' and payload ->> 'teamId' = ? order by id`, [
      team.teamId,
    ]);
}

/** Sends `count` one-signer envelopes of a fresh team: one invitation each, queued. */
async function queueInvitations(count: number): Promise<{ team: SeededTeam; envelopeIds: string[] }> {
  const team = await seedTeam(app);
  const envelopeIds: string[] = [];
  for (let index = 0; index < count; index += 1) {
    const built = await buildEnvelope(app, team.apiKey, { name: `Outage ${index}`, recipients: [{ identifier: `reader${index}` }] });
    const sent = await restClient(app, team.apiKey).put(`/envelopes/${built.envelopeId}/send`);
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    envelopeIds.push(built.envelopeId);
  }
  return { team, envelopeIds };
}

/** Runs the worker at each 30-second step of the service clock for `minutes` simulated minutes. */
async function runFor(worker: ReturnType<typeof mainWorkerFor>, minutes: number): Promise<void> {
  for (let elapsed = 0; elapsed < minutes * 60; elapsed += 30) {
    await worker.drain();
    app.dependencies.clock.advance(30);
  }
  await worker.drain();
}

describe('SMTP down for minutes, then back', () => {
  it('delivers every mail once, under its Message-ID, after 15 minutes of refused connections, 421 greetings and 450 deferrals', async () => {
    const { team } = await queueInvitations(5);
    const worker = mainWorkerFor(app, team.teamId);
    const connectionsBefore = smtp.connections();

    await smtp.setMode('refuse-connections');
    await runFor(worker, 5);
    await smtp.setMode('greet-421');
    await runFor(worker, 5);
    await smtp.setMode('defer-450');
    await runFor(worker, 5);
    expect(smtp.accepted.filter((mail) => mail.rcptTo.some((to) => to.startsWith('reader')))).toEqual([]);
    let rows = await invitationRows(team);
    // Every mail was tried several times during the outage and is still waiting, none given up.
    expect(
      rows.every((row) => row.attempts >= 4 && row.processed_at === null && row.failed_at === null),
      JSON.stringify(rows),
    ).toBe(true);
    expect(smtp.connections() - connectionsBefore).toBeGreaterThan(0);

    await smtp.setMode('accept');
    // Back: the next due attempt of each mail (at most 30 min of backoff away) delivers it.
    await runFor(worker, 35);
    rows = await invitationRows(team);
    expect(
      rows.every((row) => row.processed_at !== null && row.failed_at === null),
      JSON.stringify(rows),
    ).toBe(true);
    const expected = rows.map((row) => `<${row.id}@localhost>`).sort();
    const counts = smtp.countsByMessageId();
    const ours = [...counts.entries()].filter(([messageId]) => expected.includes(messageId));
    expect(ours.map(([messageId]) => messageId).sort()).toEqual(expected);
    expect(ours.filter(([, count]) => count !== 1)).toEqual([]);
    // The envelope's trail says each was sent once; no failure was shown to the sender.
    const events = await app.orm.em
      .fork()
      .execute<{ type: string; count: string }[]>(`select type, count(*) as count from audit_event where team_id = ? and type in ('invitation.sent', 'notification.failed') group by type`, [
        team.teamId,
      ]);
    expect(Object.fromEntries(events.map((event) => [event.type, Number(event.count)]))).toEqual({ 'invitation.sent': 5 });
  });

  it('past the retry budget records each mail as failed and shows it on the envelope; cleared, it is delivered once', async () => {
    const { team } = await queueInvitations(2);
    const worker = mainWorkerFor(app, team.teamId);
    await smtp.setMode('refuse-connections');
    // 45 simulated minutes: longer than the longest the ten attempts can span (about 43).
    await runFor(worker, 45);
    let rows = await invitationRows(team);
    expect(
      rows.every((row) => row.failed_at !== null && row.attempts === 10 && row.processed_at === null),
      JSON.stringify(rows),
    ).toBe(true);
    const failures = await app.orm.em.fork().execute<{ count: string }[]>(`select count(*) as count from audit_event where team_id = ? and type = 'notification.failed'`, [team.teamId]);
    expect(Number(failures[0]!.count)).toBe(2);

    await smtp.setMode('accept');
    // The operator's retry (docs/operations.md, Background work): clear failed_at and attempts.
    await app.orm.em.fork().execute(
      `update outbox_message set failed_at = null, attempts = 0, available_at = now() where id in (${rows.map(() => '?').join(', ')})`,
      rows.map((row) => row.id),
    );
    await runFor(worker, 1);
    rows = await invitationRows(team);
    expect(rows.every((row) => row.processed_at !== null)).toBe(true);
    const counts = smtp.countsByMessageId();
    for (const row of rows) expect(counts.get(`<${row.id}@localhost>`)).toBe(1);
  });
});
