import { createHash } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { IdempotencyKeyReusedError, InvalidRequestError } from '../../shared/errors.ts';
import { newId } from '../../shared/ids.ts';
import { sortedKeysJson } from '../../shared/sorted-keys-json.ts';

const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;
const RETENTION_HOURS = 24;

export type IdempotentRequest = {
  teamId: string;
  /** The caller's `Idempotency-Key`; undefined runs the operation plainly. */
  key: string | undefined;
  /** Names the operation and everything that identifies "the same request" (target ids, body). */
  fingerprintOf: unknown;
};

/**
 * A creating write run through `runIdempotently`: `perform` makes the change and returns the id of
 * what it created; `answer` reads, inside the same transaction, the answer the caller gets (plain
 * read-model data, the shape both faces share), which is stored with the key.
 */
export type IdempotentWork<T> = {
  perform: () => Promise<string>;
  answer: (resourceId: string) => Promise<T>;
};

/** What a record remembers: the created id and the first answer (absent in records written before answers were stored). */
type StoredResponse<T> = { resourceId: string; answer?: T };

/**
 * The outcome of an idempotent write: the answer, and whether it is a replay. A replay's answer
 * is the stored first answer, whatever happened to the resource since (changed, sent, deleted).
 * `storedResourceId` is set instead of `answer` only for a record written before answers were
 * stored (within 24 h of the upgrade): the caller reads the resource again, as it used to.
 */
export type IdempotentOutcome<T> = { answer: T; replayed: boolean } | { storedResourceId: string; replayed: true };

/**
 * Runs a creating write at most once per team and `Idempotency-Key` within 24 hours (docs/reference/contract.md §5).
 * The first run's answer is stored with the key in the write's own transaction; a repeat with the
 * same key and the same request gets that stored answer back and creates nothing; with a
 * different request, `Request.IdempotencyKeyReused`.
 *
 * Must run inside the transaction of the write: the record is claimed by an insert on the
 * (team, key) unique index, so a concurrent duplicate waits for the first transaction and then
 * sees its outcome; if the first one rolls back, its claim disappears with it and a retry runs.
 */
export async function runIdempotently<T>(em: EntityManager, request: IdempotentRequest, work: IdempotentWork<T>): Promise<IdempotentOutcome<T>> {
  if (request.key === undefined) return { answer: await work.answer(await work.perform()), replayed: false };
  checkKey(request.key);
  if (!em.isInTransaction()) throw new Error('runIdempotently must run inside the transaction of the write');
  const fingerprint = fingerprintOf(request);
  await em.execute(`delete from idempotency_record where team_id = ? and key = ? and created_at < now() - interval '${RETENTION_HOURS} hours'`, [request.teamId, request.key], 'run');
  const claimed = await em.execute<{ id: string }[]>(
    `insert into idempotency_record (id, created_at, team_id, key, fingerprint) values (?, now(), ?, ?, ?)
     on conflict (team_id, key) do nothing returning id`,
    [newId(), request.teamId, request.key, fingerprint],
  );
  if (claimed.length === 1) {
    const resourceId = await work.perform();
    const answer = await work.answer(resourceId);
    const stored: StoredResponse<T> = { resourceId, answer };
    await em.execute(`update idempotency_record set response = ?, completed_at = now() where id = ?`, [JSON.stringify(stored), claimed[0].id]);
    return { answer, replayed: false };
  }
  // The claim and its response commit together, so a claim this statement can see is complete.
  const [existing] = await em.execute<{ fingerprint: string; response: StoredResponse<T> }[]>(`select fingerprint, response from idempotency_record where team_id = ? and key = ?`, [
    request.teamId,
    request.key,
  ]);
  if (!existing || existing.fingerprint !== fingerprint) throw new IdempotencyKeyReusedError(request.key);
  return replayOf(existing.response);
}

function replayOf<T>(response: StoredResponse<T>): IdempotentOutcome<T> {
  return 'answer' in response && response.answer !== undefined ? { answer: response.answer, replayed: true } : { storedResourceId: response.resourceId, replayed: true };
}

/**
 * The answer of an outcome: the stored or fresh answer, or, for a record that holds only an id
 * (written before answers were stored), the resource read again with `readAgain`.
 */
export async function answerOf<T>(outcome: IdempotentOutcome<T>, readAgain: (resourceId: string) => Promise<T>): Promise<T> {
  return 'answer' in outcome ? outcome.answer : readAgain(outcome.storedResourceId);
}

function checkKey(key: string) {
  if (!KEY_PATTERN.test(key)) {
    throw new InvalidRequestError([{ path: 'Idempotency-Key', message: 'must be 1 to 255 printable ASCII characters without spaces' }]);
  }
}

function fingerprintOf(request: IdempotentRequest): string {
  return createHash('sha256').update(sortedKeysJson(request.fingerprintOf)).digest('hex');
}

/**
 * The outcome of an earlier, completed request with this key, or null if there is none (or no
 * key). Looked up before anything else, so a repeat gets the first answer even when the state
 * has moved on since (a recipient added to a draft that has been sent since). The write itself
 * still goes through `runIdempotently`, which settles races between first attempts.
 */
export async function findIdempotentResult<T>(em: EntityManager, request: IdempotentRequest): Promise<IdempotentOutcome<T> | null> {
  if (request.key === undefined) return null;
  checkKey(request.key);
  const [existing] = await em.execute<{ fingerprint: string; response: StoredResponse<T> }[]>(
    `select fingerprint, response from idempotency_record
      where team_id = ? and key = ? and created_at >= now() - interval '${RETENTION_HOURS} hours'`,
    [request.teamId, request.key],
  );
  if (!existing) return null;
  if (existing.fingerprint !== fingerprintOf(request)) throw new IdempotencyKeyReusedError(request.key);
  return replayOf(existing.response);
}

/**
 * A creating write inside something that is changed under a lock (a draft envelope, a template),
 * idempotent per key: a repeat of a completed request answers the stored first answer without
 * taking the lock, even if the owner has moved on since (sent, changed, the created thing
 * deleted); otherwise `underLock` runs the write in its transaction, `answer` reads the answer in
 * that same transaction and it is stored with the key. `readAgain` reads a resource outside it
 * (for records written before answers were stored).
 */
export async function createIdempotentlyUnderLock<T, Change extends { em: EntityManager }>(
  options: {
    em: EntityManager;
    request: IdempotentRequest;
    underLock: (work: (change: Change) => Promise<IdempotentOutcome<T>>) => Promise<IdempotentOutcome<T>>;
  },
  create: (change: Change) => Promise<string>,
  answer: (em: EntityManager, resourceId: string) => Promise<T>,
  readAgain: (resourceId: string) => Promise<T>,
): Promise<T> {
  const earlier = await findIdempotentResult<T>(options.em, options.request);
  if (earlier !== null) return answerOf(earlier, readAgain);
  const outcome = await options.underLock((change) =>
    runIdempotently(change.em, options.request, {
      perform: () => create(change),
      answer: (resourceId) => answer(change.em, resourceId),
    }),
  );
  return answerOf(outcome, readAgain);
}
