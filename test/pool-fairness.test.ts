import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { makePdf } from './fixtures/pdfs.ts';
import { eventually } from './helpers/eventually.ts';
import { graphqlClient, restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';

let app: TestApp;
beforeAll(async () => {
  // The other team's read loop goes past any per-key budget; rate limits have their own tests.
  app = await startTestApp({ env: { RATE_LIMIT_PER_MINUTE: '0' } });
});
afterAll(async () => {
  await app.close();
});

async function expectRead(read: () => Promise<{ status: number }>): Promise<void> {
  const answer = await read();
  expect(answer.status).toBe(200);
}

type LockHolder = {
  /** How many of the database's backends wait for this holder's lock now (each holds a pooled connection). */
  waiters(): Promise<number>;
  release(): Promise<void>;
};

/**
 * Holds an envelope's row lock from a connection of its own, outside the app's pool, as a send in
 * progress (or another instance's change) would. Resolves once the lock is held.
 */
async function holdEnvelopeLock(envelopeId: string): Promise<LockHolder> {
  const client = new pg.Client({ connectionString: inject('databaseUrl') });
  await client.connect();
  await client.query('begin');
  await client.query('select id from envelope where id = $1 for update', [envelopeId]);
  const observer = new pg.Client({ connectionString: inject('databaseUrl') });
  await observer.connect();
  const holderPid = (await client.query('select pg_backend_pid() as pid')).rows[0].pid as number;
  return {
    async waiters() {
      // Counted by who blocks them, not by query text: the files running beside this one take locks too.
      const rows = await observer.query('select count(*)::int as count from pg_stat_activity where $1 = any(pg_blocking_pids(pid))', [holderPid]);
      return rows.rows[0].count as number;
    },
    async release() {
      await observer.end();
      await client.query('rollback');
      await client.end();
    },
  };
}

type UploadAnswer = { status: number; retryAfter: string | null; body: any };

async function uploadPdf(team: SeededTeam, envelopeId: string, pdf: Uint8Array): Promise<UploadAnswer> {
  const form = new FormData();
  form.append('document', new Blob([pdf as Uint8Array<ArrayBuffer>], { type: 'application/pdf' }), 'burst.pdf');
  const response = await fetch(`${app.url}/api/v1/key/envelopes/${envelopeId}/documents`, {
    method: 'POST',
    headers: { 'x-service-api-key': team.apiKey },
    body: form,
  });
  return { status: response.status, retryAfter: response.headers.get('retry-after'), body: await response.json() };
}

/** Every answer is a success or the named, retryable refusal; never a 5xx. */
function expectLandedOrBusy(answers: UploadAnswer[]) {
  for (const answer of answers) {
    if (answer.status === 200) continue;
    expect({ status: answer.status, name: answer.body.error?.name }).toEqual({ status: 409, name: 'Envelope.Busy' });
    expect(answer.body.error.context.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect(answer.retryAfter).toBe(String(answer.body.error.context.retryAfterSeconds));
  }
}

/**
 * Fires 50 uploads of a small PDF to one envelope of one team while another team reads one of
 * its envelopes over and over (two readers back to back); answers the uploads and how many reads
 * were answered while the burst was still in flight.
 *
 * With `holdLock`, the envelope's row lock is held elsewhere until an upload waits for it in its
 * transaction and the other team has had `readsWhileLocked` reads answered; the most connections
 * ever seen waiting for the lock meanwhile is returned (the fair queue lets one change per
 * envelope into a transaction, so 1; without it the burst would take the pool to queue on the row).
 * Nothing here is timed: latency under a burst is a benchmark (bench/fairness.ts, bench/README.md).
 */
async function burstWhileAnotherTeamReads(options: { holdLock?: boolean } = {}) {
  const uploader = await seedTeam(app);
  const reader = await seedTeam(app);
  const uploaderRest = restClient(app, uploader.apiKey);
  const readerRest = restClient(app, reader.apiKey);
  const target = (await uploaderRest.post('/envelopes', { name: 'Busy envelope' })).body.payload.envelopeId;
  const watched = (await readerRest.post('/envelopes', { name: 'Watched envelope' })).body.payload.envelopeId;
  const read = () => readerRest.get(`/envelopes/${watched}?includeDocuments=true&includeRecipients=true`);
  const pdf = await makePdf({ pages: 1 });

  for (let index = 0; index < 5; index += 1) await expectRead(read);

  const holder = options.holdLock ? await holdEnvelopeLock(target) : undefined;
  let mostWaiters = 0;
  let burstDone = false;
  const uploads = Promise.all(Array.from({ length: 50 }, () => uploadPdf(uploader, target, pdf))).finally(() => {
    burstDone = true;
  });
  const burst = (async () => {
    if (holder) {
      try {
        // An upload is in its transaction, waiting for the row: the burst is queued now.
        await eventually(async () => (mostWaiters = Math.max(mostWaiters, await holder.waiters())) > 0, { what: 'an upload waiting for the row lock' });
        for (let index = 0; index < readsWhileLocked; index += 1) {
          // Answered while the lock is still held: reads do not queue behind the burst for a
          // connection (if they did, they would wait until the lock was released or timed out).
          await expectRead(read);
          mostWaiters = Math.max(mostWaiters, await holder.waiters());
        }
      } finally {
        await holder.release();
      }
    }
    return uploads;
  })();
  let readsDuring = 0;
  const readLoop = async () => {
    while (!burstDone) {
      await expectRead(read);
      if (!burstDone) readsDuring += 1;
    }
  };
  const [answers] = await Promise.all([burst, readLoop(), readLoop()]);
  const landed = answers.filter((answer) => answer.status === 200).length;
  const documents = (await uploaderRest.get(`/envelopes/${target}/documents`)).body.payload.documents;
  return { answers, landed, documents, readsDuring, mostWaiters, target, uploader };
}

const readsWhileLocked = 5;

/**
 * The other team's reads may slow down some (the burst costs CPU on a shared machine: hashing,
 * PDF parsing), but must not wait behind the burst for a connection: they are answered while the
 * burst is still in flight, not after it. How much slower they get is bench/fairness.ts's figure.
 */
function expectReadsInterleaved(readsDuring: number) {
  expect(readsDuring).toBeGreaterThanOrEqual(5);
}

describe('one envelope’s upload burst', () => {
  it('lands every upload (or refuses it as Envelope.Busy) and leaves another team’s reads fast', async () => {
    const { answers, landed, documents, readsDuring } = await burstWhileAnotherTeamReads();
    expectLandedOrBusy(answers);
    expect(landed).toBeGreaterThan(0);
    expect(documents).toHaveLength(landed);
    expectReadsInterleaved(readsDuring);
  }, 60_000);

  // The embedded database has one backend for everything: no second connection can hold a lock.
  it.skipIf(inject('databaseKind') === 'embedded')(
    'queued behind a lock held elsewhere, waits without holding the pool: the other team’s reads stay fast',
    async () => {
      // Held until the burst is queued on the row and the other team has had reads answered.
      const { answers, landed, documents, mostWaiters } = await burstWhileAnotherTeamReads({ holdLock: true });
      expectLandedOrBusy(answers);
      expect(documents).toHaveLength(landed);
      // One pooled connection waits for the row, whatever the size of the burst.
      expect(mostWaiters).toBe(1);
    },
    60_000,
  );
});

describe('a lock held past the wait limit', () => {
  it.skipIf(inject('databaseKind') === 'embedded')(
    'answers Envelope.Busy (409, Retry-After) on REST and GraphQL, changing nothing',
    async () => {
      const team = await seedTeam(app);
      const rest = restClient(app, team.apiKey);
      const envelopeId = (await rest.post('/envelopes', { name: 'Locked envelope' })).body.payload.envelopeId;
      const holder = await holdEnvelopeLock(envelopeId);
      try {
        const [restAnswer, graphqlAnswer] = await Promise.all([
          rest.post(`/envelopes/${envelopeId}/recipients`, { recipient: { type: 'signer', identifier: 'a', roleName: 'A' } }),
          graphqlClient(app, team.apiKey)('mutation($e: ID!) { updateEnvelope(id: $e, input: { name: "Renamed" }) { id } }', { e: envelopeId }),
        ]);
        // Refused after the lock wait, by name: a pool or request timeout would answer another error.
        expect(restAnswer.status).toBe(409);
        expect(restAnswer.body.error).toMatchObject({ name: 'Envelope.Busy', context: { envelopeId, retryAfterSeconds: 1 } });
        expect(restAnswer.headers.get('retry-after')).toBe('1');
        expect(graphqlAnswer.errors?.[0]?.extensions).toMatchObject({ code: 'Envelope.Busy', context: { retryAfterSeconds: 1 } });
      } finally {
        await holder.release();
      }
      const envelope = (await rest.get(`/envelopes/${envelopeId}?includeRecipients=true`)).body.payload;
      expect(envelope.envelope.name).toBe('Locked envelope');
      expect(envelope.recipients).toEqual([]);
    },
    30_000,
  );
});
