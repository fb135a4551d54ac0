import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appendAuditEvent } from '../src/domain/audit/audit.service.ts';
import { Envelope } from '../src/domain/envelope/envelope.entity.ts';
import { restClient, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app.close();
});

/**
 * Stands in for the send operation the workflow will add, done the way it must be done: one
 * guarded single-row update (`where status = 'draft'`) plus its audit event, in one transaction.
 */
async function guardedSend(envelopeId: string, teamId: string): Promise<boolean> {
  return app.orm.em.fork().transactional(async (em) => {
    const changed = await em.nativeUpdate(Envelope, { id: envelopeId, status: 'draft' }, { status: 'sent', sentAt: new Date() });
    if (changed === 1) {
      await appendAuditEvent(em, app.dependencies.auditKey, {
        teamId,
        envelopeId,
        type: 'envelope.sent',
        actor: { type: 'system', id: null },
        request: null,
        at: new Date(),
      });
      await em.flush();
    }
    return changed === 1;
  });
}

describe('draft edits racing a send', () => {
  it('either land before the send as draft edits, or after it as corrections with one revision each; none straddles it', async () => {
    const team = await seedTeam(app);
    const rest = restClient(app, team.apiKey);
    // Several rounds, the send starting a little later each time, so it falls at different
    // points of the stream of edits.
    for (let round = 0; round < 6; round += 1) {
      const envelopeId = (await rest.post('/envelopes', { name: `Racing send ${round}` })).body.payload.envelopeId;
      const adds = Array.from({ length: 16 }, (_, index) =>
        rest.post(`/envelopes/${envelopeId}/recipients`, { recipient: { type: 'signer', identifier: `r${index}`, roleName: `R${index}` } }),
      );
      const sends = new Promise<boolean[]>((resolve) => setTimeout(() => resolve(Promise.all([guardedSend(envelopeId, team.teamId), guardedSend(envelopeId, team.teamId)])), round * 4));
      const [answers, sent] = await Promise.all([Promise.all(adds), sends]);

      // Exactly one of two racing sends wins the guarded update.
      expect(sent.filter(Boolean)).toHaveLength(1);
      const accepted = answers.filter((answer) => answer.status === 200);
      // A change that waited too long for the envelope's lock is the only refusal there may be.
      for (const answer of answers.filter((answer) => answer.status !== 200)) expect(answer.body.error.name).toBe('Envelope.Busy');
      const events = (await rest.get(`/envelopes/${envelopeId}/audit`)).body.payload.events as { seq: number; type: string; details: Record<string, unknown> }[];
      const sentAt = events.find((event) => event.type === 'envelope.sent')!.seq;
      const added = events.filter((event) => event.type === 'recipient.added');
      expect(added).toHaveLength(accepted.length);
      // Before the send: draft edits, no revision. After it: corrections, revisions 1, 2, … in order.
      expect(added.filter((event) => event.seq < sentAt).every((event) => event.details.revision === undefined)).toBe(true);
      const corrections = added.filter((event) => event.seq > sentAt);
      expect(corrections.map((event) => event.details.revision)).toEqual(corrections.map((_, index) => index + 1));
      expect(events.filter((event) => event.type === 'envelope.corrected')).toHaveLength(corrections.length);
      expect((await rest.get(`/envelopes/${envelopeId}`)).body.payload.envelope.revision).toBe(corrections.length);
      expect((await rest.get(`/envelopes/${envelopeId}/recipients`)).body.payload.recipients).toHaveLength(accepted.length);
    }
  });
});
