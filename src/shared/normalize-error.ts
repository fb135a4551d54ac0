import { ConnectionException, DeadlockException, LockWaitTimeoutException, OptimisticLockError } from '@mikro-orm/core';
import { BlobMissingError, BlobStoreUnavailableError } from './blob-store/types.ts';
import { DomainError, InternalServerError, ServiceUnavailableError, StorageFullError, StorageObjectMissingError, StorageUnavailableError } from './errors.ts';
import type { Logger } from './logger.ts';

/** `Resource.Conflict`: a concurrent change won the race; retrying the request is safe. */
export class ConcurrentModificationError extends DomainError {
  constructor() {
    super('Resource.Conflict', 'The resource was changed by another request at the same time; retry the request.');
  }
}

/**
 * SQLSTATEs of a server that is going away or not there yet: class 08 (connection exception),
 * 57P01 admin_shutdown (a restart ends every session), 57P02 crash_shutdown, 57P03
 * cannot_connect_now ("the database system is starting up" / "shutting down"). A restart of
 * PostgreSQL produces every one of them; none is the caller's fault or a bug.
 */
function isUnavailableSqlState(code: unknown): boolean {
  return typeof code === 'string' && (code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03');
}

/** The database could not be reached, or went away mid-statement (a restart): worth trying again shortly. */
export function isConnectionFailure(error: unknown): boolean {
  if (error instanceof ConnectionException) return true;
  if (isUnavailableSqlState((error as { code?: unknown } | null)?.code)) return true;
  const message = error instanceof Error ? error.message : '';
  // pg-pool's acquire timeout, refused or reset connections and a client whose connection died
  // surface as plain errors.
  return /timeout exceeded when trying to connect|ECONNREFUSED|ECONNRESET|EPIPE|Connection terminated|not queryable/i.test(message);
}

/**
 * A write that found no space (ENOSPC) or no quota (EDQUOT) left, here or in what caused it, or
 * PostgreSQL's disk_full (53100).
 */
function isStorageFull(error: unknown): boolean {
  for (let cause = error, depth = 0; cause && depth < 5; cause = (cause as { cause?: unknown }).cause, depth += 1) {
    const code = (cause as { code?: unknown }).code;
    if (code === 'ENOSPC' || code === 'EDQUOT' || code === '53100') return true;
  }
  return false;
}

/**
 * Turns anything thrown below a face into a `DomainError` the face can show. Known domain
 * errors pass through; concurrency losses, a full disk and an unreachable database get their own
 * names, and so do the blob store's (unavailable, object missing); all else is logged in full here and shown only as `Server.Internal`.
 */
export function normalizeError(error: unknown, log: Logger): DomainError {
  if (error instanceof DomainError) return error;
  if (error instanceof OptimisticLockError || error instanceof DeadlockException || error instanceof LockWaitTimeoutException) {
    return new ConcurrentModificationError();
  }
  // The blob store's named failures (blob-store/types.ts); the cause goes to the log only.
  if (error instanceof BlobStoreUnavailableError) {
    log.error({ err: error }, 'blob store unavailable');
    return new StorageUnavailableError();
  }
  if (error instanceof BlobMissingError) {
    log.error({ err: error, sha256: error.sha256 }, 'blob missing from the store');
    return new StorageObjectMissingError();
  }
  if (isStorageFull(error)) {
    log.error({ err: error }, 'storage full');
    return new StorageFullError();
  }
  if (isConnectionFailure(error)) {
    log.error({ err: error }, 'database unavailable');
    return new ServiceUnavailableError();
  }
  log.error({ err: error }, 'unexpected error');
  return new InternalServerError();
}
