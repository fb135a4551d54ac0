import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queueDueReminders } from '../src/domain/signing/reminder.service.ts';
import { createClock } from '../src/shared/clock.ts';
import { signingPagePolicy } from '../src/signing-page/plugin.ts';
import { STRINGS } from '../src/signing-page/strings.js';
import { firstErrorName, graphqlClient, restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { buildEnvelope, type RecipientSpec, SESSION_QUERY, signAndComplete, signingClient, tokenFor } from './helpers/signing.ts';
import { signingLinkIn, startSmtpServer, type TestSmtpServer } from './helpers/smtp.ts';
import { createReadyTemplate } from './helpers/templates.ts';
import { mainWorkerFor } from './helpers/workers.ts';

/*
 * Embedded signing (issue 21) through the API: embedded agents are never invited, reminded or
 * told it is their turn (the SMTP server and the SMS directory receive nothing for them) while
 * their role still finalizes; one-use signing URLs on both faces (turns, tenancy, frame origins,
 * expiry on the sandbox clock, one open); the team settings document on both faces.
 * test/embedded-signing-page.test.ts drives the page and <envelope-signing> in Chromium.
 */

const ENV_ORIGIN = 'https://env.example.com';
let app: TestApp;
let smtp: TestSmtpServer;
let team: SeededTeam;
beforeAll(async () => {
  smtp = await startSmtpServer();
  app = await startTestApp({ env: { SMTP_URL: smtp.url, SANDBOX_CLOCK: 'true', SIGNING_FRAME_ANCESTORS: ENV_ORIGIN } });
  team = await seedTeam(app);
}, 60_000);
afterAll(async () => {
  await app?.close();
  await smtp?.close();
});

const embedded = (name: string, extra: Record<string, unknown> = {}) => [{ info: { name, email: `${name}@example.com`, embedded: true, ...extra } }];

async function sent(owner: SeededTeam, recipients: RecipientSpec[], reminders?: Record<string, number>) {
  const built = await buildEnvelope(app, owner.apiKey, { name: 'Embedded', recipients, reminders });
  const answer = await restClient(app, owner.apiKey).put(`/envelopes/${built.envelopeId}/send`);
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return built;
}

function urlFor(owner: SeededTeam, envelopeId: string, recipientId: string, body: Record<string, unknown> = {}) {
  return restClient(app, owner.apiKey).post(`/envelopes/${envelopeId}/recipients/${recipientId}/signing-url`, body);
}

/**
 * Opens a signing URL as a browser would: the page (GET, which consumes nothing), then, when the
 * page says the URL is unopened, what its script does once it runs: POST to the same URL, whose
 * answer holds the session credential. `status` is the page's, `opening` the POST's.
 */
async function open(url: string) {
  // PUBLIC_URL names the service as people reach it; the test app listens on its own port.
  const pageUrl = `${app.url}${new URL(url).pathname}`;
  const response = await fetch(pageUrl, { redirect: 'manual' });
  const html = await response.text();
  const unopened = html.includes('<meta name="signing-link" content="open">');
  const opening = unopened ? await fetch(pageUrl, { method: 'POST' }) : undefined;
  const opened = opening ? ((await opening.json()) as { sessionToken?: string; link?: string }) : undefined;
  const session = opened?.sessionToken ?? null;
  return {
    status: response.status,
    html,
    session,
    opening: opening ? { status: opening.status, body: opened! } : undefined,
    csp: response.headers.get('content-security-policy') ?? '',
    xfo: response.headers.get('x-frame-options'),
  };
}

async function outboxTopicsFor(envelopeId: string, recipientId: string) {
  const rows = await app.orm.em
    .fork()
    .execute<{ topic: string }[]>(`select topic from outbox_message where payload ->> 'envelopeId' = ? and payload ->> 'recipientId' = ? order by created_at`, [envelopeId, recipientId]);
  return rows.map((row) => row.topic);
}

async function eventsOf(envelopeId: string, type: string) {
  return app.orm.em
    .fork()
    .execute<{ actor_type: string; actor_id: string | null; details: any }[]>('select actor_type, actor_id, details from audit_event where envelope_id = ? and type = ? order by seq', [
      envelopeId,
      type,
    ]);
}

function smsFiles(): string[] {
  const directory = path.join(app.dataDir, 'sms');
  return fs.existsSync(directory) ? fs.readdirSync(directory).map((name) => fs.readFileSync(path.join(directory, name), 'utf8')) : [];
}

describe('embedded agents', () => {
  it('get no invitation, your-turn message or reminder by mail or phone while the role still finalizes; a later non-embedded agent is invited; the final copy reaches the embedded agent’s email', async () => {
    const built = await sent(
      team,
      [
        { identifier: 'first', order: 1 },
        { identifier: 'inside', order: 2, agents: embedded('inside-emb') },
        // Embedded with a phone only: never texted either.
        { identifier: 'viewer', type: 'viewer', order: 2, agents: [{ info: { name: 'Phone only', phone: '+905551110001', embedded: true } }] },
        { identifier: 'last', order: 3 },
      ],
      { reminderInitialDelayDays: 1, reminderRepeatIntervalDays: 1 },
    );
    const worker = mainWorkerFor(app, team.teamId);
    await worker.drain();
    expect(smtp.to('first@example.com')).toHaveLength(1);

    // The first signer finishes: the embedded recipient's turn begins, visible to the sender, unmailed.
    expect((await signAndComplete(app, signingLinkIn(smtp.to('first@example.com')[0]!)!.token)).errors).toBeUndefined();
    await worker.drain();
    const recipient = (await restClient(app, team.apiKey).get(`/envelopes/${built.envelopeId}/recipients/${built.recipients.inside}`)).body.payload.recipient;
    expect(recipient.activatedAt).not.toBeNull();
    expect(recipient.agents[0].info).toMatchObject({ name: 'inside-emb', embedded: true });
    expect((await eventsOf(built.envelopeId, 'recipient.activated')).map((event) => event.details.recipientId)).toContain(built.recipients.inside);

    // Its reminder windows pass (a sweep on a clock two days ahead): still nothing for it.
    const clock = createClock();
    clock.advance(2 * 86400 + 60);
    await queueDueReminders({ em: app.orm.em, auditKey: app.dependencies.auditKey, publicUrl: app.dependencies.config.publicUrl, clock, teamId: team.teamId });
    await worker.drain();
    expect(smtp.to('inside-emb@example.com')).toHaveLength(0);
    expect(await outboxTopicsFor(built.envelopeId, built.recipients.inside)).toEqual([]);
    expect(smtp.to('last@example.com')).toHaveLength(0);

    // The integrator signs it in through a signing URL; the next, non-embedded, signer is invited.
    const made = await urlFor(team, built.envelopeId, built.recipients.inside, {});
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    const opened = await open(made.body.payload.url);
    expect(opened.status).toBe(200);
    expect((await signAndComplete(app, opened.session!)).errors).toBeUndefined();
    await worker.drain();
    expect(smtp.to('last@example.com')).toHaveLength(1);
    expect(smtp.to('inside-emb@example.com')).toHaveLength(0);

    expect((await signAndComplete(app, signingLinkIn(smtp.to('last@example.com')[0]!)!.token)).errors).toBeUndefined();
    await worker.drain();
    await worker.drain();
    const envelope = (await restClient(app, team.apiKey).get(`/envelopes/${built.envelopeId}`)).body.payload.envelope;
    expect(envelope.status).toBe('finalized');
    // The final copy goes to its email; nothing ever went to the phone-only embedded person.
    expect(smtp.to('inside-emb@example.com').map((mail) => mail.mail.subject)).toEqual([expect.stringMatching(/Embedded/)]);
    expect(smtpSubjectsOfInvitations('inside-emb@example.com')).toEqual([]);
    expect(smsFiles().filter((file) => file.includes('+905551110001'))).toEqual([]);
  }, 120_000);

  it('an embedded person with a phone still confirms a one-time code in its session; both faces take and show `embedded`', async () => {
    const built = await sent(team, [{ identifier: 'otp', agents: embedded('otp-emb', { phone: '+905551110002' }) }]);
    expect(await outboxTopicsFor(built.envelopeId, built.recipients.otp)).toEqual([]);
    const opened = await open((await urlFor(team, built.envelopeId, built.recipients.otp)).body.payload.url);
    const session = await signingClient(app, opened.session!)(SESSION_QUERY.replace('signingSession {', 'signingSession { otp { required verified }'));
    expect(session.data.signingSession.otp).toEqual({ required: true, verified: false });
    expect(firstErrorName(await signAndComplete(app, opened.session!))).toBe('Signing.OtpRequired');

    const graphql = graphqlClient(app, team.apiKey);
    const created = await graphql(`mutation { createEnvelope(input: { name: "GraphQL embedded" }) { id } }`);
    const envelopeId = created.data.createEnvelope.id;
    const added = await graphql(
      `mutation($id: ID!) { addRecipient(envelopeId: $id, input: { type: signer, identifier: "g", roleName: "G", agents: [{ info: { name: "G", email: "g@example.com", embedded: true } }] }) { agents { info { name embedded } } } }`,
      { id: envelopeId },
    );
    expect(added.errors, JSON.stringify(added.errors)).toBeUndefined();
    expect(added.data.addRecipient.agents[0].info).toEqual({ name: 'G', embedded: true });
    const refused = await restClient(app, team.apiKey).post(`/envelopes/${envelopeId}/recipients`, {
      recipient: { type: 'signer', identifier: 'bad', roleName: 'Bad', agents: [{ info: { name: 'Bad', embedded: 'yes' } }] },
    });
    expect(refused.body.error.name).toBe('Request.Invalid');
  }, 60_000);
});

function smtpSubjectsOfInvitations(address: string): string[] {
  return smtp
    .to(address)
    .map((mail) => mail.mail.subject ?? '')
    .filter((subject) => /sign|turn|Reminder|imza/i.test(subject) && !/complete|tamamland/i.test(subject));
}

describe('embedded agents from a template', () => {
  it('a jumpstart entry’s agent with info.embedded keeps it (REST and GraphQL) and is not invited when sent', async () => {
    const ready = await createReadyTemplate(app, team.apiKey, { name: 'Embedded template' });
    const rest = restClient(app, team.apiKey);
    const made = await rest.post(`/envelopes/jumpstart/${ready.templateId}`, { recipients: [{ identifier: 'buyer', agents: embedded('jump-emb') }] });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    const envelopeId = made.body.payload.envelopeId;
    const recipients = (await rest.get(`/envelopes/${envelopeId}/recipients`)).body.payload.recipients;
    expect(recipients[0].agents[0].info).toEqual({ name: 'jump-emb', email: 'jump-emb@example.com', phone: null, locale: null, phoneContactMethod: null, embedded: true });
    expect((await rest.put(`/envelopes/${envelopeId}/send`)).status).toBe(200);
    expect(await outboxTopicsFor(envelopeId, recipients[0].id)).toEqual([]);
    expect((await urlFor(team, envelopeId, recipients[0].id)).status).toBe(200);

    const graphql = graphqlClient(app, team.apiKey);
    const jumped = await graphql(
      `mutation($t: ID!) { jumpstartEnvelope(templateId: $t, input: { recipients: [{ identifier: "buyer", agents: [{ info: { name: "G", email: "g2@example.com", embedded: true } }] }] }) { recipients { agents { info { embedded } } } } }`,
      { t: ready.templateId },
    );
    expect(jumped.errors, JSON.stringify(jumped.errors)).toBeUndefined();
    expect(jumped.data.jumpstartEnvelope.recipients[0].agents[0].info.embedded).toBe(true);
  }, 60_000);
});

describe('signing URLs', () => {
  it('are issued only on the recipient’s turn of a sent envelope of the caller’s team, on both faces, and recorded with the API key as actor', async () => {
    const built = await sent(team, [
      { identifier: 'now', order: 1, agents: embedded('now-emb') },
      { identifier: 'later', order: 2 },
    ]);
    const notYet = await urlFor(team, built.envelopeId, built.recipients.later);
    expect([notYet.status, notYet.body.error.name]).toEqual([409, 'Signing.NotYourTurn']);
    const graphql = graphqlClient(app, team.apiKey);
    const CREATE = `mutation($e: ID!, $r: ID!, $o: String, $u: String) { createSigningUrl(envelopeId: $e, recipientId: $r, frameOrigin: $o, returnUrl: $u, locale: tr_TR) { url expiresAt } }`;
    expect(firstErrorName(await graphql(CREATE, { e: built.envelopeId, r: built.recipients.later }))).toBe('Signing.NotYourTurn');

    // Another team's envelope, an unknown and a malformed id: all Envelope.NotFound.
    const other = await seedTeam(app);
    expect((await urlFor(other, built.envelopeId, built.recipients.now)).body.error.name).toBe('Envelope.NotFound');
    expect(firstErrorName(await graphqlClient(app, other.apiKey)(CREATE, { e: built.envelopeId, r: built.recipients.now }))).toBe('Envelope.NotFound');
    expect((await urlFor(team, '00000000-0000-4000-8000-000000000000', built.recipients.now)).status).toBe(404);
    expect((await urlFor(team, 'nope', built.recipients.now)).body.error.name).toBe('Envelope.NotFound');
    expect((await urlFor(team, built.envelopeId, '00000000-0000-4000-8000-000000000000')).body.error.name).toBe('Recipient.NotFound');
    // A return URL must be https (or http on localhost).
    expect((await urlFor(team, built.envelopeId, built.recipients.now, { returnUrl: 'http://app.example.com/x' })).body.error.name).toBe('Request.Invalid');

    // The service's own clock read on either side of the request: the link lives 5 minutes from
    // when it was made, however long a loaded machine took to answer.
    const before = app.dependencies.clock.now().getTime();
    const made = await graphql(CREATE, { e: built.envelopeId, r: built.recipients.now, u: 'https://app.example.com/done?ref=7' });
    const after = app.dependencies.clock.now().getTime();
    expect(made.errors, JSON.stringify(made.errors)).toBeUndefined();
    expect(made.data.createSigningUrl.url).toMatch(new RegExp(`^${app.dependencies.config.publicUrl}/sign/sgu_`));
    const expiresAt = Date.parse(made.data.createSigningUrl.expiresAt);
    // (expiresAt is in whole milliseconds, as the clock.)
    expect(expiresAt).toBeGreaterThanOrEqual(before + 5 * 60_000);
    expect(expiresAt).toBeLessThanOrEqual(after + 5 * 60_000);
    const [created] = await eventsOf(built.envelopeId, 'signing_url.created');
    expect(created).toMatchObject({ actor_type: 'api_key', actor_id: team.keyId, details: { recipientId: built.recipients.now, returnUrl: 'https://app.example.com/done?ref=7' } });

    // A draft has no turn yet; a closed envelope none any more.
    const draft = await buildEnvelope(app, team.apiKey, { recipients: [{ identifier: 'd' }] });
    expect((await urlFor(team, draft.envelopeId, draft.recipients.d)).body.error.name).toBe('Envelope.NotSent');
    await restClient(app, team.apiKey).post(`/envelopes/${built.envelopeId}/void`, {});
    const closed = await urlFor(team, built.envelopeId, built.recipients.now);
    expect([closed.status, closed.body.error.name]).toEqual([409, 'Envelope.Closed']);
  }, 60_000);

  it('open once: a second open is the used-link page (410) in the person’s language; unopened for 5 minutes (sandbox clock) it is the expired page; unknown is 404', async () => {
    const built = await sent(team, [{ identifier: 'once', agents: embedded('once-emb', { locale: 'tr-TR' }) }]);
    const url = (await urlFor(team, built.envelopeId, built.recipients.once)).body.payload.url as string;
    const first = await open(url);
    expect(first.status).toBe(200);
    expect(first.session).toMatch(/^sgn_/);
    // Without a frame origin, the page keeps today's policy (SIGNING_FRAME_ANCESTORS here).
    expect(first.csp).toBe(signingPagePolicy([ENV_ORIGIN]));
    const again = await open(url);
    expect(again.status).toBe(410);
    expect(again.session).toBeNull();
    expect(again.html).toContain(STRINGS['tr-TR'].usedTitle);
    // The session opened first goes on; it is recorded as opened, then viewed.
    expect((await signingClient(app, first.session!)(SESSION_QUERY)).data.signingSession.isMyTurn).toBe(true);
    expect(await eventsOf(built.envelopeId, 'signing_url.opened')).toHaveLength(1);

    const stale = await urlFor(team, built.envelopeId, built.recipients.once, { locale: 'en-US' });
    expect((await restClient(app, team.apiKey).post('/sandbox/clock', { seconds: 5 * 60 + 1 })).status).toBe(200);
    const expired = await open(stale.body.payload.url);
    expect(expired.status).toBe(410);
    expect(expired.html).toContain(STRINGS['en-US'].linkExpiredTitle);
    expect(expired.session).toBeNull();

    const unknown = await open(`${app.url}/sign/sgu_${'x'.repeat(43)}`);
    expect(unknown.status).toBe(404);
    expect(unknown.html).toContain(STRINGS['en-US'].invalidTitle);
    // The page's opening call says the same of URLs that do not open.
    const postTo = (target: string) => fetch(`${app.url}${new URL(target).pathname}`, { method: 'POST' }).then(async (answer) => [answer.status, await answer.json()]);
    expect(await postTo(url)).toEqual([410, { link: 'used' }]);
    expect(await postTo(stale.body.payload.url)).toEqual([410, { link: 'expired' }]);
    expect(await postTo(`${app.url}/sign/sgu_${'x'.repeat(43)}`)).toEqual([404, { link: 'unknown' }]);

    // The session itself ends an hour after it opened.
    expect((await restClient(app, team.apiKey).post('/sandbox/clock', { seconds: 3600 })).status).toBe(200);
    expect(firstErrorName(await signingClient(app, first.session!)(SESSION_QUERY))).toBe('Signing.SessionExpired');
  }, 60_000);

  it('serve their page on GET and HEAD without consuming anything: only the page’s script (POST) opens the session, once; HEAD answers as GET without a body', async () => {
    const built = await sent(team, [{ identifier: 'peek', agents: embedded('peek-emb') }]);
    const url = (await urlFor(team, built.envelopeId, built.recipients.peek, { returnUrl: 'https://env.example.com/back' })).body.payload.url as string;
    const pageUrl = `${app.url}${new URL(url).pathname}`;
    const head = async () => {
      const answer = await fetch(pageUrl, { method: 'HEAD' });
      return {
        status: answer.status,
        type: answer.headers.get('content-type'),
        csp: answer.headers.get('content-security-policy'),
        cache: answer.headers.get('cache-control'),
        body: await answer.text(),
      };
    };
    // A link checker's HEAD and any number of GETs (a refused frame, a preview) leave the URL whole.
    const checked = await head();
    expect(checked).toEqual({ status: 200, type: 'text/html; charset=utf-8', csp: signingPagePolicy([ENV_ORIGIN]), cache: 'no-store', body: '' });
    for (let index = 0; index < 2; index += 1) {
      const page = await fetch(pageUrl);
      expect(page.status).toBe(200);
      const html = await page.text();
      expect(html).toContain('<meta name="signing-link" content="open">');
      expect(html).toContain('<meta name="signing-return-url" content="https://env.example.com/back">');
      // No credential in the page: the script asks for it.
      expect(html).not.toContain('sgn_');
    }
    expect(await eventsOf(built.envelopeId, 'signing_url.opened')).toHaveLength(0);
    // The page's script opens it: the session, once.
    const first = await fetch(pageUrl, { method: 'POST' });
    expect(first.status).toBe(200);
    expect(first.headers.get('cache-control')).toBe('no-store');
    const { sessionToken } = (await first.json()) as { sessionToken: string };
    expect(sessionToken).toMatch(/^sgn_/);
    expect((await signingClient(app, sessionToken)(SESSION_QUERY)).data.signingSession.isMyTurn).toBe(true);
    expect(await eventsOf(built.envelopeId, 'signing_url.opened')).toHaveLength(1);
    // Used now: HEAD answers as GET does (410, the used page's headers), and still changes nothing.
    const afterUse = await head();
    expect([afterUse.status, afterUse.body, afterUse.csp]).toEqual([410, '', signingPagePolicy([ENV_ORIGIN])]);
    expect((await fetch(pageUrl)).status).toBe(410);
    expect((await fetch(`${app.url}/sign/sgu_${'y'.repeat(43)}`, { method: 'HEAD' })).status).toBe(404);
    expect(await eventsOf(built.envelopeId, 'signing_url.opened')).toHaveLength(1);
  });

  it('name their frame origin alone in the page’s frame-ancestors, if the team settings (else SIGNING_FRAME_ANCESTORS) allow it', async () => {
    const owner = await seedTeam(app);
    const built = await sent(owner, [{ identifier: 'framed', agents: embedded('framed-emb') }]);
    const refused = await urlFor(owner, built.envelopeId, built.recipients.framed, { frameOrigin: 'https://elsewhere.example.com' });
    expect([refused.status, refused.body.error.name, refused.body.error.context.source]).toEqual([400, 'Signing.FrameOriginNotAllowed', 'configuration']);
    expect((await urlFor(owner, built.envelopeId, built.recipients.framed, { frameOrigin: 'https://app.example.com/path' })).body.error.name).toBe('Request.Invalid');
    const byEnvironment = await urlFor(owner, built.envelopeId, built.recipients.framed, { frameOrigin: ENV_ORIGIN });
    expect(byEnvironment.status).toBe(200);

    // The team's own list replaces the environment's.
    expect((await restClient(app, owner.apiKey).patch('/team/settings', { embedding: { frameOrigins: ['https://App.example.com'] } })).status).toBe(200);
    const now = await urlFor(owner, built.envelopeId, built.recipients.framed, { frameOrigin: ENV_ORIGIN });
    expect([now.body.error.name, now.body.error.context.source]).toEqual(['Signing.FrameOriginNotAllowed', 'team_settings']);
    const allowed = await urlFor(owner, built.envelopeId, built.recipients.framed, { frameOrigin: 'https://app.example.com', returnUrl: 'https://app.example.com/back' });
    const page = await open(allowed.body.payload.url);
    expect(page.status).toBe(200);
    expect(page.csp).toBe(signingPagePolicy(['https://app.example.com']));
    expect(page.csp).toMatch(/; frame-ancestors https:\/\/app\.example\.com$/);
    expect(page.csp).not.toContain(ENV_ORIGIN);
    expect(page.xfo).toBeNull();
    expect(page.html).toContain('<meta name="signing-frame-origin" content="https://app.example.com">');
    // Opened again, the used page is framed by the same origin only (so a reload in the frame can resume).
    const used = await open(allowed.body.payload.url);
    expect([used.status, used.csp]).toEqual([410, signingPagePolicy(['https://app.example.com'])]);
    // Nobody's link: the service-wide policy.
    const plain = await fetch(`${app.url}/sign/sgn_whatever`);
    expect(plain.headers.get('content-security-policy')).toBe(signingPagePolicy([ENV_ORIGIN]));
  }, 60_000);

  it("frame a page that names no frame origin (a signing URL without frameOrigin, an invitation link) by the team's list when it has one, else SIGNING_FRAME_ANCESTORS: the same list that decides what frameOrigin may name", async () => {
    const policies = async (owner: SeededTeam) => {
      const built = await sent(owner, [
        { identifier: 'embedded', order: 1, agents: embedded(`plain-${owner.teamId.slice(0, 8)}`) },
        { identifier: 'invited', order: 1 },
      ]);
      const url = (await urlFor(owner, built.envelopeId, built.recipients.embedded)).body.payload.url as string;
      const urlPage = await fetch(`${app.url}${new URL(url).pathname}`);
      const link = await fetch(`${app.url}/sign/${await tokenFor(app, built.envelopeId, built.recipients.invited)}`);
      expect([urlPage.status, link.status]).toEqual([200, 200]);
      return {
        signingUrl: urlPage.headers.get('content-security-policy'),
        signingUrlXfo: urlPage.headers.get('x-frame-options'),
        invitationLink: link.headers.get('content-security-policy'),
        invitationLinkXfo: link.headers.get('x-frame-options'),
      };
    };
    // No team list: the service-wide one.
    expect(await policies(await seedTeam(app))).toEqual({
      signingUrl: signingPagePolicy([ENV_ORIGIN]),
      signingUrlXfo: null,
      invitationLink: signingPagePolicy([ENV_ORIGIN]),
      invitationLinkXfo: null,
    });
    // The team's list replaces it for these pages too, as it does for frameOrigin.
    const narrowed = await seedTeam(app);
    expect((await restClient(app, narrowed.apiKey).patch('/team/settings', { embedding: { frameOrigins: ['https://app.example.com'] } })).status).toBe(200);
    const ownList = signingPagePolicy(['https://app.example.com']);
    expect(await policies(narrowed)).toEqual({ signingUrl: ownList, signingUrlXfo: null, invitationLink: ownList, invitationLinkXfo: null });
    // An empty list: no origin may frame the team's pages, whatever the service allows.
    const closed = await seedTeam(app);
    expect((await restClient(app, closed.apiKey).patch('/team/settings', { embedding: { frameOrigins: [] } })).status).toBe(200);
    expect(await policies(closed)).toEqual({ signingUrl: signingPagePolicy([]), signingUrlXfo: 'DENY', invitationLink: signingPagePolicy([]), invitationLinkXfo: 'DENY' });
  }, 60_000);
});

describe('team settings', () => {
  it('are one validated, audited document per team, on both faces', async () => {
    const owner = await seedTeam(app);
    const rest = restClient(app, owner.apiKey);
    expect((await rest.get('/team/settings')).body.payload.settings).toMatchObject({ embedding: { frameOrigins: null }, version: 0 });
    const invalid = await rest.patch('/team/settings', { embedding: { frameOrigins: ['https://*.example.com', 'http://app.example.com', 'javascript:alert(1)'] } });
    expect(invalid.body.error.name).toBe('Request.Invalid');
    expect(invalid.body.error.context.issues.map((issue: any) => issue.path)).toEqual(['embedding.frameOrigins[0]', 'embedding.frameOrigins[1]', 'embedding.frameOrigins[2]']);
    expect((await rest.patch('/team/settings', { letterhead: {} })).body.error.name).toBe('Request.Invalid');
    const changed = await rest.patch('/team/settings', { embedding: { frameOrigins: ['https://a.example.com', 'http://localhost:5173'] } });
    expect(changed.body.payload.settings).toMatchObject({ embedding: { frameOrigins: ['https://a.example.com', 'http://localhost:5173'] }, version: 1 });

    const graphql = graphqlClient(app, owner.apiKey);
    expect((await graphql('{ teamSettings { embedding { frameOrigins } version } }')).data.teamSettings).toEqual({
      embedding: { frameOrigins: ['https://a.example.com', 'http://localhost:5173'] },
      version: 1,
    });
    const UPDATE = 'mutation($input: TeamSettingsInput!) { updateTeamSettings(input: $input) { embedding { frameOrigins } version } }';
    expect(firstErrorName(await graphql(UPDATE, { input: { embedding: { frameOrigins: ['ftp://x.example.com'] } } }))).toBe('Request.Invalid');
    // A section given without the key changes nothing in it; null clears the key.
    expect((await graphql(UPDATE, { input: { embedding: {} } })).data.updateTeamSettings.embedding.frameOrigins).toHaveLength(2);
    expect((await graphql(UPDATE, { input: { embedding: { frameOrigins: null } } })).data.updateTeamSettings).toEqual({ embedding: { frameOrigins: null }, version: 3 });
    // Another team's settings are its own.
    expect((await restClient(app, team.apiKey).get('/team/settings')).body.payload.settings.embedding.frameOrigins).not.toEqual(['https://a.example.com', 'http://localhost:5173']);

    const events = await app.orm.em
      .fork()
      .execute<{ actor_type: string; actor_id: string; details: any }[]>(
        `select actor_type, actor_id, details from audit_event where stream_id = ? and type = 'team.settings_updated' order by seq`,
        [owner.teamId],
      );
    expect(events.map((event) => event.details.version)).toEqual([1, 2, 3]);
    expect(events[0]).toMatchObject({
      actor_type: 'api_key',
      actor_id: owner.keyId,
      details: { changes: { 'embedding.frameOrigins': { from: null, to: ['https://a.example.com', 'http://localhost:5173'] } } },
    });
  }, 60_000);
});

describe('opening signing URLs is budgeted like any request without a key', () => {
  it('past the client address budget, the page answers 429 with Retry-After before any database work', async () => {
    const limited = await startTestApp({ env: { RATE_LIMIT_ANONYMOUS_PER_MINUTE: '2' }, rateLimitsOwnCounters: true });
    try {
      const statuses: number[] = [];
      let refused: Response | undefined;
      for (let attempt = 0; attempt < 3; attempt += 1) {
        const response = await fetch(`${limited.url}/sign/sgu_${'x'.repeat(43)}${attempt}`);
        statuses.push(response.status);
        if (response.status === 429) refused = response;
        else await response.arrayBuffer();
      }
      expect(statuses).toEqual([404, 404, 429]);
      expect(refused!.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(refused!.headers.get('content-type')).toMatch(/^text\/html/);
      expect(await refused!.text()).toContain(STRINGS['en-US'].errors['Request.RateLimited']);
    } finally {
      await limited.close();
    }
  });

  it('invitation links too: each new link spends the address budget (invented ones are refused past it), a reload of a seen one does not', async () => {
    const limited = await startTestApp({ env: { RATE_LIMIT_ANONYMOUS_PER_MINUTE: '2' }, rateLimitsOwnCounters: true });
    try {
      const open = async (token: string) => {
        const response = await fetch(`${limited.url}/sign/${token}`);
        await response.arrayBuffer();
        return response.status;
      };
      const first = `sgn_${'y'.repeat(43)}0`;
      // A reload of a link already seen in this window costs the address nothing more.
      expect([await open(first), await open(first), await open(first)]).toEqual([404, 404, 404]);
      expect([await open(`sgn_${'y'.repeat(43)}1`), await open(`sgn_${'y'.repeat(43)}2`)]).toEqual([404, 429]);
    } finally {
      await limited.close();
    }
  });
});
