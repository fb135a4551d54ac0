import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listAuditEvents } from '../src/domain/audit/audit.service.ts';
import { Envelope, type EnvelopeStatus } from '../src/domain/envelope/envelope.entity.ts';
import { makePdf } from './fixtures/pdfs.ts';
import { forceEnvelopeStatus, unknownId, uploadDocument } from './helpers/envelopes.ts';
import { firstErrorName, type GraphQLResult, graphqlClient, restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { buildEnvelope } from './helpers/signing.ts';
import { createReadyTemplate } from './helpers/templates.ts';

/*
 * The send's dry run (PUT /envelopes/{id}/send?dryRun=true, sendEnvelope(dryRun: true)) and the
 * jumpstart's (?dryRun=true, jumpstartEnvelope(dryRun: true)): the same checks as the real
 * operation, nothing written.
 */

let app: TestApp;
let team: SeededTeam;
beforeAll(async () => {
  app = await startTestApp();
  team = await seedTeam(app);
});
afterAll(async () => {
  await app.close();
});

const DRY_RUN = `mutation($id: ID!) { sendEnvelope(id: $id, dryRun: true) { id status dryRun {
  wouldSend problems { name description context }
  plan { turns { recipientId identifier type channel to } messages expiresAt reminders { window at } } } } }`;
const SEND = `mutation($id: ID!) { sendEnvelope(id: $id) { id status dryRun { wouldSend } } }`;

type Problem = { name: string; description: string; context: Record<string, any> };
type DryRun = { wouldSend: boolean; problems: Problem[]; plan: any };

async function restDryRun(envelopeId: string): Promise<DryRun> {
  const answer = await restClient(app, team.apiKey).put(`/envelopes/${envelopeId}/send?dryRun=true`);
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  expect(Object.keys(answer.body.payload)).toEqual(['dryRun']);
  return answer.body.payload.dryRun;
}

async function graphqlDryRun(envelopeId: string): Promise<DryRun> {
  const answer = await graphqlClient(app, team.apiKey)(DRY_RUN, { id: envelopeId });
  expect(answer.errors, JSON.stringify(answer.errors)).toBeUndefined();
  return answer.data.sendEnvelope.dryRun;
}

/**
 * A dry run as two calls can agree on: the plan's times hang on the moment of the call, so they
 * become offsets from the planned expiry.
 */
function timeless(dryRun: DryRun) {
  if (!dryRun.plan) return dryRun;
  const expiresAt = Date.parse(dryRun.plan.expiresAt);
  return {
    ...dryRun,
    plan: {
      ...dryRun.plan,
      expiresAt: 'expiry',
      reminders: dryRun.plan.reminders.map((reminder: { window: string; at: string }) => ({ window: reminder.window, before: expiresAt - Date.parse(reminder.at) })),
    },
  };
}

/** An error answer without the request's id (each answer names its own request). */
function withoutRequestId(problem: Problem): Problem {
  const { requestId: _requestId, ...context } = problem.context;
  return { ...problem, context };
}

/** What a dry run must leave alone: the envelope's row, its agents (snapshots), its audit trail, the outbox. */
async function footprint(envelopeId: string) {
  const em = app.orm.em.fork();
  const [row] = await em.execute('select * from envelope where id = ?', [envelopeId]);
  const agents = await em.execute('select a.* from agent a join recipient r on r.id = a.recipient_id where r.envelope_id = ? order by a.id', [envelopeId]);
  const [outbox] = await em.execute<{ count: string }[]>(`select count(*) from outbox_message where payload ->> 'envelopeId' = ? or payload::text like ?`, [envelopeId, `%${envelopeId}%`]);
  const [tokens] = await em.execute<{ count: string }[]>('select count(*) from signing_token t join recipient r on r.id = t.recipient_id where r.envelope_id = ?', [envelopeId]);
  const audit = (await listAuditEvents(em, envelopeId)).length;
  return { row, agents, outbox: Number(outbox.count), tokens: Number(tokens.count), audit };
}

/** A small seeded generator (mulberry32): a failing case names its seed and can be replayed. */
function random(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, chance: (p: number) => next() < p, pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]! };
}

type RecipientPlan = { identifier: string; type: string; required: boolean; agents: number; fields: number; hostedBy?: string };

/**
 * Builds one randomly broken envelope through REST (and, for what the API refuses to build, a
 * direct database change), and answers the issue paths the send must report for it, worked out
 * from the plan alone (an oracle independent of the service's checks).
 */
async function buildBroken(seed: number): Promise<{ envelopeId: string; status: EnvelopeStatus; expectedPaths: string[] }> {
  const rng = random(seed);
  const rest = restClient(app, team.apiKey);
  const envelopeId = (await rest.post('/envelopes', { name: `Broken ${seed}`, expirationPeriodDays: 1 + Math.floor(rng.next() * 90) })).body.payload.envelopeId as string;
  const withDocument = rng.chance(0.75);
  let documentId: string | undefined;
  if (withDocument) documentId = (await uploadDocument(app, team.apiKey, envelopeId, { bytes: await makePdf({ pages: 2 }) })).body.payload.document.id;

  const recipients: RecipientPlan[] = [];
  const count = Math.floor(rng.next() * 4);
  for (let index = 0; index < count; index += 1) {
    const type = rng.pick(['signer', 'signer', 'delegator', 'viewer', 'in_person_signer'] as const);
    const plan: RecipientPlan = { identifier: `r${index}`, type, required: rng.chance(0.7), agents: rng.chance(0.8) ? 1 : 0, fields: 0 };
    if (type === 'in_person_signer') {
      const host: RecipientPlan = { identifier: `h${index}`, type: 'host', required: true, agents: rng.chance(0.8) ? 1 : 0, fields: 0 };
      recipients.push(host);
      plan.hostedBy = host.identifier;
    }
    if (documentId && type !== 'viewer' && rng.chance(0.7)) plan.fields = 1;
    recipients.push(plan);
  }
  const ids: Record<string, string> = {};
  for (const plan of recipients) {
    const added = await rest.post(`/envelopes/${envelopeId}/recipients`, {
      recipient: {
        type: plan.type,
        identifier: plan.identifier,
        roleName: plan.identifier,
        order: 1 + Math.floor(rng.next() * 3),
        required: plan.required,
        ...(plan.hostedBy ? { hostedById: ids[plan.hostedBy] } : {}),
        agents: plan.agents ? [{ info: { name: `Person ${plan.identifier}`, email: `${plan.identifier}-${seed}@example.com` } }] : [],
      },
    });
    expect(added.status, JSON.stringify(added.body)).toBe(200);
    ids[plan.identifier] = added.body.payload.recipient.id;
  }
  const withFields = recipients.filter((plan) => plan.fields > 0);
  const fieldIds: Record<string, string> = {};
  if (withFields.length > 0) {
    const created = await rest.post(`/envelopes/${envelopeId}/fields`, {
      fields: withFields.map((plan, index) => ({
        type: 'simple_signature',
        recipientId: ids[plan.identifier],
        identifier: `${plan.identifier}-signature`,
        views: [{ documentId, page: 0, location: { x: 20, y: 20 + index * 40 }, size: { width: 120, height: 30 } }],
      })),
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    for (const field of created.body.payload.fields) fieldIds[field.identifier] = field.id;
  }
  const extraPaths: string[] = [];
  const em = app.orm.em.fork();
  // What the API never lets a draft become, made directly: a view beyond the document's pages,
  // and a field handed to a viewer.
  if (withFields.length > 0 && rng.chance(0.25)) {
    const victim = rng.pick(withFields);
    await em.execute('update field_view set page = 7 where field_id = ?', [fieldIds[`${victim.identifier}-signature`]]);
    extraPaths.push(`fields[${victim.identifier}-signature].views[0].page`);
  }
  const viewers = recipients.filter((plan) => plan.type === 'viewer');
  const movable = withFields.filter((plan) => plan.type !== 'host');
  if (viewers.length > 0 && movable.length > 0 && rng.chance(0.4)) {
    const from = rng.pick(movable);
    const to = rng.pick(viewers);
    await em.execute('update field set recipient_id = ? where id = ?', [ids[to.identifier], fieldIds[`${from.identifier}-signature`]]);
    from.fields -= 1;
    to.fields += 1;
  }

  const signing = ['signer', 'in_person_signer', 'delegator'];
  const paths: string[] = [...extraPaths];
  if (!withDocument) paths.push('documents');
  if (recipients.length === 0) paths.push('recipients');
  for (const plan of recipients) {
    if (plan.agents === 0) paths.push(`recipients[${plan.identifier}].agents`);
    if (signing.includes(plan.type) && plan.required && plan.fields === 0) paths.push(`recipients[${plan.identifier}].fields`);
    if ((plan.type === 'host' || plan.type === 'viewer') && plan.fields > 0) paths.push(`recipients[${plan.identifier}].fields`);
  }
  if (recipients.length > 0 && !recipients.some((plan) => signing.includes(plan.type) && plan.required)) paths.push('recipients');

  const status = rng.pick(['draft', 'draft', 'draft', 'draft', 'draft', 'draft', 'sent', 'voided', 'finalized', 'expired'] as const);
  if (status !== 'draft') await forceEnvelopeStatus(app, envelopeId, status);
  return { envelopeId, status, expectedPaths: paths.sort() };
}

/** The real send's outcome on one face, as `{ name, description, context }` (or null when it sent). */
async function realSend(envelopeId: string, face: 'rest' | 'graphql'): Promise<Problem | null> {
  if (face === 'rest') {
    const answer = await restClient(app, team.apiKey).put(`/envelopes/${envelopeId}/send`);
    if (answer.status === 200) return null;
    return withoutRequestId(answer.body.error);
  }
  const answer: GraphQLResult = await graphqlClient(app, team.apiKey)(SEND, { id: envelopeId });
  if (!answer.errors) return null;
  const [error] = answer.errors;
  return withoutRequestId({ name: error.extensions.name, description: error.message, context: error.extensions.context });
}

describe('send dry run: the send’s own checks, nothing changed', () => {
  it('property: over randomly broken envelopes, the dry run’s problems are every issue, the same on both faces, and the first is the real send’s refusal', async () => {
    const base = Number(process.env.DRY_RUN_SEED ?? 3301);
    const cases = 30;
    let refused = 0;
    let sent = 0;
    for (let seed = base; seed < base + cases; seed += 1) {
      const built = await buildBroken(seed);
      const label = `seed ${seed}`;
      const before = await footprint(built.envelopeId);
      const viaRest = await restDryRun(built.envelopeId);
      const viaGraphql = await graphqlDryRun(built.envelopeId);
      expect(timeless(viaGraphql), label).toEqual(timeless(viaRest));
      expect(await footprint(built.envelopeId), label).toEqual(before);

      if (built.status !== 'draft') {
        expect(
          viaRest.problems.map((problem) => problem.name),
          label,
        ).toEqual([built.status === 'sent' ? 'Envelope.NotDraft' : 'Envelope.Closed']);
        expect(viaRest.plan, label).toBeNull();
      } else if (built.expectedPaths.length > 0) {
        expect(
          viaRest.problems.map((problem) => problem.name),
          label,
        ).toEqual(['Envelope.NotSendable']);
        expect(viaRest.problems[0]!.context.issues.map((issue: { path: string }) => issue.path).sort(), label).toEqual(built.expectedPaths);
      } else {
        expect(viaRest.problems, label).toEqual([]);
      }
      expect(viaRest.wouldSend, label).toBe(viaRest.problems.length === 0);

      const outcome = await realSend(built.envelopeId, seed % 2 === 0 ? 'rest' : 'graphql');
      if (viaRest.wouldSend) {
        expect(outcome, label).toBeNull();
        sent += 1;
      } else {
        expect(outcome, label).toEqual(viaRest.problems[0]);
        expect(await footprint(built.envelopeId), label).toEqual(before);
        refused += 1;
      }
    }
    // The generator must have made both kinds, or the property says little.
    expect(refused).toBeGreaterThan(5);
    expect(sent).toBeGreaterThan(0);
  }, 120_000);

  it('plans the turns, the messages by channel, the expiry and the reminders as the send then does them', async () => {
    const built = await buildEnvelope(app, team.apiKey, {
      expirationPeriodDays: 10,
      reminders: { reminderInitialDelayDays: 2, reminderRepeatIntervalDays: 3, reminderBeforeExpirationDays: 1 },
      recipients: [
        { identifier: 'first', order: 1 },
        { identifier: 'texted', order: 1, agents: [{ info: { name: 'Texted', phone: '+14155550100' } }] },
        { identifier: 'optional', order: 2, required: false },
        { identifier: 'host', type: 'host', order: 0 },
        { identifier: 'guest', type: 'in_person_signer', order: 3, hostedBy: 'host' },
        { identifier: 'watcher', type: 'viewer', order: 0 },
      ],
    });
    const before = Date.now();
    const dryRun = await restDryRun(built.envelopeId);
    const after = Date.now();
    expect(dryRun.wouldSend).toBe(true);
    expect(dryRun.problems).toEqual([]);
    const turn = (identifier: string, channel: string, to: string | null) => ({
      recipientId: built.recipients[identifier],
      identifier,
      type: identifier === 'host' ? 'host' : 'signer',
      channel,
      to,
    });
    expect(dryRun.plan.turns).toEqual([
      [turn('first', 'email', 'first@example.com'), turn('texted', 'sms', '+14155550100')],
      // The optional signer of order 2 starts with the next required order (3), through which the guest's host is invited.
      [turn('optional', 'email', 'optional@example.com'), turn('host', 'email', 'host@example.com')],
    ]);
    expect(dryRun.plan.messages).toEqual({ email: 1, sms: 1 });
    const expiresAt = Date.parse(dryRun.plan.expiresAt);
    const day = 24 * 3600 * 1000;
    expect(expiresAt).toBeGreaterThanOrEqual(before + 10 * day - 1000);
    expect(expiresAt).toBeLessThanOrEqual(after + 10 * day + 1000);
    const reminderOffsets = dryRun.plan.reminders.map((reminder: { window: string; at: string }) => [reminder.window, Math.round((expiresAt - Date.parse(reminder.at)) / day)]);
    // n1 at +2 days, n2 at +5, n3 at +8; the expiry reminder a day before the end (+9), the last.
    expect(reminderOffsets).toEqual([
      ['n1', 8],
      ['n2', 5],
      ['n3', 2],
      ['expiry', 1],
    ]);

    const viaGraphql = await graphqlDryRun(built.envelopeId);
    expect(timeless(viaGraphql)).toEqual(timeless(dryRun));

    // The real send queues what was planned: the first turn's invitations, by the same channels.
    expect((await restClient(app, team.apiKey).put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
    const queued = await app.orm.em
      .fork()
      .execute<{ channel: string; recipient: string }[]>(
        `select payload ->> 'channel' as channel, payload ->> 'recipientId' as recipient from outbox_message where topic = 'signing.invitation' and payload ->> 'envelopeId' = ? order by 2`,
        [built.envelopeId],
      );
    expect(queued.map((row) => [row.recipient, row.channel]).sort()).toEqual(dryRun.plan.turns[0].map((entry: any) => [entry.recipientId, entry.channel]).sort());
    // A sent envelope's dry run: one problem, the one the send answers, and no plan.
    const again = await restDryRun(built.envelopeId);
    expect(again).toEqual({ wouldSend: false, problems: [expect.objectContaining({ name: 'Envelope.NotDraft' })], plan: null });
  });

  it('answers the envelope unchanged on GraphQL, null dryRun elsewhere; refuses a bad flag and an unknown envelope on both faces', async () => {
    const built = await buildEnvelope(app, team.apiKey, { recipients: [{ identifier: 'signer' }] });
    const graphql = graphqlClient(app, team.apiKey);
    const answer = await graphql(DRY_RUN, { id: built.envelopeId });
    expect(answer.data.sendEnvelope).toMatchObject({ id: built.envelopeId, status: 'draft', dryRun: { wouldSend: true } });
    const read = await graphql(`query($id: ID!) { envelope(id: $id) { status dryRun { wouldSend } } }`, { id: built.envelopeId });
    expect(read.data.envelope).toEqual({ status: 'draft', dryRun: null });

    const rest = restClient(app, team.apiKey);
    const badFlag = await rest.put(`/envelopes/${built.envelopeId}/send?dryRun=maybe`);
    expect(badFlag.status).toBe(400);
    expect(badFlag.body.error.name).toBe('Request.Invalid');
    expect((await app.orm.em.fork().findOneOrFail(Envelope, { id: built.envelopeId })).status).toBe('draft');

    const unknownRest = await rest.put(`/envelopes/${unknownId}/send?dryRun=true`);
    expect(unknownRest.status).toBe(404);
    expect(unknownRest.body.error.name).toBe('Envelope.NotFound');
    expect(firstErrorName(await graphql(DRY_RUN, { id: unknownId }))).toBe('Envelope.NotFound');
  });
});

describe('jumpstart dry run: the envelope it would make, without making it', () => {
  const JUMPSTART_DRY_RUN = `mutation($t: ID!, $input: JumpstartEnvelopeInput) {
    jumpstartEnvelope(templateId: $t, input: $input, dryRun: true) {
      id name status templateId
      documents { id sha256 }
      recipients { id identifier agents { info { name email } } }
      fields { id identifier recipientId }
      dryRun { wouldSend problems { name context } plan { turns { recipientId identifier channel to } messages } }
    }
  }`;

  async function teamFootprint(teamId: string) {
    const em = app.orm.em.fork();
    const [envelopes] = await em.execute<{ count: string }[]>('select count(*) from envelope where team_id = ?', [teamId]);
    const [events] = await em.execute<{ count: string }[]>('select count(*) from audit_event where team_id = ?', [teamId]);
    const [outbox] = await em.execute<{ count: string }[]>(`select count(*) from outbox_message where payload ->> 'teamId' = ?`, [teamId]);
    const [documents] = await em.execute<{ count: string }[]>('select count(*) from document d join envelope e on e.id = d.envelope_id where e.team_id = ?', [teamId]);
    return { envelopes: Number(envelopes.count), events: Number(events.count), outbox: Number(outbox.count), documents: Number(documents.count) };
  }

  it('REST and GraphQL answer the would-be envelope and its send plan; nothing is written; a real jumpstart makes the same envelope', async () => {
    const own = await seedTeam(app);
    const ready = await createReadyTemplate(app, own.apiKey);
    const input = { name: 'Dry NDA', recipients: [{ identifier: 'buyer', agents: [{ info: { name: 'Ada Buyer', email: 'ada@example.com' } }] }] };
    const rest = restClient(app, own.apiKey);
    const before = await teamFootprint(own.teamId);

    const viaRest = await rest.post(`/envelopes/jumpstart/${ready.templateId}?dryRun=true`, input);
    expect(viaRest.status, JSON.stringify(viaRest.body)).toBe(200);
    const { envelope, ...send } = viaRest.body.payload.dryRun;
    expect(envelope.envelope).toMatchObject({ name: 'Dry NDA', status: 'draft', templateId: ready.templateId });
    expect(envelope.documents.map((document: any) => document.sha256)).toEqual([ready.sha256]);
    expect(send.wouldSend).toBe(true);
    expect(send.plan.turns).toEqual([[{ recipientId: envelope.recipients[0].id, identifier: 'buyer', type: 'signer', channel: 'email', to: 'ada@example.com' }]]);
    expect((await rest.get(`/envelopes/${envelope.envelope.id}`)).status).toBe(404);

    const viaGraphql = await graphqlClient(app, own.apiKey)(JUMPSTART_DRY_RUN, { t: ready.templateId, input });
    expect(viaGraphql.errors, JSON.stringify(viaGraphql.errors)).toBeUndefined();
    const dry = viaGraphql.data.jumpstartEnvelope;
    expect(dry).toMatchObject({
      name: 'Dry NDA',
      status: 'draft',
      templateId: ready.templateId,
      recipients: [{ identifier: 'buyer', agents: [{ info: { name: 'Ada Buyer', email: 'ada@example.com' } }] }],
    });
    expect(dry.dryRun).toMatchObject({ wouldSend: true, problems: [], plan: { messages: { email: 1 } } });
    expect(await teamFootprint(own.teamId)).toEqual(before);

    // A role left without a person: the jumpstart's dry run says the send would refuse it, as the send then does.
    const unfilled = await rest.post(`/envelopes/jumpstart/${ready.templateId}?dryRun=true`, {});
    expect(unfilled.body.payload.dryRun.problems).toEqual([
      expect.objectContaining({ name: 'Envelope.NotSendable', context: expect.objectContaining({ issues: [expect.objectContaining({ path: 'recipients[buyer].agents' })] }) }),
    ]);
    expect(await teamFootprint(own.teamId)).toEqual(before);

    const made = await rest.post(`/envelopes/jumpstart/${ready.templateId}`, input);
    const full = (await rest.get(`/envelopes/${made.body.payload.envelopeId}?includeDocuments=true&includeRecipients=true&includeFields=true`)).body.payload;
    expect(full.envelope.name).toBe(envelope.envelope.name);
    expect(full.recipients.map((recipient: any) => recipient.identifier)).toEqual(envelope.recipients.map((recipient: any) => recipient.identifier));
    expect(full.fields.map((field: any) => field.identifier)).toEqual(envelope.fields.map((field: any) => field.identifier));
  });

  it('is refused exactly as the jumpstart is, on both faces, and writes nothing', async () => {
    const own = await seedTeam(app);
    const ready = await createReadyTemplate(app, own.apiKey);
    const before = await teamFootprint(own.teamId);
    const rest = restClient(app, own.apiKey);
    const unknownRole = { recipients: [{ identifier: 'nobody', agents: [] }] };
    const refused = await rest.post(`/envelopes/jumpstart/${ready.templateId}?dryRun=true`, unknownRole);
    const real = await rest.post(`/envelopes/jumpstart/${ready.templateId}`, unknownRole);
    expect(refused.status).toBe(real.status);
    expect(withoutRequestId(refused.body.error)).toEqual(withoutRequestId(real.body.error));
    expect(refused.body.error.name).toBe('Jumpstart.UnknownRecipient');
    expect(firstErrorName(await graphqlClient(app, own.apiKey)(JUMPSTART_DRY_RUN, { t: ready.templateId, input: unknownRole }))).toBe('Jumpstart.UnknownRecipient');
    expect(firstErrorName(await graphqlClient(app, own.apiKey)(JUMPSTART_DRY_RUN, { t: unknownId }))).toBe('Template.NotFound');
    expect(await teamFootprint(own.teamId)).toEqual(before);
  });
});
