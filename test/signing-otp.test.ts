import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { pruneDeliveryHistory } from '../src/domain/notification/delivery-history.ts';
import { queueDueReminders } from '../src/domain/signing/reminder.service.ts';
import { firstErrorName, restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { type RecordingServer, startRecordingServer } from './helpers/recording-server.ts';
import { buildEnvelope, DECLINE_MUTATION, DELEGATE_MUTATION, HOSTED_MUTATION, SUBMIT_MUTATION, signingClient, tokenFor, typedSignature } from './helpers/signing.ts';
import { mainWorkerFor } from './helpers/workers.ts';

/*
 * One-time passcodes for signers with a phone, through GraphQL with X-Signing-Token, delivered
 * by the outbox worker to a local HTTP SMS provider that records what arrives.
 */

const PER_DAY = 6;
let app: TestApp;
let provider: RecordingServer;

/** Every text the SMS provider received, oldest first. */
function texts(): { to: string; channel: string; text: string; messageId: string }[] {
  return provider.received.map((request) => request.json);
}

beforeAll(async () => {
  // A number the provider refuses (a permanent failure).
  provider = await startRecordingServer(({ json }) => (json.to === '+905550000400' ? 400 : 200), '/send');
  app = await startTestApp({ env: { SMS_PROVIDER_URL: provider.url, PHONE_MESSAGES_PER_DAY: String(PER_DAY) } });
});
afterAll(async () => {
  await app.close();
  await provider.close();
});

/** The main worker as main.ts runs it (the app's config and clock), kept to one team's rows. */
function workerFor(team: SeededTeam) {
  return mainWorkerFor(app, team.teamId);
}

const OTP_STATUS = `otp { required verified verifiedUntil maskedPhone channel resendAvailableAt resendInSeconds }`;
const SESSION = `{ signingSession { recipient { id completedAt } ${OTP_STATUS} fields { id } } }`;
const REQUEST = `mutation { requestSigningOtp { channel maskedPhone expiresAt resendAvailableAt } }`;
const VERIFY = `mutation($code: String!) { verifySigningOtp(code: $code) { recipient { id } ${OTP_STATUS} } }`;

async function auditEvents(envelopeId: string, type: string) {
  return app.orm.em
    .fork()
    .execute<{ details: any; ip: string | null; user_agent: string | null }[]>('select details, ip, user_agent from audit_event where envelope_id = ? and type = ? order by seq', [
      envelopeId,
      type,
    ]);
}

/** The texts with a code that reached a phone (invitations, delivered at the same time, left out), oldest first. */
function codeTextsTo(phone: string) {
  return texts().filter((text) => text.to === phone && /^\d{6}\b/.test(text.text));
}

function codesTo(phone: string): string[] {
  return codeTextsTo(phone).map((text) => text.text.slice(0, 6));
}

/** A sent envelope with one signer; its link's token (read before delivery drops it). */
async function sentTo(team: SeededTeam, person: Record<string, unknown>, name = 'Loan agreement') {
  const built = await buildEnvelope(app, team.apiKey, { name, recipients: [{ identifier: 'signer', agents: [{ info: person }] }] });
  expect((await restClient(app, team.apiKey).put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
  const token = await tokenFor(app, built.envelopeId, built.recipients.signer!);
  return { ...built, token, client: signingClient(app, token) };
}

async function signWith(client: ReturnType<typeof signingClient>) {
  const session = await client(SESSION);
  return client(SUBMIT_MUTATION, { values: session.data.signingSession.fields.map((field: any) => ({ fieldId: field.id, value: typedSignature })), complete: true });
}

const DAY_MS = 24 * 60 * 60 * 1000;

describe('one-time passcodes', () => {
  it('are not required of a signer without a phone', async () => {
    const team = await seedTeam(app);
    const { client } = await sentTo(team, { name: 'Mail Only', email: 'mail-only@example.com' });
    const session = await client(SESSION);
    expect(session.data.signingSession.otp).toEqual({ required: false, verified: false, verifiedUntil: null, maskedPhone: null, channel: null, resendAvailableAt: null, resendInSeconds: 0 });
    expect(firstErrorName(await client(REQUEST))).toBe('Signing.OtpNotRequired');
    expect(firstErrorName(await client(VERIFY, { code: '123456' }))).toBe('Signing.OtpNotRequired');
    expect((await signWith(client)).errors).toBeUndefined();
  });

  it('gate submitting and declining until a code sent to the phone (in the person’s locale and channel) is entered; the code never stays in the database', async () => {
    const team = await seedTeam(app);
    const phone = '+905551230012';
    const { client, envelopeId, recipients } = await sentTo(team, { name: 'Zeynep', phone, phoneContactMethod: 'whatsapp', locale: 'tr-TR' }, 'Kira sözleşmesi');
    const before = await client(SESSION);
    expect(before.data.signingSession.otp).toMatchObject({ required: true, verified: false, maskedPhone: '+90••••••••12', channel: 'whatsapp' });
    // Refused by name, and nothing changed.
    expect(firstErrorName(await signWith(client))).toBe('Signing.OtpRequired');
    expect(firstErrorName(await client(DECLINE_MUTATION, { reason: 'no' }))).toBe('Signing.OtpRequired');
    expect(firstErrorName(await client(VERIFY, { code: '000000' }))).toBe('Signing.OtpNotRequested');

    const requested = await client(REQUEST);
    expect(requested.errors).toBeUndefined();
    expect(requested.data.requestSigningOtp).toMatchObject({ channel: 'whatsapp', maskedPhone: '+90••••••••12' });
    expect(JSON.stringify(requested)).not.toMatch(/\b\d{6}\b/);
    expect(await workerFor(team).drain()).toBe(2);
    // The invitation and the code: by WhatsApp, in Turkish.
    expect(texts().filter((text) => text.to === phone)).toHaveLength(2);
    const sent = codeTextsTo(phone);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({
      channel: 'whatsapp',
      text: expect.stringMatching(/^\d{6}: “Kira sözleşmesi” belgesini imzalamak için kodunuz\. 5 dakika geçerlidir\. Kimseyle paylaşmayın\.$/),
    });
    const code = codesTo(phone)[0]!;
    expect(code).toMatch(/^\d{6}$/);

    // Neither the outbox row (after delivery) nor the code's row keeps the code.
    const rows = await app.orm.em.fork().execute<{ payload: any }[]>(`select payload from outbox_message where topic = 'signing.otp' and payload ->> 'envelopeId' = ?`, [envelopeId]);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.payload.secret).toBeUndefined();
    const otpRows = await app.orm.em
      .fork()
      .execute<Record<string, unknown>[]>(`select o.* from signing_otp o join recipient r on r.id = ? join signing_token t on t.id = o.token_id and t.recipient_id = r.id`, [
        recipients.signer,
      ]);
    expect(otpRows).toHaveLength(1);
    expect(JSON.stringify(otpRows)).not.toContain(code);
    expect(JSON.stringify(await app.orm.em.fork().execute(`select * from audit_event where envelope_id = ?`, [envelopeId]))).not.toContain(code);

    const wrong = code === '999999' ? '999998' : '999999';
    const refused = await client(VERIFY, { code: wrong });
    expect(firstErrorName(refused)).toBe('Signing.OtpInvalid');
    expect(refused.errors![0].extensions.context.attemptsLeft).toBe(4);
    expect(firstErrorName(await client(VERIFY, { code: '12ab' }))).toBe('Request.Invalid');

    const verified = await client(VERIFY, { code: ` ${code.slice(0, 3)} ${code.slice(3)} ` });
    expect(verified.errors).toBeUndefined();
    expect(verified.data.verifySigningOtp.otp).toMatchObject({ required: true, verified: true, verifiedUntil: expect.any(String) });
    expect((await client(SESSION)).data.signingSession.otp.verified).toBe(true);
    expect((await signWith(client)).errors).toBeUndefined();

    // The trail: requested, failed (the wrong code), verified, with the request's IP and user agent; sent by the worker.
    const [requestedEvent] = await auditEvents(envelopeId, 'otp.requested');
    expect(requestedEvent!.details).toMatchObject({ recipientId: recipients.signer, channel: 'whatsapp', phone: '+90••••••••12' });
    expect(requestedEvent!.user_agent).toBe('signing-test');
    expect(requestedEvent!.ip).toBeTruthy();
    expect((await auditEvents(envelopeId, 'otp.failed')).map((event) => event.details.reason)).toEqual(['wrong_code']);
    const [verifiedEvent] = await auditEvents(envelopeId, 'otp.verified');
    expect(verifiedEvent!.details).toMatchObject({ recipientId: recipients.signer, attempt: 2 });
    expect(verifiedEvent!.user_agent).toBe('signing-test');
    expect(await auditEvents(envelopeId, 'otp.sent')).toHaveLength(1);
  });

  it('a used code never verifies again: entered again it is Signing.OtpAlreadyUsed, alone or racing itself, and takes no attempt', async () => {
    const team = await seedTeam(app);
    const phone = '+905551230061';
    const { client, envelopeId } = await sentTo(team, { name: 'Twice', phone });
    expect((await client(REQUEST)).errors).toBeUndefined();
    await workerFor(team).drain();
    const code = codesTo(phone)[0]!;
    // The same right code three times at once: one verifies, the others are told it was used.
    const raced = await Promise.all([client(VERIFY, { code }), client(VERIFY, { code }), client(VERIFY, { code })]);
    expect(raced.filter((answer) => answer.errors === undefined)).toHaveLength(1);
    expect(raced.map(firstErrorName).filter((name) => name !== undefined)).toEqual(['Signing.OtpAlreadyUsed', 'Signing.OtpAlreadyUsed']);
    const again = await client(VERIFY, { code });
    expect(firstErrorName(again)).toBe('Signing.OtpAlreadyUsed');
    expect(again.data?.verifySigningOtp ?? null).toBeNull();
    // After the verification lapses, the used code still does not bring it back.
    app.dependencies.clock.advance(61 * 60);
    expect((await client(SESSION)).data.signingSession.otp.verified).toBe(false);
    expect(firstErrorName(await client(VERIFY, { code }))).toBe('Signing.OtpAlreadyUsed');
    expect(firstErrorName(await signWith(client))).toBe('Signing.OtpRequired');
    expect(await auditEvents(envelopeId, 'otp.verified')).toHaveLength(1);
    expect((await auditEvents(envelopeId, 'otp.failed')).map((event) => event.details.reason)).toEqual(['already_used', 'already_used', 'already_used', 'already_used']);
    const [row] = await app.orm.em
      .fork()
      .execute<{ attempts: number }[]>(`select o.attempts from signing_otp o join signing_token t on t.id = o.token_id join recipient r on r.id = t.recipient_id where r.envelope_id = ?`, [
        envelopeId,
      ]);
    expect(row!.attempts).toBe(1);
  });

  it('read a code through spaces, dashes, invisible marks and fullwidth digits; malformed input is Request.Invalid and costs no attempt', async () => {
    const team = await seedTeam(app);
    const phone = '+905551230062';
    const { client } = await sentTo(team, { name: 'Typist', phone });
    expect((await client(REQUEST)).errors).toBeUndefined();
    await workerFor(team).drain();
    const code = codesTo(phone)[0]!;
    for (const malformed of ['12345', '1234567', '12ab56', '12.34.56', '', ' ', '١٢٣٤٥٦', '1'.repeat(200)]) {
      const refused = await client(VERIFY, { code: malformed });
      expect(firstErrorName(refused), JSON.stringify(malformed)).toBe('Request.Invalid');
    }
    // A wrong code written with separators is read as six digits and counted: the first attempt.
    const wrong = code === '999999' ? '999998' : '999999';
    const counted = await client(VERIFY, { code: ` ${wrong.slice(0, 3)} ${wrong.slice(3)} ` });
    expect(firstErrorName(counted)).toBe('Signing.OtpInvalid');
    expect(counted.errors![0].extensions.context.attemptsLeft).toBe(4);
    // The right code as a phone or a keyboard may paste it.
    const fullwidth = [...code].map((digit) => String.fromCharCode(0xff10 + Number(digit))).join('');
    const pasted = `\u200e${fullwidth.slice(0, 3)}\u2011${code.slice(3, 5)}\u3000${code.slice(5)}\n`;
    const verified = await client(VERIFY, { code: pasted });
    expect(verified.errors).toBeUndefined();
    expect(verified.data.verifySigningOtp.otp.verified).toBe(true);
  });

  it('an SMS signer in en-US gets the English text; a code expires after 5 minutes', async () => {
    const team = await seedTeam(app);
    const phone = '+14155550134';
    const { client, envelopeId } = await sentTo(team, { name: 'Sam', phone });
    expect((await client(REQUEST)).data.requestSigningOtp.channel).toBe('sms');
    await workerFor(team).drain();
    const sent = codeTextsTo(phone);
    expect(sent[0]).toMatchObject({ channel: 'sms', text: expect.stringMatching(/^\d{6} is your code to sign “Loan agreement”\. It expires in 5 minutes\./) });
    const code = codesTo(phone)[0]!;
    // The origin-bound last line phones use to offer the code on the page's own site.
    expect(sent[0]!.text.endsWith(`\n\n@${new URL(app.dependencies.config.publicUrl).hostname} #${code}`)).toBe(true);
    app.dependencies.clock.advance(5 * 60 + 1);
    const expired = await client(VERIFY, { code });
    expect(firstErrorName(expired)).toBe('Signing.OtpExpired');
    expect((await auditEvents(envelopeId, 'otp.failed')).map((event) => event.details.reason)).toEqual(['expired']);
    // A new code works; the old one is worth nothing any more.
    expect((await client(REQUEST)).errors).toBeUndefined();
    await workerFor(team).drain();
    const fresh = codesTo(phone)[1]!;
    if (fresh !== code) expect(firstErrorName(await client(VERIFY, { code }))).toBe('Signing.OtpInvalid');
    expect((await client(VERIFY, { code: fresh })).errors).toBeUndefined();
  });

  it('take at most 5 attempts per code, even with 12 guesses at once', async () => {
    const team = await seedTeam(app);
    const phone = '+905551230099';
    const { client, envelopeId } = await sentTo(team, { name: 'Racer', phone });
    expect((await client(REQUEST)).errors).toBeUndefined();
    await workerFor(team).drain();
    const code = codesTo(phone)[0]!;
    const wrong = Array.from({ length: 12 }, (_, index) => String((Number(code) + 1 + index) % 1_000_000).padStart(6, '0'));
    const answers = await Promise.all(wrong.map((guess) => client(VERIFY, { code: guess })));
    const names = answers.map(firstErrorName);
    expect(names.filter((name) => name === 'Signing.OtpInvalid')).toHaveLength(5);
    expect(names.filter((name) => name === 'Signing.OtpAttemptsExhausted')).toHaveLength(7);
    // The right code comes too late.
    expect(firstErrorName(await client(VERIFY, { code }))).toBe('Signing.OtpAttemptsExhausted');
    const [row] = await app.orm.em
      .fork()
      .execute<{ attempts: number; verified_at: Date | null }[]>(
        `select o.attempts, o.verified_at from signing_otp o join signing_token t on t.id = o.token_id join recipient r on r.id = t.recipient_id where r.envelope_id = ?`,
        [envelopeId],
      );
    expect(row).toEqual({ attempts: 5, verified_at: null });
    expect(await auditEvents(envelopeId, 'otp.verified')).toHaveLength(0);
    expect(firstErrorName(await signWith(client))).toBe('Signing.OtpRequired');
  });

  it('are sent at most once per 30 s and 5 times per hour per person, refused by name with the wait', async () => {
    const team = await seedTeam(app);
    const { client } = await sentTo(team, { name: 'Impatient', phone: '+905551230055' });
    expect((await client(REQUEST)).errors).toBeUndefined();
    const tooSoon = await client(REQUEST);
    expect(firstErrorName(tooSoon)).toBe('Signing.OtpRateLimited');
    expect(tooSoon.errors![0].extensions.context).toMatchObject({ limit: 'interval', retryAfterSeconds: expect.any(Number) });
    expect(tooSoon.errors![0].extensions.context.retryAfterSeconds).toBeGreaterThan(25);
    expect(tooSoon.errors![0].extensions.context.retryAfterSeconds).toBeLessThanOrEqual(30);
    const session = await client(SESSION);
    expect(Date.parse(session.data.signingSession.otp.resendAvailableAt)).toBeGreaterThan(app.dependencies.clock.now().getTime());
    expect(session.data.signingSession.otp.resendInSeconds).toBeGreaterThan(25);
    expect(session.data.signingSession.otp.resendInSeconds).toBeLessThanOrEqual(30);
    for (let sent = 1; sent < 5; sent += 1) {
      app.dependencies.clock.advance(31);
      expect((await client(REQUEST)).errors).toBeUndefined();
    }
    app.dependencies.clock.advance(31);
    const hourly = await client(REQUEST);
    expect(firstErrorName(hourly)).toBe('Signing.OtpRateLimited');
    expect(hourly.errors![0].extensions.context.limit).toBe('hour');
    expect(hourly.errors![0].extensions.context.retryAfterSeconds).toBeGreaterThan(3000);
  });

  it('gate delegating and a host’s in-person session; the in-person signer’s own link needs no code', async () => {
    const team = await seedTeam(app);
    const built = await buildEnvelope(app, team.apiKey, {
      name: 'Hosted',
      recipients: [
        { identifier: 'host', type: 'host', agents: [{ info: { name: 'Hana Host', phone: '+905551230031' } }] },
        { identifier: 'guest', type: 'in_person_signer', hostedBy: 'host', agents: [{ info: { name: 'Gül Guest', phone: '+905551230032' } }] },
        { identifier: 'delegator', type: 'delegator', agents: [{ info: { name: 'Deniz', phone: '+905551230033' } }] },
      ],
    });
    expect((await restClient(app, team.apiKey).put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
    const delegator = signingClient(app, await tokenFor(app, built.envelopeId, built.recipients.delegator!));
    expect(firstErrorName(await delegator(DELEGATE_MUTATION, { person: { name: 'Other', email: 'other@example.com' } }))).toBe('Signing.OtpRequired');

    const host = signingClient(app, await tokenFor(app, built.envelopeId, built.recipients.host!));
    expect((await host(SESSION)).data.signingSession.otp).toMatchObject({ required: true, verified: false });
    expect(firstErrorName(await host(HOSTED_MUTATION, { recipientId: built.recipients.guest }))).toBe('Signing.OtpRequired');
    expect((await host(REQUEST)).errors).toBeUndefined();
    await workerFor(team).drain();
    expect((await host(VERIFY, { code: codesTo('+905551230031')[0]! })).errors).toBeUndefined();
    const started = await host(HOSTED_MUTATION, { recipientId: built.recipients.guest });
    expect(started.errors).toBeUndefined();
    const guest = signingClient(app, started.data.startHostedSigning.token);
    expect((await guest(SESSION)).data.signingSession.otp.required).toBe(false);
    expect(firstErrorName(await guest(REQUEST))).toBe('Signing.OtpNotRequired');
    expect((await signWith(guest)).errors).toBeUndefined();
  });

  it('a code that cannot be delivered fails visibly and leaves no code behind', async () => {
    const team = await seedTeam(app);
    const { client, envelopeId } = await sentTo(team, { name: 'Unreachable', phone: '+905550000400' });
    expect((await client(REQUEST)).errors).toBeUndefined();
    await workerFor(team).drain();
    const [row] = await app.orm.em
      .fork()
      .execute<{ payload: any; failed_at: Date | null }[]>(`select payload, failed_at from outbox_message where topic = 'signing.otp' and payload ->> 'envelopeId' = ?`, [envelopeId]);
    expect(row!.failed_at).not.toBeNull();
    expect(row!.payload.secret).toBeUndefined();
    expect((await auditEvents(envelopeId, 'notification.failed')).map((event) => event.details.topic).sort()).toEqual(['signing.invitation', 'signing.otp']);
  });

  it('PHONE_MESSAGES_PER_DAY: 10 by default, 0 turns the cap off, anything else is refused at start-up', () => {
    expect(loadConfig({}).phoneMessagesPerDay).toBe(10);
    expect(loadConfig({ PHONE_MESSAGES_PER_DAY: '0' }).phoneMessagesPerDay).toBe(0);
    expect(() => loadConfig({ PHONE_MESSAGES_PER_DAY: '-1' })).toThrow(/^Invalid configuration: PHONE_MESSAGES_PER_DAY must be an integer from 0 \(no cap\) to 1000/);
    expect(() => loadConfig({ PHONE_MESSAGES_PER_DAY: 'many' })).toThrow(/PHONE_MESSAGES_PER_DAY/);
  });

  it(`cap phone messages per person at ${PER_DAY} a day across invitations, codes and reminders: codes are refused by name, reminders skipped and recorded`, async () => {
    const team = await seedTeam(app);
    const phone = '+905551230077';
    const built = await buildEnvelope(app, team.apiKey, {
      name: 'Capped',
      reminders: { reminderInitialDelayDays: 1 },
      recipients: [{ identifier: 'signer', agents: [{ info: { name: 'Capped', phone } }] }],
    });
    expect((await restClient(app, team.apiKey).put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
    const client = signingClient(app, await tokenFor(app, built.envelopeId, built.recipients.signer!));
    const worker = workerFor(team);
    const start = app.dependencies.clock.now().getTime();
    const moveTo = (seconds: number) => app.dependencies.clock.advance(seconds - (app.dependencies.clock.now().getTime() - start) / 1000);
    expect(await worker.drain()).toBe(1); // the invitation: 1 of 6
    // Three codes 22 hours later, two more at 23:55 (the hourly limit of codes is not what stops them).
    for (const at of [22 * 3600, 22 * 3600 + 31, 22 * 3600 + 62, 23 * 3600 + 55 * 60, 23 * 3600 + 55 * 60 + 31]) {
      moveTo(at);
      expect((await client(REQUEST)).errors).toBeUndefined();
      await worker.drain();
    }
    moveTo(23 * 3600 + 55 * 60 + 62);
    const capped = await client(REQUEST);
    expect(firstErrorName(capped)).toBe('Signing.PhoneMessageCapReached');
    expect(capped.errors![0].extensions.context.limit).toBe(PER_DAY);
    // The invitation leaves the 24 hours in about 4 minutes.
    expect(capped.errors![0].extensions.context.retryAfterSeconds).toBeGreaterThan(200);
    expect(capped.errors![0].extensions.context.retryAfterSeconds).toBeLessThanOrEqual(240);
    expect(texts().filter((text) => text.to === phone)).toHaveLength(6);

    // A day after the invitation: it has left the window, one more code fits, then the reminder does not.
    moveTo(24 * 3600 + 60);
    expect((await client(REQUEST)).errors).toBeUndefined();
    await queueDueReminders({ em: app.orm.em, auditKey: app.dependencies.auditKey, publicUrl: app.dependencies.config.publicUrl, clock: app.dependencies.clock, teamId: team.teamId });
    expect(await worker.drain()).toBe(2);
    const sent = texts().filter((text) => text.to === phone);
    expect(sent).toHaveLength(7);
    expect(sent.some((text) => text.text.startsWith('Reminder:'))).toBe(false);
    const [skipped] = await auditEvents(built.envelopeId, 'notification.capped');
    expect(skipped!.details).toMatchObject({ recipientId: built.recipients.signer, kind: 'reminder', channel: 'sms', limit: PER_DAY });
    // The sender sees it on the agent, like a failed delivery.
    const [agent] = await app.orm.em.fork().execute<{ notification_failure: any }[]>('select notification_failure from agent where id = ?', [skipped!.details.agentId]);
    expect(agent!.notification_failure).toMatchObject({ kind: 'reminder', channel: 'sms', error: expect.stringContaining('PHONE_MESSAGES_PER_DAY') });
    // Settled, not retried; and its link left the database.
    const [reminder] = await app.orm.em
      .fork()
      .execute<{ processed_at: Date | null; payload: any }[]>(`select processed_at, payload from outbox_message where topic = 'signing.reminder' and payload ->> 'envelopeId' = ?`, [
        built.envelopeId,
      ]);
    expect(reminder!.processed_at).not.toBeNull();
    expect(reminder!.payload.secret).toBeUndefined();
    expect(await auditEvents(built.envelopeId, 'reminder.sent')).toHaveLength(0);
  });

  it('leave their ledger rows (codes, phone messages) to the housekeeping prune once older than the retention', async () => {
    const team = await seedTeam(app);
    const phone = '+905551230099';
    const { client } = await sentTo(team, { name: 'Pruned', phone });
    expect((await client(REQUEST)).errors).toBeUndefined();
    await workerFor(team).drain();
    const now = app.dependencies.clock.now().getTime();
    const prune = (days: number) => pruneDeliveryHistory({ em: app.orm.em, now: new Date(now + days * DAY_MS), retentionDays: 30, teamId: team.teamId });
    expect(await prune(29)).toMatchObject({ phoneMessages: 0, signingOtps: 0 });
    // The invitation and the code each took a place in the person's daily allowance.
    expect(await prune(31)).toMatchObject({ phoneMessages: 2, signingOtps: 1 });
    expect(await prune(31)).toEqual({ outboxMessages: 0, webhookDeliveries: 0, phoneMessages: 0, signingOtps: 0, publicLinkVisits: 0 });
  });
});
