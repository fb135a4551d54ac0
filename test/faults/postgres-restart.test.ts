/**
 * Fault: PostgreSQL is restarted (stopped, then started again) while requests, subscriptions and
 * outbox jobs are in flight. The service runs as a real process on a private cluster the test owns.
 * Twice: a clean restart (`pg_ctl stop -m fast`: every session is ended) and a crash
 * (`-m immediate`: the server recovers on start).
 *
 * Promised (docs/operations.md, "What happens when PostgreSQL restarts"):
 * - the process stays up; /readyz answers 503 during the outage and 200 after it;
 * - requests during the outage fail with Server.Unavailable (503), never 500, and none waits
 *   longer than DATABASE_ACQUIRE_TIMEOUT_MS (plus a margin for a busy machine);
 * - subscriptions end with Subscription.Interrupted (connection_lost) and, resumed by sequence,
 *   deliver every event once, without gaps;
 * - every outbox job completes exactly once: each mail reaches the SMTP server once, under its
 *   Message-ID; each webhook delivery reaches its receiver once.
 */

import type { MikroORM } from '@mikro-orm/postgresql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FaultSmtpServer, startFaultSmtpServer } from '../helpers/fault-smtp.ts';
import {
  asTestApp,
  failedOutbox,
  type GatedReceiver,
  mailOutboxIds,
  missingBlobs,
  openOrm,
  pendingOutbox,
  sealEventsPerDocument,
  seedTeamIn,
  sleep,
  startGatedReceiver,
  waitUntil,
} from '../helpers/faults.ts';
import { graphqlClient, restClient } from '../helpers/harness.ts';
import { type PgCluster, startPgCluster } from '../helpers/pg-cluster.ts';
import { resumingWatcher } from '../helpers/resuming-watcher.ts';
import { type ServiceProcess, startService } from '../helpers/service.ts';
import { type BuiltEnvelope, buildEnvelope, signAndComplete } from '../helpers/signing.ts';
import { signingLinkIn } from '../helpers/smtp.ts';

const ACQUIRE_TIMEOUT_MS = 3_000;
/**
 * A busy two-core machine may be slow to schedule the answer; the point is "no hang" (without the
 * acquire timeout a request waits for TCP's minutes), not speed: a margin far above any
 * scheduling delay seen with two other suites loading the machine (issue 34), far below a hang.
 */
const ANSWER_MARGIN_MS = 30_000;

let cluster: PgCluster;
let orm: MikroORM;
let smtp: FaultSmtpServer;
let receiver: GatedReceiver;
let service: ServiceProcess;

beforeAll(async () => {
  cluster = await startPgCluster();
  orm = await openOrm(cluster.databaseUrl);
  smtp = await startFaultSmtpServer();
  receiver = await startGatedReceiver();
  service = await startService({
    databaseUrl: cluster.databaseUrl,
    env: {
      SMTP_URL: smtp.url,
      DATABASE_ACQUIRE_TIMEOUT_MS: String(ACQUIRE_TIMEOUT_MS),
      WEBHOOK_ALLOW_PRIVATE: 'true',
      RATE_LIMIT_PER_MINUTE: '0',
    },
  });
});

afterAll(async () => {
  smtp?.releaseHeld();
  receiver?.release();
  await service?.stop();
  await orm?.close(true);
  await smtp?.close();
  await receiver?.close();
  await cluster?.destroy();
});

type Answer = { status: number; name: string | undefined; ms: number; during: boolean };

describe('PostgreSQL restarted under load', () => {
  // `fast`: a restart (every session ended, a clean shutdown); `immediate`: a crash (recovery on start).
  it.each(['fast', 'immediate'] as const)(
    'pg_ctl stop -m %s: keeps the process up, answers Server.Unavailable while down, resumes subscriptions by sequence, and completes every job once',
    async (mode) => {
      const team = await seedTeamIn(orm);
      const app = asTestApp(service.url, orm);
      const rest = restClient(app, team.apiKey);
      const graphql = graphqlClient(app, team.apiKey);
      expect((await fetch(`${service.url}/readyz`)).status).toBe(200);

      const webhook = await rest.post('/webhooks', { url: receiver.url, eventTypes: ['envelope.sent', 'envelope.finalized'] });
      expect(webhook.status, JSON.stringify(webhook.body)).toBe(200);

      const built: BuiltEnvelope[] = [];
      for (let index = 0; index < 6; index += 1) {
        built.push(await buildEnvelope(app, team.apiKey, { name: `Restart ${index}`, recipients: [{ identifier: `${mode}${index}` }] }));
      }
      // Two envelopes watched on each transport family, from the start of their trail.
      const watchers = [
        resumingWatcher(service.url, 'sse', team.apiKey, built[0]!.envelopeId),
        resumingWatcher(service.url, 'ws', team.apiKey, built[1]!.envelopeId),
        resumingWatcher(service.url, 'graphql-sse', team.apiKey, built[2]!.envelopeId),
      ];
      await waitUntil('the watchers to catch up', () => watchers.every((watcher) => watcher.events().length > 0));

      // Requests keep coming the whole time: REST reads and GraphQL reads of the team's envelopes,
      // about 40 a second. Two outages within a minute send more of them than the per-address budget
      // for requests without a valid key (300): a request whose key could not be checked must not be
      // counted there (it was, and the second outage answered 429 instead of 503).
      let outage = false;
      let loading = true;
      const answers: Answer[] = [];
      const load = (async () => {
        for (let turn = 0; loading; turn += 1) {
          const started = Date.now();
          const during = outage;
          try {
            if (turn % 2 === 0) {
              const answer = await rest.get(`/envelopes/${built[turn % built.length]!.envelopeId}`);
              answers.push({ status: answer.status, name: answer.body?.error?.name, ms: Date.now() - started, during });
            } else {
              const answer = await graphql(`query($id: ID!) { envelope(id: $id) { id status documents { id } } }`, { id: built[turn % built.length]!.envelopeId });
              answers.push({ status: answer.status, name: answer.errors?.[0]?.extensions?.code, ms: Date.now() - started, during });
            }
          } catch (error) {
            answers.push({ status: 0, name: `network: ${(error as Error).message}`, ms: Date.now() - started, during });
          }
          await sleep(25);
        }
      })();

      // Jobs in flight: three envelopes sent just before the stop. The SMTP server holds their
      // invitations in the middle of DATA and the webhook receiver its answers, so the worker is
      // inside those jobs when PostgreSQL goes; both answer once it is down, so the work succeeds and
      // its acknowledgement is what meets the outage.
      smtp.hold(() => true);
      receiver.hold();
      for (const envelope of built.slice(0, 3)) {
        const sent = await rest.put(`/envelopes/${envelope.envelopeId}/send`);
        expect(sent.status, JSON.stringify(sent.body)).toBe(200);
      }
      await waitUntil('mails and webhook deliveries to be in flight', () => smtp.held() >= 1 && receiver.waiting() >= 1, 20_000).catch((error) => {
        throw new Error(`${(error as Error).message}: ${smtp.held()} mails held, ${receiver.waiting()} webhook deliveries held`);
      });
      outage = true;
      await cluster.stop(mode);
      smtp.hold(undefined);
      smtp.releaseHeld();
      receiver.release();

      const readinessDuringOutage = await waitUntil('/readyz to report the outage', async () => {
        const response = await fetch(`${service.url}/readyz`);
        return response.status === 503 ? response.status : undefined;
      });
      // A write during the outage is refused by name, quickly.
      const started = Date.now();
      const refusedSend = await rest.put(`/envelopes/${built[3]!.envelopeId}/send`);
      expect(refusedSend.status).toBe(503);
      expect(refusedSend.body.error.name).toBe('Server.Unavailable');
      // Every 503 says when to come back (issue 31).
      expect(refusedSend.headers.get('retry-after')).toBe(String(refusedSend.body.error.context.retryAfterSeconds));
      expect(Number(refusedSend.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(Date.now() - started).toBeLessThan(ACQUIRE_TIMEOUT_MS + ANSWER_MARGIN_MS);
      // Longer than the acquire timeout, so requests waiting for a connection time out too.
      await sleep(ACQUIRE_TIMEOUT_MS + 1_500);
      expect(service.isRunning()).toBe(true);

      await cluster.start();
      outage = false;
      await waitUntil('/readyz to report the recovery', async () => ((await fetch(`${service.url}/readyz`)).status === 200 ? true : undefined), 30_000);
      expect(readinessDuringOutage).toBe(503);

      // The rest of the work after the restart: the other three are sent, everyone signs.
      for (const envelope of built.slice(3)) {
        const sent = await waitUntil('a send after the restart', async () => {
          const answer = await rest.put(`/envelopes/${envelope.envelopeId}/send`);
          return answer.status === 200 ? answer : undefined;
        });
        expect(sent.status).toBe(200);
      }
      const invitationTo = (index: number) => `${mode}${index}@example.com`;
      for (const [index, envelope] of built.entries()) {
        const mail = await waitUntil(`the invitation to ${invitationTo(index)}`, () => smtp.accepted.find((entry) => entry.rcptTo.includes(invitationTo(index))), 60_000);
        const signed = await signAndComplete(app, signingLinkIn({ rcptTo: mail.rcptTo, mail: mail.mail, raw: '' })!.token);
        expect(signed.errors, JSON.stringify(signed.errors)).toBeUndefined();
        void envelope;
      }
      // Every job the work caused (invitations, seals, completion notices, webhook deliveries) completes.
      await waitUntil('the outbox to drain', async () => Object.keys(await pendingOutbox(orm)).length === 0, 120_000, 250);
      loading = false;
      await load;

      // The process stayed up and never answered Server.Internal.
      expect(service.isRunning()).toBe(true);
      expect(service.unexpectedErrors().map((line) => JSON.stringify(line.err ?? line).slice(0, 300))).toEqual([]);
      expect(answers.filter((answer) => answer.status === 500)).toEqual([]);
      const duringOutage = answers.filter((answer) => answer.during);
      expect(duringOutage.length).toBeGreaterThan(0);
      for (const answer of answers) {
        expect([200, 503], JSON.stringify(answer)).toContain(answer.status);
        if (answer.status === 503) expect(answer.name).toBe('Server.Unavailable');
        expect(answer.ms, JSON.stringify(answer)).toBeLessThan(ACQUIRE_TIMEOUT_MS + ANSWER_MARGIN_MS);
      }
      expect(duringOutage.some((answer) => answer.status === 503)).toBe(true);
      expect(answers.filter((answer) => !answer.during).some((answer) => answer.status === 200)).toBe(true);

      // Subscriptions: every event of the stored trail once, in order, across the reconnections.
      for (const [index, watcher] of watchers.entries()) {
        const envelopeId = built[index]!.envelopeId;
        const trail = await orm.em.fork().execute<{ seq: number; type: string }[]>('select seq, type from audit_event where stream_id = ? order by seq', [envelopeId]);
        await waitUntil(`watcher ${index} to see the whole trail`, () => watcher.events().length >= trail.length, 20_000);
        await watcher.stop();
        expect(watcher.events().map((event) => event.sequence)).toEqual(trail.map((event) => event.seq));
        expect(watcher.events().map((event) => event.type)).toEqual(trail.map((event) => event.type));
        expect(watcher.errors(), 'the outage reached the subscription').toContain('Subscription.Interrupted');
        expect(watcher.sessions()).toBeGreaterThan(1);
      }

      // Outbox: nothing failed; each mail once, under its Message-ID; each webhook delivery once.
      expect(await failedOutbox(orm)).toEqual([]);
      const expectedMessageIds = (await mailOutboxIds(orm, team.teamId)).map((id) => `<${id}@localhost>`).sort();
      expect(expectedMessageIds.length).toBe(12); // 6 invitations, 6 completion notices
      const counts = smtp.countsByMessageId();
      expect(expectedMessageIds.filter((messageId) => counts.get(messageId) !== 1).map((messageId) => `${messageId}: ${counts.get(messageId) ?? 0}`)).toEqual([]);
      const deliveries = receiver.answered.filter((request) => request.json.teamId === team.teamId).map((request) => request.headers['x-envelope-webhook-id']);
      expect(deliveries.length).toBe(12); // sent and finalized, for six envelopes
      expect(new Set(deliveries).size).toBe(deliveries.length);

      // Files: every document's original and sealed file exists, each document sealed once.
      expect(await missingBlobs(orm, service.dataDir)).toEqual([]);
      const seals = await sealEventsPerDocument(
        orm,
        built.map((envelope) => envelope.envelopeId),
      );
      expect([...seals.values()]).toEqual(built.map(() => 1));
    },
  );
});
