import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { finalizeEnvelope } from '../src/domain/signing/workflow.ts';
import { firstErrorName, restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { APPROVE_MUTATION, buildEnvelope, invitationsOf, retryingWhileBusy, SUBMIT_MUTATION, signingClient, typedSignature } from './helpers/signing.ts';

/*
 * "Finalized exactly once": many recipients of one order completing at the same instant, again
 * and again; and a void racing the last completion. The request budgets are off here: the test
 * sends far more requests a minute than one key or address may.
 */

let app: TestApp;
/** A second instance on the same database: its in-process queue is its own, so only the database's locks and guards keep the two apart. */
let otherInstance: TestApp;
let team: SeededTeam;
beforeAll(async () => {
  const env = { RATE_LIMIT_PER_MINUTE: '0', RATE_LIMIT_ANONYMOUS_PER_MINUTE: '0', RATE_LIMIT_SIGNING_PER_MINUTE: '0' };
  app = await startTestApp({ env });
  otherInstance = await startTestApp({ env });
  team = await seedTeam(app);
});
afterAll(async () => {
  await app.close();
  await otherInstance.close();
});

// Twenty races on a PostgreSQL server, as the workflow asks; the embedded database serialises
// every transaction on its one backend, so there a few repetitions show the same and keep CI short.
const REPETITIONS = inject('databaseKind') === 'embedded' ? 5 : 20;

async function countOf(sql: string, envelopeId: string): Promise<number> {
  const [row] = await app.orm.em.fork().execute<{ count: string }[]>(sql, [envelopeId]);
  return Number(row.count);
}

const finalizedEvents = (envelopeId: string) => countOf(`select count(*) from audit_event where stream_id = ? and type = 'envelope.finalized'`, envelopeId);
const voidedEvents = (envelopeId: string) => countOf(`select count(*) from audit_event where stream_id = ? and type = 'envelope.voided'`, envelopeId);
const artefactJobs = (envelopeId: string) => countOf(`select count(*) from outbox_message where topic = 'artefact.seal' and payload ->> 'envelopeId' = ?`, envelopeId);

/** An envelope of `count` required signers of one order, sent; answers each signer's link and field. */
async function sentEnvelopeWithSigners(count: number) {
  const built = await buildEnvelope(app, team.apiKey, { recipients: Array.from({ length: count }, (_, index) => ({ identifier: `s${index}`, order: 1 })) });
  expect((await restClient(app, team.apiKey).put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
  const invitations = await invitationsOf(app, built.envelopeId);
  expect(invitations).toHaveLength(count);
  const signers = invitations.map((invitation) => {
    const identifier = Object.entries(built.recipients).find(([, id]) => id === invitation.recipientId)![0];
    return { token: invitation.token, fieldId: built.fields[`${identifier}-signature`] };
  });
  return { envelopeId: built.envelopeId, signers };
}

/**
 * Half of the signers go through each instance. Each is sent again after an `Envelope.Busy` (its
 * turn's bounded wait ran out on a loaded machine), as a client honouring Retry-After would: the
 * first attempts still race, and what is asserted is what the completions leave.
 */
function complete(signer: { token: string; fieldId: string }, index = 0) {
  return retryingWhileBusy(() =>
    signingClient(index % 2 === 0 ? app : otherInstance, signer.token)(SUBMIT_MUTATION, { values: [{ fieldId: signer.fieldId, value: typedSignature }], complete: true }),
  );
}

describe.each([5, 20])('%i recipients of one order completing at the same instant', (count) => {
  it(`finalizes exactly once, with one audit event and one artefact job, ${REPETITIONS} times over`, async () => {
    for (let repetition = 0; repetition < REPETITIONS; repetition += 1) {
      const { envelopeId, signers } = await sentEnvelopeWithSigners(count);
      const answers = await Promise.all(signers.map(complete));
      for (const answer of answers) {
        expect(answer.status).toBe(200);
        expect(answer.errors, JSON.stringify(answer.errors)).toBeUndefined();
      }
      // Exactly one of the answers saw its completion finalize the envelope... the last one.
      const state = await restClient(app, team.apiKey).get(`/envelopes/${envelopeId}?includeDocuments=true&includeRecipients=true`);
      expect(state.body.payload.envelope.status).toBe('finalized');
      expect(state.body.payload.recipients.every((recipient: any) => recipient.completedAt !== null)).toBe(true);
      expect(state.body.payload.envelope.completedAt).toBe(
        state.body.payload.recipients
          .map((recipient: any) => recipient.completedAt)
          .sort()
          .at(-1),
      );
      expect(await finalizedEvents(envelopeId)).toBe(1);
      expect(await artefactJobs(envelopeId)).toBe(1);
      const chain = await restClient(app, team.apiKey).get(`/envelopes/${envelopeId}/audit/verify`);
      expect(chain.body.payload.verification.valid).toBe(true);
    }
  }, 240_000);
});

describe('a void racing the last completion', () => {
  it(`one wins, the other is refused by name, the state is consistent (${REPETITIONS} races)`, async () => {
    const winners = { void: 0, completion: 0 };
    for (let repetition = 0; repetition < REPETITIONS; repetition += 1) {
      const { envelopeId, signers } = await sentEnvelopeWithSigners(2);
      expect((await complete(signers[0])).errors).toBeUndefined();
      const [voided, completed] = await Promise.all([
        retryingWhileBusy(() => restClient(app, team.apiKey).post(`/envelopes/${envelopeId}/void`, { reason: 'race' })),
        complete(signers[1], 1),
      ]);
      const state = (await restClient(app, team.apiKey).get(`/envelopes/${envelopeId}?includeDocuments=true`)).body.payload;
      if (voided.status === 200) {
        winners.void += 1;
        expect(firstErrorName(completed)).toBe('Envelope.Closed');
        expect(state.envelope.status).toBe('voided');
        expect(state.documents.map((document: any) => document.status)).toEqual(['voided']);
        expect(await voidedEvents(envelopeId)).toBe(1);
        expect(await finalizedEvents(envelopeId)).toBe(0);
        expect(await artefactJobs(envelopeId)).toBe(0);
      } else {
        winners.completion += 1;
        expect(voided.status).toBe(409);
        expect(voided.body.error.name).toBe('Envelope.Closed');
        expect(completed.errors).toBeUndefined();
        expect(state.envelope.status).toBe('finalized');
        expect(state.documents.map((document: any) => document.status)).toEqual(['completed']);
        expect(await voidedEvents(envelopeId)).toBe(0);
        expect(await finalizedEvents(envelopeId)).toBe(1);
        expect(await artefactJobs(envelopeId)).toBe(1);
      }
    }
    expect(winners.void + winners.completion).toBe(REPETITIONS);
  }, 240_000);
});

describe('the sent → finalized transition itself', () => {
  // The requests above are also queued by the audit chain's lock, so they would finalize once even
  // without the status guard. This calls the transition from two transactions at once, as two
  // instances' last completions would: only the guard in the update keeps it to one.
  it('lets exactly one of two concurrent transactions finalize, with one event and one artefact job', async () => {
    for (let repetition = 0; repetition < 5; repetition += 1) {
      const { envelopeId } = await sentEnvelopeWithSigners(1);
      const attempt = () =>
        app.orm.em.fork().transactional((em) =>
          finalizeEnvelope({
            em,
            auditKey: app.dependencies.auditKey,
            publicUrl: 'http://localhost',
            teamId: team.teamId,
            envelopeId,
            now: new Date(),
            actor: { type: 'system', id: null },
            request: null,
          }),
        );
      const outcomes = await Promise.all([attempt(), attempt()]);
      expect(outcomes.filter(Boolean)).toHaveLength(1);
      expect(await finalizedEvents(envelopeId)).toBe(1);
      expect(await artefactJobs(envelopeId)).toBe(1);
    }
  });
});

describe('five approvers of a quorum of two approving at the same instant (issue 33)', () => {
  it(`counts exactly two approvals, completes the role once and starts the next turn once, ${REPETITIONS} times over`, async () => {
    for (let repetition = 0; repetition < REPETITIONS; repetition += 1) {
      const built = await buildEnvelope(app, team.apiKey, {
        recipients: [
          {
            identifier: 'board',
            type: 'approver',
            order: 1,
            quorum: 2,
            agents: Array.from({ length: 5 }, (_, index) => ({ info: { name: `Member ${index}`, email: `member${index}@example.com` } })),
          },
          { identifier: 'ceo', order: 2 },
        ],
      });
      expect((await restClient(app, team.apiKey).put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
      const approvers = await invitationsOf(app, built.envelopeId);
      expect(approvers).toHaveLength(5);
      const answers = await Promise.all(
        approvers.map((invitation, index) => retryingWhileBusy(() => signingClient(index % 2 === 0 ? app : otherInstance, invitation.token)(APPROVE_MUTATION))),
      );
      const names = answers.map((answer) => (answer.errors ? firstErrorName(answer) : 'approved')).sort();
      expect(names).toEqual(['Signing.RoleCompleted', 'Signing.RoleCompleted', 'Signing.RoleCompleted', 'approved', 'approved']);
      expect(await countOf(`select count(*) from approval a join recipient r on r.id = a.recipient_id where r.envelope_id = ?`, built.envelopeId)).toBe(2);
      expect(await countOf(`select count(*) from approval a join recipient r on r.id = a.recipient_id where r.envelope_id = ? and a.made_quorum`, built.envelopeId)).toBe(1);
      expect(await countOf(`select count(*) from audit_event where stream_id = ? and type = 'recipient.approved'`, built.envelopeId)).toBe(2);
      expect(await countOf(`select count(*) from audit_event where stream_id = ? and type = 'recipient.completed'`, built.envelopeId)).toBe(1);
      expect(await countOf(`select count(*) from audit_event where stream_id = ? and type = 'recipient.activated' and details ->> 'identifier' = 'ceo'`, built.envelopeId)).toBe(1);
      const next = (await invitationsOf(app, built.envelopeId)).filter((invitation) => invitation.recipientId === built.recipients.ceo);
      expect(next).toHaveLength(1);
      const chain = await restClient(app, team.apiKey).get(`/envelopes/${built.envelopeId}/audit/verify`);
      expect(chain.body.payload.verification.valid).toBe(true);
    }
  }, 240_000);
});
