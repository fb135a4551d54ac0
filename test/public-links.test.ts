import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pruneDeliveryHistory } from '../src/domain/notification/delivery-history.ts';
import { unknownId } from './helpers/envelopes.ts';
import { firstErrorName, graphqlClient, restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { codeIn, postForm, publicLinkTemplate, slugOf } from './helpers/public-links.ts';
import { signingLinkIn, startSmtpServer, type TestSmtpServer } from './helpers/smtp.ts';
import { mainWorkerFor } from './helpers/workers.ts';

/*
 * Public links (issue 36) through both faces and the visitor's page: the team's CRUD, a visit
 * verified by a mailed code, the envelope it makes (jumpstart semantics, sent, listable by
 * publicLinkId, audited, webhook), maxUses under 30 racing visitors, pages for unknown, disabled,
 * expired and exhausted links, bounded code guessing, and the per-link and per-address limits.
 */

let app: TestApp;
let smtp: TestSmtpServer;
let team: SeededTeam;
beforeAll(async () => {
  smtp = await startSmtpServer();
  app = await startTestApp({
    env: { SMTP_URL: smtp.url, RATE_LIMIT_PER_MINUTE: '100000', RATE_LIMIT_PUBLIC_LINK_PER_MINUTE: '100000', RATE_LIMIT_PUBLIC_LINK_ADDRESS_PER_MINUTE: '100000' },
    rateLimitsOwnCounters: true,
  });
  team = await seedTeam(app);
}, 60_000);
afterAll(async () => {
  await app?.close();
  await smtp?.close();
});

/** The page of a link on this app (PUBLIC_URL names the configured port, not the test's). */
function pageUrl(url: string, on: TestApp = app): string {
  return `${on.url}/f/${slugOf(url)}`;
}

async function countEnvelopes(publicLinkId: string, apiKey = team.apiKey): Promise<number> {
  const listed = await restClient(app, apiKey).get(`/envelopes?publicLinkId=${publicLinkId}&limit=100`);
  expect(listed.status, JSON.stringify(listed.body)).toBe(200);
  return listed.body.payload.envelopes.length;
}

describe('public links through REST', () => {
  it('creates, reads, lists, disables, re-enables, changes and deletes a link; refusals are named and change nothing', async () => {
    const rest = restClient(app, team.apiKey);
    const template = await publicLinkTemplate(app, team.apiKey);
    const created = await rest.post(`/templates/${template.templateId}/public-links`, { role: 'buyer', name: 'Join us', maxUses: 5 });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const link = created.body.payload.publicLink;
    expect(link).toMatchObject({ role: 'buyer', name: 'Join us', uses: 0, maxUses: 5, expiresAt: null, verifyEmail: true, status: 'active', templateId: template.templateId });
    // The url carries a random slug, never the id.
    expect(link.url).toMatch(new RegExp(`^${app.dependencies.config.publicUrl}/f/[A-Za-z0-9_-]{43}$`));
    expect(link.url).not.toContain(link.id);

    expect((await rest.get(`/public-links/${link.id}`)).body.payload.publicLink).toEqual(link);
    expect((await rest.get('/public-links')).body.payload.publicLinks.map((entry: any) => entry.id)).toContain(link.id);

    const disabled = await rest.patch(`/public-links/${link.id}`, { status: 'disabled' });
    expect(disabled.body.payload.publicLink.status).toBe('disabled');
    expect((await fetch(pageUrl(link.url))).status).toBe(404);
    const enabled = await rest.patch(`/public-links/${link.id}`, { status: 'active', maxUses: null, name: null });
    expect(enabled.body.payload.publicLink).toMatchObject({ status: 'active', maxUses: null, name: null });
    expect((await fetch(pageUrl(link.url))).status).toBe(200);

    // Refusals: bad role, unknown template, bad input, another team's link; nothing made or changed.
    const fixedless = await rest.post(`/templates/${template.templateId}/public-links`, { role: 'nobody' });
    expect([fixedless.status, fixedless.body.error.name, fixedless.body.error.context.reason]).toEqual([400, 'PublicLink.RoleNotUsable', 'unknown']);
    const second = await rest.post(`/templates/${template.templateId}/public-links`, { role: 'countersigner' });
    expect([second.status, second.body.error.context.reason]).toEqual([400, 'not_first']);
    const invalid = await rest.post(`/templates/${template.templateId}/public-links`, {
      role: 'buyer',
      maxUses: 0,
      redirectUrl: 'javascript:alert(1)',
      prefill: { 'buyer-signature': { x: 1 } },
      extra: true,
    });
    expect(invalid.status).toBe(400);
    expect(invalid.body.error.name).toBe('Request.Invalid');
    expect(invalid.body.error.context.issues.map((issue: any) => issue.path).sort()).toEqual(['', 'maxUses', 'redirectUrl'].sort());
    // Sent as raw JSON so that `__proto__` is a key of the body, as a caller's JSON can make it.
    const raw = await fetch(`${app.url}/api/v1/key/templates/${template.templateId}/public-links`, {
      method: 'POST',
      headers: { 'x-service-api-key': team.apiKey, 'content-type': 'application/json' },
      body: '{"role":"buyer","prefill":{"buyer-signature":{},"__proto__":{"text":"x"},"missing":1}}',
    });
    const rawBody = (await raw.json()) as any;
    expect(raw.status).toBe(400);
    expect(rawBody.error.context.issues.map((issue: any) => issue.path).sort()).toEqual(['prefill.__proto__', 'prefill.buyer-signature', 'prefill.missing']);
    expect((await rest.post(`/templates/${unknownId}/public-links`, { role: 'buyer' })).body.error.name).toBe('Template.NotFound');
    const other = await seedTeam(app);
    const foreign = restClient(app, other.apiKey);
    for (const answer of [
      await foreign.get(`/public-links/${link.id}`),
      await foreign.patch(`/public-links/${link.id}`, { status: 'disabled' }),
      await foreign.delete(`/public-links/${link.id}`),
      await foreign.get('/public-links/not-an-id'),
    ]) {
      expect([answer.status, answer.body.error.name]).toEqual([404, 'PublicLink.NotFound']);
    }
    expect((await foreign.get('/public-links')).body.payload.publicLinks).toEqual([]);
    expect((await rest.get(`/public-links/${link.id}`)).body.payload.publicLink.status).toBe('active');
    expect((await rest.get('/public-links')).body.payload.publicLinks).toHaveLength(1);

    // The same Idempotency-Key and body answer the first link again; another body is refused.
    const keyed = await rest.post(`/templates/${template.templateId}/public-links`, { role: 'buyer' }, { 'idempotency-key': 'link-1' });
    const repeated = await rest.post(`/templates/${template.templateId}/public-links`, { role: 'buyer' }, { 'idempotency-key': 'link-1' });
    expect(repeated.body.payload.publicLink.id).toBe(keyed.body.payload.publicLink.id);
    expect((await rest.post(`/templates/${template.templateId}/public-links`, { role: 'buyer', maxUses: 2 }, { 'idempotency-key': 'link-1' })).body.error.name).toBe(
      'Request.IdempotencyKeyReused',
    );
    expect((await rest.get('/public-links')).body.payload.publicLinks).toHaveLength(2);
    await rest.delete(`/public-links/${keyed.body.payload.publicLink.id}`);

    expect((await rest.delete(`/public-links/${link.id}`)).body.payload).toEqual({ deleted: true });
    expect((await rest.get(`/public-links/${link.id}`)).body.error.name).toBe('PublicLink.NotFound');
    expect((await fetch(pageUrl(link.url))).status).toBe(404);
  });
});

describe('public links through GraphQL', () => {
  it('createPublicLink, publicLinks, updatePublicLink, deletePublicLink, with the same refusals', async () => {
    const graphql = graphqlClient(app, team.apiKey);
    const template = await publicLinkTemplate(app, team.apiKey);
    const fields = 'id url role name uses maxUses expiresAt verifyEmail status redirectUrl';
    const created = await graphql(`mutation($t: ID!, $input: CreatePublicLinkInput!) { createPublicLink(templateId: $t, input: $input) { ${fields} } }`, {
      t: template.templateId,
      input: { role: 'buyer', maxUses: 3, expiresAt: '2099-01-01T00:00:00Z', verifyEmail: false, redirectUrl: 'https://example.com/thanks' },
    });
    expect(created.errors).toBeUndefined();
    const link = created.data.createPublicLink;
    expect(link).toMatchObject({
      role: 'buyer',
      uses: 0,
      maxUses: 3,
      expiresAt: '2099-01-01T00:00:00.000Z',
      verifyEmail: false,
      status: 'active',
      redirectUrl: 'https://example.com/thanks',
    });
    // The same link on the REST face.
    expect((await restClient(app, team.apiKey).get(`/public-links/${link.id}`)).body.payload.publicLink.url).toBe(link.url);

    const listed = await graphql(`{ publicLinks(first: 50) { nodes { id status } } }`);
    expect(listed.data.publicLinks.nodes).toContainEqual({ id: link.id, status: 'active' });
    const updated = await graphql(`mutation($id: ID!) { updatePublicLink(id: $id, input: { status: "disabled", expiresAt: null }) { status expiresAt } }`, { id: link.id });
    expect(updated.data.updatePublicLink).toEqual({ status: 'disabled', expiresAt: null });
    const refused = await graphql(`mutation($t: ID!) { createPublicLink(templateId: $t, input: { role: "countersigner" }) { id } }`, { t: template.templateId });
    expect(firstErrorName(refused)).toBe('PublicLink.RoleNotUsable');
    const badStatus = await graphql(`mutation($id: ID!) { updatePublicLink(id: $id, input: { status: "gone" }) { id } }`, { id: link.id });
    expect(firstErrorName(badStatus)).toBe('Request.Invalid');
    const other = await seedTeam(app);
    expect(firstErrorName(await graphqlClient(app, other.apiKey)(`query($id: ID!) { publicLink(id: $id) { id } }`, { id: link.id }))).toBe('PublicLink.NotFound');
    const deleted = await graphql(`mutation($id: ID!) { deletePublicLink(id: $id) { id } }`, { id: link.id });
    expect(deleted.data.deletePublicLink).toEqual({ id: link.id });
    expect(firstErrorName(await graphql(`query($id: ID!) { publicLink(id: $id) { id } }`, { id: link.id }))).toBe('PublicLink.NotFound');
  });
});

describe('a visitor of a public link', () => {
  it('gets a code by mail; nothing exists until it is entered; then the envelope is made from the template, sent, audited, listed and announced', async () => {
    const rest = restClient(app, team.apiKey);
    const template = await publicLinkTemplate(app, team.apiKey, { countersignerEmail: 'cora.visit@example.com' });
    const webhook = await rest.post('/webhooks', { url: 'https://hooks.example.com/public-links', eventTypes: ['public_link.used'] });
    expect(webhook.status, JSON.stringify(webhook.body)).toBe(200);
    const link = (await rest.post(`/templates/${template.templateId}/public-links`, { role: 'buyer', redirectUrl: 'https://example.com/thanks' })).body.payload.publicLink;
    const slug = slugOf(link.url);

    const page = await fetch(pageUrl(link.url), { headers: { 'accept-language': 'tr-TR,tr;q=0.9' } });
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('<html lang="tr-TR">');
    expect(html).toContain('Membership form');
    expect(html).not.toContain('name="phone"');

    const bad = await postForm(app, `/f/${slug}`, { name: '', email: 'not-an-address', locale: 'en-US' });
    expect([bad.status, bad.error]).toEqual([400, 'Request.Invalid']);
    const started = await postForm(app, `/f/${slug}`, { name: 'Vera Visitor', email: 'Vera@Example.com', locale: 'en-US' }, { 'user-agent': 'VisitorBrowser/1.0' });
    expect(started.status, started.body).toBe(200);
    expect(started.visit).toMatch(/^plv_/);
    // An abandoned visit so far: no envelope, no use, only the code's mail queued.
    expect(await countEnvelopes(link.id)).toBe(0);
    expect((await rest.get(`/public-links/${link.id}`)).body.payload.publicLink.uses).toBe(0);
    // Asking again at once is refused by the resend interval: one mail.
    const again = await postForm(app, `/f/${slug}`, { name: 'Vera Visitor', email: 'vera@example.com', locale: 'en-US' });
    expect([again.status, again.error]).toEqual([429, 'Signing.OtpRateLimited']);

    const worker = mainWorkerFor(app, team.teamId);
    await worker.drain();
    const mails = smtp.to('vera@example.com');
    expect(mails).toHaveLength(1);
    const code = codeIn(mails[0]!.mail.text);
    expect(code).toMatch(/^\d{6}$/);
    const wrong = code === '000000' ? '111111' : '000000';
    // As the page's form posts it: the visit, the code, and its hidden details.
    const refused = await postForm(app, `/f/${slug}/verify`, { visit: started.visit!, code: wrong, locale: 'en-US', name: 'Vera Visitor', email: 'vera@example.com' });
    expect([refused.status, refused.error]).toEqual([400, 'Signing.OtpInvalid']);
    expect(refused.visit).toBe(started.visit);
    // The code form again, still naming the address (and able to send a new code to it).
    expect(refused.body).toContain('We sent a 6-digit code to vera@example.com');
    expect(refused.body).toContain('name="email" value="vera@example.com"');
    expect(await countEnvelopes(link.id)).toBe(0);

    // Typed with a space and a dash, as people do.
    const verified = await postForm(
      app,
      `/f/${slug}/verify`,
      { visit: started.visit!, code: `${code!.slice(0, 3)} -${code!.slice(3)}`, locale: 'en-US' },
      { 'user-agent': 'VisitorBrowser/1.0' },
    );
    expect(verified.status, verified.body).toBe(303);
    expect(verified.headers.get('location')).toMatch(/^\/sign\/sgu_[A-Za-z0-9_-]{43}$/);
    const replay = await postForm(app, `/f/${slug}/verify`, { visit: started.visit!, code: code!, locale: 'en-US' });
    expect(replay.error).toBe('Signing.OtpAlreadyUsed');

    const listed = (await rest.get(`/envelopes?publicLinkId=${link.id}`)).body.payload.envelopes;
    expect(listed).toHaveLength(1);
    const envelope = listed[0];
    expect(envelope).toMatchObject({ status: 'sent', templateId: template.templateId, publicLinkId: link.id, name: 'Membership form' });
    const viaGraphql = await graphqlClient(app, team.apiKey)(`query($l: ID!) { envelopes(publicLinkId: $l) { nodes { id publicLinkId status } } }`, { l: link.id });
    expect(viaGraphql.data.envelopes.nodes).toEqual([{ id: envelope.id, publicLinkId: link.id, status: 'sent' }]);
    expect((await rest.get(`/public-links/${link.id}`)).body.payload.publicLink.uses).toBe(1);

    // Jumpstart semantics: the visitor is the buyer, the template's contact the countersigner, in the template's order.
    const full = (await rest.get(`/envelopes/${envelope.id}?includeRecipients=true`)).body.payload;
    const roles = Object.fromEntries(full.recipients.map((recipient: any) => [recipient.identifier, recipient]));
    expect(roles.buyer.agents[0].info).toMatchObject({ name: 'Vera Visitor', email: 'vera@example.com' });
    expect(roles.buyer.activatedAt).not.toBeNull();
    expect(roles.countersigner.activatedAt).toBeNull();

    const audit = (await rest.get(`/envelopes/${envelope.id}/audit`)).body.payload.events;
    const used = audit.find((event: any) => event.type === 'public_link.used');
    expect(used).toMatchObject({ ip: '127.0.0.1', userAgent: 'VisitorBrowser/1.0' });
    expect(used.details).toMatchObject({ publicLinkId: link.id, email: 'vera@example.com', emailVerified: true, name: 'Vera Visitor' });
    expect(audit.map((event: any) => event.type)).toEqual(expect.arrayContaining(['envelope.created', 'public_link.used', 'envelope.sent', 'signing_url.created']));
    const deliveries = (await rest.get(`/webhooks/${webhook.body.payload.webhook.id}/deliveries`)).body.payload.deliveries;
    expect(deliveries.map((delivery: any) => [delivery.eventType, delivery.envelopeId])).toEqual([['public_link.used', envelope.id]]);

    // The visitor's invitation goes out like any signer's; the countersigner waits for their turn.
    await worker.drain();
    expect(smtp.to('vera@example.com').some((entry) => signingLinkIn(entry))).toBe(true);
    expect(smtp.to('cora.visit@example.com')).toHaveLength(0);
    await worker.stop();
  });

  it('asks for a phone when the template reaches the role by phone; the visitor’s phone becomes the agent’s', async () => {
    const rest = restClient(app, team.apiKey);
    const template = await publicLinkTemplate(app, team.apiKey);
    const phoned = (await rest.post('/contacts', { name: 'Default Buyer', email: 'default@example.com', phone: '+905551112233' })).body.payload.contact;
    expect((await rest.patch(`/templates/${template.templateId}/recipients/${template.signerId}`, { recipient: { contactId: phoned.id } })).status).toBe(200);
    const link = (await rest.post(`/templates/${template.templateId}/public-links`, { role: 'buyer', verifyEmail: false })).body.payload.publicLink;
    const html = await (await fetch(pageUrl(link.url))).text();
    expect(html).toContain('name="phone"');
    const slug = slugOf(link.url);
    const missing = await postForm(app, `/f/${slug}`, { name: 'Pia Phone', email: 'pia@example.com', locale: 'en-US' });
    expect([missing.status, missing.error]).toEqual([400, 'Request.Invalid']);
    expect(missing.body).toContain('Mobile phone');
    expect(await countEnvelopes(link.id)).toBe(0);
    const made = await postForm(app, `/f/${slug}`, { name: 'Pia Phone', email: 'pia@example.com', phone: '+90 555 444 3322', locale: 'en-US' });
    expect(made.status, made.body).toBe(303);
    const [envelope] = (await rest.get(`/envelopes?publicLinkId=${link.id}`)).body.payload.envelopes;
    const buyer = (await rest.get(`/envelopes/${envelope.id}?includeRecipients=true`)).body.payload.recipients.find((recipient: any) => recipient.identifier === 'buyer');
    expect(buyer.agents[0].info).toMatchObject({ name: 'Pia Phone', phone: '+905554443322' });
  });

  it('the right code entered in five tabs at once makes one envelope', async () => {
    const template = await publicLinkTemplate(app, team.apiKey);
    const link = (await restClient(app, team.apiKey).post(`/templates/${template.templateId}/public-links`, { role: 'buyer' })).body.payload.publicLink;
    const slug = slugOf(link.url);
    const started = await postForm(app, `/f/${slug}`, { name: 'Tia Tabs', email: 'tia@example.com', locale: 'en-US' });
    const worker = mainWorkerFor(app, team.teamId);
    await worker.drain();
    await worker.stop();
    const code = codeIn(smtp.to('tia@example.com')[0]!.mail.text)!;
    const tries = await Promise.all(Array.from({ length: 5 }, () => postForm(app, `/f/${slug}/verify`, { visit: started.visit!, code, locale: 'en-US' })));
    expect(tries.filter((attempt) => attempt.status === 303)).toHaveLength(1);
    expect(tries.filter((attempt) => attempt.status !== 303).map((attempt) => attempt.error)).toEqual(Array.from({ length: 4 }, () => 'Signing.OtpAlreadyUsed'));
    expect(await countEnvelopes(link.id)).toBe(1);
    expect((await restClient(app, team.apiKey).get(`/public-links/${link.id}`)).body.payload.publicLink.uses).toBe(1);
  });

  it('a thousand racing guesses take five attempts; then the code is used up; no envelope', async () => {
    const template = await publicLinkTemplate(app, team.apiKey);
    const link = (await restClient(app, team.apiKey).post(`/templates/${template.templateId}/public-links`, { role: 'buyer' })).body.payload.publicLink;
    const slug = slugOf(link.url);
    const started = await postForm(app, `/f/${slug}`, { name: 'Gus Guesser', email: 'gus@example.com', locale: 'en-US' });
    const guesses = await Promise.all(Array.from({ length: 60 }, (_, index) => postForm(app, `/f/${slug}/verify`, { visit: started.visit!, code: String(100000 + index), locale: 'en-US' })));
    const names = guesses.map((guess) => guess.error);
    expect(guesses.every((guess) => guess.status < 500)).toBe(true);
    expect(names.filter((name) => name === 'Signing.OtpInvalid').length).toBeLessThanOrEqual(5);
    expect(names.filter((name) => name === 'Signing.OtpAttemptsExhausted').length).toBeGreaterThanOrEqual(55);
    const [row] = await app.orm.em.fork().getConnection().execute('select attempts from public_link_visit where email = ?', ['gus@example.com']);
    expect(row.attempts).toBe(5);
    expect(await countEnvelopes(link.id)).toBe(0);
    // The abandoned visit (a person's name and address) goes with the delivery history's retention.
    const prune = (days: number) => pruneDeliveryHistory({ em: app.orm.em, now: new Date(Date.now() + days * 24 * 3600 * 1000), retentionDays: 30, teamId: team.teamId });
    expect((await prune(29)).publicLinkVisits).toBe(0);
    expect((await prune(31)).publicLinkVisits).toBeGreaterThanOrEqual(1);
    expect(await app.orm.em.fork().getConnection().execute('select id from public_link_visit where email = ?', ['gus@example.com'])).toEqual([]);
    // Malformed codes and unknown visits take nothing and make nothing.
    expect((await postForm(app, `/f/${slug}/verify`, { visit: started.visit!, code: 'x'.repeat(65), locale: 'en-US' })).error).toBe('Request.Invalid');
    expect((await postForm(app, `/f/${slug}/verify`, { visit: 'plv_unknown', code: '123456' })).error).toBe('PublicLink.VisitNotFound');
    const huge = await postForm(app, `/f/${slug}`, { name: 'x'.repeat(20_000), email: 'a@example.com' });
    expect([huge.status, huge.error]).toEqual([400, 'Request.Invalid']);
  });
});

describe('maxUses, and links that do not work', () => {
  it('30 visitors racing for maxUses 10 make exactly 10 envelopes; the others get the exhausted page', async () => {
    const rest = restClient(app, team.apiKey);
    const template = await publicLinkTemplate(app, team.apiKey);
    const link = (await rest.post(`/templates/${template.templateId}/public-links`, { role: 'buyer', maxUses: 10, verifyEmail: false })).body.payload.publicLink;
    const slug = slugOf(link.url);
    const visits = await Promise.all(Array.from({ length: 30 }, (_, index) => postForm(app, `/f/${slug}`, { name: `Racer ${index}`, email: `racer${index}@example.com`, locale: 'en-US' })));
    expect(visits.filter((visit) => visit.status === 303)).toHaveLength(10);
    const refused = visits.filter((visit) => visit.status !== 303);
    expect(refused.map((visit) => [visit.status, visit.error])).toEqual(Array.from({ length: 20 }, () => [410, 'PublicLink.Exhausted']));
    expect(await countEnvelopes(link.id)).toBe(10);
    expect((await rest.get(`/public-links/${link.id}`)).body.payload.publicLink).toMatchObject({ uses: 10, status: 'exhausted' });
    const page = await fetch(pageUrl(link.url));
    expect(page.status).toBe(410);
    // maxUses below the uses made is refused; raising it opens the link again.
    expect((await rest.patch(`/public-links/${link.id}`, { maxUses: 9 })).body.error.context.issues[0].path).toBe('maxUses');
    expect((await rest.patch(`/public-links/${link.id}`, { maxUses: 11 })).body.payload.publicLink.status).toBe('active');
  });

  it('unknown and disabled links answer the same 404 page; an expired link 410', async () => {
    const rest = restClient(app, team.apiKey);
    const template = await publicLinkTemplate(app, team.apiKey);
    const link = (await rest.post(`/templates/${template.templateId}/public-links`, { role: 'buyer' })).body.payload.publicLink;
    await rest.patch(`/public-links/${link.id}`, { status: 'disabled' });
    const disabled = await fetch(pageUrl(link.url));
    const unknown = await fetch(`${app.url}/f/${'A'.repeat(43)}`);
    expect([disabled.status, unknown.status]).toEqual([404, 404]);
    expect(await disabled.text()).toBe(await unknown.text());
    const posted = [await postForm(app, `/f/${slugOf(link.url)}`, { name: 'A', email: 'a@example.com' }), await postForm(app, `/f/${'A'.repeat(43)}`, { name: 'A', email: 'a@example.com' })];
    expect(posted.map((answer) => [answer.status, answer.error])).toEqual([
      [404, 'PublicLink.Unavailable'],
      [404, 'PublicLink.Unavailable'],
    ]);
    expect(posted[0]!.body).toBe(posted[1]!.body);

    await rest.patch(`/public-links/${link.id}`, { status: 'active', expiresAt: new Date(Date.now() - 1000).toISOString() });
    expect((await rest.get(`/public-links/${link.id}`)).body.payload.publicLink.status).toBe('expired');
    const expired = await fetch(pageUrl(link.url), { headers: { 'accept-language': 'tr' } });
    expect(expired.status).toBe(410);
    expect(await expired.text()).toContain('Bu formun süresi doldu');
  });
});

describe('rate limits of public links', () => {
  it('per link and per address: past the budget a 429 page with Retry-After, before any database work', async () => {
    const limited = await startTestApp({
      env: { RATE_LIMIT_PUBLIC_LINK_PER_MINUTE: '3', RATE_LIMIT_PUBLIC_LINK_ADDRESS_PER_MINUTE: '5', TRUST_PROXY_HOPS: '1' },
      rateLimitsOwnCounters: true,
    });
    try {
      const owner = await seedTeam(limited);
      const template = await publicLinkTemplate(limited, owner.apiKey);
      const link = (await restClient(limited, owner.apiKey).post(`/templates/${template.templateId}/public-links`, { role: 'buyer' })).body.payload.publicLink;
      const statuses: number[] = [];
      for (let index = 0; index < 4; index += 1) statuses.push((await fetch(pageUrl(link.url, limited))).status);
      expect(statuses).toEqual([200, 200, 200, 429]);
      const refused = await fetch(pageUrl(link.url, limited));
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(await refused.text()).toContain('data-error="Request.RateLimited"');
      // The flooding address is now over its own budget on every link...
      expect((await fetch(`${limited.url}/f/${'B'.repeat(43)}`)).status).toBe(429);
      // ...while another team's link, visited from elsewhere, answers as usual.
      const otherTeam = await seedTeam(limited);
      const otherTemplate = await publicLinkTemplate(limited, otherTeam.apiKey);
      const otherLink = (await restClient(limited, otherTeam.apiKey).post(`/templates/${otherTemplate.templateId}/public-links`, { role: 'buyer' })).body.payload.publicLink;
      expect((await fetch(pageUrl(otherLink.url, limited), { headers: { 'x-forwarded-for': '203.0.113.7' } })).status).toBe(200);
    } finally {
      await limited.close();
    }
  });
});
