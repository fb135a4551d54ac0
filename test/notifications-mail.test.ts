import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { simpleParser } from 'mailparser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMailer, type Mailer } from '../src/domain/notification/mailer.ts';
import { createPhoneProvider } from '../src/domain/notification/sms.ts';
import type { OutboxHandler } from '../src/domain/outbox/outbox-worker.ts';
import { createClock } from '../src/shared/clock.ts';
import { createLogger } from '../src/shared/logger.ts';
import { mainJobHandlers, type WorkerDependencies, type WorkerOverrides } from '../src/workers.ts';
import { eventually } from './helpers/eventually.ts';
import { graphqlClient, restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { startRecordingServer } from './helpers/recording-server.ts';
import { buildEnvelope, DELEGATE_MUTATION, SESSION_QUERY, signAndComplete, signingClient, tokenFor } from './helpers/signing.ts';
import { type ReceivedMail, signingLinkIn, startSmtpServer, type TestSmtpServer } from './helpers/smtp.ts';
import { mainWorkerFor, workerDependencies } from './helpers/workers.ts';

/*
 * Mail delivery through the outbox worker, against a real SMTP server (smtp-server) that
 * records what arrives. Every worker here is kept to its own team's rows (`payloadMatch`), so
 * other test files' invitations are never delivered by it.
 */

type Received = ReceivedMail;

const logger = createLogger('silent');
let app: TestApp;
let smtp: TestSmtpServer;
let received: ReceivedMail[];

beforeAll(async () => {
  smtp = await startSmtpServer();
  received = smtp.received;
  app = await startTestApp({ env: { SMTP_URL: smtp.url } });
});
afterAll(async () => {
  await app.close();
  await smtp.close();
});

function mailerFor(): Mailer {
  return createMailer({ smtpUrl: app.dependencies.config.smtpUrl, from: app.dependencies.config.mailFrom, dataDir: app.dataDir, logger });
}

type WorkerOptions = WorkerOverrides & { dependencies?: Partial<WorkerDependencies> };

/** The main worker as main.ts runs it (sealing queues the final copies), kept to this team's rows. */
function workerFor(team: SeededTeam, options: WorkerOptions = {}) {
  return mainWorkerFor(app, team.teamId, options);
}

function mailsTo(address: string): Received[] {
  return smtp.to(address);
}

function linkIn(entry: Received): string {
  const found = signingLinkIn(entry);
  expect(found, entry.mail.text).not.toBeNull();
  return found!.link;
}

async function auditEventsOf(envelopeId: string, type: string) {
  return app.orm.em.fork().execute<{ details: any }[]>('select details from audit_event where envelope_id = ? and type = ? order by seq', [envelopeId, type]);
}

async function outboxRowsOf(envelopeId: string) {
  return app.orm.em
    .fork()
    .execute<{ id: string; topic: string; payload: any; processed_at: Date | null; failed_at: Date | null; last_error: string | null }[]>(
      `select id, topic, payload, processed_at, failed_at, last_error from outbox_message where payload ->> 'envelopeId' = ? order by created_at, id`,
      [envelopeId],
    );
}

async function send(team: SeededTeam, envelopeId: string) {
  expect((await restClient(app, team.apiKey).put(`/envelopes/${envelopeId}/send`)).status).toBe(200);
}

describe('invitation mails', () => {
  it('reach each person in their locale (en-US, tr-TR), escaped, with a link that opens a working session; the link leaves the database', async () => {
    const team = await seedTeam(app);
    const built = await buildEnvelope(app, team.apiKey, {
      name: 'Lease <script>alert(1)</script> & "terms"',
      recipients: [
        { identifier: 'ada', agents: [{ info: { name: 'Ada <b>Lovelace</b>', email: 'ada@example.com', locale: 'en-US' } }] },
        { identifier: 'ayse', agents: [{ info: { name: 'Ayşe Yılmaz', email: 'ayse@example.com', locale: 'tr-TR' } }] },
        { identifier: 'nolocale', agents: [{ info: { name: 'No Locale', email: 'nolocale@example.com' } }] },
      ],
    });
    await send(team, built.envelopeId);
    expect(await workerFor(team).drain()).toBe(3);

    const [ada] = mailsTo('ada@example.com');
    expect(mailsTo('ada@example.com')).toHaveLength(1);
    expect(ada!.rcptTo).toEqual(['ada@example.com']);
    expect(ada!.mail.to).toMatchObject({ value: [{ address: 'ada@example.com', name: 'Ada <b>Lovelace</b>' }] });
    expect(ada!.mail.subject).toBe('Please sign: Lease <script>alert(1)</script> & "terms"');
    expect(ada!.mail.headers.get('content-language')).toBe('en-US');
    expect(ada!.mail.text).toContain('Hello Ada <b>Lovelace</b>,');
    // Every user value is escaped in the HTML part.
    expect(ada!.mail.html).not.toContain('<script>');
    expect(ada!.mail.html).not.toContain('<b>Lovelace');
    expect(ada!.mail.html).toContain('Lease &#60;script&#62;alert(1)&#60;/script&#62; &#38; &#34;terms&#34;');
    expect(ada!.mail.html).toContain('Ada &#60;b&#62;Lovelace&#60;/b&#62;');

    const [ayse] = mailsTo('ayse@example.com');
    expect(mailsTo('ayse@example.com')).toHaveLength(1);
    expect(ayse!.mail.subject).toBe('İmzanız bekleniyor: Lease <script>alert(1)</script> & "terms"');
    expect(ayse!.mail.headers.get('content-language')).toBe('tr-TR');
    expect(ayse!.mail.text).toContain('Merhaba Ayşe Yılmaz,');
    expect(ayse!.mail.text).toContain('İncele ve imzala: ');
    // No English words of the en-US template in the tr-TR mail (both parts).
    for (const part of [ayse!.mail.text ?? '', String(ayse!.mail.html)]) {
      for (const english of ['Hello', 'Please', 'Review', 'sign:', 'link', 'expect', 'until']) expect(part).not.toContain(english);
    }
    expect(ayse!.mail.html).toContain('lang="tr-TR"');

    // Without a locale: en-US.
    expect(mailsTo('nolocale@example.com')[0]!.mail.subject).toBe('Please sign: Lease <script>alert(1)</script> & "terms"');

    // Each Message-ID is the outbox row's, at the public host.
    const rows = await outboxRowsOf(built.envelopeId);
    const invitations = rows.filter((row) => row.topic === 'signing.invitation');
    const host = new URL(app.dependencies.config.publicUrl).hostname;
    expect(new Set([ada, ayse, mailsTo('nolocale@example.com')[0]].map((entry) => entry!.mail.messageId))).toEqual(new Set(invitations.map((row) => `<${row.id}@${host}>`)));
    // Delivered rows no longer hold the link, and each delivery is in the trail once.
    for (const row of invitations) {
      expect(row.processed_at).not.toBeNull();
      expect(row.payload.secret).toBeUndefined();
    }
    const sent = await auditEventsOf(built.envelopeId, 'invitation.sent');
    expect(sent.map((event) => event.details.recipientId).sort()).toEqual(Object.values(built.recipients).sort());

    // The mailed link opens a working session (the token is the one in the link).
    const token = linkIn(ayse!).split('/sign/')[1]!;
    expect(linkIn(ayse!)).toBe(`${app.dependencies.config.publicUrl}/sign/${token}`);
    const session = await signingClient(app, token)(SESSION_QUERY);
    expect(session.errors).toBeUndefined();
    expect(session.data.signingSession).toMatchObject({ envelope: { id: built.envelopeId, status: 'sent' }, recipient: { id: built.recipients.ayse }, isMyTurn: true });
  });

  it('a later order gets "your turn" once the earlier ones signed; the worker runs nothing twice', async () => {
    const team = await seedTeam(app);
    const built = await buildEnvelope(app, team.apiKey, {
      name: 'Two steps',
      recipients: [
        { identifier: 'first', order: 1, agents: [{ info: { name: 'First', email: 'first-turn@example.com' } }] },
        { identifier: 'second', order: 2, agents: [{ info: { name: 'İkinci', email: 'second-turn@example.com', locale: 'tr-TR' } }] },
      ],
    });
    await send(team, built.envelopeId);
    const worker = workerFor(team);
    expect(await worker.drain()).toBe(1);
    expect(mailsTo('second-turn@example.com')).toHaveLength(0);
    const firstToken = linkIn(mailsTo('first-turn@example.com')[0]!).split('/sign/')[1]!;
    expect((await signAndComplete(app, firstToken)).errors).toBeUndefined();
    expect(await worker.drain()).toBe(1);
    expect(await worker.drain()).toBe(0);
    const [second] = mailsTo('second-turn@example.com');
    expect(mailsTo('second-turn@example.com')).toHaveLength(1);
    expect(second!.mail.subject).toBe('İmza sırası sizde: Two steps');
    expect(second!.mail.text).toContain('Şimdi sıra sizde.');
    const session = await signingClient(app, linkIn(second!).split('/sign/')[1])(SESSION_QUERY);
    expect(session.data.signingSession).toMatchObject({ recipient: { id: built.recipients.second }, isMyTurn: true });
    expect((await auditEventsOf(built.envelopeId, 'invitation.sent')).map((event) => event.details.kind)).toEqual(['invitation', 'your_turn']);
  });

  it('an invitation whose link died before delivery (the envelope was voided) is not sent; the voided notice is, with its reason', async () => {
    const team = await seedTeam(app);
    const built = await buildEnvelope(app, team.apiKey, {
      name: 'Called off',
      recipients: [
        { identifier: 'en', agents: [{ info: { name: 'Eve', email: 'void-en@example.com' } }] },
        { identifier: 'tr', agents: [{ info: { name: 'Emre', email: 'void-tr@example.com', locale: 'tr-TR' } }] },
      ],
    });
    await send(team, built.envelopeId);
    expect((await restClient(app, team.apiKey).post(`/envelopes/${built.envelopeId}/void`, { reason: 'Wrong <party>' })).status).toBe(200);
    await workerFor(team).drain();
    expect(mailsTo('void-en@example.com').map((entry) => entry.mail.subject)).toEqual(['Cancelled: Called off']);
    expect(mailsTo('void-en@example.com')[0]!.mail.text).toContain('Reason given: Wrong <party>');
    expect(mailsTo('void-en@example.com')[0]!.mail.html).toContain('Wrong &#60;party&#62;');
    const [tr] = mailsTo('void-tr@example.com');
    expect(mailsTo('void-tr@example.com')).toHaveLength(1);
    expect(tr!.mail.subject).toBe('İptal edildi: Called off');
    expect(tr!.mail.text).toContain('Belirtilen neden: Wrong <party>');
    // The invitations were settled without a mail, and their links left the database.
    const rows = await outboxRowsOf(built.envelopeId);
    expect(rows.every((row) => row.processed_at !== null && row.payload.secret === undefined)).toBe(true);
    expect(await auditEventsOf(built.envelopeId, 'invitation.sent')).toHaveLength(0);
    expect(await auditEventsOf(built.envelopeId, 'notice.sent')).toHaveLength(2);
  });

  it('SMS and WhatsApp go to the HTTP provider with an Idempotency-Key: three 500s are retried, a 400 fails for good and visibly', async () => {
    const team = await seedTeam(app);
    let failuresLeft = 3;
    const provider = await startRecordingServer(({ json }) => (json.to === '+905550000400' ? 400 : failuresLeft-- > 0 ? 500 : 200), '/send');
    const calls = provider.received;
    try {
      const url = provider.url;
      const phone = createPhoneProvider({
        provider: { url, authorization: 'Bearer test-token', bodyTemplate: '{"to":"{{to}}","channel":"{{channel}}","message":{"text":"{{text}}"},"ref":"{{messageId}}"}' },
        dataDir: app.dataDir,
        logger,
      });
      const built = await buildEnvelope(app, team.apiKey, {
        name: 'Quote " and \\ backslash',
        recipients: [
          { identifier: 'wa', agents: [{ info: { name: 'Zeynep', phone: '+905551234567', phoneContactMethod: 'whatsapp', locale: 'tr-TR' } }] },
          { identifier: 'bad', agents: [{ info: { name: 'Bad Number', phone: '+905550000400' } }] },
        ],
      });
      await send(team, built.envelopeId);
      const worker = workerFor(team, { dependencies: { phone }, baseBackoffMs: 20, maxAttempts: 6 });
      for (let round = 0; round < 40; round += 1) {
        await worker.drain();
        const rows = await outboxRowsOf(built.envelopeId);
        if (rows.every((row) => row.processed_at !== null || row.failed_at !== null)) break;
        await new Promise((resolve) => setTimeout(resolve, 30));
      }
      const rows = await outboxRowsOf(built.envelopeId);
      const wa = rows.find((row) => row.payload.recipientId === built.recipients.wa)!;
      const bad = rows.find((row) => row.payload.recipientId === built.recipients.bad)!;
      // WhatsApp: 3 failures, then delivered; every attempt under the same Idempotency-Key.
      const waCalls = calls.filter((call) => call.json.to === '+905551234567');
      expect(waCalls).toHaveLength(4);
      expect(new Set(waCalls.map((call) => call.headers['idempotency-key']))).toEqual(new Set([`${wa.id}@${new URL(app.dependencies.config.publicUrl).hostname}`]));
      expect(waCalls[0]!.headers.authorization).toBe('Bearer test-token');
      expect(waCalls[0]!.json).toMatchObject({ channel: 'whatsapp', ref: waCalls[0]!.headers['idempotency-key'] });
      // The template's shape holds whatever the values contain (quotes, backslashes).
      expect(waCalls[0]!.json.message.text).toMatch(/^“Quote " and \\ backslash” imzanızı bekliyor: http:\/\/\S+\/sign\/sgn_/);
      expect(wa.processed_at).not.toBeNull();
      expect(wa.payload.secret).toBeUndefined();
      const [sent] = await auditEventsOf(built.envelopeId, 'invitation.sent');
      expect(sent!.details).toMatchObject({ recipientId: built.recipients.wa, channel: 'whatsapp' });
      // The link sent by WhatsApp opens the session.
      const token = /\/sign\/(sgn_[A-Za-z0-9_-]+)/.exec(waCalls[3]!.json.message.text)![1];
      expect((await signingClient(app, token)(SESSION_QUERY)).data.signingSession.recipient.id).toBe(built.recipients.wa);
      // A 400: one call, no retry, failed_at, and notification.failed in the trail.
      expect(calls.filter((call) => call.json.to === '+905550000400')).toHaveLength(1);
      expect(bad.failed_at).not.toBeNull();
      expect(bad.last_error).toContain('HTTP 400');
      const failed = await auditEventsOf(built.envelopeId, 'notification.failed');
      expect(failed).toHaveLength(1);
      // A stable reason and its words, never the worker's error class.
      const why = { reason: 'phone_provider_refused', error: 'the SMS provider answered HTTP 400' };
      expect(failed[0]!.details).toMatchObject({ topic: 'signing.invitation', kind: 'invitation', channel: 'sms', recipientId: built.recipients.bad, ...why });
      // The sender sees on the agent, on both faces, whom the envelope did not reach and why.
      const graphql = await graphqlClient(app, team.apiKey)(
        `query($id: ID!) { envelope(id: $id) { recipients { identifier agents { notification { lastDeliveredAt failure { kind channel reason error attempts failedAt } } } } } }`,
        { id: built.envelopeId },
      );
      const agentsBy = (identifier: string) => graphql.data.envelope.recipients.find((recipient: any) => recipient.identifier === identifier).agents;
      expect(agentsBy('bad')[0].notification).toMatchObject({ lastDeliveredAt: null, failure: { kind: 'invitation', channel: 'sms', ...why, attempts: 1 } });
      expect(agentsBy('wa')[0].notification).toMatchObject({ lastDeliveredAt: expect.any(String), failure: null });
      const rest = await restClient(app, team.apiKey).get(`/envelopes/${built.envelopeId}/recipients/${built.recipients.bad}`);
      expect(rest.body.payload.recipient.agents[0].notification.failure).toMatchObject({ kind: 'invitation', channel: 'sms', ...why });
      expect(JSON.stringify([graphql.data, rest.body, failed[0]!.details])).not.toMatch(/Error\b|OutboxError/);
    } finally {
      await provider.close();
    }
  });

  it('without a provider, phone messages are written under DATA_DIR/sms', async () => {
    const team = await seedTeam(app);
    const built = await buildEnvelope(app, team.apiKey, { name: 'By SMS', recipients: [{ identifier: 'sms', agents: [{ info: { name: 'Sam', phone: '+905551112233' } }] }] });
    await send(team, built.envelopeId);
    expect(await workerFor(team).drain()).toBe(1);
    const [row] = await outboxRowsOf(built.envelopeId);
    const file = path.join(app.dataDir, 'sms', `${row!.id}_${new URL(app.dependencies.config.publicUrl).hostname}.json`);
    expect(JSON.parse(fs.readFileSync(file, 'utf8'))).toMatchObject({ to: '+905551112233', channel: 'sms', text: expect.stringMatching(/^“By SMS” is waiting for your signature: /) });
  });
});

describe('crashes between claim and acknowledgement', () => {
  it('every mail arrives, each under one Message-ID, and each delivery is recorded once', async () => {
    const team = await seedTeam(app);
    const people = ['c1', 'c2', 'c3', 'c4'];
    const built = await buildEnvelope(app, team.apiKey, {
      name: 'Crash test',
      recipients: people.map((identifier) => ({ identifier, agents: [{ info: { name: identifier, email: `${identifier}-crash@example.com` } }] })),
    });
    await send(team, built.envelopeId);
    const real = mainJobHandlers(workerDependencies(app));
    const never = new Promise<never>(() => undefined);
    // Crash point 1: claimed, the process dies before sending.
    const beforeSend = new Map([...real.keys()].map((topic) => [topic, (async () => never) as OutboxHandler]));
    // Crash point 2: sent, the process dies before acknowledging.
    const afterSend = new Map(
      [...real.entries()].map(([topic, handler]) => [
        topic,
        (async (message, context) => {
          await handler(message, context);
          return never;
        }) as OutboxHandler,
      ]),
    );
    // Leases of a minute that are never renewed (the process is gone).
    const crashed1 = workerFor(team, { handlers: beforeSend, leaseMs: 60_000, renewIntervalMs: 3_600_000 });
    const crashed2 = workerFor(team, { handlers: afterSend, leaseMs: 60_000, renewIntervalMs: 3_600_000 });
    const leased = async () =>
      Number(
        (
          await app.orm.em
            .fork()
            .execute<{ count: string }[]>(`select count(*) as count from outbox_message where payload ->> 'envelopeId' = ? and locked_until is not null and processed_at is null`, [
              built.envelopeId,
            ])
        )[0]!.count,
      );
    void crashed1.drain(2);
    await eventually(async () => (await leased()) === 2, { what: "the first crashed worker's two claims" });
    void crashed2.drain(2);
    // Both crashed workers hold two claims each; wait for the second's sends to arrive.
    await eventually(() => received.filter((entry) => entry.mail.subject === 'Please sign: Crash test').length >= 2, { what: "the second crashed worker's two sends" });
    expect(received.filter((entry) => entry.mail.subject === 'Please sign: Crash test')).toHaveLength(2);
    expect(await leased()).toBe(4);

    // A healthy worker (a restarted instance) finds the four still leased; once its clock is past
    // the leases (moved on, however long this machine took so far), it takes the four again.
    const restartedClock = createClock();
    expect(await workerFor(team, { clock: restartedClock }).drain()).toBe(0);
    restartedClock.advance(61);
    expect(await workerFor(team, { clock: restartedClock }).drain()).toBe(4);
    expect(await workerFor(team, { clock: restartedClock }).drain()).toBe(0);

    const arrived = received.filter((entry) => entry.mail.subject === 'Please sign: Crash test');
    // Every person got the invitation; the two sent before the crash were sent again under the
    // same Message-ID (6 transmissions, 4 distinct messages), so a receiver keeps one of each.
    const byId = new Map<string, Received[]>();
    for (const entry of arrived) byId.set(entry.mail.messageId!, [...(byId.get(entry.mail.messageId!) ?? []), entry]);
    expect(byId.size).toBe(4);
    expect(arrived).toHaveLength(6);
    for (const identifier of people) {
      const ids = new Set(mailsTo(`${identifier}-crash@example.com`).map((entry) => entry.mail.messageId));
      expect(ids.size).toBe(1);
    }
    // One `invitation.sent` per invitation, whatever ran twice.
    expect(await auditEventsOf(built.envelopeId, 'invitation.sent')).toHaveLength(4);
    const rows = await outboxRowsOf(built.envelopeId);
    expect(rows.every((row) => row.processed_at !== null && row.payload.secret === undefined)).toBe(true);
  });
});

describe('final copies and hand-overs', () => {
  /** Runs the worker until nothing is due (sealing, then the completion mails it queues). */
  async function deliverAll(team: SeededTeam, options: WorkerOptions = {}) {
    const worker = workerFor(team, options);
    while ((await worker.drain()) > 0);
  }

  async function sealedSha256Of(envelopeId: string): Promise<string[]> {
    const rows = await app.orm.em.fork().execute<{ sealed_sha256: string }[]>('select sealed_sha256 from document where envelope_id = ? order by "order", id', [envelopeId]);
    return rows.map((row) => row.sealed_sha256);
  }

  it('once sealed, every signer and viewer gets the final copy once, in their locale, with the sealed PDF attached', async () => {
    const team = await seedTeam(app);
    const built = await buildEnvelope(app, team.apiKey, {
      name: 'Lease <2026>',
      recipients: [
        { identifier: 'tenant', agents: [{ info: { name: 'Tess', email: 'final-tenant@example.com' } }] },
        { identifier: 'watcher', type: 'viewer', agents: [{ info: { name: 'Vedat', email: 'final-viewer@example.com', locale: 'tr-TR' } }] },
      ],
    });
    await send(team, built.envelopeId);
    const token = await tokenFor(app, built.envelopeId, built.recipients.tenant!);
    await deliverAll(team);
    expect((await signAndComplete(app, token)).errors).toBeUndefined();
    await deliverAll(team);
    await deliverAll(team);

    const [sealed] = await sealedSha256Of(built.envelopeId);
    expect(sealed).toMatch(/^[0-9a-f]{64}$/);
    const tenant = mailsTo('final-tenant@example.com').filter((entry) => entry.mail.subject?.startsWith('Completed'));
    expect(tenant.map((entry) => entry.mail.subject)).toEqual(['Completed: Lease <2026>']);
    expect(tenant[0]!.mail.text).toContain('The signed documents are attached to this message.');
    expect(tenant[0]!.mail.html).toContain('Lease &#60;2026&#62;');
    const [attachment] = tenant[0]!.mail.attachments;
    expect(tenant[0]!.mail.attachments).toHaveLength(1);
    expect(attachment!.contentType).toBe('application/pdf');
    // The attachment is the sealed document itself, byte for byte.
    expect(createHash('sha256').update(attachment!.content).digest('hex')).toBe(sealed);

    // The mail's link (this person's own; the signing link died at the closing) downloads the same sealed PDF.
    const link = /https?:\/\/\S+\/api\/v1\/key\/final-copy\/[A-Za-z0-9._-]+/.exec(tenant[0]!.mail.text ?? '')?.[0];
    expect(link, tenant[0]!.mail.text).toBeDefined();
    expect(tenant[0]!.mail.text).toMatch(/This download link works until /);
    const downloaded = await fetch(`${app.url}${new URL(link!).pathname}`);
    expect(downloaded.status).toBe(200);
    expect(
      createHash('sha256')
        .update(Buffer.from(await downloaded.arrayBuffer()))
        .digest('hex'),
    ).toBe(sealed);

    const viewer = mailsTo('final-viewer@example.com');
    expect(viewer.map((entry) => entry.mail.subject)).toEqual(['Tamamlandı: Lease <2026>']);
    expect(viewer[0]!.mail.text).toContain('İmzalı belgeler bu iletinin ekinde yer alıyor.');
    expect(viewer[0]!.mail.text).not.toMatch(/signed|attached/i);
    expect(viewer[0]!.mail.attachments).toHaveLength(1);

    const notices = (await auditEventsOf(built.envelopeId, 'notice.sent')).filter((event) => event.details.kind === 'completed');
    expect(notices.map((event) => event.details.attachedDocuments)).toEqual([1, 1]);
  });

  it('sealed documents over the attachment limit are not attached', async () => {
    const team = await seedTeam(app);
    const built = await buildEnvelope(app, team.apiKey, {
      name: 'Too big to attach',
      recipients: [{ identifier: 'only', agents: [{ info: { name: 'Olga', email: 'final-big@example.com' } }] }],
    });
    await send(team, built.envelopeId);
    const token = await tokenFor(app, built.envelopeId, built.recipients.only!);
    const smallAttachments = { dependencies: { config: { ...app.dependencies.config, mailAttachmentLimitBytes: 100 } } };
    await deliverAll(team, smallAttachments);
    expect((await signAndComplete(app, token)).errors).toBeUndefined();
    await deliverAll(team, smallAttachments);
    const [final] = mailsTo('final-big@example.com').filter((entry) => entry.mail.subject === 'Completed: Too big to attach');
    expect(final!.mail.attachments).toHaveLength(0);
    expect(final!.mail.text).not.toContain('attached');
    expect(final!.mail.text).toMatch(/Download the signed copy: https?:\/\/\S+\/api\/v1\/key\/final-copy\//);
  });

  it('a delegation tells the delegator whom the role went to, and invites the new person in its name', async () => {
    const team = await seedTeam(app);
    const built = await buildEnvelope(app, team.apiKey, {
      name: 'Hand it on',
      recipients: [{ identifier: 'boss', type: 'delegator', agents: [{ info: { name: 'Berk', email: 'handover-boss@example.com', locale: 'tr-TR' } }] }],
    });
    await send(team, built.envelopeId);
    const token = await tokenFor(app, built.envelopeId, built.recipients.boss!);
    await deliverAll(team);
    const delegated = await signingClient(app, token)(DELEGATE_MUTATION, { person: { name: 'Deniz <Assistant>', email: 'handover-deputy@example.com' } });
    expect(delegated.errors).toBeUndefined();
    await deliverAll(team);

    const boss = mailsTo('handover-boss@example.com').map((entry) => entry.mail);
    expect(boss.map((mail) => mail.subject)).toEqual(['İmzanız bekleniyor: Hand it on', 'Devredildi: Hand it on']);
    expect(boss[1]!.text).toContain('“Hand it on” belgesini Deniz <Assistant> devrettiniz');
    expect(boss[1]!.html).toContain('Deniz &#60;Assistant&#62;');
    const [deputy] = mailsTo('handover-deputy@example.com');
    expect(mailsTo('handover-deputy@example.com')).toHaveLength(1);
    expect(deputy!.mail.subject).toBe('Please sign: Hand it on');
    expect(deputy!.mail.text).toContain('Berk asked you to review and sign “Hand it on” in their place.');
    const session = await signingClient(app, linkIn(deputy!).split('/sign/')[1])(SESSION_QUERY);
    expect(session.data.signingSession.recipient.id).toBe(built.recipients.boss);
    expect((await auditEventsOf(built.envelopeId, 'invitation.sent')).map((event) => event.details.kind)).toEqual(['invitation', 'delegated']);
  });
});

describe('a failing mail server', () => {
  it('deferrals are retried until accepted, a bounce fails at once and shows on its agent, and neither holds up finalization or sealing', async () => {
    let deferralsLeft = 3;
    const deferred: string[] = [];
    const failing = await startSmtpServer({
      refuse(address) {
        if (address === 'smtp-bounce@example.com') return { code: 550, message: 'No such user here' };
        if (address === 'smtp-deferred@example.com' && deferralsLeft > 0) {
          deferralsLeft -= 1;
          deferred.push(address);
          return { code: 451, message: 'Try again later' };
        }
        return null;
      },
    });
    try {
      const team = await seedTeam(app);
      const mailer = createMailer({ smtpUrl: failing.url, from: 'no-reply@localhost', dataDir: app.dataDir, logger });
      const clock = createClock();
      const built = await buildEnvelope(app, team.apiKey, {
        name: 'Despite the mail server',
        recipients: [
          { identifier: 'signer', agents: [{ info: { name: 'Deferred', email: 'smtp-deferred@example.com' } }] },
          { identifier: 'watcher', type: 'viewer', agents: [{ info: { name: 'Bounced', email: 'smtp-bounce@example.com' } }] },
        ],
      });
      await send(team, built.envelopeId);
      const token = await tokenFor(app, built.envelopeId, built.recipients.signer!);
      // Backoff of a minute or more: nothing failed is retried within this part of the test.
      const worker = workerFor(team, { dependencies: { mailer }, clock, baseBackoffMs: 60_000 });
      expect(await worker.drain()).toBe(1);
      expect(deferred).toHaveLength(1);

      // The signer signs (the link reached them some other way); the envelope finalizes and is
      // sealed while its invitation is still waiting to be retried.
      expect((await signAndComplete(app, token)).errors).toBeUndefined();
      while ((await worker.drain()) > 0);
      const [envelope] = await app.orm.em.fork().execute<{ status: string }[]>('select status from envelope where id = ?', [built.envelopeId]);
      expect(envelope!.status).toBe('finalized');
      const [document] = await app.orm.em.fork().execute<{ sealed_sha256: string | null }[]>('select sealed_sha256 from document where envelope_id = ?', [built.envelopeId]);
      expect(document!.sealed_sha256).not.toBeNull();

      // The bounce failed at once (one try), visibly; the deferred mails wait for their retry.
      const rows = await outboxRowsOf(built.envelopeId);
      const bounce = rows.find((row) => row.payload.to?.email === 'smtp-bounce@example.com')!;
      expect(bounce.failed_at).not.toBeNull();
      expect(bounce.last_error).toMatch(/550/);
      const graphql = await graphqlClient(app, team.apiKey)(
        `query($id: ID!) { envelope(id: $id) { recipients { identifier agents { notification { failure { kind channel reason error attempts } } } } } }`,
        {
          id: built.envelopeId,
        },
      );
      const watcher = graphql.data.envelope.recipients.find((recipient: any) => recipient.identifier === 'watcher');
      // The reply's codes in words; its free text (which may name the relay) stays in the log and the row.
      expect(watcher.agents[0].notification.failure).toMatchObject({
        kind: 'completed',
        channel: 'email',
        attempts: 1,
        reason: 'mail_refused',
        error: expect.stringMatching(/^the mail server refused the message \(SMTP 550\b/),
      });
      expect(watcher.agents[0].notification.failure.error).not.toMatch(/No such user here|Error/);
      expect(bounce.last_error).toMatch(/^mail_refused: PermanentOutboxError: .*550 No such user here/);
      const pending = rows.filter((row) => row.payload.to?.email === 'smtp-deferred@example.com');
      expect(pending.map((row) => [row.topic, row.processed_at, row.failed_at])).toEqual([
        ['signing.invitation', null, null],
        ['envelope.completed.notice', null, null],
      ]);
      expect(pending.every((row) => /451/.test(row.last_error ?? ''))).toBe(true);

      // Hours later the server accepts again: the final copy arrives once; the invitation of a
      // closed envelope is settled without a mail.
      clock.advance(2 * 3600);
      while ((await worker.drain()) > 0) clock.advance(2 * 3600);
      expect(deferred).toHaveLength(3);
      expect(failing.to('smtp-deferred@example.com').map((entry) => entry.mail.subject)).toEqual(['Completed: Despite the mail server']);
      expect(failing.to('smtp-bounce@example.com')).toHaveLength(0);
      const settled = await outboxRowsOf(built.envelopeId);
      expect(settled.filter((row) => row.payload.to?.email === 'smtp-deferred@example.com').every((row) => row.processed_at !== null)).toBe(true);
    } finally {
      await failing.close();
    }
  });
});

describe('the mailer', () => {
  it('never lets a value write a header: line breaks in the name, subject or Message-ID stay on their line', async () => {
    await mailerFor().send({
      messageId: 'inject@example.org\r\nBcc: victim@example.com',
      to: { name: 'Mallory\r\nBcc: victim@example.com', address: 'mallory@example.com' },
      subject: 'Hi\r\nBcc: victim@example.com\r\nX-Evil: 1',
      text: 'body',
      html: '<p>body</p>',
      language: 'en-US',
    });
    const [entry] = mailsTo('mallory@example.com');
    expect(entry!.rcptTo).toEqual(['mallory@example.com']);
    expect(entry!.mail.bcc).toBeUndefined();
    expect(entry!.mail.headers.has('x-evil')).toBe(false);
    expect(received.some((other) => other.rcptTo.includes('victim@example.com'))).toBe(false);
    expect(entry!.raw).not.toMatch(/^Bcc:/im);
  });

  it('without SMTP_URL writes one .eml file per Message-ID under DATA_DIR/mail (sending again replaces it)', async () => {
    const dataDir = fs.mkdtempSync(path.join(app.dataDir, 'files-'));
    const mailer = createMailer({ smtpUrl: undefined, from: 'no-reply@localhost', dataDir, logger });
    const message = {
      messageId: 'row-1@localhost',
      to: { name: 'Ada', address: 'ada@example.com' },
      subject: 'Please sign: X',
      text: 'text part',
      html: '<p>html part</p>',
      language: 'en-US',
    };
    await mailer.send(message);
    await mailer.send(message);
    const files = fs.readdirSync(path.join(dataDir, 'mail'));
    expect(files).toEqual(['row-1_localhost.eml']);
    const parsed = await simpleParser(fs.readFileSync(path.join(dataDir, 'mail', files[0]!)));
    expect(parsed).toMatchObject({ messageId: '<row-1@localhost>', subject: 'Please sign: X', text: 'text part' });
    expect(parsed.to).toMatchObject({ value: [{ address: 'ada@example.com' }] });
  });
});
