import { createHash } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { IdempotencyKeyReusedError, InvalidRequestError } from '../../shared/errors.ts';
import { newId } from '../../shared/ids.ts';
import { canonicalJson } from '../audit/audit.service.ts';

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
 * Runs a creating write at most once per team and `Idempotency-Key` within 24 hours (contract §5).
 * `perform` returns the id of what it created; a repeat with the same key and the same request
 * gets that id back and creates nothing; with a different request, `Request.IdempotencyKeyReused`.
 *
 * Must run inside the transaction of the write: the record is claimed by an insert on the
 * (team, key) unique index, so a concurrent duplicate waits for the first transaction and then
 * sees its outcome; if the first one rolls back, its claim disappears with it and a retry runs.
 */
export async function runIdempotently(
  em: EntityManager,
  request: IdempotentRequest,
  perform: () => Promise<string>,
): Promise<{ resourceId: string; replayed: boolean }> {
  if (request.key === undefined) return { resourceId: await perform(), replayed: false };
  checkKey(request.key);
  if (!em.isInTransaction()) throw new Error('runIdempotently must run inside the transaction of the write');
  const fingerprint = fingerprintOf(request);
  await em.execute(
    `delete from idempotency_record where team_id = ? and key = ? and created_at < now() - interval '${RETENTION_HOURS} hours'`,
    [request.teamId, request.key],
    'run',
  );
  const claimed = await em.execute<{ id: string }[]>(
    `insert into idempotency_record (id, created_at, team_id, key, fingerprint) values (?, now(), ?, ?, ?)
     on conflict (team_id, key) do nothing returning id`,
    [newId(), request.teamId, request.key, fingerprint],
  );
  if (claimed.length === 1) {
    const resourceId = await perform();
    await em.execute(`update idempotency_record set response = ?, completed_at = now() where id = ?`, [
      JSON.stringify({ resourceId }),
      claimed[0].id,
    ]);
    return { resourceId, replayed: false };
  }
  // The claim and its response commit together, so a claim this statement can see is complete.
  const [existing] = await em.execute<{ fingerprint: string; response: { resourceId: string } }[]>(
    `select fingerprint, response from idempotency_record where team_id = ? and key = ?`,
    [request.teamId, request.key],
  );
  if (!existing || existing.fingerprint !== fingerprint) throw new IdempotencyKeyReusedError(request.key);
  return { resourceId: existing.response.resourceId, replayed: true };
}

function checkKey(key: string) {
  if (!KEY_PATTERN.test(key)) {
    throw new InvalidRequestError([{ path: 'Idempotency-Key', message: 'must be 1 to 255 printable ASCII characters without spaces' }]);
  }
}

function fingerprintOf(request: IdempotentRequest): string {
  return createHash('sha256').update(canonicalJson(request.fingerprintOf)).digest('hex');
}

/**
 * The id created by an earlier, completed request with this key, or null if there is none (or
 * no key). Looked up before anything else, so a repeat gets the first answer even when the
 * state has moved on since (a recipient added to a draft that has been sent since). The write
 * itself still goes through `runIdempotently`, which settles races between first attempts.
 */
export async function findIdempotentResult(em: EntityManager, request: IdempotentRequest): Promise<string | null> {
  if (request.key === undefined) return null;
  checkKey(request.key);
  const [existing] = await em.execute<{ fingerprint: string; response: { resourceId: string } }[]>(
    `select fingerprint, response from idempotency_record
      where team_id = ? and key = ? and created_at >= now() - interval '${RETENTION_HOURS} hours'`,
    [request.teamId, request.key],
  );
  if (!existing) return null;
  if (existing.fingerprint !== fingerprintOf(request)) throw new IdempotencyKeyReusedError(request.key);
  return existing.response.resourceId;
}
