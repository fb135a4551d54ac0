/**
 * Bulk send (issue 22), through both faces, with the real outbox worker and a real SMTP server:
 * every row becomes an envelope made from the template and sent exactly once (one invitation per
 * person), from JSON and from CSV; invalid rows are reported by index; a bulk send survives its
 * worker being killed mid-run, can be cancelled half-way, and does not hold up another team.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOutboxWorker, type OutboxHandler } from '../src/domain/outbox/outbox-worker.ts';
import { OUTBOX_TOPICS } from '../src/domain/outbox/topics.ts';
import { type Clock, createClock } from '../src/shared/clock.ts';
import { createLogger } from '../src/shared/logger.ts';
import { mainJobHandlers } from '../src/workers.ts';
import { frozenClock } from './helpers/clocks.ts';
import { eventually } from './helpers/eventually.ts';
import { graphqlClient, restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { subscribe } from './helpers/live.ts';
import { startSmtpServer, type TestSmtpServer } from './helpers/smtp.ts';
import { createReadyTemplate } from './helpers/templates.ts';
import { mainWorkerFor, workerDependencies } from './helpers/workers.ts';

let app: TestApp;
let smtp: TestSmtpServer;

beforeAll(async () => {
  smtp = await startSmtpServer();
  // No pace here (the pace has its own test); a budget the 500 rows and the test's reads fit in.
  app = await startTestApp({ env: { SMTP_URL: smtp.url, BULK_SEND_ROWS_PER_MINUTE: '0', BULK_SEND_ROWS_IN_FLIGHT: '25', RATE_LIMIT_PER_MINUTE: '100000' }, rateLimitsOwnCounters: true });
});
afterAll(async () => {
  await app?.close();
  await smtp?.close();
});

function callerOf(team: SeededTeam) {
  return { team, rest: restClient(app, team.apiKey), graphql: graphqlClient(app, team.apiKey) };
}
type Caller = ReturnType<typeof callerOf>;

/** The ready template (a `buyer` signer, a signature) plus a read-only text `company` and an editable checkbox `newsletter`. */
async function bulkTemplate(caller: Caller) {
  const ready = await createReadyTemplate(app, caller.team.apiKey, { name: 'Renewal' });
  const added = await caller.rest.post(`/templates/${ready.templateId}/fields`, {
    fields: [
      {
        type: 'text',
        recipientId: ready.signerId,
        identifier: 'company',
        readonly: true,
        value: { text: 'Default Ltd' },
        views: [{ documentId: ready.documentId, page: 0, location: { x: 50, y: 100 }, size: { width: 200, height: 20 } }],
      },
      {
        type: 'checkbox',
        recipientId: ready.signerId,
        identifier: 'newsletter',
        required: false,
        views: [{ documentId: ready.documentId, page: 0, location: { x: 50, y: 140 }, size: { width: 16, height: 16 } }],
      },
    ],
  });
  expect(added.status).toBe(200);
  return ready;
}

/** Runs the team's jobs until none is due. */
async function drainAll(teamId: string | string[], clock: Clock = app.dependencies.clock) {
  const teams = Array.isArray(teamId) ? teamId : [teamId];
  const worker = mainWorkerFor(app, teams[0]!, { payloadMatch: teams.map((id) => ({ teamId: id })), concurrency: 2, dependencies: { clock } });
  let handled = 0;
  for (let round = 0; round < 10_000; round += 1) {
    const count = await worker.drain();
    handled += count;
    if (count === 0) break;
  }
  return handled;
}

function invitationsTo(address: string) {
  return smtp.to(address).filter((entry) => /sign/i.test(entry.mail.text ?? ''));
}

const person = (prefix: string, index: number) => ({ name: `${prefix} Person ${index}`, email: `${prefix}-${index}@example.com` });

async function allRows(caller: Caller, bulkSendId: string, status?: string) {
  const rows: any[] = [];
  let cursor: string | null = null;
  do {
    const query = new URLSearchParams({ limit: '100', ...(status ? { status } : {}), ...(cursor ? { cursor } : {}) });
    const page = await caller.rest.get(`/bulk-sends/${bulkSendId}/rows?${query}`);
    expect(page.status).toBe(200);
    rows.push(...page.body.payload.rows);
    cursor = page.body.payload.nextCursor;
  } while (cursor);
  return rows;
}

describe('bulk send from JSON (REST)', () => {
  // 200 rows: eight steps of 25 rows with 25 in flight, the same steps, claims and mails as more
  // would take (five hundred took about 54 s of CI; the pace at scale is bench:bulk's to measure).
  const ROWS = 200;
  it(`makes and sends ${ROWS} envelopes, each exactly once, with prefilled values, the bulk send named in each trail`, async () => {
    const caller = callerOf(await seedTeam(app));
    const ready = await bulkTemplate(caller);
    const prefix = `json${Date.now().toString(36)}`;
    const rows = Array.from({ length: ROWS }, (_, index) => ({
      recipients: [{ identifier: 'buyer', agents: [{ info: person(prefix, index) }] }],
      name: `Renewal ${index}`,
      context: { row: index },
      values: { company: { text: `Company ${index}` }, ...(index % 2 === 0 ? { newsletter: { checked: true } } : {}) },
    }));
    const started = Date.now();
    const created = await caller.rest.post(`/templates/${ready.templateId}/bulk-sends`, { name: 'Renewals', rows }, { 'idempotency-key': `${prefix}-once` });
    expect(created.status).toBe(200);
    const { bulkSendId } = created.body.payload;
    expect(Object.keys(created.body.payload)).toEqual(['bulkSendId']);
    // The same request again under the same key: the same bulk send, nothing more queued.
    const repeated = await caller.rest.post(`/templates/${ready.templateId}/bulk-sends`, { name: 'Renewals', rows }, { 'idempotency-key': `${prefix}-once` });
    expect(repeated.body.payload).toEqual({ bulkSendId });

    const queued = (await caller.rest.get(`/bulk-sends/${bulkSendId}`)).body.payload.bulkSend;
    expect(queued).toMatchObject({ id: bulkSendId, templateId: ready.templateId, status: 'queued', total: ROWS, created: 0, sent: 0, failed: 0, completedAt: null });

    await drainAll(caller.team.teamId);
    const elapsedMs = Date.now() - started;
    const done = (await caller.rest.get(`/bulk-sends/${bulkSendId}`)).body.payload.bulkSend;
    expect(done).toMatchObject({ status: 'completed', total: ROWS, created: ROWS, sent: ROWS, failed: 0 });
    expect(done.completedAt).not.toBeNull();
    console.log(`bulk send of ${ROWS} rows: ${elapsedMs} ms to sent and mailed`);

    // One invitation per person, none twice.
    for (let index = 0; index < ROWS; index += 1) expect(invitationsTo(`${prefix}-${index}@example.com`)).toHaveLength(1);

    const sent = await allRows(caller, bulkSendId, 'sent');
    expect(sent).toHaveLength(ROWS);
    expect(sent.map((row) => row.index)).toEqual(Array.from({ length: ROWS }, (_, index) => index));
    expect(new Set(sent.map((row) => row.envelopeId)).size).toBe(ROWS);
    expect(await allRows(caller, bulkSendId, 'failed')).toEqual([]);

    // Row 7's envelope: the template's copy, the row's name and context, the values prefilled (read-only stays read-only).
    const envelopeId = sent[7].envelopeId;
    const envelope = (await caller.rest.get(`/envelopes/${envelopeId}?includeRecipients=true&includeFields=true`)).body.payload;
    expect(envelope.envelope).toMatchObject({ name: 'Renewal 7', status: 'sent', context: { row: 7 }, templateId: ready.templateId });
    const fields = Object.fromEntries(envelope.fields.map((field: any) => [field.identifier, field]));
    expect(fields.company).toMatchObject({ readonly: true, value: { text: 'Company 7' } });
    expect(fields.newsletter).toMatchObject({ readonly: false, value: null });
    expect(
      Object.fromEntries((await caller.rest.get(`/envelopes/${sent[8].envelopeId}?includeFields=true`)).body.payload.fields.map((field: any) => [field.identifier, field.value])).newsletter,
    ).toEqual({ checked: true });
    const audit = (await caller.rest.get(`/envelopes/${envelopeId}/audit`)).body.payload.events;
    expect(audit.find((event: any) => event.type === 'envelope.created').details).toMatchObject({ bulkSendId, bulkSendRow: 7, templateId: ready.templateId });
    expect(audit.map((event: any) => event.type)).toContain('envelope.sent');
    // The mail quotes the row's envelope name.
    expect(invitationsTo(`${prefix}-7@example.com`)[0]!.mail.subject).toContain('Renewal 7');
  }, 480_000);

  it('honours an approver role and its quorum: each row’s envelope starts with its approvers, and a row with fewer agents than the quorum fails by name', async () => {
    const caller = callerOf(await seedTeam(app));
    const ready = await createReadyTemplate(app, caller.team.apiKey, { name: 'Board approval' });
    const role = await caller.rest.post(`/templates/${ready.templateId}/recipients`, { recipient: { type: 'approver', identifier: 'board', roleName: 'Board', order: 0, quorum: 2 } });
    expect(role.status, JSON.stringify(role.body)).toBe(200);
    const prefix = `approver${Date.now().toString(36)}`;
    const row = (index: number, approvers: number) => ({
      recipients: [
        { identifier: 'buyer', agents: [{ info: person(`${prefix}-buyer`, index) }] },
        { identifier: 'board', agents: Array.from({ length: approvers }, (_, member) => ({ info: person(`${prefix}-board${index}`, member) })) },
      ],
    });
    const created = await caller.rest.post(`/templates/${ready.templateId}/bulk-sends`, { name: 'Approvals', rows: [row(0, 3), row(1, 1)] });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    await drainAll(caller.team.teamId);
    const { bulkSendId } = created.body.payload;
    expect((await caller.rest.get(`/bulk-sends/${bulkSendId}`)).body.payload.bulkSend).toMatchObject({ status: 'completed', total: 2, sent: 1, failed: 1 });
    const [sent] = await allRows(caller, bulkSendId, 'sent');
    const recipients = (await caller.rest.get(`/envelopes/${sent.envelopeId}?includeRecipients=true`)).body.payload.recipients;
    expect(recipients.find((recipient: any) => recipient.identifier === 'board')).toMatchObject({ type: 'approver', quorum: 2 });
    // The approvers act first: they are invited, the buyer not yet.
    for (let member = 0; member < 3; member += 1) expect(invitationsTo(`${prefix}-board0-${member}@example.com`)).toHaveLength(1);
    expect(invitationsTo(`${prefix}-buyer-0@example.com`)).toHaveLength(0);
    const [failed] = await allRows(caller, bulkSendId, 'failed');
    expect(JSON.stringify(failed)).toContain('Recipient.QuorumExceedsAgents');
  }, 120_000);

  it('refuses invalid rows by index with every problem, creating nothing; skipInvalidRows sends the rest and records the others as failed', async () => {
    const caller = callerOf(await seedTeam(app));
    const ready = await bulkTemplate(caller);
    const good = (index: number) => ({ recipients: [{ identifier: 'buyer', agents: [{ info: person('skip', index) }] }] });
    const rows = [
      good(0),
      { recipients: [{ identifier: 'seller', agents: [{ info: { name: 'Nobody' } }] }] },
      good(2),
      { recipients: [{ identifier: 'buyer', agents: [{ info: { name: 'Bad Mail', email: 'not-an-address' } }] }] },
      { recipients: [] },
      { recipients: [{ identifier: 'buyer', agents: [{ info: person('skip', 5) }] }], values: { 'buyer-signature': { kind: 'typed', text: 'Me', font: 'serif' } } },
      {
        recipients: [{ identifier: 'buyer', agents: [{ info: person('skip', 6) }] }],
        values: { company: { text: 'x'.repeat(20_000) }, nothing: { text: 'y' }, newsletter: { checked: 'maybe' } },
      },
    ];
    const refused = await caller.rest.post(`/templates/${ready.templateId}/bulk-sends`, { rows });
    expect(refused.status).toBe(400);
    expect(refused.body.error.name).toBe('Request.Invalid');
    const invalid = refused.body.error.context.rows;
    expect(invalid.map((row: any) => row.index)).toEqual([1, 3, 4, 5, 6]);
    const paths = (index: number) => invalid.find((row: any) => row.index === index).issues.map((issue: any) => issue.path);
    expect(paths(1)).toContain('recipients[0]');
    expect(paths(3)).toEqual(['recipients[0].agents[0].info.email']);
    // Every problem of a row: each value checked against its field.
    expect(paths(6)).toEqual(expect.arrayContaining(['values.nothing']));
    expect(paths(6).some((path: string) => path.startsWith('values.company'))).toBe(true);
    expect(paths(6).some((path: string) => path.startsWith('values.newsletter'))).toBe(true);
    expect(paths(4)).toEqual(['recipients']);
    expect(paths(5)).toEqual(['values.buyer-signature']);
    expect(refused.body.error.context.issues.map((issue: any) => issue.path)).toContain('rows[6].values.nothing');
    expect((await caller.rest.get('/bulk-sends')).body.payload.bulkSends).toEqual([]);

    // An endpoint for every event type: bulk_send.completed reaches it with the counts.
    expect((await caller.rest.post('/webhooks', { url: 'https://example.com/bulk-hook' })).status).toBe(200);
    const skipping = await caller.rest.post(`/templates/${ready.templateId}/bulk-sends`, { rows, skipInvalidRows: true });
    expect(skipping.status).toBe(200);
    const { bulkSendId } = skipping.body.payload;
    expect((await caller.rest.get(`/bulk-sends/${bulkSendId}`)).body.payload.bulkSend).toMatchObject({ total: 7, failed: 5, sent: 0 });
    await drainAll(caller.team.teamId);
    expect((await caller.rest.get(`/bulk-sends/${bulkSendId}`)).body.payload.bulkSend).toMatchObject({ status: 'completed', total: 7, created: 2, sent: 2, failed: 5 });
    const failed = await allRows(caller, bulkSendId, 'failed');
    expect(failed.map((row) => row.index)).toEqual([1, 3, 4, 5, 6]);
    expect(failed[0]).toMatchObject({ envelopeId: null, error: { name: 'Request.Invalid', context: { issues: [expect.objectContaining({ path: 'recipients[0]' })] } } });
    expect(invitationsTo('skip-0@example.com')).toHaveLength(1);
    expect(invitationsTo('skip-2@example.com')).toHaveLength(1);
    expect(invitationsTo('skip-5@example.com')).toHaveLength(0);
    const deliveries = await app.orm.em
      .fork()
      .execute<{ event_type: string; payload: any }[]>(`select event_type, payload from webhook_delivery where team_id = ? and event_type like 'bulk_send.%' order by created_at`, [
        caller.team.teamId,
      ]);
    expect(deliveries.map((delivery) => delivery.event_type)).toEqual(['bulk_send.created', 'bulk_send.completed']);
    expect(deliveries[1]!.payload).toMatchObject({
      type: 'bulk_send.completed',
      envelopeId: null,
      data: { bulkSendId, templateId: ready.templateId, total: 7, created: 2, sent: 2, failed: 5 },
    });
  }, 60_000);

  it('takes at most 1,000 rows; refuses an unknown template and a foreign bulk send by name', async () => {
    const caller = callerOf(await seedTeam(app));
    const ready = await bulkTemplate(caller);
    const rows = Array.from({ length: 1001 }, (_, index) => ({ recipients: [{ identifier: 'buyer', agents: [{ info: person('many', index) }] }] }));
    const refused = await caller.rest.post(`/templates/${ready.templateId}/bulk-sends`, { rows });
    expect(refused.status).toBe(422);
    expect(refused.body.error).toMatchObject({ name: 'BulkSend.TooManyRows', context: { limit: 1000, given: 1001 } });
    expect((await caller.rest.post(`/templates/00000000-0000-4000-8000-000000000000/bulk-sends`, { rows: rows.slice(0, 1) })).body.error.name).toBe('Template.NotFound');
    const mine = (await caller.rest.post(`/templates/${ready.templateId}/bulk-sends`, { rows: rows.slice(0, 1) })).body.payload.bulkSendId;
    const other = callerOf(await seedTeam(app));
    for (const path of [`/bulk-sends/${mine}`, `/bulk-sends/${mine}/rows`, '/bulk-sends/not-an-id']) expect((await other.rest.get(path)).body.error.name).toBe('BulkSend.NotFound');
    expect((await other.rest.post(`/bulk-sends/${mine}/cancel`)).body.error.name).toBe('BulkSend.NotFound');
    await drainAll(caller.team.teamId);
  }, 60_000);
});

describe('bulk send from CSV (REST multipart)', () => {
  it('reads a UTF-8 file with a BOM, quoted commas and Turkish names: 50 envelopes, one invitation each', async () => {
    const caller = callerOf(await seedTeam(app));
    const ready = await bulkTemplate(caller);
    const turkish = ['Çağrı Işık', 'Şule Öztürk', 'İbrahim Güneş', 'Ayşe Yılmaz', 'Gökhan Çelik'];
    const lines = ['buyer.name,buyer.email,buyer.locale,envelope.name,field.company,field.newsletter'];
    for (let index = 0; index < 50; index += 1) {
      const name = `${turkish[index % turkish.length]} ${index}`;
      lines.push(`"${name}",csv-${index}@example.com,tr-TR,"Sözleşme ${index}","Acme, ""Ltd"" ${index}",${index % 2 === 0 ? 'yes' : ''}`);
    }
    const file = `\ufeff${lines.join('\r\n')}\r\n`;
    const form = new FormData();
    form.append('csv', new Blob([Buffer.from(file, 'utf8')], { type: 'text/csv' }), 'rows.csv');
    form.append('name', 'CSV renewals');
    const response = await fetch(`${app.url}/api/v1/key/templates/${ready.templateId}/bulk-sends`, { method: 'POST', headers: { 'x-service-api-key': caller.team.apiKey }, body: form });
    const body = (await response.json()) as any;
    expect(response.status, JSON.stringify(body)).toBe(200);
    const { bulkSendId } = body.payload;
    const started = Date.now();
    await drainAll(caller.team.teamId);
    console.log(`bulk send of 50 CSV rows: ${Date.now() - started} ms`);
    expect((await caller.rest.get(`/bulk-sends/${bulkSendId}`)).body.payload.bulkSend).toMatchObject({ status: 'completed', total: 50, created: 50, sent: 50, failed: 0 });
    for (let index = 0; index < 50; index += 1) {
      const mails = invitationsTo(`csv-${index}@example.com`);
      expect(mails).toHaveLength(1);
      // In the person's language, to the person's name as written.
      expect(mails[0]!.mail.to && JSON.stringify(mails[0]!.mail.to)).toContain(`${turkish[index % turkish.length]} ${index}`);
    }
    const rows = await allRows(caller, bulkSendId);
    const envelope = (await caller.rest.get(`/envelopes/${rows[3].envelopeId}?includeRecipients=true&includeFields=true`)).body.payload;
    expect(envelope.envelope.name).toBe('Sözleşme 3');
    expect(envelope.recipients[0].agents[0].info).toMatchObject({ name: `${turkish[3]} 3`, email: 'csv-3@example.com', locale: 'tr-TR' });
    const values = Object.fromEntries(envelope.fields.map((field: any) => [field.identifier, field.value]));
    expect(values.company).toEqual({ text: 'Acme, "Ltd" 3' });
    expect(values.newsletter).toBeNull();
    const fourth = (await caller.rest.get(`/envelopes/${rows[4].envelopeId}?includeFields=true`)).body.payload.fields;
    expect(fourth.find((field: any) => field.identifier === 'newsletter').value).toEqual({ checked: true });
  }, 120_000);

  it('refuses an unknown column and a broken quote by name, and reports invalid rows with their lines', async () => {
    const caller = callerOf(await seedTeam(app));
    const ready = await bulkTemplate(caller);
    const post = async (text: string) => {
      const form = new FormData();
      form.append('csv', new Blob([Buffer.from(text, 'utf8')], { type: 'text/csv' }), 'rows.csv');
      const response = await fetch(`${app.url}/api/v1/key/templates/${ready.templateId}/bulk-sends`, { method: 'POST', headers: { 'x-service-api-key': caller.team.apiKey }, body: form });
      return { status: response.status, body: (await response.json()) as any };
    };
    const unknown = await post('buyer.name,seller.email,field.nope\nA,b@example.com,x\n');
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.context.issues.map((issue: any) => issue.path)).toEqual(['csv.header[1]', 'csv.header[2]']);
    const broken = await post('buyer.name,buyer.email\n"Ada,ada@example.com\n');
    expect(broken.body.error).toMatchObject({ name: 'Request.Invalid', context: { issues: [{ path: 'csv (line 2)' }] } });
    const invalid = await post('buyer.name,buyer.email\nAda,ada@example.com\n"Multi\nline",not-mail\n');
    // A name over two lines is refused like any name with control characters.
    expect(invalid.body.error.context.rows).toEqual([
      { index: 1, line: 3, issues: [expect.objectContaining({ path: 'recipients[0].agents[0].info.name' }), expect.objectContaining({ path: 'recipients[0].agents[0].info.email' })] },
    ]);
  });
});

describe('a bulk send and its worker', () => {
  it('survives its worker being killed mid-run: the next worker takes over, and no row is made or sent twice', async () => {
    const caller = callerOf(await seedTeam(app));
    const ready = await bulkTemplate(caller);
    const rows = Array.from({ length: 60 }, (_, index) => ({ recipients: [{ identifier: 'buyer', agents: [{ info: person('crash', index) }] }] }));
    const { bulkSendId } = (await caller.rest.post(`/templates/${ready.templateId}/bulk-sends`, { rows })).body.payload;
    // The first worker's process dies on the 11th row of its second step (of 25 rows): it never
    // returns, never acknowledges. A step's rows are made and sent in one transaction, so none
    // of that step's rows is: the first step's 25 are sent.
    let spent = 0;
    const dying = createOutboxWorker({
      em: app.orm.em,
      clock: app.dependencies.clock,
      logger: createLogger('silent'),
      leaseMs: 60_000,
      // Never renewed: the process is gone.
      renewIntervalMs: 3_600_000,
      payloadMatch: { teamId: caller.team.teamId },
      handlers: new Map<string, OutboxHandler>([
        [
          OUTBOX_TOPICS.bulkSendStep,
          mainJobHandlers({ ...workerDependencies(app), spendRateBudget: async () => ((spent += 1), spent > 35 ? new Promise<number>(() => undefined) : 0) }).get(
            OUTBOX_TOPICS.bulkSendStep,
          )!,
        ],
      ]),
    });
    void dying.drain();
    const progress = async () => (await caller.rest.get(`/bulk-sends/${bulkSendId}`)).body.payload.bulkSend;
    await eventually(async () => spent > 35 && (await progress()).sent >= 25, { what: "the dying worker's first step" });
    expect(await progress()).toMatchObject({ status: 'running', sent: 25 });
    // Within the lease nobody takes the step (the restarted worker runs the invitations only);
    // once its clock is past the lease, however long this machine took, it finishes the job.
    const restartedClock = createClock();
    await drainAll(caller.team.teamId, restartedClock);
    expect(await progress()).toMatchObject({ status: 'running', sent: 25 });
    restartedClock.advance(61);
    await drainAll(caller.team.teamId, restartedClock);
    expect((await caller.rest.get(`/bulk-sends/${bulkSendId}`)).body.payload.bulkSend).toMatchObject({ status: 'completed', created: 60, sent: 60, failed: 0 });
    for (let index = 0; index < 60; index += 1) expect(invitationsTo(`crash-${index}@example.com`)).toHaveLength(1);
    const [{ count }] = await app.orm.em.fork().execute<{ count: string }[]>(`select count(*) from envelope where team_id = ?`, [caller.team.teamId]);
    expect(Number(count)).toBe(60);
  }, 120_000);

  it('can be cancelled half-way: rows not yet sent are never sent', async () => {
    const caller = callerOf(await seedTeam(app));
    const ready = await bulkTemplate(caller);
    const rows = Array.from({ length: 100 }, (_, index) => ({ recipients: [{ identifier: 'buyer', agents: [{ info: person('cancel', index) }] }] }));
    const { bulkSendId } = (await caller.rest.post(`/templates/${ready.templateId}/bulk-sends`, { rows })).body.payload;
    // Two steps of 25 rows (their invitations interleave), then cancel.
    const worker = mainWorkerFor(app, caller.team.teamId, { concurrency: 1 });
    while ((await caller.rest.get(`/bulk-sends/${bulkSendId}`)).body.payload.bulkSend.sent < 50) expect(await worker.drain(1)).toBe(1);
    const cancelled = await caller.rest.post(`/bulk-sends/${bulkSendId}/cancel`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.payload.bulkSend).toMatchObject({ status: 'cancelled', sent: 50, total: 100 });
    await drainAll(caller.team.teamId);
    expect((await caller.rest.get(`/bulk-sends/${bulkSendId}`)).body.payload.bulkSend).toMatchObject({ status: 'cancelled', sent: 50 });
    expect(await allRows(caller, bulkSendId, 'cancelled')).toHaveLength(50);
    for (let index = 0; index < 100; index += 1) expect(invitationsTo(`cancel-${index}@example.com`)).toHaveLength(index < 50 ? 1 : 0);
    // Cancelling again changes nothing; a completed bulk send cannot be cancelled.
    expect((await caller.rest.post(`/bulk-sends/${bulkSendId}/cancel`)).status).toBe(200);
    const small = (await caller.rest.post(`/templates/${ready.templateId}/bulk-sends`, { rows: rows.slice(0, 1) })).body.payload.bulkSendId;
    await drainAll(caller.team.teamId);
    expect((await caller.rest.post(`/bulk-sends/${small}/cancel`)).body.error).toMatchObject({ name: 'BulkSend.Finished' });
  }, 120_000);

  it('goes at the configured pace and waits when the key’s rate budget is spent', async () => {
    const caller = callerOf(await seedTeam(app));
    const ready = await bulkTemplate(caller);
    const rows = Array.from({ length: 40 }, (_, index) => ({ recipients: [{ identifier: 'buyer', agents: [{ info: person('pace', index) }] }] }));
    const { bulkSendId } = (await caller.rest.post(`/templates/${ready.templateId}/bulk-sends`, { rows })).body.payload;
    const nextStep = async () =>
      new Date(
        (
          await app.orm.em
            .fork()
            .execute<{ available_at: Date | string }[]>(`select available_at from outbox_message where topic = ? and processed_at is null and payload @> ?::jsonb`, [
              OUTBOX_TOPICS.bulkSendStep,
              JSON.stringify({ bulkSendId }),
            ])
        )[0]!.available_at,
      );
    // 60 rows a minute: a step of 25 rows is followed by the next one about 25 s later. The job
    // runs on a clock that stands still, so the schedule is measured from its start, not from
    // whenever a loaded machine got round to reading it.
    const { config } = app.dependencies;
    const clock = frozenClock(app.dependencies.clock.now());
    const paced = mainWorkerFor(app, caller.team.teamId, { concurrency: 1, dependencies: { clock, config: { ...config, bulkSendRowsPerMinute: 60 } } });
    expect(await paced.drain(1)).toBe(1);
    expect((await caller.rest.get(`/bulk-sends/${bulkSendId}`)).body.payload.bulkSend.sent).toBe(25);
    const delay = (await nextStep()).getTime() - clock.now().getTime();
    expect(delay).toBeGreaterThan(10_000);
    expect(delay).toBeLessThanOrEqual(25_000);
    // A spent budget: the job stops before the row and looks again when the window ends.
    // Due by the worker's clock: PostgreSQL's now() has microseconds and the clock milliseconds, so
    // a claim in the same millisecond would still see it a fraction in the future.
    await app.orm.em
      .fork()
      .execute(`update outbox_message set available_at = ? where topic = ? and processed_at is null and payload @> ?::jsonb`, [
        clock.now(),
        OUTBOX_TOPICS.bulkSendStep,
        JSON.stringify({ bulkSendId }),
      ]);
    let allowed = 5;
    // (Only the bulk send's steps: the first step's invitations are due before it.)
    const stepHandler = mainJobHandlers(workerDependencies(app, { clock, spendRateBudget: async () => (allowed-- > 0 ? 0 : 30_000) })).get(OUTBOX_TOPICS.bulkSendStep)!;
    const spent = mainWorkerFor(app, caller.team.teamId, { concurrency: 1, clock, handlers: new Map([[OUTBOX_TOPICS.bulkSendStep, stepHandler]]) });
    expect(await spent.drain(1)).toBe(1);
    expect((await caller.rest.get(`/bulk-sends/${bulkSendId}`)).body.payload.bulkSend).toMatchObject({ status: 'running', sent: 30 });
    expect((await nextStep()).getTime() - clock.now().getTime()).toBeGreaterThan(20_000);
    await caller.rest.post(`/bulk-sends/${bulkSendId}/cancel`);
    await drainAll(caller.team.teamId);
  }, 120_000);

  it('does not hold up another team: its send is invited while a long bulk send runs', async () => {
    const bulk = callerOf(await seedTeam(app));
    const other = callerOf(await seedTeam(app));
    const ready = await bulkTemplate(bulk);
    const rows = Array.from({ length: 100 }, (_, index) => ({ recipients: [{ identifier: 'buyer', agents: [{ info: person('fair', index) }] }] }));
    const { bulkSendId } = (await bulk.rest.post(`/templates/${ready.templateId}/bulk-sends`, { rows })).body.payload;
    // One worker for both teams, as in production: the bulk send's first step runs...
    const worker = mainWorkerFor(app, bulk.team.teamId, { payloadMatch: [{ teamId: bulk.team.teamId }, { teamId: other.team.teamId }], concurrency: 1 });
    await worker.drain(1);
    // ...then the other team sends one envelope.
    const otherTemplate = (await createReadyTemplate(app, other.team.apiKey)).templateId;
    const urgent = (
      await other.rest.post(`/envelopes/jumpstart/${otherTemplate}`, { recipients: [{ identifier: 'buyer', agents: [{ info: { name: 'Urgent', email: 'fair-urgent@example.com' } }] }] })
    ).body.payload.envelopeId;
    expect((await other.rest.put(`/envelopes/${urgent}/send`)).status).toBe(200);
    // The worker takes the other team's invitation after what was already due (a step's rows and
    // their invitations), not after the bulk send's 100 rows.
    for (let round = 0; round < 200 && invitationsTo('fair-urgent@example.com').length === 0; round += 1) await worker.drain(1);
    expect(invitationsTo('fair-urgent@example.com')).toHaveLength(1);
    // Judged by what was sent meanwhile, not by how long it took (a loaded machine is slow for
    // both teams alike): the other team's invitation came before the bulk send's remaining rows.
    const progress = (await bulk.rest.get(`/bulk-sends/${bulkSendId}`)).body.payload.bulkSend;
    expect(progress.sent).toBeLessThanOrEqual(50);
    await drainAll([bulk.team.teamId, other.team.teamId]);
    expect((await bulk.rest.get(`/bulk-sends/${bulkSendId}`)).body.payload.bulkSend).toMatchObject({ status: 'completed', sent: 100 });
  }, 120_000);
});

describe('bulk send on GraphQL', () => {
  const create = `mutation($t: ID!, $input: CreateBulkSendInput!) { createBulkSend(templateId: $t, input: $input) { id templateId name status total created sent failed completedAt } }`;
  const read = `query($id: ID!, $status: BulkSendRowStatus) { bulkSend(id: $id) { id status total created sent failed completedAt rows(status: $status, first: 100) { rows { index status envelopeId error { name description context } } nextCursor } } }`;

  it('creates from rows and from CSV text, reads, lists, cancels, and reports invalid rows by index', async () => {
    const caller = callerOf(await seedTeam(app));
    const ready = await bulkTemplate(caller);
    const rows = Array.from({ length: 6 }, (_, index) => ({
      recipients: [{ identifier: 'buyer', agents: [{ info: person('gql', index) }] }],
      values: { company: { text: `GQL ${index}` } },
    }));
    const created = await caller.graphql(create, { t: ready.templateId, input: { name: 'From GraphQL', rows } });
    expect(created.errors).toBeUndefined();
    const bulkSend = created.data.createBulkSend;
    expect(bulkSend).toMatchObject({ templateId: ready.templateId, name: 'From GraphQL', status: 'queued', total: 6, created: 0, sent: 0, failed: 0, completedAt: null });
    await drainAll(caller.team.teamId);
    const done = (await caller.graphql(read, { id: bulkSend.id, status: 'sent' })).data.bulkSend;
    expect(done).toMatchObject({ status: 'completed', created: 6, sent: 6, failed: 0 });
    expect(done.rows.rows.map((row: any) => row.index)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(done.rows.rows.every((row: any) => row.envelopeId && row.error === null)).toBe(true);
    for (let index = 0; index < 6; index += 1) expect(invitationsTo(`gql-${index}@example.com`)).toHaveLength(1);

    const csv = `\ufeffbuyer.name,buyer.email\n"Işıl, Ç.",gql-csv@example.com\n`;
    const fromCsv = await caller.graphql(create, { t: ready.templateId, input: { csv } });
    expect(fromCsv.errors).toBeUndefined();
    expect(fromCsv.data.createBulkSend).toMatchObject({ total: 1, status: 'queued' });

    const invalid = await caller.graphql(create, { t: ready.templateId, input: { rows: [rows[0], { recipients: [{ identifier: 'nobody', agents: [] }] }] } });
    expect(invalid.data.createBulkSend).toBeNull();
    expect(invalid.errors?.[0]?.extensions?.code).toBe('Request.Invalid');
    expect(invalid.errors?.[0]?.extensions?.context?.rows?.map((row: any) => row.index)).toEqual([1]);

    const cancelled = await caller.graphql(`mutation($id: ID!) { cancelBulkSend(id: $id) { id status sent } }`, { id: fromCsv.data.createBulkSend.id });
    expect(cancelled.data.cancelBulkSend).toMatchObject({ status: 'cancelled', sent: 0 });
    const cancelledRows = (await caller.graphql(read, { id: fromCsv.data.createBulkSend.id, status: 'cancelled' })).data.bulkSend.rows.rows;
    expect(cancelledRows).toEqual([{ index: 0, status: 'cancelled', envelopeId: null, error: null }]);
    await drainAll(caller.team.teamId);
    expect(invitationsTo('gql-csv@example.com')).toHaveLength(0);

    const listed = await caller.graphql(`{ bulkSends(first: 10) { nodes { id status } pageInfo { hasNextPage } } }`);
    expect(listed.data.bulkSends.nodes.map((node: any) => [node.id, node.status])).toEqual([
      [fromCsv.data.createBulkSend.id, 'cancelled'],
      [bulkSend.id, 'completed'],
    ]);
    const foreign = await callerOf(await seedTeam(app)).graphql(read, { id: bulkSend.id });
    expect(foreign.errors?.[0]?.extensions?.code).toBe('BulkSend.NotFound');
  }, 120_000);

  it('bulkSendProgress follows the counters to completion, then completes', async () => {
    const caller = callerOf(await seedTeam(app));
    const ready = await bulkTemplate(caller);
    const rows = Array.from({ length: 30 }, (_, index) => ({ recipients: [{ identifier: 'buyer', agents: [{ info: person('live', index) }] }] }));
    const { bulkSendId } = (await caller.rest.post(`/templates/${ready.templateId}/bulk-sends`, { rows })).body.payload;
    const watcher = subscribe(app, 'ws', { apiKey: caller.team.apiKey }, `subscription($id: ID!) { bulkSendProgress(id: $id) { id status created sent failed total } }`, { id: bulkSendId });
    const [first] = await watcher.waitFor(1);
    expect(first!.data.bulkSendProgress).toMatchObject({ id: bulkSendId, status: 'queued', sent: 0, total: 30 });
    await drainAll(caller.team.teamId);
    await watcher.ended;
    const seen = watcher.results.map((result) => result.data.bulkSendProgress);
    expect(seen.at(-1)).toMatchObject({ status: 'completed', created: 30, sent: 30, failed: 0 });
    // Each answer moves forward.
    for (let index = 1; index < seen.length; index += 1) expect(seen[index].sent).toBeGreaterThanOrEqual(seen[index - 1].sent);
    expect(seen.length).toBeGreaterThanOrEqual(2);
    const foreign = subscribe(app, 'ws', { apiKey: (await seedTeam(app)).apiKey }, `subscription($id: ID!) { bulkSendProgress(id: $id) { id } }`, { id: bulkSendId });
    await foreign.ended;
    expect(foreign.results[0]?.errors?.[0]?.extensions?.code).toBe('BulkSend.NotFound');
  }, 120_000);
});
