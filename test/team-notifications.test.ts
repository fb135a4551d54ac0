import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expireDueEnvelopes } from '../src/domain/signing/closing.service.ts';
import { firstErrorName, graphqlClient, restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { png } from './helpers/images.ts';
import { buildEnvelope, DECLINE_MUTATION, SESSION_QUERY, signAndComplete, signingClient, tokenFor } from './helpers/signing.ts';
import { startSmtpServer, type TestSmtpServer } from './helpers/smtp.ts';
import { createReadyTemplate } from './helpers/templates.ts';
import { mainWorkerFor } from './helpers/workers.ts';

/*
 * Issue 24: team settings (display name, reply-to, notifications, branding) on both faces; the
 * sending team told at its notification addresses through the outbox, against a real SMTP server;
 * mails from the team (From name, subject, Reply-To, logo inline, hostile values escaped).
 */

let app: TestApp;
let smtp: TestSmtpServer;

beforeAll(async () => {
  smtp = await startSmtpServer({ refuse: (address) => (address.startsWith('bounce') ? { code: 550, message: 'No such user' } : null) });
  // Bulk sends unpaced: their rows are sent as soon as a worker drains them.
  app = await startTestApp({ env: { SMTP_URL: smtp.url, BULK_SEND_ROWS_PER_MINUTE: '0' } });
});
afterAll(async () => {
  await app.close();
  await smtp.close();
});

const HOSTILE = 'Acme <b>Legal</b> "&" Co';

async function brandedTeam(emails: string[], extra: Record<string, unknown> = {}): Promise<SeededTeam> {
  const team = await seedTeam(app);
  const changed = await restClient(app, team.apiKey).patch('/team/settings', {
    displayName: HOSTILE,
    replyTo: 'legal@acme.example',
    notifications: { emails, locale: 'en-US', ...extra },
    branding: { logo: { data: png(40, 20).toString('base64') }, accentColor: '#AA3300', footer: 'Acme Legal <Istanbul>' },
  });
  expect(changed.status, JSON.stringify(changed.body)).toBe(200);
  return team;
}

async function send(team: SeededTeam, envelopeId: string) {
  expect((await restClient(app, team.apiKey).put(`/envelopes/${envelopeId}/send`)).status).toBe(200);
}

function oneSigner(name: string, email: string) {
  return { name, recipients: [{ identifier: 'signer', agents: [{ info: { name: 'Sam', email } }] }] };
}

describe('team settings', () => {
  it('validate every part and record each change on both faces', async () => {
    const team = await seedTeam(app);
    const rest = restClient(app, team.apiKey);
    expect((await rest.get('/team/settings')).body.payload.settings).toEqual({
      displayName: null,
      replyTo: null,
      notifications: { emails: null, events: null, locale: null },
      branding: { logo: null, accentColor: null, footer: null },
      embedding: { frameOrigins: null },
      artefacts: { stamp: null },
      trustServices: [],
      version: 0,
    });
    const invalid = await rest.patch('/team/settings', {
      displayName: 'x\nBcc: y@z.example',
      replyTo: 'not an address',
      notifications: { emails: ['a@b.example', 'a@b.example'], events: ['completed', 'signed'], locale: 'fr-FR' },
      branding: { accentColor: 'red', footer: 'a'.repeat(501), logo: { data: Buffer.from('GIF89a not a png').toString('base64') } },
    });
    expect(invalid.body.error.name).toBe('Request.Invalid');
    expect(invalid.body.error.context.issues.map((issue: { path: string }) => issue.path).sort()).toEqual(
      ['branding.accentColor', 'branding.footer', 'branding.logo.data', 'displayName', 'notifications.emails', 'notifications.events[1]', 'notifications.locale', 'replyTo'].sort(),
    );
    // A logo too large in pixels, or in bytes, is refused by its content.
    const tall = await rest.patch('/team/settings', { branding: { logo: { data: png(10, 2000).toString('base64') } } });
    expect(tall.body.error.context.issues[0].message).toMatch(/at most 1024×1024 pixels \(it is 10×2000\)/);
    const heavy = await rest.patch('/team/settings', { branding: { logo: { data: Buffer.concat([png(1, 1), Buffer.alloc(300 * 1024)]).toString('base64') } } });
    expect(heavy.body.error.name).toBe('Request.Invalid');

    const changed = await rest.patch('/team/settings', {
      displayName: 'Acme Legal',
      notifications: { emails: ['Team@Acme.example'], events: ['declined', 'bulk_send_completed'] },
      branding: { logo: { data: png(40, 20).toString('base64') } },
    });
    expect(changed.status).toBe(200);
    const settings = changed.body.payload.settings;
    expect(settings).toMatchObject({ displayName: 'Acme Legal', notifications: { emails: ['team@acme.example'], events: ['declined', 'bulk_send_completed'], locale: null }, version: 1 });
    expect(settings.branding.logo).toMatchObject({ contentType: 'image/png', width: 40, height: 20, url: expect.stringMatching(/\/branding\/logos\/[0-9a-f]{64}\.png$/) });

    // The logo is served by the service, cacheable for good; any other hash is not.
    const logo = await fetch(new URL(new URL(settings.branding.logo.url).pathname, app.url));
    expect([logo.status, logo.headers.get('content-type'), logo.headers.get('cache-control')]).toEqual([200, 'image/png', 'public, max-age=31536000, immutable']);
    expect(Buffer.from(await logo.arrayBuffer()).equals(png(40, 20))).toBe(true);
    expect((await fetch(`${app.url}/branding/logos/${'0'.repeat(64)}.png`)).status).toBe(404);

    const graphql = graphqlClient(app, team.apiKey);
    const UPDATE =
      'mutation($input: TeamSettingsInput!) { updateTeamSettings(input: $input) { displayName replyTo notifications { emails events locale } branding { accentColor footer logo { width } } version } }';
    expect(firstErrorName(await graphql(UPDATE, { input: { replyTo: 'nope' } }))).toBe('Request.Invalid');
    const updated = await graphql(UPDATE, { input: { replyTo: 'legal@acme.example', notifications: { locale: 'tr-TR' }, branding: { accentColor: '#123abc', logo: null } } });
    expect(updated.data.updateTeamSettings).toEqual({
      displayName: 'Acme Legal',
      replyTo: 'legal@acme.example',
      notifications: { emails: ['team@acme.example'], events: ['declined', 'bulk_send_completed'], locale: 'tr-TR' },
      branding: { accentColor: '#123abc', footer: null, logo: null },
      version: 2,
    });
    const events = await app.orm.em.fork().execute<{ details: any }[]>(`select details from audit_event where stream_id = ? and type = 'team.settings_updated' order by seq`, [team.teamId]);
    expect(Object.keys(events[0]!.details.changes).sort()).toEqual(['branding.logo', 'displayName', 'notifications.emails', 'notifications.events']);
    expect(events[0]!.details.changes['branding.logo'].to).toMatchObject({ contentType: 'image/png', width: 40 });
    expect(Object.keys(events[1]!.details.changes).sort()).toEqual(['branding.accentColor', 'branding.logo', 'notifications.locale', 'replyTo']);
  }, 60_000);
});

describe('the sending team is told', () => {
  it('declined with the reason, from the team, branded and escaped; the page says a mail went', async () => {
    const team = await brandedTeam(['declines@acme.example']);
    const built = await buildEnvelope(app, team.apiKey, oneSigner('Lease <2026>', 'decliner@example.com'));
    await send(team, built.envelopeId);
    const token = await tokenFor(app, built.envelopeId, built.recipients.signer!);
    await mainWorkerFor(app, team.teamId).drain();
    const page = await signingClient(app, token)('{ signingSession { sender { displayName logoUrl accentColor footer declineNotified } } }');
    expect(page.data.signingSession.sender).toMatchObject({ displayName: HOSTILE, accentColor: '#aa3300', footer: 'Acme Legal <Istanbul>', declineNotified: true });
    expect((await fetch(`${app.url}${page.data.signingSession.sender.logoUrl}`)).status).toBe(200);
    expect((await signingClient(app, token)(DECLINE_MUTATION, { reason: 'Wrong <rent>' })).errors).toBeUndefined();
    await mainWorkerFor(app, team.teamId).drain();

    const [invitation] = smtp.to('decliner@example.com');
    expect(invitation!.mail.subject).toBe(`${HOSTILE} sent you “Lease <2026>” to sign`);
    expect(invitation!.mail.from!.value[0]).toMatchObject({ name: HOSTILE, address: expect.stringMatching(/^no-reply@/) });
    expect(invitation!.mail.replyTo!.value[0]!.address).toBe('legal@acme.example');
    // The logo travels inside the mail (cid), the hostile name and footer are escaped.
    const html = String(invitation!.mail.html);
    const inline = invitation!.mail.attachments.find((attachment) => attachment.contentType === 'image/png');
    expect(inline?.cid).toBeTruthy();
    // mailparser swaps a resolved cid: reference for the attachment's data, so this shows the link held.
    expect(html).toMatch(/<img src="data:image\/png;base64,[^"]+" alt="Acme &#60;b&#62;/);
    expect(invitation!.raw).toContain(`cid:${inline!.cid}`);
    expect(inline!.content.equals(png(40, 20))).toBe(true);
    expect(html).not.toContain('<b>Legal</b>');
    expect(html).toContain('Acme &#60;b&#62;Legal&#60;/b&#62;');
    expect(html).toContain('Acme Legal &#60;Istanbul&#62;');
    expect(html).toContain('background: #aa3300');

    const [notice] = smtp.to('declines@acme.example');
    expect(smtp.to('declines@acme.example')).toHaveLength(1);
    expect(notice!.mail.subject).toBe('Declined: Lease <2026>');
    expect(notice!.mail.text).toContain('Sam (decliner@example.com) declined to sign “Lease <2026>”');
    expect(notice!.mail.text).toContain('Reason given: Wrong <rent>');
    expect(String(notice!.mail.html)).toContain('Wrong &#60;rent&#62;');
    expect(notice!.mail.from!.value[0]!.name).toBe(HOSTILE);
  }, 60_000);

  it('voided (with the reason), expired, delivery failed (naming the person and channel), only for the events asked', async () => {
    const team = await brandedTeam(['ops@acme.example', 'legal-ops@acme.example'], { events: ['voided', 'expired', 'delivery_failed'] });
    const voided = await buildEnvelope(app, team.apiKey, oneSigner('To void', 'void-signer@example.com'));
    await send(team, voided.envelopeId);
    expect((await restClient(app, team.apiKey).post(`/envelopes/${voided.envelopeId}/void`, { reason: 'Superseded' })).status).toBe(200);

    const expiring = await buildEnvelope(app, team.apiKey, oneSigner('To expire', 'expire-signer@example.com'));
    await send(team, expiring.envelopeId);
    await app.orm.em.fork().execute(`update envelope set expires_at = now() - interval '1 minute' where id = ?`, [expiring.envelopeId]);
    await expireDueEnvelopes({ em: app.orm.em, auditKey: app.dependencies.auditKey, publicUrl: app.dependencies.config.publicUrl, clock: app.dependencies.clock });

    const bounced = await buildEnvelope(app, team.apiKey, oneSigner('Bounces', 'bounce-me@example.com'));
    await send(team, bounced.envelopeId);
    await mainWorkerFor(app, team.teamId).drain();
    await mainWorkerFor(app, team.teamId).drain();

    for (const address of ['ops@acme.example', 'legal-ops@acme.example']) {
      const subjects = smtp
        .to(address)
        .map((entry) => entry.mail.subject)
        .sort();
      expect(subjects).toEqual(['Expired: To expire', 'Not delivered: a message for Bounces', 'Voided: To void']);
    }
    const mails = smtp.to('ops@acme.example');
    expect(mails.find((entry) => entry.mail.subject === 'Voided: To void')!.mail.text).toContain('Reason given: Superseded');
    const failed = mails.find((entry) => entry.mail.subject!.startsWith('Not delivered'))!;
    expect(failed.mail.text).toContain('The invitation for “Bounces” to Sam (bounce-me@example.com) could not be delivered by email.');
    expect(failed.mail.text).toMatch(/Why: the mail server refused/);
    expect(failed.mail.text).not.toMatch(/Error:|PermanentOutboxError/);
    // The agent shows the reason in words, never a class name.
    const agents = (await restClient(app, team.apiKey).get(`/envelopes/${bounced.envelopeId}`)).body.payload.envelope;
    expect(JSON.stringify(agents)).not.toMatch(/OutboxError|Error:/);
  }, 90_000);

  it('completed, with the final copy attached and the API path to it', async () => {
    const team = await brandedTeam(['done@acme.example'], { events: ['completed'], locale: 'tr-TR' });
    const built = await buildEnvelope(app, team.apiKey, oneSigner('All signed', 'completer@example.com'));
    await send(team, built.envelopeId);
    const token = await tokenFor(app, built.envelopeId, built.recipients.signer!);
    const session = await signingClient(app, token)(SESSION_QUERY);
    expect(session.errors).toBeUndefined();
    await signAndComplete(app, token);
    await mainWorkerFor(app, team.teamId).drain();
    await mainWorkerFor(app, team.teamId).drain();
    const [done] = smtp.to('done@acme.example');
    expect(done!.mail.subject).toBe('Tamamlandı: All signed');
    expect(done!.mail.attachments.filter((attachment) => attachment.contentType === 'application/pdf')).toHaveLength(1);
    expect(done!.mail.text).toContain(`/api/v1/key/envelopes/${built.envelopeId}/pdf`);
    expect(done!.mail.replyTo!.value[0]!.address).toBe('legal@acme.example');
  }, 90_000);

  it('bulk_send_completed, once, with the counts and the API path to the rows; not to a team that did not ask', async () => {
    const asked = await brandedTeam(['bulk@acme.example'], { events: ['bulk_send_completed'] });
    const other = await brandedTeam(['other-bulk@acme.example'], { events: ['completed'] });
    for (const team of [asked, other]) {
      const { templateId } = await createReadyTemplate(app, team.apiKey);
      const rows = [1, 2].map((index) => ({
        recipients: [{ identifier: 'buyer', agents: [{ info: { name: `Buyer ${index}`, email: `bulk-buyer-${team.teamId.slice(0, 8)}-${index}@example.com` } }] }],
      }));
      const created = await restClient(app, team.apiKey).post(`/templates/${templateId}/bulk-sends`, { name: 'Renewals', rows });
      expect(created.status, JSON.stringify(created.body)).toBe(200);
      const { bulkSendId } = created.body.payload;
      const worker = mainWorkerFor(app, team.teamId);
      for (let round = 0; round < 50 && (await worker.drain()) > 0; round += 1);
      expect((await restClient(app, team.apiKey).get(`/bulk-sends/${bulkSendId}`)).body.payload.bulkSend).toMatchObject({ status: 'completed', sent: 2, failed: 0 });
      if (team !== asked) continue;
      const notices = smtp.to('bulk@acme.example');
      expect(notices).toHaveLength(1);
      expect(notices[0]!.mail.subject).toBe('Bulk send finished: Renewals');
      expect(notices[0]!.mail.text).toContain('2 of 2 rows were sent, 0 failed');
      expect(notices[0]!.mail.text).toContain(`/api/v1/key/bulk-sends/${bulkSendId}/rows`);
      // Recorded on the team's trail as a sent notice.
      const sent = await app.orm.em
        .fork()
        .execute<{ details: any }[]>(`select details from audit_event where team_id = ? and type = 'notice.sent' and details ->> 'kind' = 'bulk_send_completed'`, [team.teamId]);
      expect(sent.map((event) => event.details.bulkSendId)).toEqual([bulkSendId]);
    }
    expect(smtp.to('other-bulk@acme.example')).toEqual([]);
  }, 90_000);
});
